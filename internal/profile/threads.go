package profile

// The thread tracker: which threads the program has, what they are called,
// and where each may run over time. A thread pinned to the CPUs of one node
// has that node for the access matrix and the "unpinned" metrics; its
// affinity is followed through sched_setaffinity events in time order, and
// polled for changes made from outside the program.

import (
	"slices"

	"github.com/numascope/numascope/internal/sysfs"
)

type threadState struct {
	tid, pid int32
	comm     string
	cpus     []int
	nodes    []int
	node     int // the one node of a pinned thread, -1 when unpinned
	status   string
	exited   bool
	seen     uint64 // round of the last polled affinity read
	polled   string // a polled affinity waiting to be confirmed
	metrics  Metrics
	log      []Binding
	mem      memoryAnswer // memoryOf's last answer for the thread
}

// threadTracker owns every thread seen, by tid. Threads are never dropped
// (a profile lists each with its metrics), so a pointer to one stays valid
// for the whole run.
type threadTracker struct {
	byTID map[int32]*threadState
	// cache holds the threads seen last, one per slot by tid: a storm's
	// faulting threads take turns, and consecutive tids take different
	// slots. Since threads are never dropped, a slot is never stale.
	cache [256]*threadState
	// cpuNode maps a CPU to its node (-1: none).
	cpuNode []int
	// kern reads affinities; startNs dates the binding log.
	kern    kernel
	startNs uint64
	// followed: the sched_setaffinity tracepoints are open, so the
	// program's own changes arrive as events in time order, and a poll
	// only catches changes made from outside (see poll).
	followed bool
	// round is the analyzer's round: a thread's affinity is polled at
	// most once in each.
	round uint64
}

func newThreadTracker(cpuNode []int, k kernel, startNs uint64) threadTracker {
	return threadTracker{byTID: map[int32]*threadState{}, cpuNode: cpuNode, kern: k, startNs: startNs}
}

// setKernel makes k the kernel affinities are read from.
func (tt *threadTracker) setKernel(k kernel) { tt.kern = k }

// follow says whether the sched_setaffinity tracepoints are open.
func (tt *threadTracker) follow(on bool) { tt.followed = on }

// beginRound starts the analyzer's round stamp, whose records are now.
// Without sched_setaffinity events the affinities of their threads are
// polled first: read after the faults they are applied to, so that a
// thread that pins itself and then touches its memory counts as pinned.
func (tt *threadTracker) beginRound(stamp uint64, now []rawSample) {
	tt.round = stamp
	if !tt.followed {
		tt.pollAll(now)
	}
}

// endRound ends the round of records now: with sched_setaffinity events,
// the program's own changes were applied in time order, and polling now
// catches changes made from outside it.
func (tt *threadTracker) endRound(now []rawSample) {
	if tt.followed {
		tt.pollAll(now)
	}
}

// pollAll polls the thread of each record.
func (tt *threadTracker) pollAll(now []rawSample) {
	for i := range now {
		s := &now[i]
		tt.poll(tt.get(s.pid, s.tid))
	}
}

// get returns the thread tid, new if not known (of process pid).
func (tt *threadTracker) get(pid, tid int32) *threadState {
	slot := &tt.cache[uint32(tid)%uint32(len(tt.cache))]
	if t := *slot; t != nil && t.tid == tid {
		return t
	}
	t, ok := tt.byTID[tid]
	if !ok {
		t = &threadState{tid: tid, pid: pid, node: -1}
		tt.byTID[tid] = t
		if !tt.followed {
			tt.read(t, "start", 0)
		}
		// Otherwise affinity changes are followed in time order: the
		// thread's first affinity is its parent's at the fork (see
		// forked), not what it may have changed to by the time its
		// record is read.
	}
	*slot = t
	return t
}

// known returns the thread tid if it has been seen.
func (tt *threadTracker) known(tid int32) (*threadState, bool) {
	t, ok := tt.byTID[tid]
	return t, ok
}

// threadOp is what a threadChange does.
type threadOp uint8

const (
	// threadForked: thread tid of process pid was created by thread
	// parent at time at.
	threadForked threadOp = iota + 1
	// threadAffinity: thread tid's affinity was set at time at by the
	// program (sched_setaffinity), to mask (nil: the mask was not in the
	// stack copy, and must be read).
	threadAffinity
)

// threadChange is a change to a thread that the records tell in time order
// with the faults: its creation, which gives it its parent's affinity, or
// an affinity the program set. The thread tracker applies it to itself
// (change), as each tracker of memory applies a memChange.
type threadChange struct {
	op               threadOp
	pid, tid, parent int32
	mask             []byte
	at               uint64
}

// change applies c, a change told in time order with the faults.
func (tt *threadTracker) change(c *threadChange) {
	switch c.op {
	case threadForked:
		tt.forked(tt.get(c.pid, c.tid), c.parent, c.at)
	case threadAffinity:
		tt.setAffinity(c.tid, c.mask, c.at)
	}
}

// forked gives a new thread its parent's affinity at the fork, at time at,
// when the parent's is known and the child's is not yet.
func (tt *threadTracker) forked(t *threadState, parent int32, at uint64) {
	if p := tt.byTID[parent]; t.status == "" && p != nil && p.status != "" {
		tt.set(t, p.status, p.cpus, "start", at)
	}
}

// exited marks a thread gone: its affinity is no longer read.
func (tt *threadTracker) exited(tid int32) {
	if t, ok := tt.byTID[tid]; ok {
		t.exited = true
	}
}

// poll reads a thread's affinity at most once per round: the way changes
// made from outside the program (taskset -p, cpusets) are seen, and all
// changes when the sched_setaffinity tracepoints are not available. With
// them, a change is applied only when the next round still shows it and no
// sched_setaffinity explained it meanwhile: /proc shows the new mask a
// moment before the call's exit event is written.
func (tt *threadTracker) poll(t *threadState) {
	if t.seen == tt.round || t.exited {
		return
	}
	t.seen = tt.round
	if !tt.followed || t.status == "" {
		via := "poll"
		if t.status == "" {
			via = "start"
		}
		tt.read(t, via, 0)
		return
	}
	list, cpus, ok := tt.affinityOf(t)
	switch {
	case !ok || list == t.status:
		t.polled = ""
	case list == t.polled:
		t.polled = ""
		tt.set(t, list, cpus, "poll", 0)
	default:
		t.polled = list
	}
}

// read reads a thread's Cpus_allowed_list and logs a change, saying how it
// was seen (via) and when (at, a sample time; 0: now).
func (tt *threadTracker) read(t *threadState, via string, at uint64) {
	if t.exited {
		return
	}
	if list, cpus, ok := tt.affinityOf(t); ok {
		tt.set(t, list, cpus, via, at)
	}
}

// affinityOf reads a thread's Cpus_allowed_list.
func (tt *threadTracker) affinityOf(t *threadState) (string, []int, bool) {
	list, ok := tt.kern.Affinity(t.pid, t.tid)
	if !ok {
		return "", nil, false
	}
	cpus, err := sysfs.ParseCPUList(list)
	if err != nil {
		return "", nil, false
	}
	return list, cpus, true
}

// setAffinity applies the affinity a sched_setaffinity call of thread tid
// set at time at: mask, or, when the call's mask was not seen (nil), the
// thread's affinity read now.
func (tt *threadTracker) setAffinity(tid int32, mask []byte, at uint64) {
	t, ok := tt.byTID[tid]
	if !ok {
		return
	}
	if mask == nil {
		tt.read(t, "sched_setaffinity", at)
		return
	}
	tt.setMask(t, mask, at)
}

// setMask applies a sched_setaffinity mask (a bitmap of CPUs) at time at.
// The kernel keeps only the online CPUs of the mask (and those of the
// thread's cpuset, which a later poll shows).
func (tt *threadTracker) setMask(t *threadState, mask []byte, at uint64) {
	var cpus []int
	for c := range len(mask) * 8 {
		if mask[c/8]&(1<<(c%8)) != 0 && c < len(tt.cpuNode) && tt.cpuNode[c] >= 0 {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) > 0 {
		tt.set(t, sysfs.FormatCPUList(cpus), cpus, "sched_setaffinity", at)
	}
}

// set applies an affinity to a thread and logs it if it changed.
func (tt *threadTracker) set(t *threadState, list string, cpus []int, via string, at uint64) {
	if list == t.status {
		return
	}
	t.status, t.cpus = list, cpus
	t.nodes = t.nodes[:0:0]
	for _, c := range cpus {
		if c >= 0 && c < len(tt.cpuNode) && tt.cpuNode[c] >= 0 {
			t.nodes = append(t.nodes, tt.cpuNode[c])
		}
	}
	slices.Sort(t.nodes)
	t.nodes = slices.Compact(t.nodes)
	t.node = -1
	if len(t.nodes) == 1 {
		t.node = t.nodes[0]
	}
	if at == 0 {
		at = monotonicNs()
	}
	t.log = append(t.log, Binding{TimeS: float64(int64(at-tt.startNs)) / 1e9, CPUs: list, Nodes: append([]int(nil), t.nodes...), Via: via})
}

// all returns every thread seen, by tid.
func (tt *threadTracker) all() []*threadState {
	ts := make([]*threadState, 0, len(tt.byTID))
	for _, t := range tt.byTID {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(x, y *threadState) int { return int(x.tid) - int(y.tid) })
	return ts
}
