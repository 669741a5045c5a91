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
// default random chain, huge pages asked for) agrees within 10% (or the reference's own spread, below) with
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
// Tolerance: 10% (issue 30's bound), for the build-machine test's reasons
// (the same quantity, with only the loop around the loads, huge-page
// coverage and the host's load to differ), widened to twice the spread of
// the reference's own rounds where the reference disagrees with itself by
// more, and never past 25%. The two run interleaved, round after round,
// and the test compares the medians over 9 rounds of each round's best
// repeat (numascope's is its `latency_ns.min`). Under TCG the reference
// has two levels: six runs of 11 rounds at host load 1-4 (both buffers
// wholly in huge pages, checked in smaps_rollup and bench's
// huge_fraction) gave refchase rounds of 207-233 ns and, in some runs,
// whole rounds of 170-177 ns, while numascope stayed at 190-205 ns; the
// ratio of the medians was 0.88-0.99, half of the runs past 10%, and
// refchase's loop unrolled as bench's did not change it. The likely cause
// is the emulator's software TLB (QEMU's accel/tcg/cputlb.c): direct-mapped,
// 4 KiB entries even for huge pages, resized only at a guest flush to the
// highest use of a 100 ms window (doubled above 70%, shrunk below 30%). A
// random chase over P = 16 384 pages fills N entries to N(1 - e^(-P/N)),
// 63% at N = P and 39% at N = 2P: two stable sizes, chosen by what ran
// before the last flush, serving 63% and 79% of loads; 16% more emulated
// page walks at ~300 ns each is the ~50 ns between the levels. A reference
// whose rounds span 25% cannot hold another program to 10%, so the bound
// follows its interquartile range (2 x IQR / median, as TestC2CMatchesReference
// does), capped at 25%; and, since beside busy host loops numascope's rounds
// spread too (493-751 ns against the reference's 550-676 in a loaded CI
// run, 12% apart by the medians), the wider of the two ranges. A wrong chain still fails by far: the page-local
// chain (--chain page-local) reads 0.35 times the reference in the VM (70
// ns against 200), as on the build machines.
func TestBenchLatencyMatchesReference(t *testing.T) {
	requireVM(t)
	ref := buildStaticC(t, filepath.Join("testdata", "bench", "refchase.c"), "refchase", "-O2", "-Wall")
	const rounds, repeat, size, floor, ceiling = 9, 5, "64M", 0.10, 0.25
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
	iqrOf := func(v []float64) float64 {
		q := slices.Clone(v)
		slices.Sort(q)
		return q[(3*len(q))/4] - q[len(q)/4]
	}
	// The wider of the two programs' own spreads: beside busy host loops
	// either one's rounds spread with the host's scheduling (a CI run beside
	// four loops: numascope's rounds 493-751 ns, the reference's 550-676).
	iqr := max(iqrOf(refMin), iqrOf(oursMin))
	tolerance := min(max(floor, 2*iqr/c), ceiling)
	t.Logf("idle latency in the VM (the emulator's), %s, %d x %d loads, %d rounds: best repeat of a round: numascope %.1f ns %.1f, reference %.1f ns %.1f, ratio %.3f; median repeat: numascope %.1f, reference %.1f",
		size, repeat, bench.DefaultLoads, rounds, n, oursMin, c, refMin, ratio, oursMed, refMed)
	t.Logf("tolerance %.1f%%: the wider interquartile range of the two programs' rounds %.1f ns, twice it of the reference's median, between %.0f%% and %.0f%%", 100*tolerance, iqr, 100*floor, 100*ceiling)
	if math.Abs(ratio-1) > tolerance {
		t.Errorf("numascope bench's idle latency in the VM, %.1f ns, is %.0f%% off the independent reference's %.1f ns (medians over %d interleaved rounds of each round's best repeat: numascope %.1f, reference %.1f); want within %.1f%% (10%%, or twice the wider of the two programs' own spreads over their rounds, at most 25%%)",
			n, 100*(ratio-1), c, rounds, oursMin, refMin, 100*tolerance)
	}
}
