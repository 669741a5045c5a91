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
// default random chain, huge pages asked for) agrees within 10% (or the
// programs' own spread on a busy host, below) with
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
// What this test found: numascope read 13-23% above the reference here
// (200 against 176 ns over 64 MiB, 297 against 242 over 256 MiB), because
// Go's runtime signalled the chasing thread about 50 times a second to
// preempt it (the guest's /proc/interrupts: 48 rescheduling IPIs a second
// on the chasing CPU, against none for the reference), and under this
// emulator a signal costs a chase milliseconds: a C chase signalled 50
// times a second by a timer read 290 against 233 ns over 256 MiB, and 295
// at 200 a second, as if each signal emptied the emulator's software TLB
// and the chase then refilled it page by page (QEMU flushes it on some
// privileged register writes; which one this path makes was not
// identified). With GODEBUG=asyncpreemptoff=1 numascope read 241 ns. bench's
// measuring threads now hold that signal (holdPreemption,
// TestMeasuringThreadHoldsPreemption); since, 236-242 against 240-251 ns.
//
// Size 256 MiB, not 64: over 64 MiB the reference alone has two levels
// from one process to the next (rounds of 170-180 ns and of 215-235 ns on
// the same VM, its placement in guest memory and host huge pages ruled
// out), a property of the emulator that neither program controls and that
// a 10% bound on one run cannot absorb; over 256 MiB none showed in 14
// runs (224-251 ns), so the buffer is 256 MiB and each node 1 GiB.
//
// Tolerance: 10% (issue 30's bound), for the build-machine test's reasons
// (the same quantity, with only the loop around the loads and the host's
// load to differ), widened to twice the interquartile range of the
// rounds' ratios where they spread more, never past 25%: beside busy host
// loops the rounds spread with the host's scheduling (numascope's 493-751
// ns and the reference's 550-676 in a loaded CI run; in another,
// 1192-1623 and 858-1694 ns). The two run interleaved, round after round;
// the test takes each round's ratio of the two programs' best of 3 repeats
// (numascope's is its `latency_ns.min`) and compares the median ratio over
// 7 rounds. Two programs run back to back share the host's moment, which
// the medians of each program's rounds taken apart do not: that second
// loaded run read 28% apart by those medians, 19% by the rounds' ratios
// (until 2026-12-07 the test took the medians apart, and failed it).
// (9 rounds of 5 took 137 s of a quiet CI run and 400-530 s of a loaded
// one, a quarter of the VM suite. In a quiet run a round's median repeat
// was within 1-5% of its best in 16 rounds of 18, 10-19% in two of
// numascope's: the best of a round drops such a repeat, the median over
// the rounds such a round, and the rounds carry a busy host's spread into
// the bound.) A wrong
// chain still fails by far: the page-local chain (--chain page-local)
// reads 0.35 times the reference in the VM (70 ns against 200), as on
// the build machines.
func TestBenchLatencyMatchesReference(t *testing.T) {
	requireVM(t)
	ref := buildStaticC(t, filepath.Join("testdata", "bench", "refchase.c"), "refchase", "-O2", "-Wall")
	const rounds, repeat, size, floor, ceiling = 7, 3, "256M", 0.10, 0.25
	var script strings.Builder
	for r := range rounds {
		ours := fmt.Sprintf("sec lat.%d.ours numascope bench --kind latency --from 0 --to 0 --size %s --repeat %d --format json\n", r, size, repeat)
		theirs := fmt.Sprintf("sec lat.%d.ref numascope run --policy bind:0 -- refchase --size %s --steps %d --repeat %d --cpu 0 --thp\n", r, size, bench.DefaultLoads, repeat)
		if r%2 == 1 {
			ours, theirs = theirs, ours
		}
		script.WriteString(ours + theirs)
	}
	res := runVM(t, []string{"--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "1G", "--add", ref}, script.String())
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
	// Each round's ratio: the two programs ran back to back, so a host
	// that slows the emulator for a while slows both of a round alike.
	ratios := make([]float64, rounds)
	for r := range ratios {
		ratios[r] = oursMin[r] / refMin[r]
	}
	ratio := med(ratios)
	q := slices.Clone(ratios)
	slices.Sort(q)
	iqr := q[(3*len(q))/4] - q[len(q)/4]
	tolerance := min(max(floor, 2*iqr), ceiling)
	t.Logf("idle latency in the VM (the emulator's), %s, %d x %d loads, %d rounds: best repeat of a round: numascope %.1f ns %.1f, reference %.1f ns %.1f; rounds' ratios %.3f, median %.3f; median repeat: numascope %.1f, reference %.1f",
		size, repeat, bench.DefaultLoads, rounds, n, oursMin, c, refMin, ratios, ratio, oursMed, refMed)
	t.Logf("tolerance %.1f%%: twice the interquartile range of the rounds' ratios (%.3f), between %.0f%% and %.0f%%", 100*tolerance, iqr, 100*floor, 100*ceiling)
	if math.Abs(ratio-1) > tolerance {
		t.Errorf("numascope bench's idle latency in the VM is %.0f%% off the independent reference's (the median of %d interleaved rounds' ratios %.3f, each of the round's best repeats: numascope %.1f, reference %.1f ns); want within %.1f%% (10%%, or twice the ratios' interquartile range, at most 25%%)",
			100*(ratio-1), rounds, ratios, oursMin, refMin, 100*tolerance)
	}
}
