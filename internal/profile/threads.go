package profile

// Threads and their CPU affinity: which node a thread is pinned to when it
// touches a page, followed through sched_setaffinity events in time order,
// and polled for changes made from outside the program.

import (
	"sort"

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
	seen     uint64 // batch stamp of the last polled affinity read
	polled   string // a polled affinity waiting to be confirmed
	metrics  Metrics
	log      []Binding
	mem      memoryAnswer // memoryOf's last answer for the thread
}

// thread returns the thread tid, new if not known (of process pid).
func (a *analyzer) thread(pid, tid int32) *threadState {
	// The threads seen last, one per slot by tid: a storm's faulting
	// threads take turns, and consecutive tids take different slots.
	// Threads are never dropped from a.threads, so a slot is never stale.
	slot := &a.threadCache[uint32(tid)%uint32(len(a.threadCache))]
	if t := *slot; t != nil && t.tid == tid {
		return t
	}
	t, ok := a.threads[tid]
	if ok {
		*slot = t
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
