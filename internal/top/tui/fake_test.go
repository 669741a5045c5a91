package tui

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/numascope/numascope/internal/top"
)

// Names a hostile local user can give a process (comm is any 15 bytes the
// process writes to /proc/self/comm) or a file or cgroup: a window-title
// OSC, a screen clear, a blink, a line break and a lone C1 CSI byte. Shown
// sanitised they read "]2;PWNED[2Jevil" and so on, and do nothing.
const (
	hostileComm  = "\x1b]2;PWNED\x07\x1b[2Jevil"
	hostileShown = "]2;PWNED[2Jevil"
	hostileUser  = "mal\x1b[8mlory"
	hostilePath  = "/tmp/\x1b[5mblink\n\x9b6n.so"
	hostileGroup = "/user.slice/\x1b[31mred\x07"
	serialHint   = "78% of its memory is on node 0 while its threads run on nodes 1-3"
)

// fakeFeed stands in for the Collector: deterministic processes whose order
// differs by each sort key, a node view, cgroups and drill-downs. It sorts
// and filters as the Collector does, and records what the TUI asked of it.
type fakeFeed struct {
	mu      sync.Mutex
	calls   int // Refresh calls
	details int // Detail calls
	sort    top.SortKey
	filter  string
	err     error    // returned by the next Refreshes while set
	pmu     string   // Source.PMU
	missing []string // Source.Missing, when set
	// recent, when set, is the hostile process's RecentRemoteShare.
	recent *float64
	// kthreads adds that many idle kernel threads (PIDs 2, 3, ...);
	// noFaults makes the frames those of a machine without an event
	// source: no fault rates, no pages migrated, four missing sources.
	kthreads int
	noFaults bool
	// drilled is the PIDs Detail has read: as the collector, the first
	// drill-down of a process has no thread CPU% yet (nil), the next ones 1%.
	drilled map[int]bool
}

func newFakeFeed() *fakeFeed { return &fakeFeed{sort: top.SortRemote} }

var fakeStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func gib(x float64) uint64 { return uint64(x * (1 << 30)) }

func fakeProcesses() []top.Process {
	return []top.Process{
		{PID: 4242, Comm: "serialinit", User: "alice", Threads: 4, CPUPercent: 350, RSSBytes: gib(8),
			MemoryByNode: map[string]uint64{"0": gib(6.25), "1": gib(0.5), "2": gib(0.5), "3": gib(0.75)},
			NodesRunning: []int{1, 2, 3}, PreferredNode: 0, NUMAFaults: &top.Faults{Local: 120, Remote: 9800},
			PagesMigrated: f64(40), PMU: &top.Faults{Local: 1000, Remote: 50000}, Cgroup: "/system.slice/db.service"},
		{PID: 1717, Comm: "cpuhog", User: "bob", Threads: 8, CPUPercent: 780, RSSBytes: 100 << 20,
			MemoryByNode: map[string]uint64{"1": 100 << 20}, NodesRunning: []int{1}, PreferredNode: 1,
			NUMAFaults: &top.Faults{Local: 5, Remote: 1}},
		{PID: 3131, Comm: "localhero", User: "carol", Threads: 2, CPUPercent: 200, RSSBytes: gib(2),
			MemoryByNode: map[string]uint64{"2": gib(2)}, NodesRunning: []int{2}, PreferredNode: 2,
			NUMAFaults: &top.Faults{Local: 5000, Remote: 10}, PagesMigrated: f64(3)},
		{PID: 666, Comm: hostileComm, User: hostileUser, Threads: 1, CPUPercent: 1, RSSBytes: 1 << 20,
			NodesRunning: []int{0}, PreferredNode: -1, Cgroup: hostileGroup},
		{PID: 999, Comm: "ghost", User: "dave", Threads: 1, RSSBytes: 4 << 20, NodesRunning: []int{3},
			PreferredNode: -1, NUMAFaults: &top.Faults{}},
		{PID: 1, Comm: "systemd", User: "root", Threads: 1, CPUPercent: 0.5, RSSBytes: 12 << 20,
			NodesRunning: []int{0}, PreferredNode: -1, NUMAFaults: &top.Faults{}},
	}
}

func fakeFrame(n int, pmu string) *top.Frame {
	f := &top.Frame{
		Time:      fakeStart.Add(time.Duration(n) * time.Second),
		Interval:  1,
		Processes: fakeProcesses(),
		Cgroups: []top.Cgroup{
			{Path: "/system.slice/db.service", Processes: 3, CPUPercent: 352,
				MemoryByNode: map[string]uint64{"0": gib(6), "1": gib(1)}, NUMAFaults: &top.Faults{Local: 125, Remote: 9801},
				HintFaults: 9926, PagesMigrated: 43},
			{Path: hostileGroup, Processes: 1, CPUPercent: 1, NUMAFaults: nil, HintFaults: -1, PagesMigrated: -1},
		},
		Migrations: map[string]float64{"numa_misplaced": 40, "demotion": 2.5, "compaction": 0},
		Source: top.Source{
			Faults: "kprobe:task_numa_fault", Migrations: "tracepoint:migrate:mm_migrate_pages",
			Memory: "numa_maps of the top 20, every 5 s", PMU: pmu, Lost: 3,
			Missing: []string{"PMU: no DRAM preset for this CPU (GenuineIntel 6/207)"},
		},
	}
	if n == 1 {
		f.Interval = 0 // the first frame has no rates
	}
	for i := range 4 {
		f.Nodes = append(f.Nodes, top.Node{Node: i, CPUs: []int{4 * i, 4*i + 1, 4*i + 2, 4*i + 3},
			MemTotal: gib(16), MemUsed: gib(float64(1 + i)), MemFree: gib(float64(15 - i)), CPUPercent: float64(10 * i),
			NUMAFaults: &top.Faults{Local: float64(100 * i), Remote: float64(1000 * i)}, PagesMigrated: float64(i),
			Promoted: 0, Demoted: float64(i) / 2, NUMAHit: 12345, NUMAMiss: float64(7 * i)})
	}
	return f
}

func (f *fakeFeed) Refresh() (*top.Frame, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	fr := fakeFrame(f.calls, f.pmu)
	if f.missing != nil {
		fr.Source.Missing = f.missing
	}
	if f.recent != nil {
		for i := range fr.Processes {
			if fr.Processes[i].PID == 666 {
				fr.Processes[i].RecentRemoteShare = f.recent
			}
		}
	}
	for i := range f.kthreads {
		fr.Processes = append(fr.Processes, top.Process{PID: 2 + i, Comm: "kworker/" + strconv.Itoa(i), User: "root",
			Threads: 1, KernelThread: true, NodesRunning: []int{0}, PreferredNode: -1, MemoryByNode: map[string]uint64{}})
	}
	if f.noFaults {
		fr.Source.Faults, fr.Source.Migrations, fr.Migrations = "", "", nil
		fr.Cgroups = nil // not started with --cgroup
		fr.Source.Missing = []string{
			"fault and migration rates: the kprobe on task_numa_fault needs root and a kernel with kprobe events",
			"migrations by reason: the tracepoint migrate:mm_migrate_pages is not readable here",
			"pages migrated per process and REM% (marked ~: the remote share of the NUMA balancer's recent, decayed faults, no rate): read from the threads' /proc/PID/task/TID/sched for the first 20 processes only",
			"PMU local/remote DRAM loads: this machine has no PMU (/sys/bus/event_source/devices has no core PMU: a virtual machine without a virtual PMU, or a kernel without PMU support)",
		}
		for i := range fr.Processes {
			fr.Processes[i].NUMAFaults, fr.Processes[i].PagesMigrated = nil, nil
		}
	}
	fr.Processes = filterProcesses(fr.Processes, f.filter)
	fr.Sort, fr.SortNote = top.ResolveSort(fr.Processes, f.sort)
	sortProcesses(fr.Processes, fr.Sort)
	sortCgroups(fr.Cgroups, f.sort)
	return fr, nil
}

func (f *fakeFeed) Detail(pid int) (*top.Detail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.details++
	i := slices.IndexFunc(fakeProcesses(), func(p top.Process) bool { return p.PID == pid })
	if i < 0 || pid == 999 {
		return nil, errors.New("process 999 has exited")
	}
	p := fakeProcesses()[i]
	var cpu *float64
	if f.drilled[pid] {
		cpu = f64(1)
	}
	if f.drilled == nil {
		f.drilled = map[int]bool{}
	}
	f.drilled[pid] = true
	d := &top.Detail{PID: pid, Comm: p.Comm,
		Threads: []top.Thread{{TID: pid, Comm: p.Comm, CPUPercent: cpu, CPU: 0, Node: 0, PreferredNode: p.PreferredNode}},
		Areas: []top.Area{{Start: 0x55d0c0de0000, Kind: "heap", Policy: "default",
			BytesByNode: map[string]uint64{"0": 64 << 20}}},
	}
	if pid == 4242 {
		for w := 1; w <= 3; w++ {
			d.Threads = append(d.Threads, top.Thread{TID: pid + w, Comm: "worker-" + string(rune('0'+w)),
				CPUPercent: f64(99.5), CPU: 4 * w, Node: w, PreferredNode: 0,
				NUMAFaults: &top.Faults{Local: 10, Remote: 3000}})
		}
		d.Areas = append(d.Areas,
			top.Area{Start: 0x7f0000000000, Kind: "anon", Policy: "default",
				BytesByNode: map[string]uint64{"0": gib(6), "1": gib(0.5), "2": gib(0.5), "3": gib(0.75)}},
			top.Area{Start: 0x7f1000000000, Kind: "file", Path: hostilePath, Policy: "bind:0",
				BytesByNode: map[string]uint64{"0": 2 << 20}})
		d.MemoryByNode = map[string]uint64{"0": gib(6) + 2<<20 + 64<<20, "1": gib(0.5), "2": gib(0.5), "3": gib(0.75)}
		d.MemoryByCategory = &top.MemoryCategories{Huge: map[string]uint64{}, Heap: map[string]uint64{"0": 64 << 20},
			Stack: map[string]uint64{}, Private: map[string]uint64{"0": gib(6) + 2<<20, "1": gib(0.5), "2": gib(0.5), "3": gib(0.75)}}
		d.Hint = serialHint
		d.Errors = []string{"numa_maps of 4242: read 64 MiB, the rest \x1b[2Jskipped"}
	}
	return d, nil
}

func (f *fakeFeed) SetSort(k top.SortKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sort = k
}

func (f *fakeFeed) SetFilter(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filter = s
}

// state is what the TUI has asked of the feed so far.
func (f *fakeFeed) state() (calls int, sort top.SortKey, filter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.sort, f.filter
}

// f64 is a pointer to v, for the optional figures.
func f64(v float64) *float64 { return &v }
