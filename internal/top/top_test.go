package top

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// fakeEvents stands for internal/numatrace (tested in the NUMA VM): it
// reports fixed counts per interval for chosen processes.
type fakeEvents struct {
	procs  map[int]TaskEvents
	closed bool
}

func (f *fakeEvents) Collect(c *EventCounts) {
	for pid, e := range f.procs {
		*Task(c.Procs, pid) = e
		*Task(c.Threads, pid) = e
		t := Task(c.Nodes, 0)
		t.LocalFaults += e.LocalFaults
		t.RemoteFaults += e.RemoteFaults
	}
	c.Migrations["numa_misplaced"] += 7
}

func (f *fakeEvents) Sources() (string, string, string, []string) {
	return "fake:faults", "fake:migrations", "", []string{"PMU: fake has none"}
}

func (f *fakeEvents) Close() error { f.closed = true; return nil }

// start runs a program for the test's duration.
func start(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func find(f *Frame, pid int) *Process {
	for i := range f.Processes {
		if f.Processes[i].PID == pid {
			return &f.Processes[i]
		}
	}
	return nil
}

// twoFrames refreshes twice, interval apart, and returns the second frame.
func twoFrames(t *testing.T, c *Collector, interval time.Duration) *Frame {
	t.Helper()
	if _, err := c.Refresh(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval)
	f, err := c.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCollectorLive reads this machine's processes: a busy loop shows its
// CPU%, the process the event source blames sorts first by remote faults
// with rates per second, and the frame's JSON has the keys issue 18 names.
func TestCollectorLive(t *testing.T) {
	busy := start(t, "sh", "-c", "while :; do :; done")
	idle := start(t, "sleep", "60")
	ev := &fakeEvents{procs: map[int]TaskEvents{idle.Process.Pid: {LocalFaults: 100, RemoteFaults: 300, MigratedPages: 50}}}
	c, err := NewCollector(sysfs.New(""), Options{Events: ev, Detailed: 5})
	if err != nil {
		t.Fatal(err)
	}
	f := twoFrames(t, c, 500*time.Millisecond)
	if len(f.Processes) < 3 || f.Interval < 0.4 {
		t.Fatalf("%d processes, interval %.2f s", len(f.Processes), f.Interval)
	}
	first := f.Processes[0]
	if first.PID != idle.Process.Pid || first.NUMAFaults == nil {
		t.Fatalf("first by remote faults: pid %d (%q), want the sleep %d", first.PID, first.Comm, idle.Process.Pid)
	}
	if r := first.NUMAFaults.Remote * f.Interval; r < 299 || r > 301 {
		t.Errorf("remote faults %.1f/s over %.3f s: want 300 in the interval", first.NUMAFaults.Remote, f.Interval)
	}
	if first.PagesMigrated == nil || *first.PagesMigrated*f.Interval < 49 {
		t.Errorf("pages migrated %v, want 50 in the interval", first.PagesMigrated)
	}
	if first.Comm != "sleep" || len(first.NodesRunning) == 0 || first.MemoryByNode == nil || first.User == "" {
		t.Errorf("the sleep's row: %+v", first)
	}
	// About 100% on a quiet machine; on a busy one the loop shares the CPUs
	// with everything else (16% seen at load 17 on 2 CPUs), so the test
	// asks only that its time shows, and never above one CPU.
	if b := find(f, busy.Process.Pid); b == nil || b.CPUPercent <= 0 || b.CPUPercent > 110 {
		t.Errorf("the busy loop: %+v, want its CPU time to show, at most 100%% of one CPU", b)
	}
	if f.Nodes[0].NUMAFaults == nil || f.Migrations["numa_misplaced"] == 0 || f.Source.Faults != "fake:faults" ||
		!slices.Contains(f.Source.Missing, "PMU: fake has none") {
		t.Errorf("nodes %+v, migrations %v, source %+v", f.Nodes, f.Migrations, f.Source)
	}

	// The keys the issue spells, for scripts.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, f); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "processes", "nodes", "source"} {
		if _, ok := m[k]; !ok {
			t.Errorf("frame JSON has no %q", k)
		}
	}
	p0 := m["processes"].([]any)[0].(map[string]any)
	for _, k := range []string{"pid", "comm", "cpu_percent", "memory_bytes_by_node", "numa_faults", "pages_migrated", "preferred_node", "nodes_running"} {
		if _, ok := p0[k]; !ok {
			t.Errorf("process JSON has no %q: %v", k, p0)
		}
	}
	if nf := p0["numa_faults"].(map[string]any); nf["local"] == nil || nf["remote"] == nil {
		t.Errorf("numa_faults %v", nf)
	}

	// Sort by CPU: CPU% never grows down the table; filter by PID.
	c.SetSort(SortCPU)
	c.SetFilter("")
	f, _ = c.Refresh()
	for i := 1; i < len(f.Processes); i++ {
		if f.Processes[i].CPUPercent > f.Processes[i-1].CPUPercent {
			t.Fatalf("sorted by CPU, row %d has %.1f%% after %.1f%%", i, f.Processes[i].CPUPercent, f.Processes[i-1].CPUPercent)
		}
	}
	c.SetFilter(strconv.Itoa(busy.Process.Pid))
	if f, _ = c.Refresh(); len(f.Processes) != 1 || f.Processes[0].PID != busy.Process.Pid {
		t.Errorf("filter by pid %d: %d rows", busy.Process.Pid, len(f.Processes))
	}

	// Drill-down: the busy shell has one thread, running on a known node.
	d, err := c.Detail(busy.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Threads) != 1 || d.Threads[0].TID != busy.Process.Pid || d.Threads[0].Node < 0 || len(d.Areas) == 0 {
		t.Errorf("detail: %+v", d)
	}
	// Its thread's CPU% needs two readings: unknown (nil) on the first,
	// not 0, then the busy loop's share of a CPU.
	if len(d.Threads) == 1 && d.Threads[0].CPUPercent != nil {
		t.Errorf("first drill-down: thread CPU%% %v, want nil (not measured yet)", *d.Threads[0].CPUPercent)
	}
	// A loaded machine may give the loop no clock tick in one short
	// interval: it has 10 s to show one.
	for end := time.Now().Add(10 * time.Second); ; {
		time.Sleep(200 * time.Millisecond)
		if d, err = c.Detail(busy.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if len(d.Threads) != 1 || d.Threads[0].CPUPercent == nil {
			t.Fatalf("second drill-down: threads %+v, want the busy thread's CPU%% measured", d.Threads)
		}
		if *d.Threads[0].CPUPercent > 0 || time.Now().After(end) {
			break
		}
	}
	if p := *d.Threads[0].CPUPercent; p <= 0 {
		t.Errorf("the busy thread's CPU%% %v over 10 s of readings", p)
	}
	if _, err := c.Detail(1 << 30); err == nil {
		t.Error("Detail of a process that does not exist: no error")
	}
	if err := c.Close(); err != nil || !ev.closed {
		t.Errorf("Close: %v, event source closed %v", err, ev.closed)
	}
}

// TestWithoutEvents: with no event source the rates are null, never a
// fake zero, and Source says why.
func TestWithoutEvents(t *testing.T) {
	c, err := NewCollector(sysfs.New(""), Options{EventsMissing: []string{"faults: no kprobes here"}})
	if err != nil {
		t.Fatal(err)
	}
	f := twoFrames(t, c, 100*time.Millisecond)
	for _, p := range f.Processes {
		if p.NUMAFaults != nil {
			t.Fatalf("process %d has fault rates without a source", p.PID)
		}
	}
	if f.Source.Faults != "" || !slices.Contains(f.Source.Missing, "faults: no kprobes here") || f.Migrations != nil {
		t.Errorf("source %+v, migrations %v", f.Source, f.Migrations)
	}
}

// TestHostileNames: a command named with an escape sequence is written as
// inert text.
func TestHostileNames(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(dir, "\x1b[2J\x1b]0;x\a<b>")
	if err := os.Symlink(sleep, evil); err != nil {
		t.Fatal(err)
	}
	p := start(t, evil, "60")
	c, err := NewCollector(sysfs.New(""), Options{Filter: strconv.Itoa(p.Process.Pid)})
	if err != nil {
		t.Fatal(err)
	}
	f := twoFrames(t, c, 50*time.Millisecond)
	if len(f.Processes) != 1 || !strings.Contains(f.Processes[0].Comm, "\x1b") {
		t.Fatalf("rows %+v: want the one process, its comm raw", f.Processes)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, f, 0, false); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(buf.Bytes(), "\x1b\a") || !strings.Contains(buf.String(), "[2J") {
		t.Errorf("text output carries the escape sequence: %q", buf.String())
	}
	// One process: the header counts it in the singular.
	if !strings.Contains(buf.String(), ", 1 process (") {
		t.Errorf("top -b's header of one process: %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
}

func TestHint(t *testing.T) {
	th := func(nodes ...int) []Thread {
		var ts []Thread
		for _, n := range nodes {
			ts = append(ts, Thread{Node: n})
		}
		return ts
	}
	for _, c := range []struct {
		bytes   []uint64
		threads []Thread
		want    string
	}{
		{[]uint64{78, 10, 6, 6}, th(1, 2, 3), "78% of its memory is on node 0 while its threads run on nodes 1-3"},
		{[]uint64{80, 20}, th(0, 1), "80% of its memory is on node 0 while its threads also run on node 1"},
		{[]uint64{50, 50}, th(0, 1), ""},
		{[]uint64{90, 10}, th(0), ""},
		{nil, th(0), ""},
		{[]uint64{0, 90}, nil, ""},
		{[]uint64{90, 0, 5, 5}, th(1, 3), "90% of its memory is on node 0 while its threads run on nodes 1,3"},
	} {
		got := hint(c.bytes, c.threads)
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("hint(%v, %v) = %q, want %q...", c.bytes, c.threads, got, c.want)
		}
	}
}

// FuzzEachKV: the node and cgroup files' parser takes any bytes.
func FuzzEachKV(f *testing.F) {
	f.Add([]byte("Node 0 MemTotal:       16384 kB\nNode 0 MemFree: 1 kB\n"))
	f.Add([]byte("numa_hit 5\nnuma_miss 18446744073709551615\nx\n\n kB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		eachKV(data, func(k []byte, v uint64) {
			if len(k) == 0 && v != 0 {
				t.Fatalf("empty key with value %d", v)
			}
		})
	})
}

// TestHeldStatFiles: the collector keeps at most maxHeld stat files open,
// reads every process whether its file is held or not, and closes the
// file of a process that exited.
func TestHeldStatFiles(t *testing.T) {
	c, err := NewCollector(sysfs.New(""), Options{Filter: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.maxHeld < 64 {
		t.Fatalf("maxHeld %d: the file descriptor limit should allow more", c.maxHeld)
	}
	var sleepers []*exec.Cmd
	for range 6 {
		sleepers = append(sleepers, start(t, "sleep", "3600"))
	}
	c.maxHeld = c.held + 3 // this machine's other processes may hold some already
	held := func() (n int) {
		for _, st := range c.procs {
			if st.stat != nil {
				n++
			}
		}
		return n
	}
	for i := range 3 {
		f, err := c.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sleepers {
			if find(f, s.Process.Pid) == nil {
				t.Fatalf("refresh %d: sleep %d is not in the table", i, s.Process.Pid)
			}
		}
		if c.held != held() || c.held > c.maxHeld {
			t.Fatalf("refresh %d: %d stat files counted, %d held, at most %d", i, c.held, held(), c.maxHeld)
		}
	}
	for _, s := range sleepers {
		s.Process.Kill()
		s.Wait()
	}
	f, err := c.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sleepers {
		if find(f, s.Process.Pid) != nil || c.procs[s.Process.Pid] != nil {
			t.Errorf("sleep %d exited but is still shown or kept", s.Process.Pid)
		}
	}
	if c.held != held() {
		t.Errorf("%d stat files counted, %d held", c.held, held())
	}
	c.Close()
	if c.held != 0 {
		t.Errorf("%d stat files still counted after Close", c.held)
	}
}

// TestRecentFaults: a thread's decayed faults split by the node it runs on,
// on the 4-node VM's capture two seconds into the serial workload's
// compute phase (internal/procnuma/testdata/README.md): the workers have
// taken their buffers home, and only 3 of 57 769 recent faults (shared
// ones, on node 0) are remote. The group's figures are not the task's and
// do not count.
func TestRecentFaults(t *testing.T) {
	var local, remote uint64
	tasks, _ := filepath.Glob("../procnuma/testdata/vm4-init/proc/139/task/*")
	for _, dir := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, "sched"))
		if err != nil {
			t.Fatal(err)
		}
		var s procnuma.Sched
		if err := procnuma.ParseSched(data, &s); err != nil {
			t.Fatal(err)
		}
		l, r := recentFaults(&s, -1)
		local += l
		remote += r
	}
	if len(tasks) != 5 || local != 57766 || remote != 3 {
		t.Errorf("%d tasks: %d local and %d remote recent faults, want 5 tasks, 57766 and 3", len(tasks), local, remote)
	}

	// Without current_node (-1) the node the thread last ran on decides.
	s := procnuma.Sched{CurrentNode: -1, Faults: []procnuma.NodeFaults{
		{Node: 0, TaskPrivate: 70, TaskShared: 8, GroupPrivate: 1000},
		{Node: 1, TaskPrivate: 20, TaskShared: 2},
	}}
	if l, r := recentFaults(&s, 1); l != 22 || r != 78 {
		t.Errorf("recentFaults on node 1: %d local, %d remote, want 22 and 78", l, r)
	}
}

// TestShareText: REM% is the rates' share, else the recent faults' share
// marked ~, else "-"; rates, even zero, win over the recent share.
func TestShareText(t *testing.T) {
	share := 0.78
	for _, c := range []struct {
		p    Process
		want string
	}{
		{Process{NUMAFaults: &Faults{Local: 1, Remote: 3}}, "75%"},
		{Process{NUMAFaults: &Faults{}, RecentRemoteShare: &share}, "-"},
		{Process{RecentRemoteShare: &share}, "~78%"},
		{Process{}, "-"},
	} {
		if got := c.p.ShareText(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// TestNodePromotionsDemotions: the node view's promotions and demotions are
// per-second deltas of the node's vmstat (pgpromote_success; the pgdemote_*
// kinds summed), read from this kernel's node0/vmstat with the tiering
// counters moved on between two reads (no machine here has memory tiers).
func TestNodePromotionsDemotions(t *testing.T) {
	live, err := os.ReadFile("/sys/devices/system/node/node0/vmstat")
	if err != nil {
		t.Fatalf("this machine's node vmstat: %v", err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "sys/devices/system/node/node0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	set := func(values map[string]uint64) {
		var b bytes.Buffer
		done := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(live)), "\n") {
			k, _, _ := strings.Cut(l, " ")
			if v, ok := values[k]; ok {
				l, done[k] = k+" "+strconv.FormatUint(v, 10), true
			}
			b.WriteString(l + "\n")
		}
		for k, v := range values { // a kernel before 6.1 has no such lines
			if !done[k] {
				fmt.Fprintf(&b, "%s %d\n", k, v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "vmstat"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var r nodeReader
	r.init(sysfs.New(root), &topology.Topology{Nodes: []topology.Node{{ID: 0}}})
	// The rates are over the time between the file's own reads (2 s),
	// not the interval the frame passes (here 1 s).
	clock := time.Unix(1e9, 0)
	r.counts.now = func() time.Time { return clock }
	ev := &EventCounts{Procs: map[int]*TaskEvents{}, Threads: map[int]*TaskEvents{}, Nodes: map[int]*TaskEvents{}, Migrations: map[string]uint64{}}
	set(map[string]uint64{"pgpromote_success": 100, "pgdemote_kswapd": 10, "pgdemote_direct": 20, "pgdemote_khugepaged": 0, "pgdemote_proactive": 0})
	r.read(0, ev)
	set(map[string]uint64{"pgpromote_success": 300, "pgdemote_kswapd": 50, "pgdemote_direct": 60, "pgdemote_khugepaged": 4, "pgdemote_proactive": 6, "pgpromote_candidate": 1e6})
	clock = clock.Add(2 * time.Second)
	n := r.read(1, ev)
	if len(n) != 1 || n[0].Promoted != 100 || n[0].Demoted != 45 {
		t.Errorf("node view %+v: want 100 pages promoted and 45 demoted per second", n)
	}
}

// TestResolveSort: the default order is by a measured figure. Remote
// faults where a process has them; else CPU%, then memory on the first
// frame; a note says why whenever the key asked for is not the one used.
func TestResolveSort(t *testing.T) {
	f := func(l, r float64) *Faults { return &Faults{Local: l, Remote: r} }
	m := 5.0
	unmeasured := []Process{{PID: 2, KernelThread: true}, {PID: 10, CPUPercent: 73, RSSBytes: 1 << 20}, {PID: 11, RSSBytes: 1 << 30}}
	measured := []Process{{PID: 2, NUMAFaults: f(0, 0)}, {PID: 10, NUMAFaults: f(1, 2), PagesMigrated: &m}}
	for _, c := range []struct {
		ps    []Process
		asked SortKey
		want  SortKey
		note  string
	}{
		{measured, SortRemote, SortRemote, ""},
		{measured, SortMigrated, SortMigrated, ""},
		{unmeasured, SortRemote, SortCPU, "no process has remote faults measured here"},
		{unmeasured, SortLocal, SortCPU, "no process has local faults measured here"},
		{unmeasured, SortMigrated, SortCPU, "no process has pages migrated measured here"},
		{unmeasured, SortCPU, SortCPU, ""},
		{unmeasured, SortPID, SortPID, ""},
		{unmeasured, SortMemory, SortMemory, ""},
	} {
		used, note := ResolveSort(c.ps, c.asked)
		if used != c.want || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("ResolveSort(%s) = %s, %q; want %s with a note holding %q", c.asked, used, note, c.want, c.note)
		}
		if note != "" && !strings.HasSuffix(note, "sorted by "+string(used)) {
			t.Errorf("note %q does not name the key used, %s", note, used)
		}
	}

	// Under cpu, ties go by memory (all of them on the first frame): the
	// idle kernel thread last.
	ps := slices.Clone(unmeasured)
	SortProcesses(ps, SortCPU)
	if got := []int{ps[0].PID, ps[1].PID, ps[2].PID}; !slices.Equal(got, []int{10, 11, 2}) {
		t.Errorf("by cpu then memory: %v, want [10 11 2]", got)
	}
	// An unmeasured figure sorts after every measured one, either way.
	ps = []Process{{PID: 1}, {PID: 3, NUMAFaults: f(0, 9)}, {PID: 2, NUMAFaults: f(0, 1)}}
	for _, asc := range []bool{false, true} {
		slices.SortStableFunc(ps, func(a, b Process) int { return CompareProcesses(&a, &b, SortRemote, asc) })
		if ps[2].PID != 1 {
			t.Errorf("asc %v: %v, want the process without faults last", asc, ps)
		}
	}
	kept, hidden := WithoutKernelThreads(unmeasured)
	if hidden != 1 || len(kept) != 2 || kept[0].PID != 10 {
		t.Errorf("WithoutKernelThreads: %v, %d hidden", kept, hidden)
	}
}

// TestKernelThreads reads this machine: kthreadd is marked a kernel
// thread, none takes a slot read in full (numa_maps), the frame without
// fault rates says it is sorted by cpu with a note, and top -b shows a
// busy loop and no kernel thread.
func TestKernelThreads(t *testing.T) {
	if b, err := os.ReadFile("/proc/2/comm"); err != nil || strings.TrimSpace(string(b)) != "kthreadd" {
		t.Skip("no kthreadd at PID 2: this PID namespace shows no kernel threads")
	}
	busy := start(t, "sh", "-c", "while :; do :; done")
	// More slots than user processes: kernel threads would fill the rest.
	c, err := NewCollector(sysfs.New(""), Options{Detailed: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := twoFrames(t, c, 300*time.Millisecond)
	if f.Sort != SortCPU || !strings.Contains(f.SortNote, "no process has remote faults measured") {
		t.Errorf("without fault rates: sort %q, note %q; want cpu and a note", f.Sort, f.SortNote)
	}
	if k := find(f, 2); k == nil || !k.KernelThread {
		t.Fatalf("kthreadd: %+v, want marked a kernel thread", k)
	}
	if b := find(f, busy.Process.Pid); b == nil || b.KernelThread || b.MemoryByNode == nil {
		t.Errorf("the busy loop: %+v, want a user process read in full", b)
	}
	kthreads := 0
	for _, p := range f.Processes {
		if p.KernelThread {
			kthreads++
			if p.MemoryByNode != nil || len(p.NodesRunning) > 1 {
				t.Errorf("kernel thread %d (%s) took a detailed slot: %+v", p.PID, p.Comm, p)
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, f, 0, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, fmt.Sprintf("(%d kernel threads not shown), sorted by cpu", kthreads)) ||
		!strings.Contains(out, "sort: no process has remote faults") || strings.Contains(out, " kthreadd\n") {
		t.Errorf("top -b with %d kernel threads:\n%s", kthreads, out)
	}
	if !strings.Contains(out, fmt.Sprintf("\n%7d ", busy.Process.Pid)) {
		t.Errorf("top -b does not show the busy loop %d:\n%s", busy.Process.Pid, out)
	}
}

// TestDetailAreasBySize: the drill-down lists memory areas largest first.
func TestDetailAreasBySize(t *testing.T) {
	c, err := NewCollector(sysfs.New(""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = 1
	}
	d, err := c.Detail(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Areas) < 3 {
		t.Fatalf("%d areas", len(d.Areas))
	}
	for i := 1; i < len(d.Areas); i++ {
		if sumBytes(d.Areas[i].BytesByNode) > sumBytes(d.Areas[i-1].BytesByNode) {
			t.Fatalf("area %d (%x, %d B) after a smaller one (%x, %d B)", i, d.Areas[i].Start,
				sumBytes(d.Areas[i].BytesByNode), d.Areas[i-1].Start, sumBytes(d.Areas[i-1].BytesByNode))
		}
	}
	if sumBytes(d.Areas[0].BytesByNode) < 60<<20 {
		t.Errorf("first area %+v, want the 64 MiB buffer", d.Areas[0])
	}
	big[0] = big[len(big)-1] // keep it alive
}
