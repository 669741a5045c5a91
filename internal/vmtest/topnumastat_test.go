package vmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

// numastatScript reserves 4 huge pages, runs memmix (internal/top's known
// mix: 48 MiB of heap, 16 MiB of stack, 64 MiB of anonymous memory and the
// huge pages) with its memory interleaved over nodes 0-2, stops it once it
// has touched every page, and reads it with the host's numastat, then
// numascope top's JSON and live's drill-down, then numastat again. Then,
// with 96 MiB more held on node 2 (so that no two nodes' free memory is
// alike) and a busy loop on CPU 2 (node 1's first of two), top's node view
// and stat's node meminfo columns, both on node 0, between two reads of
// numastat -m.
const numastatScript = `ip link set lo up
echo 4 > /proc/sys/vm/nr_hugepages
H=$(( $(cat /proc/sys/vm/nr_hugepages) * $(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo) * 1024 ))
numastat() { NUMASTAT_WIDTH=100000 /data/ld-linux-x86-64.so.2 --library-path /data /data/numastat "$@"; }
numascope run --policy interleave:0-2 -- memmix 48 16 64 $H > /tmp/mm.out 2>&1 &
P=$!
i=0; while ! grep -q ready /tmp/mm.out && kill -0 $P 2>/dev/null; do sleep 0.1; i=$((i+1)); [ $i -gt 600 ] && break; done
cat /tmp/mm.out
kill -STOP $P
while ! grep -q '^State:.*T' /proc/$P/status; do sleep 0.05; done
echo "@@pid $P"
numascope live --listen 127.0.0.1:8765 --no-token -i 1s -e vmstat.numa_hit > /tmp/live.out 2>&1 &
L=$!
i=0; while ! wget -qO /dev/null http://127.0.0.1:8765/ 2>/dev/null; do sleep 0.2; i=$((i+1)); [ $i -gt 150 ] && break; done
sec before numastat -p $P
sec top numascope top -b --format json -n 1 --no-events --filter $P
sec detail wget -qO- "http://127.0.0.1:8765/api/processes/detail?pid=$P"
sec after numastat -p $P
kill $L; wait $L
numascope run --policy bind:2 -- memmix 0 0 96 0 > /tmp/hog.out 2>&1 &
G=$!
i=0; while ! grep -q ready /tmp/hog.out && kill -0 $G 2>/dev/null; do sleep 0.1; i=$((i+1)); [ $i -gt 600 ] && break; done
kill -STOP $G
numascope run --cpus 2 -- sh -c 'while :; do :; done' &
B=$!
sec nodesbefore numastat -m
sec busy0 grep -E '^cpu[23] ' /proc/stat
sec nodes numascope run --nodes 0 --policy bind:0 -- numascope top -b --format json -n 3 -d 1s --no-events --filter $P
sec busy1 grep -E '^cpu[23] ' /proc/stat
sec nodestat numascope run --nodes 0 --policy bind:0 -- numascope stat --csv -n 1 -i 200ms --discrete -e 'node.*'
sec hugesize awk '/^Hugepagesize:/ {print $2 * 1024}' /proc/meminfo
sec nodesafter numastat -m
kill $B; kill -KILL $G $P
`

// TestTopMemoryMatchesNumastatVM holds top's memory per node and category
// against numactl's numastat -p on three nodes, where the build machines'
// TestMemoryMatchesNumastat (internal/top) sees one: the host's numastat
// (Debian's numactl, its own C parser of numa_maps) is carried into the VM
// with its loader and C library, and memmix's memory is interleaved over
// nodes 0-2 (numascope run --policy interleave:0-2), so every category has
// a share on each node. The process is stopped; numastat reads it before
// and after top's JSON and live's drill-down, and the two reads must
// agree. Every cell, each category and the total on each node and in all,
// must print the same at numastat's precision (0.01 MB), for the frame's
// JSON and the drill-down alike (docs/fidelity.md).
func TestTopMemoryMatchesNumastatVM(t *testing.T) {
	requireVM(t)
	r := runVM(t, append([]string{"--nodes", "3", "--cpus-per-node", "2", "--mem-per-node", "768M"}, memmixNumastatAdds(t)...), numastatScript)
	pid := vmPID(t, r)
	if !strings.Contains(r.Stdout, "ready") || strings.Contains(r.Stdout, "huge=0") {
		t.Fatalf("memmix did not get its memory, huge pages included:\n%s", tail(r.Stdout, 4000))
	}
	before, after := r.section(t, "before"), r.section(t, "after")
	ref, err := testutil.ParseNumastat([]byte(before))
	if err != nil {
		t.Fatalf("numastat -p %d in the VM: %v:\n%s", pid, err, before)
	}
	if again, err := testutil.ParseNumastat([]byte(after)); err != nil || fmt.Sprint(again) != fmt.Sprint(ref) {
		t.Fatalf("numastat's figures of the stopped process changed between its two reads (%v):\n%s\n%s", err, before, after)
	}
	t.Logf("numastat -p %d in the VM:\n%s", pid, before)
	if nodes := ref.Nodes(); len(nodes) != 3 {
		t.Fatalf("numastat shows nodes %v, want the VM's 3", nodes)
	}
	// Interleaved: each of the three nodes holds a share of each part of
	// the mix, so a per-node mix-up cannot pass by agreeing on zeros.
	for _, row := range []string{"Heap", "Stack", "Private", "Huge"} {
		for _, n := range ref.Nodes() {
			if v, _ := strconv.ParseFloat(ref[row][n], 64); v < 1 {
				t.Errorf("numastat: %s on node %s is %s MB; the interleaved mix should put at least 1 MB of it there", row, n, ref[row][n])
			}
		}
	}

	type figures struct {
		ByNode map[string]uint64            `json:"memory_bytes_by_node"`
		ByCat  map[string]map[string]uint64 `json:"memory_bytes_by_category"`
	}
	var frame struct {
		Processes []struct {
			PID int `json:"pid"`
			figures
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(r.section(t, "top")), &frame); err != nil || len(frame.Processes) != 1 || frame.Processes[0].PID != pid {
		t.Fatalf("top --format json --filter %d: %v: %.1000s", pid, err, r.section(t, "top"))
	}
	var detail struct {
		PID int `json:"pid"`
		figures
	}
	if err := json.Unmarshal([]byte(r.section(t, "detail")), &detail); err != nil || detail.PID != pid {
		t.Fatalf("live's drill-down of memmix %d: %v: %.1000s", pid, err, r.section(t, "detail"))
	}
	for _, v := range []struct {
		what string
		figures
	}{
		{"top --format json", frame.Processes[0].figures},
		{"live's drill-down", detail.figures},
	} {
		if len(v.ByCat) != 4 {
			t.Errorf("%s: memory_bytes_by_category has keys %v, want huge, heap, stack, private", v.what, v.ByCat)
		}
		for _, d := range testutil.CompareNumastat(ref, v.ByNode, v.ByCat) {
			t.Errorf("%s: %s", v.what, d)
		}
	}
	t.Run("nodes", func(t *testing.T) { checkTopNodes(t, r) })
	t.Run("stat", func(t *testing.T) { checkStatMeminfo(t, r) })
}

// checkTopNodes holds top's node view to references outside numascope:
// each node's memory_total_bytes and memory_free_bytes, in every frame, to
// numastat -m read before and after top (checkNodeMemory; top runs bound
// to node 0); cpu_percent to a known load, a busy loop in user space
// pinned to CPU 2, one of node 1's two CPUs, in an otherwise idle VM.
//
// Quiet, node 1 reads 50.0-50.8: the busy CPU is charged every tick, the
// idle one nothing. Under a busy host the emulator's vCPU loses ticks: the
// busy CPU is charged fewer than the time that passed, while its idle
// neighbour's idle time (kept by the clock, not by ticks) is whole, and
// node 1 reads 29-42% beside four busy loops although the loop's own CPU
// time (precise, from the scheduler) is 100% of it. So the reference is
// the kernel's per-CPU counters themselves, CPUs 2 and 3 of /proc/stat
// read with grep before and after top, summed by the test (busy: user,
// nice, system, irq, softirq, steal; of those and idle and iowait): node
// 1's CPU% over frames 1 and 2 must be that share over top's run within 8
// points (its frames cover most of that run, not all: seen 0.5 apart
// quiet, 0.7-4.7 beside four busy loops). And CPU 2 must be busy for at
// least half of what the kernel charged it: the loop holds it (quiet
// 99.7%; beside busy loops 83-93%, the emulator's lost ticks again).
// Node 2, idle, at most 5. Caught: the busy and idle ticks of a node
// summed rather than averaged (100), taken over every CPU (17), or given
// to another node.
func checkTopNodes(t *testing.T, r *vmResult) {
	frames := topFrames(t, r.section(t, "nodes"))
	if len(frames) != 3 {
		t.Fatalf("%d frames of top's node view, want 3", len(frames))
	}
	cpu2, node := statShares(t, r.section(t, "busy0"), r.section(t, "busy1"))
	if cpu2 < 50 {
		t.Fatalf("CPU 2, which a busy loop holds, was busy for %.1f%% of its ticks over top's run", cpu2)
	}
	lo, hi := node-8, node+8
	var node1 float64
	for i, f := range frames {
		got := map[int][2]uint64{}
		for _, n := range f.Nodes {
			got[n.Node] = [2]uint64{n.MemTotal, n.MemFree}
		}
		checkNodeMemory(t, fmt.Sprintf("top frame %d", i), r.section(t, "nodesbefore"), r.section(t, "nodesafter"), got, 0)
		if i == 0 {
			continue // no interval yet
		}
		for _, n := range f.Nodes {
			switch n.Node {
			case 1:
				if fmt.Sprint(n.CPUs) != "[2 3]" {
					t.Errorf("top frame %d: node 1's CPUs %v, want [2 3]", i, n.CPUs)
				}
				node1 += n.CPUPercent / 2
			case 2:
				if n.CPUPercent > 5 {
					t.Errorf("top frame %d: node 2, idle, at %.1f%% CPU", i, n.CPUPercent)
				}
			}
			t.Logf("top frame %d over %.2f s: node %d at %.1f%% CPU", i, f.Interval, n.Node, n.CPUPercent)
		}
	}
	if node1 < lo || node1 > hi {
		t.Errorf("top: node 1 at %.1f%% CPU over frames 1 and 2; /proc/stat's CPUs 2 and 3 were %.1f%% busy over top's run (CPU 2 %.1f%%): want %.1f-%.1f",
			node1, node, cpu2, lo, hi)
	} else {
		t.Logf("top: node 1 at %.1f%% CPU over frames 1 and 2; /proc/stat's CPUs 2 and 3 %.1f%% busy over top's run (CPU 2 %.1f%%)", node1, node, cpu2)
	}
}

// numastatFiles returns the host's numastat and the loader and libraries
// it needs (ldd's list), each a file of its own under its own name, for
// --add: the VM has no C library, and numavm copies a symbolic link as a
// link.
func numastatFiles(t *testing.T, numastat string) []string {
	t.Helper()
	out, err := exec.Command("ldd", numastat).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", numastat, err)
	}
	files := []string{numastat}
	for _, l := range strings.Split(string(out), "\n") {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
		f := strings.Fields(l)
		if len(f) >= 3 && f[1] == "=>" {
			files = append(files, f[2])
		} else if len(f) == 2 && strings.HasPrefix(f[0], "/") {
			files = append(files, f[0])
		}
	}
	dir := t.TempDir()
	var adds []string
	for _, f := range files {
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		adds = append(adds, dst)
	}
	if len(adds) < 3 || !strings.Contains(strings.Join(adds, " "), "ld-linux") {
		t.Fatalf("ldd %s named no loader and C library: %s", numastat, out)
	}
	return adds
}

// checkStatMeminfo holds every per-node meminfo column of `numascope stat`
// (node.N.FIELD, gauges in bytes; HugePages_* in pages) that numactl's
// numastat -m also shows (in MiB, huge pages converted at the VM's huge
// page size) to numastat's reads before and after it: within the two
// reads, widened by meminfoSlackMiB (the kernel's own churn meanwhile),
// and on node 0, where stat and top ran bound with their memory, by 24 MiB
// more below and above (their heap, stacks, page tables and mapped binary
// come and go). The VM holds memmix's mix over nodes 0-2, 96 MiB more on node 2 and
// 4 huge pages, so the fields are not all zero.
func checkStatMeminfo(t *testing.T, r *vmResult) {
	before := numastatMeminfo(t, r.section(t, "nodesbefore"))
	after := numastatMeminfo(t, r.section(t, "nodesafter"))
	huge, err := strconv.ParseFloat(strings.TrimSpace(r.section(t, "hugesize")), 64)
	if err != nil || huge <= 0 {
		t.Fatalf("Hugepagesize in the VM: %q", r.section(t, "hugesize"))
	}
	lines := strings.Split(strings.TrimSpace(r.section(t, "nodestat")), "\n")
	if len(lines) != 2 {
		t.Fatalf("stat --csv -n 1 printed %d lines, want a header and a sample:\n%s", len(lines), r.section(t, "nodestat"))
	}
	head, vals := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	if len(head) != len(vals) {
		t.Fatalf("%d columns and %d values", len(head), len(vals))
	}
	compared, nonzero := 0, 0
	for i, col := range head {
		// node.N.FIELD
		parts := strings.SplitN(col, ".", 3)
		if len(parts) != 3 || parts[0] != "node" {
			continue
		}
		node, err := strconv.Atoi(parts[1])
		field := parts[2]
		if err != nil || before[field] == nil {
			continue
		}
		v, err := strconv.ParseFloat(vals[i], 64)
		if err != nil {
			t.Errorf("%s = %q", col, vals[i])
			continue
		}
		mib := v / (1 << 20)
		if strings.HasPrefix(field, "HugePages_") {
			mib = v * huge / (1 << 20)
		}
		b, a := before[field][node], after[field][node]
		lo, hi := math.Min(b, a)-meminfoSlackMiB, math.Max(b, a)+meminfoSlackMiB
		if node == 0 {
			lo, hi = lo-24, hi+24
		}
		if mib < lo || mib > hi {
			t.Errorf("stat's %s = %.2f MiB; numastat -m read %.2f before and %.2f after (bounds %.2f-%.2f)", col, mib, b, a, lo, hi)
		}
		compared++
		if b > 0 {
			nonzero++
		}
	}
	// numastat -m shows some 30 fields on each of 3 nodes.
	if compared < 60 || nonzero < 30 {
		t.Errorf("compared %d of stat's node meminfo columns with numastat -m (%d non-zero there), want at least 60 (30)", compared, nonzero)
	}
	t.Logf("compared %d node meminfo columns with numastat -m, %d of them non-zero there", compared, nonzero)
}

// statShares reads two greps of /proc/stat's cpu2 and cpu3 lines ("cpuN
// user nice system idle iowait irq softirq steal ...", in ticks) and
// returns CPU 2's busy share and both CPUs' together, in percent, between
// them.
func statShares(t *testing.T, before, after string) (cpu2, both float64) {
	t.Helper()
	read := func(out string) map[string][2]float64 {
		m := map[string][2]float64{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) < 9 {
				t.Fatalf("/proc/stat line %q", l)
			}
			var v [8]float64
			for i := range v {
				v[i], _ = strconv.ParseFloat(f[i+1], 64)
			}
			busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
			m[f[0]] = [2]float64{busy, busy + v[3] + v[4]}
		}
		if len(m) != 2 {
			t.Fatalf("/proc/stat's cpu2 and cpu3 lines: %q", out)
		}
		return m
	}
	a, b := read(before), read(after)
	d := func(cpu string, i int) float64 { return b[cpu][i] - a[cpu][i] }
	if d("cpu2", 1) <= 0 || d("cpu3", 1) <= 0 {
		t.Fatalf("no ticks passed on CPUs 2 and 3: %q then %q", before, after)
	}
	return 100 * d("cpu2", 0) / d("cpu2", 1), 100 * (d("cpu2", 0) + d("cpu3", 0)) / (d("cpu2", 1) + d("cpu3", 1))
}
