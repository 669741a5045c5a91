package vmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// hotplugScript runs `numascope stat` on the per-node perf software events
// twice in a 2-node VM of 2 CPUs a node: in "cycle", CPU 3 (node 1's second)
// goes offline after the fourth sample and comes back 4 s later; in
// "late", CPU 3 is offline when stat starts and comes online after the
// fourth sample. The shell notes how many CSV lines stat had written
// before and after each change (taking a CPU offline takes the emulator a
// while on a busy host).
const hotplugScript = `cpu3() { echo $1 > /sys/devices/system/cpu/cpu3/online; }
lines() { cat /tmp/$1.csv 2>/dev/null | wc -l; }
waitlines() { i=0; while [ "$(lines $1)" -lt $2 ]; do sleep 0.05; i=$((i+1)); [ $i -gt 2400 ] && break; done; }
run() {
	numascope stat -i 500ms -n 30 -e 'perf.*.cpu-clock' -e 'perf.*.context-switches' --csv > /tmp/$1.csv 2>/tmp/$1.err &
	P=$!
	waitlines $1 5
	b=$(lines $1); cpu3 $2; echo "@@change $1 $b $(lines $1)"
	sleep 4
	b=$(lines $1); cpu3 $3; echo "@@change $1 $b $(lines $1)"
	wait $P
	echo "@@rc $1 $?"
}
run cycle 0 1
cpu3 0
run late 1 0
cpu3 1
sec cycle.csv cat /tmp/cycle.csv
sec cycle.err cat /tmp/cycle.err
sec late.csv cat /tmp/late.csv
sec late.err cat /tmp/late.err
`

// TestPerfCPUHotplug holds the perf sensor's per-node counts through CPU
// hotplug, as when a user turns SMT off and on while numascope runs. The
// reference is the kernel's clock: cpu-clock counts every nanosecond of an
// online CPU, so a node's rate is 1e9 per second per online CPU (its mean
// over each phase within 25%): 2e9 for node 1 with both CPUs, 1e9 with
// CPU 3 offline. Node 0
// reads on through every change, never missing; node 1 misses at most two
// samples at each change (the change's and the next, whose rate needs two
// good reads), says why on stderr, and counts again once CPU 3 is back,
// also when CPU 3 was offline as stat started. Before 2026-12-07 the
// kernel's turning a CPU's events off at hotplug went unnoticed: node 1
// read 1e9 for the rest of the run after CPU 3 came back, and where the
// two events shared a group, every perf column was missing from the
// change on.
func TestPerfCPUHotplug(t *testing.T) {
	requireVM(t)
	r := runVM(t, []string{"--nodes", "2", "--cpus-per-node", "2"}, hotplugScript)
	changes := map[string][][2]int{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		var name string
		var n, m int
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "@@change %s %d %d", &name, &n, &m); err == nil {
			changes[name] = append(changes[name], [2]int{n, m})
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "@@rc %s %d", &name, &n); err == nil && n != 0 {
			t.Errorf("%s: numascope stat exited with status %d:\n%s", name, n, r.section(t, name+".err"))
		}
	}
	for _, run := range []struct {
		name       string
		cpus       [3]float64 // node 1's online CPUs before, between and after the changes
		offMessage string
		onMessage  string
	}{
		{"cycle", [3]float64{2, 1, 2}, "CPU 3 went offline", "CPU 3 came back online"},
		{"late", [3]float64{1, 2, 1}, "CPU 3 came back online", "CPU 3 went offline"},
	} {
		t.Run(run.name, func(t *testing.T) {
			ch := changes[run.name]
			if len(ch) != 2 {
				t.Fatalf("the script noted %d changes, want 2: %v", len(ch), changes)
			}
			s, err := parseCSV(r.section(t, run.name+".csv"))
			if err != nil {
				t.Fatal(err)
			}
			errs := r.section(t, run.name+".err")
			t.Logf("stderr:\n%s", errs)
			for _, m := range []string{run.offMessage, run.onMessage} {
				if !strings.Contains(errs, m) {
					t.Errorf("stderr does not say %q", m)
				}
			}
			if !strings.Contains(errs, "2 read errors") {
				t.Errorf("the summary does not count 2 read errors (one a change)")
			}
			node0, node1 := s.col(t, "perf.0.cpu-clock"), s.col(t, "perf.1.cpu-clock")
			cs1 := s.col(t, "perf.1.context-switches")
			// Sample i (line i+2 of the file) is the interval ending
			// at T[i]; lines(file) = n means samples 0..n-2 were out,
			// so a change begun at n lines and done at m falls in
			// samples n-1 to m-1. A CPU going offline shows in the
			// next read; one coming online is looked for once a
			// second (hotplugRecheck), up to two samples later. The
			// sample that shows the change and the next are missing.
			phase := func(i int) int {
				switch {
				case i <= ch[0][0]-2:
					return 0
				case i > ch[0][1]+2 && i <= ch[1][0]-2:
					return 1
				case i > ch[1][1]+2:
					return 2
				}
				return -1 // around a change
			}
			// Each phase's mean (its counts over its time) within
			// 25%: a rate of 2e9 read as 1e9, or the reverse, is far
			// outside. Single samples are not compared: the
			// emulator's vCPUs answer the reads of their counters
			// late when the host is busy, and beside a loaded suite
			// run samples read from 0.2e9 to 3.7e9 for 1e9 and 2e9
			// (a read late in one interval is early in the next, so
			// a phase's mean is off only by its ends).
			seen := [3]int{}
			var count, span [3]float64
			var count0, span0 float64
			missing := 0
			for i := range s.T {
				dt := s.T[i]
				if i > 0 {
					dt -= s.T[i-1]
				}
				if math.IsNaN(node0[i]) {
					t.Errorf("sample %d: node 0's cpu-clock is missing", i)
				} else {
					count0, span0 = count0+node0[i]*dt, span0+dt
				}
				if math.IsNaN(node1[i]) {
					missing++
				}
				p := phase(i)
				if p < 0 {
					continue
				}
				seen[p]++
				if math.IsNaN(node1[i]) || math.IsNaN(cs1[i]) {
					t.Errorf("sample %d (phase %d): node 1's cpu-clock %v, context switches %v: missing away from a change", i, p, node1[i], cs1[i])
					continue
				}
				count[p], span[p] = count[p]+node1[i]*dt, span[p]+dt
			}
			for p := range 3 {
				if span[p] > 0 {
					within(t, fmt.Sprintf("node 1's cpu-clock a second over phase %d (%d samples, %g online CPUs)", p, seen[p], run.cpus[p]),
						count[p]/span[p], 0.75e9*run.cpus[p], 1.25e9*run.cpus[p])
				}
			}
			within(t, "node 0's cpu-clock a second over the run", count0/span0, 0.8*2e9, 1.2*2e9)
			if missing > 4 {
				t.Errorf("node 1 misses %d samples, want at most 2 at each of the 2 changes", missing)
			}
			if seen[0] == 0 || seen[1] == 0 || seen[2] == 0 {
				t.Errorf("samples before, between and after the changes: %v (changes at lines %v of %d samples); every phase must have one", seen, ch, len(s.T))
			}
			t.Logf("changes after %v lines; samples per phase %v; node 1 missing in %d", ch, seen, missing)
		})
	}
}

// traceHotplugScript runs the serial first-touch workload under ntrace (a
// numatrace.Tracer, as numascope top opens it) in a 2-node VM of 2 CPUs a
// node, after CPU 3 has gone offline and come back and CPU 2 has gone
// offline, so that node 1's worker computes on CPU 3, whose events the
// kernel turned off when it went offline.
const traceHotplugScript = `sec hotplug ntrace sh -c 'echo 0 > /sys/devices/system/cpu/cpu3/online; sleep 2.5; echo 1 > /sys/devices/system/cpu/cpu3/online; sleep 2.5; echo 0 > /sys/devices/system/cpu/cpu2/online; exec firsttouch --serial --mb 32 --settle 0 --seconds 6 --lead 0 --linger 0 --out /tmp/hp.wl'
echo 1 > /sys/devices/system/cpu/cpu2/online
sec hotplug.wl cat /tmp/hp.wl
`

// TestNUMATraceCPUHotplug holds top's kernel event source through CPU
// hotplug to the kernel's own counters: with node 1's worker on CPU 3,
// whose events went off when it went offline, the hinting faults counted
// must agree with the workload's numa_hint_faults deltas as in
// TestNUMATrace (the machine's at least 99% of them). Before 2026-12-07
// nothing was reopened, and that worker's faults, half the run's, were
// not counted.
func TestNUMATraceCPUHotplug(t *testing.T) {
	requireVM(t)
	bin := buildNtrace(t)
	r := runVM(t, []string{"--nodes", "2", "--cpus-per-node", "2", "--add", bin}, traceHotplugScript)
	var res ntraceResult
	if err := json.Unmarshal([]byte(r.section(t, "hotplug")), &res); err != nil {
		t.Fatalf("ntrace's output: %v\n%s", err, r.section(t, "hotplug"))
	}
	if res.Proc == nil || res.CommandError != "" || res.Malformed != 0 || res.Lost > 4 {
		t.Fatalf("ntrace: proc %+v, command %q, %d malformed, %d lost", res.Proc, res.CommandError, res.Malformed, res.Lost)
	}
	wl := parseWorkload(t, r.section(t, "hotplug.wl")).counters(t, "total")
	if wl.HintFaults <= 0 {
		t.Fatalf("the workload's numa_hint_faults is %d: NUMA balancing did not run", wl.HintFaults)
	}
	t.Logf("%d intervals, %d samples; proc %+v; the workload's kernel deltas %+v", res.Intervals, res.Samples, *res.Proc, wl)
	kernel(t, "hotplug", &res, wl)
}
