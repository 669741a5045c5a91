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
// touch (pend, its index in nodeQueries.pending) or a sampled access (pend -1).
type nodeQuery struct {
	key  pageKey
	pend int32
	// acc is the accessing node of a sampled access, -1 for a first touch
	// or a page asked again.
	acc  int16
	node int16 // the answer, -1 when unknown
}

// maxUnplacedRounds bounds how many rounds a page move_pages does not find
// is asked again (see round).
const maxUnplacedRounds = 8

// nodeQueries asks the kernel where pages are: the pages of a round's
// first touches and sampled accesses at its end, and one page at once
// when an access must be judged against where its page really is. It
// updates the page tracker with the answers and hands the first touches
// that may have placed a huge page to the huge-page checks.
type nodeQueries struct {
	kern     kernel
	pg       *pageTracker
	thp      *thpChecker
	pageSize uint64
	// oneNode: every page is on the one node; nothing to ask move_pages.
	oneNode bool

	// pending are the round's first touches, refresh its sampled
	// accesses.
	pending []pendingFirst
	refresh []refreshQ
	// recheck are remotely accessed pages whose node did not change when
	// asked, and pages not placed yet: asked again next round.
	recheck []pageKey
	// unplaced counts, for each page move_pages could not place yet, the
	// rounds it was asked again.
	unplaced map[pageKey]uint8
	queries  []nodeQuery // round's buffer
	pageBuf  []uint64    // lookup's and nodeNow's buffer
	// statusBuf is movePages' buffer.
	statusBuf []int32
}

func newNodeQueries(pg *pageTracker, thp *thpChecker, pageSize uint64, oneNode bool) nodeQueries {
	return nodeQueries{pg: pg, thp: thp, pageSize: pageSize, oneNode: oneNode, unplaced: map[pageKey]uint8{}}
}

// setKernel makes k the kernel asked.
func (nq *nodeQueries) setKernel(k kernel) { nq.kern = k }

// first queues a first touch for the end of the round.
func (nq *nodeQueries) first(p pendingFirst) { nq.pending = append(nq.pending, p) }

// access queues a sampled access's page, accessed from node acc: its
// hinting fault may migrate it.
func (nq *nodeQueries) access(key pageKey, acc int) {
	nq.refresh = append(nq.refresh, refreshQ{key: key, acc: int16(acc)})
}

// round runs at the end of a round, after its faults were handled: it asks
// move_pages(2) where the pages first touched or accessed in it are now,
// and hands the first touches that may have placed a transparent huge page
// to the huge-page checks (thp.go), which it then runs.
func (nq *nodeQueries) round(stamp uint64) {
	nq.thp.decide()
	if len(nq.pending) == 0 && len(nq.refresh) == 0 && len(nq.recheck) == 0 {
		nq.thp.probe() // those a slow round left over, if any
		return
	}
	q := nq.queries[:0]
	for i := range nq.pending {
		// With one node there is nothing to ask of a first touch: only
		// one that may have placed a huge page is looked at again.
		if !nq.oneNode || nq.pending[i].maybeHuge {
			q = append(q, nodeQuery{key: nq.pending[i].key, pend: int32(i), acc: -1, node: -1})
		}
	}
	for _, r := range nq.refresh {
		q = append(q, nodeQuery{key: r.key, pend: -1, acc: r.acc, node: -1})
	}
	for _, k := range nq.recheck {
		q = append(q, nodeQuery{key: k, pend: -1, acc: -1, node: -1})
	}
	nq.recheck = nq.recheck[:0]
	if !nq.oneNode { // with one node every page is on it: nothing to ask
		nq.lookup(q)
	}
	for i := range q {
		ps, ok := nq.pg.get(q[i].key)
		if !ok {
			if len(nq.unplaced) > 0 {
				delete(nq.unplaced, q[i].key)
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
			nq.pg.set(q[i].key, ps)
		}
		// The sample is written as the fault begins; a query that comes
		// before the kernel has placed the page finds no page (under load,
		// or emulation, or for memory bound to a far node). Until it is
		// found the page keeps its first toucher's CPU's node, wrong for
		// memory bound elsewhere, so it is asked again next round, a few
		// times.
		switch {
		case nq.oneNode:
		case q[i].node < 0:
			if n := nq.unplaced[q[i].key]; n < maxUnplacedRounds {
				nq.unplaced[q[i].key] = n + 1
				nq.recheck = append(nq.recheck, q[i].key)
			} else {
				delete(nq.unplaced, q[i].key)
			}
		default:
			if len(nq.unplaced) > 0 {
				delete(nq.unplaced, q[i].key)
			}
			// A hinting fault migrates the page toward the accessing
			// node inside the fault, after the sample was written; under
			// load (or emulation) the query can come before the migration
			// is done, and the next access would then be classified
			// against the old node. A page still not on the accessing
			// node is asked again next round.
			if q[i].acc >= 0 && ps.node != q[i].acc {
				nq.recheck = append(nq.recheck, q[i].key)
			}
		}
		if q[i].pend >= 0 {
			nq.thp.consider(&nq.pending[q[i].pend], &ps, stamp)
		}
	}
	nq.queries = q
	nq.thp.probe()
	nq.pending = nq.pending[:0]
	nq.refresh = nq.refresh[:0]
}

// lookup fills in the node of each query's page, one move_pages call
// per process (in batches), with pagemap for the pages it does not report.
func (nq *nodeQueries) lookup(q []nodeQuery) {
	slices.SortFunc(q, func(x, y nodeQuery) int { return cmp.Compare(x.key.pid, y.key.pid) })
	for start := 0; start < len(q); {
		pid := q[start].key.pid
		end := start
		pages := nq.pageBuf[:0]
		for ; end < len(q) && q[end].key.pid == pid; end++ {
			pages = append(pages, q[end].key.page)
		}
		nq.pageBuf = pages
		st := nq.movePages(pid, pages)
		for i := start; i < end; i++ {
			n := -1
			if st != nil {
				n = int(st[i-start])
			}
			if n < 0 {
				if nq.pg.known(q[i].key) { // not for a page freed meanwhile
					n = nq.kern.PagemapNode(pid, q[i].key.page)
				}
			}
			q[i].node = int16(n)
		}
		start = end
	}
}

// nodeNow asks where one page, known to the profiler, is now (lookup for
// one page): -1 when neither move_pages nor pagemap knows; gone when its
// process has exited, so that nothing can be known of it any more.
func (nq *nodeQueries) nodeNow(key pageKey) (node int, gone bool) {
	nq.pageBuf = append(nq.pageBuf[:0], key.page)
	st := nq.movePages(key.pid, nq.pageBuf)
	switch {
	case st == nil:
		return -1, true
	case st[0] >= 0:
		return int(st[0]), false
	}
	return nq.kern.PagemapNode(key.pid, key.page), false
}

// movePages returns the node of each page of pid, or a negative errno for a
// page that is not present; nil when the process is gone. The result is
// nq.statusBuf, valid until the next call.
func (nq *nodeQueries) movePages(pid int32, pages []uint64) []int32 {
	if cap(nq.statusBuf) < len(pages) {
		nq.statusBuf = make([]int32, len(pages))
	}
	status := nq.statusBuf[:len(pages)]
	if !nq.kern.PageNodes(pid, pages, status) {
		return nil
	}
	return status
}
