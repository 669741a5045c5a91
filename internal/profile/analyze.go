package profile

// The analyzer and its attribution core: the records of a round, in time
// order, become first touches and sampled accesses, credited to the code,
// thread, mapping and allocation site they belong to. Everything else is a
// type with its own state, which the analyzer calls and never reaches
// into: setting a run up is in setup.go and start.go, decoding in
// record.go, the round's batch in batch.go (roundBatch), the trackers in
// pages.go, threads.go, allocs.go, mappings.go and syscalls.go
// (syscallTracker, which says what each syscall changed: the analyzer
// hands the change to each tracker, which applies it to itself, a
// memChange to the trackers of memory, a threadChange to the thread
// tracker), where a fault's memory came from in origin.go (memoryOrigin),
// the kernel's answers about where pages are in nodes.go (nodeQueries)
// and the huge-page checks in thp.go (thpChecker), which hands each huge
// page found back to the analyzer to credit.

import (
	"os"

	"golang.org/x/sys/unix"
)

// Metrics are the counts numascope profile reports for a source line, a
// thread and the whole run. See docs/profile.md for the exact definitions.
type Metrics struct {
	// FirstTouch counts base pages placed by a first-touch fault (a fault
	// that placed a transparent huge page counts every base page it placed).
	FirstTouch uint64 `json:"first_touch"`
	// UnpinnedFirstTouch is the part of FirstTouch done by unpinned threads.
	UnpinnedFirstTouch uint64 `json:"unpinned_first_touch"`
	// Local and Remote classify every sampled access (NUMA hinting fault):
	// the accessing CPU's node against the page's node at that moment.
	Local  uint64 `json:"local"`
	Remote uint64 `json:"remote"`
	// UnpinnedPage, UnpinnedThread and UnpinnedBoth split the sampled
	// accesses whose placement or locality was left to chance: to a page
	// first touched by an unpinned thread from a pinned one, from an unpinned
	// thread to a page a pinned one placed, and both. They overlap Local and
	// Remote, not each other.
	UnpinnedPage   uint64 `json:"unpinned_page"`
	UnpinnedThread uint64 `json:"unpinned_thread"`
	UnpinnedBoth   uint64 `json:"unpinned_both"`
}

func (m *Metrics) add(o *Metrics) {
	m.FirstTouch += o.FirstTouch
	m.UnpinnedFirstTouch += o.UnpinnedFirstTouch
	if o.Local|o.Remote|o.UnpinnedPage|o.UnpinnedThread|o.UnpinnedBoth == 0 {
		return // first touches only, as most faults are
	}
	m.Local += o.Local
	m.Remote += o.Remote
	m.UnpinnedPage += o.UnpinnedPage
	m.UnpinnedThread += o.UnpinnedThread
	m.UnpinnedBoth += o.UnpinnedBoth
}

// Accesses is the number of sampled accesses.
func (m *Metrics) Accesses() uint64 { return m.Local + m.Remote }

// hugeSize is the x86-64 transparent huge page size.
const hugeSize = 2 << 20

// pageState is what the profiler knows about one touched base page.
type pageState struct {
	node int16 // current node; the first toucher's CPU's node until move_pages says
	// unsure: node may be out of date until the end-of-round query: it is
	// still the first toucher's CPU's node (not yet read from the kernel),
	// or a remote access in this round may have migrated the page.
	unsure bool
	// unpinnedOwner: the thread that first touched it was unpinned.
	unpinnedOwner bool
	// mapping is the index of the Mapping the page belongs to.
	mapping uint32
	// site is the index of its allocation site (0: not known).
	site uint32
	// epoch is the analyzer's lossEpoch when the page was last seen: an
	// older one means records were lost since, its munmap perhaps among
	// them.
	epoch uint32
}

// hugeState is a 2 MiB region found THP-backed: its node, and the
// lossEpoch when it was found (see pageState.epoch).
type hugeState struct {
	node  int16
	epoch uint32
}

// locKey identifies a code location before symbolization: the faulting
// instruction, and the first caller for when the instruction has no line
// information (libc's memset in a static binary).
type locKey struct {
	pid        int32
	ip, caller uint64
}

// pendingFirst is a first touch waiting for move_pages, kept so that a
// transparent huge page found then can be credited to its fault.
type pendingFirst struct {
	key pageKey
	loc locKey
	tid int32
	// unpinned: the first toucher was unpinned.
	unpinned bool
	// maybeHuge: it was the first fault seen in its 2 MiB region (and
	// THP is not off), so it may have placed a huge page.
	maybeHuge bool
}

// rawSample is a page fault, an exec or a syscall event, kept for handling
// in time order.
type rawSample struct {
	ip, caller, addr, time uint64
	a0, a1, a2             uint64 // syscall arguments or result (see evKind)
	pid, tid, cpu          int32
	site                   uint32 // allocation site of an allocating syscall
	// mask is the index in analyzer.masks of sched_setaffinity's CPU
	// mask, when found (0: none). An index, not a slice: a record without
	// pointers is cheaper to move and the garbage collector skips batches
	// of them.
	mask uint32
	kind evKind
}

// analyzer turns records into the profile's counts.
type analyzer struct {
	cpuNode []int
	nodeIdx map[int]int // node ID -> column of the access matrix
	rowIdx  map[int]int // thread node (-1 unpinned) -> row
	// threadNodes are the matrix rows, pageNodes its columns.
	threadNodes, pageNodes []int
	pageSize               uint64
	startNs                uint64 // start on CLOCK_MONOTONIC, the clock of the samples
	// kern answers what the records do not say: page nodes, affinities,
	// mappings.
	kern kernel

	pg pageTracker
	th threadTracker
	// code is the programs' code mappings and symbols; calls the
	// analyzer's own answers about them (each ring reader has its own).
	code   codeIndex
	calls  callerCache
	locs   map[locKey]*Metrics
	matrix [][]uint64
	totals Metrics

	batch roundBatch
	stamp uint64
	// nodes asks the kernel where pages are; thp finds the huge pages
	// first touches placed.
	nodes   nodeQueries
	thp     thpChecker
	samples uint64
	lost    uint64
	// lossEpoch counts the PERF_RECORD_LOST records seen: every page and
	// huge region known before one is suspect (see handleFault).
	lossEpoch uint32
	// afterLoss counts the faults on pages known from before a loss,
	// counted neither as first touches nor as accesses; repeats the later
	// faults on known pages where no fault can be a NUMA hinting fault;
	// unknownNode the accesses whose page's node could not be asked, the
	// program gone (see handleFault).
	afterLoss, repeats, unknownNode uint64
	// hinting says whether a fault can be a NUMA hinting fault: NUMA
	// balancing is on (or not known to be off) on a machine with more
	// than one node. Without it a later fault on a known page is never a
	// sampled access (memory unmapped and mapped again, copy-on-write,
	// reclaim).
	hinting bool
	// hugePages counts the 2 MiB regions found placed by one fault.
	hugePages uint64

	mp mappingTracker // where memory came from
	// origin answers, from al and mp, where a faulting thread's memory
	// came from.
	origin memoryOrigin

	dec decoded
	// syscalls are the syscall tracepoints opened (none: allocation sites
	// are not tracked and affinities are only polled).
	syscalls []openedEvent
	sys      syscallTracker // what each syscall did, once it returned
	al       allocTracker   // allocation sites
	// lastLoc is the last location looked up.
	lastLoc  locKey
	lastLocM *Metrics

	// oneNode: every page is on the one node; nothing to ask move_pages.
	oneNode bool
}

func newAnalyzer(cpuNode []int, pageNodes, threadNodes []int) *analyzer {
	pageSize := uint64(os.Getpagesize())
	a := &analyzer{
		cpuNode:     cpuNode,
		nodeIdx:     map[int]int{},
		rowIdx:      map[int]int{},
		pageSize:    pageSize,
		pg:          newPageTracker(pageSize),
		code:        newCodeIndex(),
		locs:        map[locKey]*Metrics{},
		stamp:       1,
		mp:          newMappingTracker(),
		threadNodes: threadNodes,
		pageNodes:   pageNodes,
		sys:         newSyscallTracker(pageSize),
		batch:       newRoundBatch(),
		al:          newAllocTracker(),
		oneNode:     len(pageNodes) == 1,
		hinting:     len(pageNodes) > 1,
	}
	a.calls = newCallerCache(&a.code)
	a.origin = memoryOrigin{al: &a.al, mp: &a.mp, code: &a.code}
	a.thp = thpChecker{pg: &a.pg, mp: &a.mp, nodes: &a.nodes, pageSize: pageSize, credit: a.creditHuge}
	a.nodes = newNodeQueries(&a.pg, &a.thp, pageSize, a.oneNode)
	a.startNs = monotonicNs()
	// The live kernel, without the pagemap fallback and the exact
	// huge-page check (Run sets up the whole of it).
	a.th = newThreadTracker(cpuNode, nil, a.startNs)
	a.setKernel(&procKernel{procRoot: "/proc", pageSize: a.pageSize, pagemaps: map[int32]*os.File{}})
	for i, n := range pageNodes {
		a.nodeIdx[n] = i
	}
	for i, n := range threadNodes {
		a.rowIdx[n] = i
	}
	a.matrix = make([][]uint64, len(threadNodes))
	for i := range a.matrix {
		a.matrix[i] = make([]uint64, len(pageNodes))
	}
	return a
}

// setKernel makes k the kernel the analyzer and its trackers ask.
func (a *analyzer) setKernel(k kernel) {
	a.kern = k
	a.th.setKernel(k)
	a.nodes.setKernel(k)
	a.thp.setKernel(k)
}

// useSyscalls hands the analyzer the syscall tracepoints opened: with them,
// allocation sites are tracked and affinity changes followed in time order.
func (a *analyzer) useSyscalls(evs []openedEvent) {
	a.syscalls = evs
	a.th.follow(evs != nil)
}

// thread returns the thread tid (of process pid), new if not known.
func (a *analyzer) thread(pid, tid int32) *threadState { return a.th.get(pid, tid) }

func (a *analyzer) nodeOfCPU(cpu int32) int {
	if cpu >= 0 && int(cpu) < len(a.cpuNode) {
		return a.cpuNode[cpu]
	}
	return -1
}

// sinceStart is the seconds from the start of the profile to t, a
// CLOCK_MONOTONIC time (a sample's or monotonicNs()).
func (a *analyzer) sinceStart(t uint64) float64 { return float64(int64(t-a.startNs)) / 1e9 }

// handleBatch handles every record drained so far (see handleUntil).
func (a *analyzer) handleBatch() { a.handleUntil(^uint64(0)) }

// handleUntil classifies the records drained so far whose time is at most
// horizon, in time order, then asks move_pages where the new and the
// migrating pages are. Later records wait for the next round: the per-CPU
// rings are read one after another, so a ring read last can hold records
// newer than what a ring read first could show yet, and handling them now
// would put them before records of the same moment still to come (a fault
// that came before an munmap, handled after it, would bring back a page
// that is gone).
func (a *analyzer) handleUntil(horizon uint64) {
	a.stamp++
	now := a.batch.take(horizon)
	a.th.beginRound(a.stamp, now)
	for i := range now {
		a.handle(&now[i])
	}
	a.th.endRound(now)
	a.batch.keepRest()
	a.nodes.round(a.stamp)
}

func (a *analyzer) loc(k locKey) *Metrics {
	if a.lastLocM != nil && a.lastLoc == k {
		return a.lastLocM
	}
	m := a.locs[k]
	if m == nil {
		m = &Metrics{}
		a.locs[k] = m
	}
	a.lastLoc, a.lastLocM = k, m
	return m
}

// handle applies one record of the round, in time order: a fault is
// attributed here; every other event is a change the trackers apply to
// themselves, each through its one method for it: a memChange for each
// tracker of memory, a threadChange (a fork, an affinity set) for the
// thread tracker.
func (a *analyzer) handle(s *rawSample) {
	if s.kind == evFault {
		a.handleFault(s)
		return
	}
	var tc threadChange
	switch s.kind {
	case evExec:
		// The process's memory is gone: its pages, mappings, allocation
		// ranges and break.
		a.pg.forget(s.pid)
		a.mp.forget(s.pid)
		a.al.forget(s.pid)
		a.sys.forget(s.pid)
	case evFork:
		tc = threadChange{op: threadForked, pid: s.pid, tid: s.tid, parent: int32(s.a0), at: s.time}
	default:
		e := a.sys.event(s, a.batch.mask(s.mask))
		for i := range e.n {
			c := &e.mem[i]
			a.pg.change(c)
			a.al.change(c, &a.code)
			a.mp.change(c)
		}
		tc = e.thread
	}
	if tc.op != 0 {
		a.th.change(&tc)
	}
}

// freeRange gives back the pages of [start, end) of pid, as if the program
// had called madvise(MADV_DONTNEED) on them, or, unmapped, munmap.
func (a *analyzer) freeRange(pid int32, start, end uint64, unmapped bool) {
	s := rawSample{kind: evMadvise, pid: pid, a0: start, a1: end - start, a2: unix.MADV_DONTNEED}
	if unmapped {
		s.kind = evMunmap
	}
	a.handle(&s)
}

// handleFault classifies a page fault, a first touch or a sampled access,
// and credits it, once: what it counts is decided first, the crediting is
// the same for both. A fault that cannot be either is counted apart (a
// repeat, a fault after a loss, an access whose page's node is unknown)
// and credits nothing.
func (a *analyzer) handleFault(s *rawSample) {
	node := a.nodeOfCPU(s.cpu) // the faulting CPU's
	t := a.thread(s.pid, s.tid)
	if t.status == "" {
		a.th.poll(t) // not seen at a fork (its parent's affinity unknown): its start
	}
	key := pageKey{s.pid, s.addr &^ (a.pageSize - 1)}
	lk := locKey{pid: s.pid, ip: s.ip, caller: s.caller}
	// The page's region and index in it: one walk of the page table for
	// the page, its region's state and the update below.
	r, i := a.pg.region(s.pid, key.page, true), a.pg.index(key.page)
	ps, touched := r.get(i)
	var d Metrics
	first := false
	if !touched {
		h, isHuge, firsts := r.untouched(a.thp.on()) // firsts: first touches seen in the region
		// Where the memory came from: /proc/PID/maps, read again at most
		// once a round, after the drain, so it has every mapping made
		// before this fault (unless already unmapped again).
		site, mapping := a.origin.memoryOf(&t.mem, a.kern, a.stamp, s.pid, s.addr, key.page)
		if isHuge {
			// Placed by an earlier huge-page fault, counted there; a fault
			// here now is an access (after a split or a hinting unmap).
			ps = pageState{node: h.node, mapping: mapping, site: site, epoch: h.epoch}
		} else {
			first = true
			ps = pageState{node: int16(node), unsure: !a.oneNode, unpinnedOwner: t.node < 0, site: site, mapping: mapping, epoch: a.lossEpoch}
			d.FirstTouch = 1
			if t.node < 0 {
				d.UnpinnedFirstTouch = 1
			}
			if !a.oneNode || firsts == 1 {
				// For move_pages; with one node there is nothing to ask but
				// whether it placed a huge page (queryNodes).
				a.nodes.first(pendingFirst{key: key, loc: lk, tid: t.tid, unpinned: t.node < 0, maybeHuge: firsts == 1})
			}
		}
		a.pg.put(r, i, ps)
	}
	if !first {
		// A later fault on a touched page: a NUMA hinting fault, a sampled
		// access, if the kernel takes hinting faults here at all.
		if !a.hinting {
			a.repeats++
			return
		}
		if ps.epoch != a.lossEpoch {
			// Known from before records were lost. Had its munmap been among
			// them, this would be the first touch of other memory at the same
			// address (mmap reuses addresses), and an access it is not: count
			// neither, and know the page again from here, where it really is.
			a.afterLoss++
			ps.epoch, ps.unsure = a.lossEpoch, !a.oneNode
			a.pg.put(r, i, ps)
			return
		}
		wasUnsure := ps.unsure
		if wasUnsure {
			// First touched, or accessed remotely, earlier in this round (or
			// not found since): where the page is now is not known. The
			// scanner can unmap a page soon after its first touch, and when
			// the profiler is short of CPU a round spans several scans; the
			// access must be judged against where the page really is (bound
			// to another node, or migrated by the last hinting fault), so ask
			// now, once; the end-of-round queries go on asking.
			n, gone := a.nodes.nodeNow(key)
			if gone {
				// The program has exited before the profiler, short of
				// CPU, handled this fault: the kernel can no longer say
				// where the page is, and the node known is from before
				// the last access's hinting fault, which may have migrated
				// the page here. Judged against it, the accesses after a
				// migration were counted remote: 1.6 times the kernel's
				// remote hinting faults with a CPU hog in the NUMA VM
				// (issue 30). Counted neither local nor remote, but told.
				a.unknownNode++
				return
			}
			if n >= 0 {
				ps.node = int16(n)
			}
		}
		acc := node
		if int(ps.node) == acc {
			d.Local = 1
		} else {
			d.Remote = 1
		}
		// A remote access's hinting fault may migrate the page toward acc.
		ps.unsure = d.Remote != 0
		if wasUnsure || ps.unsure {
			a.pg.put(r, i, ps)
		}
		switch {
		case t.node < 0 && ps.unpinnedOwner:
			d.UnpinnedBoth = 1
		case t.node < 0:
			d.UnpinnedThread = 1
		case ps.unpinnedOwner:
			d.UnpinnedPage = 1
		}
		if r, ok := a.rowIdx[t.node]; ok {
			if c, ok := a.nodeIdx[int(ps.node)]; ok {
				a.matrix[r][c]++
			}
		}
		a.nodes.access(key, acc)
	}
	a.credit(t, lk, ps.mapping, ps.site, &d)
}

// credit adds d to the whole run and to the code, thread (if still known),
// mapping and allocation site it belongs to.
func (a *analyzer) credit(t *threadState, lk locKey, mapping, site uint32, d *Metrics) {
	a.totals.add(d)
	if t != nil {
		t.metrics.add(d)
	}
	a.loc(lk).add(d)
	a.mp.credit(mapping, d)
	a.al.credit(site, d)
}

// creditHuge records a huge page placed by candidate c's fault and credits
// the region's base pages not counted yet to the fault's code, thread,
// mapping and allocation site.
func (a *analyzer) creditHuge(c *thpCandidate) {
	rk := regionOf(c.key)
	a.pg.setHuge(rk, hugeState{node: c.node, epoch: a.lossEpoch})
	a.hugePages++
	seen := uint64(a.pg.firsts(rk))
	extra := hugeSize/a.pageSize - min(seen, hugeSize/a.pageSize)
	d := Metrics{FirstTouch: extra}
	if c.unpinned {
		d.UnpinnedFirstTouch = extra
	}
	t, _ := a.th.known(c.tid)
	a.credit(t, c.loc, c.mapping, c.site, &d)
}
