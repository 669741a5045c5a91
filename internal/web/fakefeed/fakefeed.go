// Package fakefeed is a top.Feed with made-up processes, for the tests of
// the processes page of `numascope live`: the Go tests of its endpoints and
// the browser test, which runs the real live server with this feed
// (fakelive). Its frames hold what the page must cope with: a process with
// no fault source, one with no per-node memory, PMU figures on one row
// only, and names that are HTML.
package fakefeed

import (
	"fmt"
	"sync"
	"time"

	"github.com/numascope/numascope/internal/top"
)

// Hostile is the command (and user) of one process: it runs script if a
// page ever parses it as HTML.
const Hostile = `<img src=x onerror="self['__pwned']='comm';document['title']='pwned'">`

// HostilePID is that process's PID.
const HostilePID = 666

// Feed is a fake top.Feed; it is safe for concurrent use, so that a test
// catches a server that calls it concurrently only through Concurrent.
type Feed struct {
	mu         sync.Mutex
	refreshes  int
	details    int
	sort       top.SortKey
	filter     string
	busy       bool
	concurrent bool
	fail       error
	idle       int
	noFaults   bool
	// Delay is how long each Refresh takes (a /proc walk).
	Delay time.Duration
}

// AddIdle adds n made-up idle processes to every frame from now on, for
// answers the size of a busy machine's.
func (f *Feed) AddIdle(n int) { f.mu.Lock(); f.idle += n; f.mu.Unlock() }

// NoFaults makes the next frames like a machine's without a kernel event
// source: no process has fault rates or pages migrated.
func (f *Feed) NoFaults() { f.mu.Lock(); f.noFaults = true; f.mu.Unlock() }

// New returns a feed whose first frame is like a collector's first:
// Interval 0.
func New() *Feed { return &Feed{sort: top.SortRemote} }

// Refreshes is how many times Refresh was called.
func (f *Feed) Refreshes() int { f.mu.Lock(); defer f.mu.Unlock(); return f.refreshes }

// Details is how many times Detail was called.
func (f *Feed) Details() int { f.mu.Lock(); defer f.mu.Unlock(); return f.details }

// Fail makes the next Refreshes return err (nil: frames again).
func (f *Feed) Fail(err error) { f.mu.Lock(); f.fail = err; f.mu.Unlock() }

// Sort and Filter are what SetSort and SetFilter last set.
func (f *Feed) Sort() top.SortKey { f.mu.Lock(); defer f.mu.Unlock(); return f.sort }

// Filter is what SetFilter last set.
func (f *Feed) Filter() string { f.mu.Lock(); defer f.mu.Unlock(); return f.filter }

// Concurrent reports whether two calls ever overlapped.
func (f *Feed) Concurrent() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.concurrent }

func (f *Feed) enter() {
	f.mu.Lock()
	if f.busy {
		f.concurrent = true
	}
	f.busy = true
	f.mu.Unlock()
}

func (f *Feed) leave() { f.mu.Lock(); f.busy = false; f.mu.Unlock() }

// SetSort implements top.Feed.
func (f *Feed) SetSort(k top.SortKey) {
	f.enter()
	defer f.leave()
	f.mu.Lock()
	f.sort = k
	f.mu.Unlock()
}

// SetFilter implements top.Feed.
func (f *Feed) SetFilter(s string) {
	f.enter()
	defer f.leave()
	f.mu.Lock()
	f.filter = s
	f.mu.Unlock()
}

const (
	mib = 1 << 20
	gib = 1 << 30
)

// Refresh implements top.Feed: the same processes every time, with the
// frame's number in its rates so that a test sees a new frame arrive.
func (f *Feed) Refresh() (*top.Frame, error) {
	f.enter()
	defer f.leave()
	time.Sleep(f.Delay)
	f.mu.Lock()
	f.refreshes++
	n, fail, idle, noFaults := f.refreshes, f.fail, f.idle, f.noFaults
	f.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	iv := 1.0
	if n == 1 {
		iv = 0
	}
	k := float64(n)
	fr := &top.Frame{
		Time:     time.Unix(1_800_000_000+int64(n), 0).UTC(),
		Interval: iv,
		Processes: []top.Process{
			{PID: 4242, Comm: "serial-init", User: "alice", Threads: 4, CPUPercent: 180, RSSBytes: 2 * gib,
				MemoryByNode: map[string]uint64{"0": 1843 * mib, "1": 205 * mib}, MemoryAge: 2,
				NodesRunning: []int{1}, PreferredNode: 0,
				NUMAFaults: &top.Faults{Local: 120, Remote: 9000 + k}, PagesMigrated: f64(300),
				PMU: &top.Faults{Local: 1.5e6, Remote: 6.25e6}, Cgroup: "/user.slice"},
			{PID: 77, Comm: "postgres", User: "postgres", Threads: 12, CPUPercent: 40, RSSBytes: 512 * mib,
				MemoryByNode: map[string]uint64{"0": 256 * mib, "1": 256 * mib},
				NodesRunning: []int{0, 1}, PreferredNode: 1,
				NUMAFaults: &top.Faults{Local: 3000, Remote: 100}, PagesMigrated: f64(20)},
			{PID: HostilePID, Comm: Hostile, User: Hostile, Threads: 1, CPUPercent: 5, RSSBytes: 10 * mib,
				NodesRunning: []int{0}, PreferredNode: -1,
				NUMAFaults: &top.Faults{Local: 50, Remote: 10}},
			// A kernel thread, hidden unless asked for; no fault rates,
			// the recent share of sched's decayed faults.
			{PID: 5, Comm: "kworker/0:1", User: "root", Threads: 1, CPUPercent: 0.5, KernelThread: true,
				NodesRunning: []int{0}, PreferredNode: -1, RecentRemoteShare: f64(0.78)},
		},
		Nodes: []top.Node{
			{Node: 0, CPUs: []int{0, 1}, MemTotal: 8 * gib, MemFree: 3 * gib, MemUsed: 5 * gib, CPUPercent: 12,
				NUMAFaults: &top.Faults{Local: 3170, Remote: 9010 + k}, PagesMigrated: 320, Demoted: 4, NUMAHit: 1e5, NUMAMiss: 20},
			{Node: 1, CPUs: []int{2, 3}, MemTotal: 8 * gib, MemFree: 6 * gib, MemUsed: 2 * gib, CPUPercent: 95,
				NUMAFaults: &top.Faults{Local: 120, Remote: 100}, Promoted: 2, NUMAHit: 4e4, NUMAMiss: 9000},
		},
		Migrations: map[string]float64{"numa_misplaced": 320, "compaction": 7},
		Source: top.Source{
			Faults:     "kprobe:task_numa_fault",
			Migrations: "tracepoint:migrate:mm_migrate_pages",
			Memory:     "numa_maps of the top 20, every 5 s",
			PMU:        "fake-offcore",
			Missing: []string{
				"cgroups: not asked for (--cgroup)",
				"PMU figures of " + Hostile + ": none",
			},
		},
	}
	for i := range idle {
		fr.Processes = append(fr.Processes, top.Process{PID: 10000 + i, Comm: "idle", User: "nobody",
			Threads: 1, NodesRunning: []int{0}, PreferredNode: -1, NUMAFaults: &top.Faults{}})
	}
	if noFaults {
		fr.Source.Faults = ""
		for i := range fr.Processes {
			fr.Processes[i].NUMAFaults, fr.Processes[i].PagesMigrated = nil, nil
		}
	}
	return fr, nil
}

// Detail implements top.Feed; PIDs other than the frame's are gone.
func (f *Feed) Detail(pid int) (*top.Detail, error) {
	f.enter()
	defer f.leave()
	f.mu.Lock()
	f.details++
	f.mu.Unlock()
	switch pid {
	case 4242:
		return &top.Detail{PID: pid, Comm: "serial-init",
			Threads: []top.Thread{
				{TID: 4242, Comm: "serial-init", CPUPercent: 1, CPU: 0, Node: 0, PreferredNode: 0, NUMAFaults: &top.Faults{Local: 100, Remote: 0}},
				{TID: 4243, Comm: "worker-1", CPUPercent: 60, CPU: 2, Node: 1, PreferredNode: 0, NUMAFaults: &top.Faults{Remote: 3000}},
				{TID: 4244, Comm: "worker-2", CPUPercent: 60, CPU: 3, Node: 1, PreferredNode: 0, NUMAFaults: &top.Faults{Remote: 3000}},
				{TID: 4245, Comm: "worker-3", CPUPercent: 59, CPU: 3, Node: 1, PreferredNode: -1},
			},
			Areas: []top.Area{
				{Start: 0x7f0000000000, Kind: "anon", Policy: "default", BytesByNode: map[string]uint64{"0": 1800 * mib, "1": 200 * mib}},
				{Start: 0x55d000000000, Kind: "heap", Policy: "default", BytesByNode: map[string]uint64{"0": 43 * mib}},
				{Start: 0x7f1000000000, Kind: "file", Path: "/usr/lib/libc.so.6", Policy: "default", BytesByNode: map[string]uint64{"1": 5 * mib}},
			},
			MemoryByNode: map[string]uint64{"0": 1843 * mib, "1": 205 * mib},
			MemoryByCategory: &top.MemoryCategories{Huge: map[string]uint64{}, Heap: map[string]uint64{"0": 43 * mib},
				Stack: map[string]uint64{}, Private: map[string]uint64{"0": 1800 * mib, "1": 205 * mib}},
			Hint: "90% of its memory is on node 0 while its threads run on node 1",
		}, nil
	case HostilePID:
		return &top.Detail{PID: pid, Comm: Hostile,
			Threads: []top.Thread{{TID: pid, Comm: Hostile, CPU: 0, Node: 0, PreferredNode: -1}},
			Areas:   []top.Area{{Start: 0x400000, Kind: "file", Path: "/tmp/" + Hostile, Policy: "default", BytesByNode: map[string]uint64{"0": 4096}}},
			Hint:    "its memory is at " + Hostile,
			Errors:  []string{"numa_maps of " + Hostile + ": permission denied"},
		}, nil
	}
	return nil, fmt.Errorf("process %d is gone", pid)
}

// f64 is a pointer to v, for the optional figures.
func f64(v float64) *float64 { return &v }
