package vmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/bench"
)

// TestBenchLatencyMatchesReference is TestIdleLatencyMatchesReference
// (internal/bench) in the NUMA VM, through the command line: numascope
// bench's idle latency from node 0 to node 0 (`--kind latency`, its
// default random chain, huge pages asked for) agrees within 10% with
// testdata/bench/refchase.c, the independent Sattolo chase over every
// line, built static and carried in, over a buffer of the same size, on
// the same CPU (node 0's first, the one bench chases on), with as many
// loads per repeat. Node 0 has a second CPU, as a real node has, for the
// Go runtime's other threads.
//
// The reference's memory is bound to node 0 (numascope run --policy
// bind:0, a set_mempolicy before the exec and nothing more), as bench binds
// its buffer to the target node: the pair measured is node 0 to node 0 on
// both sides, and the balancing scanner, which bench turns off for its
// run, skips bound memory, so it does not unmap the reference's pages in
// the middle of its chase either. Unbound, the reference read about 0.83
// times numascope's figure by the best repeat of all, in five VM runs out
// of five; bound, 1.08 and 0.94.
//
// The figures are the emulator's, not a machine's (docs/bench.md): under
// QEMU's TCG a load costs a lookup in the emulator's software TLB and a
// host memory access, and time in the guest runs on while the host
// deschedules the vCPU's thread. What the check holds there is the whole of
// the command's latency path (binding, buffer, chain, chase, timing, JSON)
// on a NUMA kernel, against a chase that shares none of it.
//
// Tolerance, 10% (issue 30's bound), for the build-machine test's reasons:
// the same quantity, with only the loop around the loads, huge-page
// coverage and the host's load to differ. The load is the larger part
// here: one repeat of 2^21 loads lasts half a second in the VM, which the
// host preempts many times, so a round's best repeat ranged 170-530 ns on
// a host at load average 12-14. The two run interleaved, round after round,
// and the test compares the medians over 9 rounds of each round's best
// repeat (numascope's is its `latency_ns.min`): over 7 rounds, 1.03, 0.92
// and (5 rounds) 0.99 at load 12-14: the 0.92 near the bound, 9 rounds to
// narrow the medians' spread (0.93 in the first run of 9). A wrong chain still fails by far: the
// page-local chain (--chain page-local) reads 0.35 times the reference in
// the VM (70 ns against 200), as on the build machines.
func TestBenchLatencyMatchesReference(t *testing.T) {
	requireVM(t)
	ref := buildStaticC(t, filepath.Join("testdata", "bench", "refchase.c"), "refchase", "-O2", "-Wall")
	const rounds, repeat, size, tolerance = 9, 5, "64M", 0.10
	var script strings.Builder
	for r := range rounds {
		ours := fmt.Sprintf("sec lat.%d.ours numascope bench --kind latency --from 0 --to 0 --size %s --repeat %d --format json\n", r, size, repeat)
		theirs := fmt.Sprintf("sec lat.%d.ref numascope run --policy bind:0 -- refchase --size %s --steps %d --repeat %d --cpu 0 --thp\n", r, size, bench.DefaultLoads, repeat)
		if r%2 == 1 {
			ours, theirs = theirs, ours
		}
		script.WriteString(ours + theirs)
	}
	res := runVM(t, []string{"--nodes", "2", "--cpus-per-node", "2", "--add", ref}, script.String())
	var oursMin, refMin, oursMed, refMed []float64
	for r := range rounds {
		var doc struct {
			Latency *struct {
				Chain  string       `json:"chain"`
				Matrix [][]*float64 `json:"matrix"`
				Min    [][]*float64 `json:"min"`
			} `json:"latency_ns"`
		}
		sec := res.section(t, fmt.Sprintf("lat.%d.ours", r))
		if err := json.Unmarshal([]byte(sec), &doc); err != nil {
			t.Fatalf("round %d: numascope bench's JSON: %v\n%s", r, err, sec)
		}
		l := doc.Latency
		if l == nil || len(l.Min) != 1 || len(l.Min[0]) != 1 || l.Min[0][0] == nil || l.Matrix[0][0] == nil || l.Chain != "random" {
			t.Fatalf("round %d: latency_ns %s, want one pair (0 -> 0) with min and median, over the random chain", r, sec)
		}
		oursMin, oursMed = append(oursMin, *l.Min[0][0]), append(oursMed, *l.Matrix[0][0])
		fields := map[string]float64{}
		out := res.section(t, fmt.Sprintf("lat.%d.ref", r))
		for _, f := range strings.Fields(out) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k], _ = strconv.ParseFloat(v, 64)
			}
		}
		if fields["min_ns"] <= 0 || fields["median_ns"] <= 0 || fields["steps"] != bench.DefaultLoads {
			t.Fatalf("round %d: refchase printed %q", r, out)
		}
		refMin, refMed = append(refMin, fields["min_ns"]), append(refMed, fields["median_ns"])
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	n, c := med(oursMin), med(refMin)
	ratio := n / c
	t.Logf("idle latency in the VM (the emulator's), %s, %d x %d loads, %d rounds: best repeat of a round: numascope %.1f ns %.1f, reference %.1f ns %.1f, ratio %.3f; median repeat: numascope %.1f, reference %.1f",
		size, repeat, bench.DefaultLoads, rounds, n, oursMin, c, refMin, ratio, oursMed, refMed)
	if math.Abs(ratio-1) > tolerance {
		t.Errorf("numascope bench's idle latency in the VM, %.1f ns, is %.0f%% off the independent reference's %.1f ns (medians over %d interleaved rounds of each round's best repeat: numascope %.1f, reference %.1f); want within %.0f%%",
			n, 100*(ratio-1), c, rounds, oursMin, refMin, 100*tolerance)
	}
}
