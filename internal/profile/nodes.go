package profile

// Where pages are: at the end of each round the pages first touched or
// accessed in it are looked up with move_pages(2) (and pagemap where it
// does not answer), so that the next access is judged against the node the
// page is really on, and first touches that may have placed a huge page
// go to the huge-page checks.

import (
	"cmp"
	"slices"
)

// refreshQ is a sampled access whose page's node is asked at the end of the
// round: the hinting fault may have migrated it toward acc, the accessing
// CPU's node.
type refreshQ struct {
	key pageKey
	acc int16
}

// nodeQuery is a page whose node is asked at the end of a round: a first
// touch (pend, its index in a.pending) or a sampled access (pend -1).
type nodeQuery struct {
	key  pageKey
	pend int32
	// acc is the accessing node of a sampled access, -1 for a first touch
	// or a page asked again.
	acc  int16
	node int16 // the answer, -1 when unknown
}

// maxUnplacedRounds bounds how many rounds a page move_pages does not find
// is asked again (see queryNodes).
const maxUnplacedRounds = 8

// queryNodes asks move_pages(2) where the pages first touched or accessed
// in this round are now, and hands the first touches that may have placed
// a transparent huge page to the huge-page checks (thp.go).
func (a *analyzer) queryNodes() {
	a.decideHuge()
	if len(a.pending) == 0 && len(a.refresh) == 0 && len(a.recheck) == 0 {
		if len(a.thp.flagged) > 0 {
			a.probeHuge() // those a slow round left over
		}
		return
	}
	q := a.queries[:0]
	for i := range a.pending {
		// With one node there is nothing to ask of a first touch: only
		// one that may have placed a huge page is looked at again.
		if !a.oneNode || a.pending[i].maybeHuge {
			q = append(q, nodeQuery{key: a.pending[i].key, pend: int32(i), acc: -1, node: -1})
		}
	}
	for _, r := range a.refresh {
		q = append(q, nodeQuery{key: r.key, pend: -1, acc: r.acc, node: -1})
	}
	for _, k := range a.recheck {
		q = append(q, nodeQuery{key: k, pend: -1, acc: -1, node: -1})
	}
	a.recheck = a.recheck[:0]
	if !a.oneNode { // with one node every page is on it: nothing to ask
		a.lookupNodes(q)
	}
	for i := range q {
		ps, ok := a.pg.get(q[i].key)
		if !ok {
			if len(a.unplaced) > 0 {
				delete(a.unplaced, q[i].key)
			}
			continue // freed in the same round (munmap): nothing to update
		}
		if q[i].node >= 0 && (ps.node != q[i].node || ps.unsure) {
			// A sampled access's page still not on the accessing node
			// may be in the middle of that access's hinting fault (the
			// migration not begun, or pagemap showing the old frame):
			// it stays unsure, so that its next access, if it comes
			// before the recheck below settles it, asks at once. Judged
			// against the old node, the accesses after a migration were
			// counted remote: up to 1.9 times the kernel's remote
			// hinting faults with the profiler starved of CPU (issue 29).
			ps.node, ps.unsure = q[i].node, q[i].acc >= 0 && q[i].node != q[i].acc
			a.pg.set(q[i].key, ps)
		}
		// The sample is written as the fault begins; a query that comes
		// before the kernel has placed the page finds no page (under load,
		// or emulation, or for memory bound to a far node). Until it is
		// found the page keeps its first toucher's CPU's node, wrong for
		// memory bound elsewhere, so it is asked again next round, a few
		// times.
		switch {
		case a.oneNode:
		case q[i].node < 0:
			if n := a.unplaced[q[i].key]; n < maxUnplacedRounds {
				a.unplaced[q[i].key] = n + 1
				a.recheck = append(a.recheck, q[i].key)
			} else {
				delete(a.unplaced, q[i].key)
			}
		default:
			if len(a.unplaced) > 0 {
				delete(a.unplaced, q[i].key)
			}
			// A hinting fault migrates the page toward the accessing
			// node inside the fault, after the sample was written; under
			// load (or emulation) the query can come before the migration
			// is done, and the next access would then be classified
			// against the old node. A page still not on the accessing
			// node is asked again next round.
			if q[i].acc >= 0 && ps.node != q[i].acc {
				a.recheck = append(a.recheck, q[i].key)
			}
		}
		if q[i].pend >= 0 {
			a.considerHuge(&a.pending[q[i].pend], &ps)
		}
	}
	a.queries = q
	a.probeHuge()
	a.pending = a.pending[:0]
	a.refresh = a.refresh[:0]
}

// lookupNodes fills in the node of each query's page, one move_pages call
// per process (in batches), with pagemap for the pages it does not report.
func (a *analyzer) lookupNodes(q []nodeQuery) {
	slices.SortFunc(q, func(x, y nodeQuery) int { return cmp.Compare(x.key.pid, y.key.pid) })
	for start := 0; start < len(q); {
		pid := q[start].key.pid
		end := start
		pages := a.pageBuf[:0]
		for ; end < len(q) && q[end].key.pid == pid; end++ {
			pages = append(pages, q[end].key.page)
		}
		a.pageBuf = pages
		st := a.movePages(pid, pages)
		for i := start; i < end; i++ {
			n := -1
			if st != nil {
				n = int(st[i-start])
			}
			if n < 0 {
				if a.pg.known(q[i].key) { // not for a page freed meanwhile
					n = a.pagemapNode(pid, q[i].key.page)
				}
			}
			q[i].node = int16(n)
		}
		start = end
	}
}

// nodeNow asks where one page, known to the profiler, is now (lookupNodes
// for one page): -1 when neither move_pages nor pagemap knows; gone when
// its process has exited, so that nothing can be known of it any more.
func (a *analyzer) nodeNow(key pageKey) (node int, gone bool) {
	a.pageBuf = append(a.pageBuf[:0], key.page)
	st := a.movePages(key.pid, a.pageBuf)
	switch {
	case st == nil:
		return -1, true
	case st[0] >= 0:
		return int(st[0]), false
	}
	return a.pagemapNode(key.pid, key.page), false
}

// movePages returns the node of each page of pid, or a negative errno for a
// page that is not present; nil when the process is gone. The result is
// a.statusBuf, valid until the next call.
func (a *analyzer) movePages(pid int32, pages []uint64) []int32 {
	if cap(a.statusBuf) < len(pages) {
		a.statusBuf = make([]int32, len(pages))
	}
	status := a.statusBuf[:len(pages)]
	if !a.kern.PageNodes(pid, pages, status) {
		return nil
	}
	return status
}

// pagemapNode returns the node of a page from its physical frame, or -1:
// the fallback of move_pages for a page NUMA balancing has just made
// PROT_NONE, which move_pages does not report (see pfnNodes).
func (a *analyzer) pagemapNode(pid int32, page uint64) int {
	pfn, ok := a.kern.PageFrame(pid, page)
	if !ok {
		return -1
	}
	return a.kern.FrameNode(pfn)
}
