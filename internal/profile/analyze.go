package profile

import (
	"cmp"
	"os"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/profile/perfring"
	"github.com/numascope/numascope/internal/sysfs"
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

type threadState struct {
	tid, pid int32
	comm     string
	cpus     []int
	nodes    []int
	node     int // the one node of a pinned thread, -1 when unpinned
	status   string
	exited   bool
	seen     uint64 // batch stamp of the last polled affinity read
	polled   string // a polled affinity waiting to be confirmed
	metrics  Metrics
	log      []Binding
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

	pg      pageTracker
	threads map[int32]*threadState
	maps    map[int32][]mapping
	parent  map[int32]int32 // process -> the process that forked it
	locs    map[locKey]*Metrics
	matrix  [][]uint64
	totals  Metrics

	batch []rawSample
	// masks are the CPU masks of the sched_setaffinity calls in the batch
	// ([0] is none).
	masks [][]byte
	// sortBuf and runs are sortBatch's buffers.
	sortBuf []rawSample
	runs    []int
	stamp   uint64
	pending []pendingFirst
	refresh []refreshQ
	// recheck are remotely accessed pages whose node did not change when
	// asked, and pages not placed yet: asked again next round (see
	// queryNodes).
	recheck []pageKey
	// unplaced counts, for each page move_pages could not place yet, the
	// rounds it was asked again.
	unplaced map[pageKey]uint8
	samples  uint64
	lost     uint64
	// lossEpoch counts the PERF_RECORD_LOST records seen: every page and
	// huge region known before one is suspect (see handleFault).
	lossEpoch uint32
	// afterLoss counts the faults on pages known from before a loss,
	// counted neither as first touches nor as accesses; repeats the later
	// faults on known pages where no fault can be a NUMA hinting fault.
	afterLoss, repeats uint64
	// hinting says whether a fault can be a NUMA hinting fault: NUMA
	// balancing is on (or not known to be off) on a machine with more
	// than one node. Without it a later fault on a known page is never a
	// sampled access (memory unmapped and mapped again, copy-on-write,
	// reclaim).
	hinting bool
	// hugePages counts the 2 MiB regions found placed by one fault.
	hugePages uint64

	regions  map[int32][]region
	mapsRead map[int32]uint64 // batch stamp of the last /proc/PID/maps read
	mappings []Mapping        // [regionUnknown] is the unknown mapping
	mapIdx   map[mapKey]uint32

	sym *symbolizer
	dec decoded
	// syscalls are the syscall tracepoints opened (none: allocation sites
	// are not tracked and affinities are only polled).
	syscalls []openedEvent
	sysPend  map[int32]sysPending // by thread: an entry waiting for its exit
	allocs   map[int32][]allocRange
	brk      map[int32]uint64 // each process's program break, once seen
	sites    []allocSite      // [0] is "no site"
	siteIdx  map[siteKey]uint32
	appRet   map[pageKey]bool // isAppReturn's answers
	lineAt   map[pageKey]bool // hasLine's answers
	lastLine lineAnswer
	// lastLoc and lastThread are the last location and thread looked up.
	lastLoc    locKey
	lastLocM   *Metrics
	lastThread *threadState
	// lastCall is, by thread, the last call into code without lines whose
	// caller faultCaller found in the stack copy.
	lastCall map[int32]routineCall

	thp     thpState
	queries []nodeQuery // queryNodes' buffer
	pageBuf []uint64    // lookupNodes' buffer
	// statusBuf is movePages' buffer; oneQuery nodeNow's.
	statusBuf []int32
	oneQuery  [1]nodeQuery
	// oneNode: every page is on the one node; nothing to ask move_pages.
	oneNode bool
}

func newAnalyzer(cpuNode []int, pageNodes, threadNodes []int) *analyzer {
	a := &analyzer{
		cpuNode:     cpuNode,
		nodeIdx:     map[int]int{},
		rowIdx:      map[int]int{},
		pageSize:    uint64(os.Getpagesize()),
		pg:          newPageTracker(),
		threads:     map[int32]*threadState{},
		maps:        map[int32][]mapping{},
		parent:      map[int32]int32{},
		locs:        map[locKey]*Metrics{},
		stamp:       1,
		regions:     map[int32][]region{},
		mapsRead:    map[int32]uint64{},
		mappings:    []Mapping{{Kind: "unknown"}},
		mapIdx:      map[mapKey]uint32{{kind: "unknown"}: regionUnknown},
		threadNodes: threadNodes,
		pageNodes:   pageNodes,
		sym:         newSymbolizer(),
		sysPend:     map[int32]sysPending{},
		masks:       [][]byte{nil},
		allocs:      map[int32][]allocRange{},
		brk:         map[int32]uint64{},
		sites:       []allocSite{{}},
		siteIdx:     map[siteKey]uint32{},
		appRet:      map[pageKey]bool{},
		lineAt:      map[pageKey]bool{},
		lastCall:    map[int32]routineCall{},
		unplaced:    map[pageKey]uint8{},
		oneNode:     len(pageNodes) == 1,
		hinting:     len(pageNodes) > 1,
	}
	a.startNs = monotonicNs()
	// The live kernel, without the pagemap fallback and the exact
	// huge-page check (Run sets up the whole of it).
	a.kern = &procKernel{procRoot: "/proc", pageSize: a.pageSize, pagemaps: map[int32]*os.File{}}
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

func (a *analyzer) nodeOfCPU(cpu int32) int {
	if cpu >= 0 && int(cpu) < len(a.cpuNode) {
		return a.cpuNode[cpu]
	}
	return -1
}

// record handles one perf record. Samples are buffered for handleBatch;
// the rest (rare) are applied at once.
func (a *analyzer) record(rec []byte) {
	switch perfring.Type(rec) {
	case unix.PERF_RECORD_SAMPLE:
		s := &a.dec.sample
		if !perfring.DecodeSample(rec, s) {
			return
		}
		if s.Raw != nil {
			a.syscallSample(s)
			return
		}
		a.samples++
		r := rawSample{ip: s.IP, addr: s.Addr, time: s.Time, pid: s.PID, tid: s.TID, cpu: s.CPU}
		if !a.hasLine(s.PID, s.IP) {
			r.caller = a.faultCaller(s)
		}
		a.batch = append(a.batch, r)
	case unix.PERF_RECORD_MMAP2:
		m := &a.dec.mmap
		if !perfring.DecodeMmap2(rec, m) || m.Prot&unix.PROT_EXEC == 0 {
			return
		}
		a.maps[m.PID] = append(a.maps[m.PID], mapping{start: m.Start, end: m.Start + m.Len, pgoff: m.Pgoff, file: string(m.File)})
	case unix.PERF_RECORD_COMM:
		c := &a.dec.comm
		if !perfring.DecodeComm(rec, c) {
			return
		}
		t := a.thread(c.PID, c.TID)
		if string(c.Name) != t.comm {
			t.comm = string(c.Name)
		}
		if c.Exec {
			// An exec: the process's old pages are gone. Forget them in
			// time order, among the samples.
			a.batch = append(a.batch, rawSample{kind: evExec, time: c.Time, pid: c.PID, tid: c.TID})
		}
	case unix.PERF_RECORD_FORK:
		f := &a.dec.task
		if !perfring.DecodeTask(rec, f) {
			return
		}
		if f.PID != f.PPID {
			// A new process starts with its parent's mappings. They are
			// looked up in the parent at symbolization time rather than
			// copied now, since records from other CPUs' rings (the
			// parent's last mmaps) may not have been read yet.
			a.parent[f.PID] = f.PPID
		}
		t := a.thread(f.PID, f.TID)
		if p, ok := a.threads[f.PTID]; ok && t.comm == "" {
			t.comm = p.comm // a new thread or process has its parent's name until it execs
		}
		// Its affinity is its parent's at that moment: set in time order.
		a.batch = append(a.batch, rawSample{kind: evFork, time: f.Time, pid: f.PID, tid: f.TID, a0: uint64(f.PTID)})
	case unix.PERF_RECORD_EXIT:
		e := &a.dec.task
		if !perfring.DecodeTask(rec, e) {
			return
		}
		if t, ok := a.threads[e.TID]; ok {
			t.exited = true
		}
		delete(a.lastCall, e.TID) // its number may be reused
	case unix.PERF_RECORD_LOST:
		if n, ok := perfring.DecodeLost(rec); ok {
			a.lost += n
			// An munmap may have been among them: no page known until
			// now can be trusted to be the same memory (handleFault).
			a.lossEpoch++
		}
	}
}

// decoded holds the analyzer's decoded records, reused from one record to
// the next so that decoding allocates nothing.
type decoded struct {
	sample perfring.Sample
	mmap   perfring.Mmap2
	comm   perfring.Comm
	task   perfring.Task
}

// hasLine says whether a faulting instruction has line information, so that
// it is its own location. Answers are cached per address; an address not
// yet in a known mapping is asked again next time.
func (a *analyzer) hasLine(pid int32, ip uint64) bool {
	key := pageKey{pid, ip}
	if c := &a.lastLine; c.valid && c.key == key {
		return c.line // faults come in runs from one instruction
	}
	v, ok := a.lineAt[key]
	if !ok {
		fr, found := a.resolve(a.sym, pid, ip)
		if !found {
			return false
		}
		v = fr.Line > 0
		if len(a.lineAt) < 1<<16 {
			a.lineAt[key] = v
		}
	}
	a.lastLine = lineAnswer{key: key, line: v, valid: true}
	return v
}

// lineAnswer is hasLine's last answer.
type lineAnswer struct {
	key         pageKey
	line, valid bool
}

// routineCall is a fault in code without lines and the call that led to it.
type routineCall struct{ leaf, caller uint64 }

// routineSpan bounds how far apart two faulting instructions may be to be
// taken as the same routine (libc's string routines are a few hundred bytes
// to a few KiB).
const routineSpan = 1024

// faultCaller finds the application's call that led to a fault in code
// without line information (libc's memset, memcpy): the first word of the
// fault's stack copy that is a return address into code with lines, else
// the call chain's caller. The stack comes first because the chain's
// frame-pointer walk misses the innermost caller of a routine that sets up
// no frame, reporting its caller's caller. The result points inside the
// call instruction (0: none).
func (a *analyzer) faultCaller(s *perfring.Sample) uint64 {
	if ip, ok := a.appReturnIn(s.PID, s.Stack); ok {
		if c := (routineCall{s.IP, ip - 1}); a.lastCall[s.TID] != c {
			a.lastCall[s.TID] = c
		}
		return ip - 1
	}
	if s.StackCut {
		// The kernel's copy stopped short: it copies without faulting, and
		// a stack page was not mapped. The call into the routine wrote its
		// return address there, so the page was unmapped since, by the
		// NUMA balancing scanner, while the thread stayed in the routine:
		// the thread's last fault in the same routine (|leaf - ip| <
		// routineSpan) had the caller.
		if c, ok := a.lastCall[s.TID]; ok && c.leaf-s.IP+routineSpan < 2*routineSpan {
			return c.caller
		}
	}
	// The chain starts with PERF_CONTEXT_USER and the leaf IP; the next
	// address is the caller's return address.
	seenLeaf := false
	for i := 0; i < s.Chain.Len(); i++ {
		ip := s.Chain.At(i)
		if perfring.IsContext(ip) {
			continue
		}
		if !seenLeaf {
			seenLeaf = true
			continue
		}
		return ip - 1
	}
	return 0
}

func (a *analyzer) thread(pid, tid int32) *threadState {
	if t := a.lastThread; t != nil && t.tid == tid {
		return t
	}
	t, ok := a.threads[tid]
	if ok {
		a.lastThread = t
	} else {
		t = &threadState{tid: tid, pid: pid, node: -1}
		a.threads[tid] = t
		if a.syscalls == nil {
			a.readAffinity(t, "start", 0)
		}
		// Otherwise affinity changes are followed in time order: the
		// thread's first affinity is its parent's at the fork (evFork),
		// not what it may have changed to by the time its record is read.
	}
	return t
}

// pollAffinity reads a thread's affinity at most once per round: the way
// changes made from outside the program (taskset -p, cpusets) are seen, and
// all changes when the sched_setaffinity tracepoints are not available.
// With them, a change is applied only when the next round still shows it
// and no sched_setaffinity explained it meanwhile: /proc shows the new mask
// a moment before the call's exit event is written.
func (a *analyzer) pollAffinity(t *threadState) {
	if t.seen == a.stamp || t.exited {
		return
	}
	t.seen = a.stamp
	if a.syscalls == nil || t.status == "" {
		via := "poll"
		if t.status == "" {
			via = "start"
		}
		a.readAffinity(t, via, 0)
		return
	}
	list, cpus, ok := a.affinityOf(t)
	switch {
	case !ok || list == t.status:
		t.polled = ""
	case list == t.polled:
		t.polled = ""
		a.setAffinity(t, list, cpus, "poll", 0)
	default:
		t.polled = list
	}
}

// readAffinity reads a thread's Cpus_allowed_list and logs a change, saying
// how it was seen (via) and when (at, a sample time; 0: now).
func (a *analyzer) readAffinity(t *threadState, via string, at uint64) {
	if t.exited {
		return
	}
	if list, cpus, ok := a.affinityOf(t); ok {
		a.setAffinity(t, list, cpus, via, at)
	}
}

// affinityOf reads a thread's Cpus_allowed_list.
func (a *analyzer) affinityOf(t *threadState) (string, []int, bool) {
	list, ok := a.kern.Affinity(t.pid, t.tid)
	if !ok {
		return "", nil, false
	}
	cpus, err := sysfs.ParseCPUList(list)
	if err != nil {
		return "", nil, false
	}
	return list, cpus, true
}

// sinceStart is the seconds from the start of the profile to t, a
// CLOCK_MONOTONIC time (a sample's or monotonicNs()).
func (a *analyzer) sinceStart(t uint64) float64 { return float64(int64(t-a.startNs)) / 1e9 }

// setAffinity applies an affinity to a thread and logs it if it changed.
func (a *analyzer) setAffinity(t *threadState, list string, cpus []int, via string, at uint64) {
	if list == t.status {
		return
	}
	t.status, t.cpus = list, cpus
	set := map[int]bool{}
	for _, c := range cpus {
		if n := a.nodeOfCPU(int32(c)); n >= 0 {
			set[n] = true
		}
	}
	t.nodes = t.nodes[:0:0]
	for n := range set {
		t.nodes = append(t.nodes, n)
	}
	sort.Ints(t.nodes)
	t.node = -1
	if len(t.nodes) == 1 {
		t.node = t.nodes[0]
	}
	if at == 0 {
		at = monotonicNs()
	}
	t.log = append(t.log, Binding{TimeS: a.sinceStart(at), CPUs: list, Nodes: append([]int(nil), t.nodes...), Via: via})
}

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
	a.sortBatch()
	n := sort.Search(len(a.batch), func(i int) bool { return a.batch[i].time > horizon })
	later := a.batch[n:]
	a.batch = a.batch[:n]
	if a.syscalls == nil {
		// Without sched_setaffinity events, poll first: read after the
		// faults it is applied to, so a thread that pins itself and then
		// touches its memory counts as pinned.
		for i := range a.batch {
			s := &a.batch[i]
			a.pollAffinity(a.thread(s.pid, s.tid))
		}
	}
	for i := range a.batch {
		a.handle(&a.batch[i])
	}
	if a.syscalls != nil {
		// The program's own changes were applied in time order above;
		// polling now catches changes made from outside it.
		for i := range a.batch {
			s := &a.batch[i]
			a.pollAffinity(a.thread(s.pid, s.tid))
		}
	}
	a.batch = a.batch[:copy(a.batch[:cap(a.batch)], later)]
	a.keepMasks()
	a.queryNodes()
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

func (a *analyzer) handle(s *rawSample) {
	switch s.kind {
	case evFault:
	case evExec:
		a.forgetProcess(s.pid)
		return
	case evFork:
		t := a.thread(s.pid, s.tid)
		if p := a.threads[int32(s.a0)]; t.status == "" && p != nil && p.status != "" {
			a.setAffinity(t, p.status, p.cpus, "start", s.time)
		}
		return
	default:
		a.handleSyscall(s)
		return
	}
	a.handleFault(s)
}

// forgetProcess drops what is known of a process's memory when it execs.
func (a *analyzer) forgetProcess(pid int32) {
	a.pg.forget(pid)
	delete(a.regions, pid)
	delete(a.allocs, pid)
	delete(a.brk, pid)
}

// handleFault classifies a page fault: a first touch or a sampled access.
func (a *analyzer) handleFault(s *rawSample) {
	t := a.thread(s.pid, s.tid)
	if t.status == "" {
		a.pollAffinity(t) // not seen at a fork (its parent's affinity unknown): its start
	}
	key := pageKey{s.pid, s.addr &^ (a.pageSize - 1)}
	lk := locKey{pid: s.pid, ip: s.ip, caller: s.caller}
	ps, touched := a.pg.get(key)
	var firsts uint16 // first touches seen in the page's region
	if !touched {
		var h hugeState
		var isHuge bool
		if h, isHuge, firsts = a.pg.untouched(regionOf(key), !a.thp.off); isHuge {
			// Placed by an earlier huge-page fault, counted there; a fault
			// here now is an access (after a split or a hinting unmap).
			site := a.siteAt(s.pid, s.addr)
			ps, touched = pageState{node: h.node, mapping: a.mappingFor(s.pid, key.page, site), site: site, epoch: h.epoch}, true
			a.pg.set(key, ps)
		}
	}
	if !touched {
		site := a.siteAt(s.pid, s.addr)
		// Where the memory came from: /proc/PID/maps, read again at most
		// once a round, after the drain, so it has every mapping made
		// before this fault (unless already unmapped again).
		mapping := a.mappingFor(s.pid, key.page, site)
		a.pg.set(key, pageState{node: int16(a.nodeOfCPU(s.cpu)), unsure: !a.oneNode, unpinnedOwner: t.node < 0, site: site, mapping: mapping, epoch: a.lossEpoch})
		var d Metrics
		d.FirstTouch = 1
		if t.node < 0 {
			d.UnpinnedFirstTouch = 1
		}
		a.credit(t, lk, mapping, site, &d)
		a.pending = append(a.pending, pendingFirst{key: key, loc: lk, tid: t.tid, unpinned: t.node < 0, maybeHuge: firsts == 1})
		return
	}
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
		a.pg.set(key, ps)
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
		if n := a.nodeNow(key); n >= 0 {
			ps.node = int16(n)
		}
	}
	acc := a.nodeOfCPU(s.cpu)
	var d Metrics
	if int(ps.node) == acc {
		d.Local = 1
	} else {
		d.Remote = 1
	}
	// A remote access's hinting fault may migrate the page toward acc.
	ps.unsure = d.Remote != 0
	if wasUnsure || ps.unsure {
		a.pg.set(key, ps)
	}
	switch {
	case t.node < 0 && ps.unpinnedOwner:
		d.UnpinnedBoth = 1
	case t.node < 0:
		d.UnpinnedThread = 1
	case ps.unpinnedOwner:
		d.UnpinnedPage = 1
	}
	a.credit(t, lk, ps.mapping, ps.site, &d)
	if r, ok := a.rowIdx[t.node]; ok {
		if c, ok := a.nodeIdx[int(ps.node)]; ok {
			a.matrix[r][c]++
		}
	}
	a.refresh = append(a.refresh, refreshQ{key: key, acc: int16(acc)})
}

// refreshQ is a sampled access whose page's node is asked at the end of the
// round: the hinting fault may have migrated it toward acc, the accessing
// CPU's node.
type refreshQ struct {
	key pageKey
	acc int16
}

// credit adds d to the whole run and to the code, thread (if still known),
// mapping and allocation site it belongs to.
func (a *analyzer) credit(t *threadState, lk locKey, mapping, site uint32, d *Metrics) {
	a.totals.add(d)
	if t != nil {
		t.metrics.add(d)
	}
	a.loc(lk).add(d)
	a.mappings[mapping].Metrics.add(d)
	a.sites[site].metrics.add(d)
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
			ps.node, ps.unsure = q[i].node, false
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

// nodeNow asks where one page is now (lookupNodes for one page): -1 when
// neither move_pages nor pagemap knows.
func (a *analyzer) nodeNow(key pageKey) int {
	a.oneQuery[0] = nodeQuery{key: key, pend: -1, acc: -1, node: -1}
	a.lookupNodes(a.oneQuery[:])
	return int(a.oneQuery[0].node)
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
