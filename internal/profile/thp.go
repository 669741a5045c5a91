package profile

// Transparent huge pages: one fault can place 512 base pages at once, and a
// user-only page-fault event sees one fault. First touches are counted in
// base pages (docs/profile.md), so a first touch that placed a huge page
// must be credited with the region's other 511.
//
// A candidate is a first touch in anonymous memory whose mapping covers its
// whole 2 MiB region, and the only fault seen in that region so far: a
// region whose pages faulted one by one holds base pages.
//
//   - As root, the answer is exact: the region's first and last base pages
//     are present in /proc/PID/pagemap with consecutive frame numbers, 511
//     apart, and /proc/kpageflags marks the first frame KPF_THP. A region
//     not present yet is asked again for a few rounds.
//   - Without root (no frame numbers), the region's first and last pages are
//     probed with move_pages: present on the fault's node although no fault
//     was seen on them. Faults that happened before the probe may still sit
//     in the rings, so the decision waits for the next round, once they have
//     been read: a probe whose own fault shows up then was a base page.

import (
	"time"
)

// thpTries is how many rounds a candidate whose region is not present yet,
// though its own fault is done, is asked again.
const thpTries = 3

// thpCandidate is a first touch that may have placed a huge page.
type thpCandidate struct {
	pendingFirst
	node    int16
	mapping uint32
	site    uint32
	tries   uint8
	// probes are the nodes of the region's first and last base pages
	// (-1: not present), for the decision without root.
	probes [2]int
}

// thpChecker finds the first touches that placed a huge page. It reads
// the page and mapping trackers, asks the kernel (through the node
// queries for move_pages), and hands each huge page found to credit, the
// analyzer's, which counts it.
type thpChecker struct {
	// disabled: THP is disabled on this system (transparent_hugepage=never).
	disabled bool
	// flagged wait for the pagemap/kpageflags check (root); probed have
	// had their probes queried and wait for the next round (no root);
	// fresh are this round's candidates for probing.
	flagged, probed, fresh []thpCandidate
	// unchecked counts the candidates given up: for want of time (see
	// thpBudget), or not shown present in thpTries rounds.
	unchecked uint64

	kern     kernel
	pg       *pageTracker
	mp       *mappingTracker
	nodes    *nodeQueries
	pageSize uint64
	credit   func(c *thpCandidate)
}

// setKernel makes k the kernel asked.
func (h *thpChecker) setKernel(k kernel) { h.kern = k }

// disable says whether THP is off here: then no first touch is a candidate.
func (h *thpChecker) disable(off bool) { h.disabled = off }

// on says whether THP may place huge pages here.
func (h *thpChecker) on() bool { return !h.disabled }

// finish gives up the candidates still waiting when the program ended (its
// pagemap is gone) and returns how many were never checked.
func (h *thpChecker) finish() uint64 {
	h.unchecked += uint64(len(h.flagged))
	h.flagged = h.flagged[:0]
	return h.unchecked
}

// thpBudget bounds the time a round spends on the exact huge-page checks.
// Each reads /proc/PID/pagemap, which takes the process's mmap lock: in a
// storm of mmap and munmap from many threads one read waited up to a
// quarter of a second, some twenty of them in a round took 1.8 s, and the
// rings overflowed meanwhile (docs/performance.md, "Storms on this
// machine"). Candidates left over wait for the next round, at most
// maxTHPWaiting of them; beyond that the oldest are given up and counted.
const (
	thpBudget     = 5 * time.Millisecond
	maxTHPWaiting = 4096
)

// thpChecked, when set (by tests, before Run), is told after each round's
// exact huge-page checks how many huge pages that round found and how many
// candidates still wait: a test's program can then live until its pages
// have been looked at, rather than for a time a busy machine may not give
// the profiler (TestHugePages).
var thpChecked func(found, waiting int)

func regionOf(k pageKey) pageKey { return pageKey{k.pid, k.page &^ (hugeSize - 1)} }

// consider looks at a first touch whose node and mapping are now known,
// in the round of the given stamp.
func (h *thpChecker) consider(p *pendingFirst, ps *pageState, stamp uint64) {
	rk := regionOf(p.key)
	if h.disabled || h.pg.firsts(rk) != 1 {
		return
	}
	if _, done := h.pg.hugeAt(rk); done || !h.mp.hugeCandidate(h.kern, stamp, p.key.pid, p.key.page) {
		return
	}
	c := thpCandidate{pendingFirst: *p, node: ps.node, mapping: ps.mapping, site: ps.site}
	if h.kern.ExactTHP() {
		h.flagged = append(h.flagged, c)
	} else {
		h.fresh = append(h.fresh, c)
	}
}

// probe runs at the end of a round: the exact check of the flagged
// candidates, and the probes of the fresh ones (decided next round).
func (h *thpChecker) probe() {
	if len(h.flagged) == 0 && len(h.fresh) == 0 {
		return
	}
	keep, found := h.flagged[:0], 0
	deadline := monotonicNs() + uint64(thpBudget)
	for i, c := range h.flagged {
		if i > 0 && monotonicNs() > deadline {
			// Out of time: the rest wait for the next round, untried.
			// (Appending the list's own tail moves it down, a memmove.)
			keep = append(keep, h.flagged[i:]...)
			break
		}
		rk := regionOf(c.key)
		if _, done := h.pg.hugeAt(rk); done || h.pg.firsts(rk) == 0 {
			continue // freed meanwhile
		}
		huge, known := h.thpAt(c.key.pid, rk.page)
		switch {
		case known && huge:
			h.credit(&c)
			found++
		case !known && !h.present(c.key.pid, c.key.page):
			// The fault itself is not done: its sample is written as
			// it begins, and a starved thread can take longer than
			// thpTries rounds to zero a huge page (4 of 16 were given
			// up so under load, issue 29). Asked again, no try spent:
			// it ends when the page is placed or the program exits.
			keep = append(keep, c)
		case !known && c.tries+1 < thpTries:
			c.tries++
			keep = append(keep, c)
		case !known:
			// Still not answered: the profile says so rather than
			// dropping it unsaid.
			h.unchecked++
		}
	}
	if n := len(keep) - maxTHPWaiting; n > 0 {
		h.unchecked += uint64(n)
		keep = keep[:copy(keep, keep[n:])] // the oldest go
	}
	h.flagged = keep
	if thpChecked != nil {
		thpChecked(found, len(h.flagged))
	}

	if len(h.fresh) == 0 {
		return
	}
	byPid := map[int32][]uint64{}
	for _, c := range h.fresh {
		rk := regionOf(c.key)
		byPid[c.key.pid] = append(byPid[c.key.pid], rk.page, rk.page+hugeSize-h.pageSize)
	}
	where := map[pageKey]int{}
	for pid, pages := range byPid {
		st := h.nodes.movePages(pid, pages)
		for i, p := range pages {
			// Not pagemap: it also shows the shared zero page that a read
			// of untouched memory maps, which would look like a placed page.
			if st != nil {
				where[pageKey{pid, p}] = int(st[i])
			}
		}
	}
	for _, c := range h.fresh {
		rk := regionOf(c.key)
		n0, ok0 := where[rk]
		n1, ok1 := where[pageKey{rk.pid, rk.page + hugeSize - h.pageSize}]
		if ok0 && ok1 {
			c.probes = [2]int{n0, n1}
			h.probed = append(h.probed, c)
		}
	}
	h.fresh = h.fresh[:0]
}

// decide runs at the start of the next round's queries, after its
// faults were handled: a probed region whose ends were present on the
// fault's node, and that still has only that one fault, holds a huge page.
func (h *thpChecker) decide() {
	for i := range h.probed {
		c := &h.probed[i]
		rk := regionOf(c.key)
		if _, done := h.pg.hugeAt(rk); done || h.pg.firsts(rk) != 1 {
			continue
		}
		if n := int(c.node); c.probes[0] == n && c.probes[1] == n {
			h.credit(c)
		}
	}
	h.probed = h.probed[:0]
}

// present says whether pid's page is present (its fault is done).
func (h *thpChecker) present(pid int32, page uint64) bool {
	_, ok := h.kern.PageFrame(pid, page)
	return ok
}

// thpAt says whether the 2 MiB region at region of pid is one transparent
// huge page: its first and last base pages present, on frames 511 apart,
// the first marked KPF_THP. known is false when the region's ends are not
// present (not yet, or the frames are hidden).
func (h *thpChecker) thpAt(pid int32, region uint64) (huge, known bool) {
	first, ok0 := h.kern.PageFrame(pid, region)
	last, ok1 := h.kern.PageFrame(pid, region+hugeSize-h.pageSize)
	if !ok0 || !ok1 {
		return false, false
	}
	if last != first+hugeSize/h.pageSize-1 {
		return false, true
	}
	return h.kern.FrameTHP(first)
}
