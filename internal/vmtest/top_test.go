package vmtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/top"
)

// topScript runs firsttouch MODE in the cgroup /wl (memory controller on)
// with a long compute phase and, once its first touch is done, prints
// `numascope top -b --format json --cgroup` frames (processes sorted by
// remote faults, and cgroups), then `--no-events` frames (/proc alone), as
// sections. Before them, while the workers wait for /tmp/go, live's
// processes page gives the drill-down of the workload.
//
// top writes frames to a file whose lines a loop polls (wc, not the
// shell's read, which takes a long JSON line a byte at a time and falls
// seconds behind). The workers start computing once the first frame is
// out (the loop touches /tmp/go), so that frame provably shows the memory
// where the first touch put it: with a fixed settle time, balancing on a
// busy host had already spread it before the first frame (issue 29). The
// workload is stopped (SIGSTOP) once the fifth is out (or a later one,
// when the loop is slow to see it: beside four busy loops it once saw the
// sixth first), and top is stopped (SIGINT) once two more frames are out,
// the later of them read after the stop: so all the workload's hinting
// faults fall within top's frames, whenever the loop noticed; /proc/vmstat
// is read before /tmp/go and after the stop (checkFaultsAgainstVmstat).
// The workload goes on (SIGCONT) once top has exited, so that the --no-events frames read sched
// while it computes, as they did before the stop was added (kept stopped,
// under a loaded host the parallel init's decayed figures read 59% remote
// while the kprobe had counted 6 remote faults of 32 778). One top arms the kprobe and disarms it, the second
// time with the workload stopped: each time the kernel patches task_numa_fault's entry while the
// workload faults into it, Debian's 6.1 kernel under TCG may crash
// (docs/testing.md).
const topScript = `ip link set lo up
mkdir -p /sys/fs/cgroup/wl
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
numascope live --listen 127.0.0.1:8765 --no-token -i 1s -e vmstat.numa_hit > /tmp/live.out 2>&1 &
L=$!
i=0; while ! wget -qO /dev/null http://127.0.0.1:8765/ 2>/dev/null; do sleep 0.2; i=$((i+1)); [ $i -gt 150 ] && break; done
sh -c 'echo $$ > /sys/fs/cgroup/wl/cgroup.procs; exec firsttouch %s --mb 32 --settle 0 --go /tmp/go --seconds 60 --lead 0 --linger 0 --out /tmp/wl.json' > /tmp/wl.out 2>&1 &
P=$!
while ! grep -q 'done at' /tmp/wl.out && kill -0 $P 2>/dev/null; do sleep 0.1; done
echo "@@pid $P"
sec detail wget -qO- "http://127.0.0.1:8765/api/processes/detail?pid=$P"
kill $L; wait $L
cat /proc/vmstat > /tmp/vm.before
numascope top -b --format json -n 0 -d 1s --cgroup > /tmp/top.json 2> /tmp/top.err &
T=$!
lines() { [ -f /tmp/top.json ] && wc -l < /tmp/top.json || echo 0; }
frames() { i=0; while [ "$(lines)" -lt $1 ] && kill -0 $T 2>/dev/null; do sleep 0.05; i=$((i+1)); [ $i -gt 1200 ] && break; done; }
frames 1
touch /tmp/go
frames 5
kill -STOP $P
S=$(lines)
echo "@@stopped after $S frames"
sleep 0.5
cat /proc/vmstat > /tmp/vm.after
frames $((S + 2))
kill -INT $T
wait $T
echo $? > /tmp/top.rc
kill -CONT $P
sec top sh -c 'cat /tmp/top.json; exit $(cat /tmp/top.rc)'
sec noev numascope top -b --format json -n 2 -d 1s --no-events
sec events cat /sys/kernel/tracing/kprobe_events
sec vmstat sh -c 'grep -E "^numa_hint_faults(_local)? " /tmp/vm.before; grep -E "^numa_hint_faults(_local)? " /tmp/vm.after'
kill -KILL $P; wait $P || true
`

// topFrames decodes the JSON lines of `top --format json`.
func topFrames(t *testing.T, text string) []top.Frame {
	t.Helper()
	var frames []top.Frame
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		var f top.Frame
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("top printed a line that is not a frame: %v: %.300s", err, l)
		}
		frames = append(frames, f)
	}
	return frames
}

func runTopVM(t *testing.T, mode string) (pid int, frames, noev []top.Frame, detail *top.Detail, r *vmResult) {
	t.Helper()
	r = runVM(t, []string{"--nodes", "4"}, fmt.Sprintf(topScript, mode))
	pid = vmPID(t, r)
	frames = topFrames(t, r.section(t, "top"))
	noev = topFrames(t, r.section(t, "noev"))
	m := regexp.MustCompile(`(?m)^@@stopped after (\d+) frames`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("the VM printed no @@stopped line:\n%s", tail(r.Stdout, 4000))
	}
	stopped, _ := strconv.Atoi(m[1])
	if stopped < 5 || len(frames) < stopped+2 || len(noev) != 2 {
		t.Fatalf("the workload stopped after frame %d; %d frames and %d --no-events frames: want it stopped after the fifth or later, two frames more, and 2", stopped, len(frames), len(noev))
	}
	if stopped > 5 {
		t.Logf("the loop saw frame %d before it stopped the workload (want 5: a slow guest)", stopped)
	}
	checkFaultsAgainstVmstat(t, r.section(t, "vmstat"), frames, pid)
	if ev := strings.TrimSpace(r.section(t, "events")); ev != "" {
		t.Errorf("numascope top left kprobe events behind: %s", ev)
	}
	detail = &top.Detail{}
	if err := json.Unmarshal([]byte(r.section(t, "detail")), detail); err != nil || detail.PID != pid {
		t.Fatalf("live's drill-down of firsttouch %d: %v: %.500s", pid, err, r.section(t, "detail"))
	}
	// The first five frames: the workload ran through each of them.
	return pid, frames[:5], noev, detail, r
}

// checkFaultsAgainstVmstat holds the fault rates as top prints them, the
// cgroup /wl's row and firsttouch's (the only process in /wl), to the
// kernel's own counters: summed over the frames, each rate times its
// frame's interval is a count of hinting faults, local and remote, which
// must agree with /proc/vmstat's numa_hint_faults and
// numa_hint_faults_local deltas from before the workers started (they wait
// for the first frame) to after they were stopped (after the fifth frame
// or a later one; top reads at least once more after the stop). Both windows hold every fault of the workload;
// the kernel's also counts other processes' (the same tolerance as
// TestNUMATrace's: at least 0.8 of the kernel's count less 50, at most
// it plus 50). Rates over an interval 30% too long, or a cgroup that left
// out its process, fall outside.
func checkFaultsAgainstVmstat(t *testing.T, vmstat string, frames []top.Frame, pid int) {
	t.Helper()
	var v []float64
	for _, l := range strings.Split(strings.TrimSpace(vmstat), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("vmstat: line %q", l)
		}
		x, _ := strconv.ParseFloat(f[1], 64)
		v = append(v, x)
	}
	if len(v) != 4 {
		t.Fatalf("vmstat: want numa_hint_faults and numa_hint_faults_local before and after:\n%s", vmstat)
	}
	kAll, kLocal := v[2]-v[0], v[3]-v[1]
	if kAll < 1000 {
		t.Errorf("/proc/vmstat: %.0f hinting faults over the workload's run: too few to hold top's rates to", kAll)
	}
	var cg, proc top.Faults
	var per []string
	for i := 1; i < len(frames); i++ {
		f := &frames[i]
		g, p := cgroupOf(f, "/wl"), rowOf(f, pid)
		if g == nil || g.NUMAFaults == nil || p == nil || p.NUMAFaults == nil {
			t.Fatalf("frame %d: /wl %+v, firsttouch %+v: want both with fault rates", i, g, p)
		}
		per = append(per, fmt.Sprintf("%.0f+%.0f/s over %.2f s (system %+v, lost %d)", g.NUMAFaults.Local, g.NUMAFaults.Remote, f.Interval, *f.System, f.Source.Lost))
		cg.Local += g.NUMAFaults.Local * f.Interval
		cg.Remote += g.NUMAFaults.Remote * f.Interval
		proc.Local += p.NUMAFaults.Local * f.Interval
		proc.Remote += p.NUMAFaults.Remote * f.Interval
	}
	t.Logf("hinting faults over top's frames: /wl %.0f local + %.0f remote, firsttouch %.0f + %.0f; /proc/vmstat: %.0f local of %.0f; frames: %s",
		cg.Local, cg.Remote, proc.Local, proc.Remote, kLocal, kAll, strings.Join(per, "; "))
	for _, c := range []struct {
		what      string
		got, krnl float64
	}{
		{"/wl's hinting faults vs numa_hint_faults", cg.Local + cg.Remote, kAll},
		{"/wl's local hinting faults vs numa_hint_faults_local", cg.Local, kLocal},
		{"firsttouch's hinting faults vs numa_hint_faults", proc.Local + proc.Remote, kAll},
		{"firsttouch's local hinting faults vs numa_hint_faults_local", proc.Local, kLocal},
	} {
		within(t, "top's rates x intervals: "+c.what, c.got, 0.8*c.krnl-50, c.krnl+50)
	}
}

// checkDetail checks the drill-down of firsttouch in its settle phase: its
// main thread and 4 workers, one pinned to each node; its buffers among the
// numa_maps areas, with 128 MiB in all; and returns the bytes per node.
func checkDetail(t *testing.T, d *top.Detail) map[string]uint64 {
	t.Helper()
	var nodes []int
	for _, th := range d.Threads {
		if th.Node < 0 || th.Node > 3 || th.CPU < 0 {
			t.Errorf("drill-down: thread %+v on no node of the VM", th)
		}
		if !slices.Contains(nodes, th.Node) {
			nodes = append(nodes, th.Node)
		}
	}
	slices.Sort(nodes)
	if len(d.Threads) != 5 || !slices.Equal(nodes, []int{0, 1, 2, 3}) {
		t.Errorf("drill-down: %d threads on nodes %v, want firsttouch's 5 on nodes 0-3: %+v", len(d.Threads), nodes, d.Threads)
	}
	bytes := map[string]uint64{}
	var sum uint64
	for _, a := range d.Areas {
		for n, b := range a.BytesByNode {
			bytes[n] += b
			sum += b
		}
	}
	if sum < 4*32<<20 {
		t.Errorf("drill-down: areas hold %v, want at least the 128 MiB of buffers: %+v", bytes, d.Areas)
	}
	if len(d.Errors) > 0 {
		t.Errorf("drill-down: errors %q", d.Errors)
	}
	return bytes
}

// recentShares checks the --no-events frames: no fault rates for pid, and
// returns its recent remote share in each frame where it has one.
func recentShares(t *testing.T, noev []top.Frame, pid int) []float64 {
	t.Helper()
	var shares []float64
	for i := range noev {
		if noev[i].Source.Faults != "" {
			t.Errorf("--no-events frame %d names a fault source: %q", i, noev[i].Source.Faults)
		}
		p := rowOf(&noev[i], pid)
		if p == nil {
			t.Fatalf("--no-events frame %d: no row for firsttouch %d", i, pid)
		}
		if p.NUMAFaults != nil {
			t.Errorf("--no-events frame %d: fault rates %+v without a source", i, p.NUMAFaults)
		}
		if p.RecentRemoteShare != nil {
			if s := *p.RecentRemoteShare; s < 0 || s > 1 {
				t.Errorf("--no-events frame %d: recent remote share %v", i, s)
			}
			shares = append(shares, *p.RecentRemoteShare)
		}
	}
	if len(shares) == 0 {
		t.Errorf("no --no-events frame gives firsttouch a recent remote share (sched's decayed faults): %+v", rowOf(&noev[len(noev)-1], pid))
	}
	return shares
}

func rowOf(f *top.Frame, pid int) *top.Process {
	for i := range f.Processes {
		if f.Processes[i].PID == pid {
			return &f.Processes[i]
		}
	}
	return nil
}

// TestTopSerialInit: one thread first-touches every buffer on node 0, and
// workers pinned to nodes 1-3 compute on them. numascope top, sorted by
// remote faults (its default), puts that process first, with remote faults
// above 0 from the kprobe, its memory mostly on node 0 (numa_maps, read
// right after the first touch) and its threads on nodes 1-3; --cgroup
// shows the cgroup /wl with the same memory on node 0 and its remote
// faults; without the kprobe, the recent remote share agrees.
func TestTopSerialInit(t *testing.T) {
	requireVM(t)
	pid, frames, noev, detail, _ := runTopVM(t, "--serial")
	// The drill-down, before the workers start (they wait for /tmp/go): the buffers on node 0,
	// the workers on nodes 1-3, and a hint that says so.
	if b := checkDetail(t, detail); 2*b["0"] <= b["0"]+b["1"]+b["2"]+b["3"] {
		t.Errorf("drill-down: firsttouch's memory by node %v, want most on node 0", b)
	}
	if !strings.Contains(detail.Hint, "of its memory is on node 0 while its threads also run on nodes 1-3") {
		t.Errorf("drill-down hint %q, want node 0's memory and the threads on nodes 1-3 named", detail.Hint)
	}
	t.Logf("drill-down hint: %s", detail.Hint)
	src := frames[0].Source
	if src.Faults == "" || src.Migrations == "" {
		t.Fatalf("no fault or migration source in the NUMA VM (root, Debian's kernel with kprobes): %+v", src)
	}
	first := &frames[0]
	p := rowOf(first, pid)
	if p == nil {
		t.Fatalf("firsttouch (pid %d) is not in the first frame", pid)
	}
	var sum uint64
	for _, b := range p.MemoryByNode {
		sum += b
	}
	if sum < 4*32<<20 || 2*p.MemoryByNode["0"] <= sum {
		t.Errorf("first frame: firsttouch's memory by node %v: want its 128 MiB, most on node 0", p.MemoryByNode)
	}
	// Balancing scans, then the workers fault on node 0's memory: in the
	// frame where that happens firsttouch is first by remote faults, and
	// its threads (read in full, being first) run on nodes 1-3. (Later
	// frames may put another process first: once the pages have moved,
	// firsttouch's faults are local.)
	var remote float64
	firstAt := -1
	for i := range frames {
		f := &frames[i]
		if f.Processes[0].NUMAFaults == nil {
			t.Fatalf("frame %d: no fault rates: %+v", i, f.Processes[0])
		}
		if p := rowOf(f, pid); p != nil && p.NUMAFaults != nil {
			remote += p.NUMAFaults.Remote
		}
		if firstAt < 0 && f.Processes[0].PID == pid && f.Processes[0].NUMAFaults.Remote > 0 {
			firstAt = i
		}
	}
	if remote == 0 {
		t.Fatalf("no frame has remote NUMA faults for firsttouch: %+v", rowOf(&frames[len(frames)-1], pid))
	}
	if firstAt < 0 {
		for i := range frames {
			t.Logf("frame %d: first %d (%s) %+v; firsttouch %+v", i, frames[i].Processes[0].PID, frames[i].Processes[0].Comm,
				frames[i].Processes[0].NUMAFaults, rowOf(&frames[i], pid).NUMAFaults)
		}
		t.Fatalf("firsttouch (pid %d) is first by remote faults in no frame", pid)
	}
	if p := &frames[firstAt].Processes[0]; !slices.Contains(p.NodesRunning, 1) || !slices.Contains(p.NodesRunning, 2) || !slices.Contains(p.NodesRunning, 3) {
		t.Errorf("frame %d: firsttouch runs on nodes %v, want its workers on 1-3", firstAt, p.NodesRunning)
	}
	// The node view: the VM's 4 nodes, their memory, the machine's
	// hinting faults from /proc/vmstat, and numa_misplaced migrations.
	var misplaced float64
	for i := range frames {
		f := &frames[i]
		if len(f.Nodes) != 4 || f.System == nil {
			t.Fatalf("frame %d: %d nodes, system faults %v: want 4 nodes and /proc/vmstat's figures", i, len(f.Nodes), f.System)
		}
		for _, n := range f.Nodes {
			if n.MemTotal == 0 || n.MemFree > n.MemTotal || len(n.CPUs) == 0 || n.NUMAFaults == nil {
				t.Errorf("frame %d: node %+v", i, n)
			}
		}
		misplaced += f.Migrations["numa_misplaced"]
	}
	if misplaced == 0 {
		t.Errorf("no numa_misplaced migrations in any frame: %v", frames[len(frames)-1].Migrations)
	}
	last := rowOf(&frames[len(frames)-1], pid)
	t.Logf("firsttouch, last frame: faults %+v; migrations by reason %v", last.NUMAFaults, frames[len(frames)-1].Migrations)

	// Without the kprobe (--no-events, a few seconds later): the recent
	// remote share agrees with the kprobe's last frame. The balancer brings
	// each buffer home on the first fault of each page, so by then the
	// faults are local, and so are the decayed ones sched keeps.
	shares := recentShares(t, noev, pid)
	if last.NUMAFaults.Remote < 0.1*last.NUMAFaults.Local && len(shares) > 0 && slices.Max(shares) > 0.5 {
		t.Errorf("--no-events: firsttouch's recent remote share by frame %v, while the kprobe's last frame has %+v: want local to dominate in both", shares, *last.NUMAFaults)
	}
	t.Logf("--no-events: firsttouch's recent remote share by frame %v", shares)

	// The cgroup view (the same frames): /wl holds the workload, its
	// memory on node 0 in the first frame (taken before /tmp/go: the
	// workers provably still wait), and
	// its processes' remote faults.
	var cgRemote float64
	for i := range frames {
		wl := cgroupOf(&frames[i], "/wl")
		if wl == nil || wl.Processes != 1 || wl.MemoryByNode == nil {
			t.Fatalf("frame %d, --cgroup: no /wl row with one process and memory by node: %+v", i, frames[i].Cgroups)
		}
		if wl.NUMAFaults != nil {
			cgRemote += wl.NUMAFaults.Remote
		}
		if i > 0 {
			continue
		}
		var cgSum uint64
		for _, b := range wl.MemoryByNode {
			cgSum += b
		}
		if cgSum < 4*32<<20 || 2*wl.MemoryByNode["0"] <= cgSum {
			t.Errorf("first frame, --cgroup: /wl holds %v: want at least the 128 MiB of buffers, most on node 0", wl.MemoryByNode)
		}
	}
	if cgRemote == 0 {
		t.Errorf("--cgroup: /wl has no remote faults in any frame: %+v", cgroupOf(&frames[len(frames)-1], "/wl"))
	}
}

func cgroupOf(f *top.Frame, path string) *top.Cgroup {
	for i := range f.Cgroups {
		if f.Cgroups[i].Path == path {
			return &f.Cgroups[i]
		}
	}
	return nil
}

// TestTopParallelInit: each worker first-touches its own buffer, so its
// faults are local: local faults dominate.
func TestTopParallelInit(t *testing.T) {
	requireVM(t)
	pid, frames, noev, detail, _ := runTopVM(t, "--parallel")
	// The drill-down: each worker's buffer on its node, nothing to hint.
	for n, b := range checkDetail(t, detail) {
		if b < 28<<20 {
			t.Errorf("drill-down: %d MiB on node %s, want a worker's 32 MiB buffer", b>>20, n)
		}
	}
	if detail.Hint != "" {
		t.Errorf("drill-down hint %q for memory spread over the nodes its threads run on, want none", detail.Hint)
	}
	var local, remote float64
	for i := range frames {
		p := rowOf(&frames[i], pid)
		if p == nil || p.NUMAFaults == nil {
			t.Fatalf("frame %d: firsttouch (pid %d) missing or without fault rates", i, pid)
		}
		local += p.NUMAFaults.Local
		remote += p.NUMAFaults.Remote
	}
	if local == 0 || local < 3*remote {
		t.Errorf("parallel init: %.0f local and %.0f remote faults per second summed over the frames: want local to dominate", local, remote)
	}
	if shares := recentShares(t, noev, pid); len(shares) > 0 && slices.Max(shares) > 0.25 {
		t.Errorf("--no-events: parallel init's recent remote share by frame %v: want local faults to dominate", shares)
	} else {
		t.Logf("--no-events: firsttouch's recent remote share by frame %v", shares)
	}
	p := rowOf(&frames[0], pid)
	for n := range 4 {
		if b := p.MemoryByNode[strconv.Itoa(n)]; b < 28<<20 {
			t.Errorf("parallel init: %d MiB on node %d, want its worker's 32 MiB buffer (%v)", b>>20, n, p.MemoryByNode)
		}
	}
}
