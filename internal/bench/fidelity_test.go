package bench

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/numascope/numascope/internal/testutil"
)

// TestRandomChainIsOneCycle: the default chain goes through every line
// exactly once and back to the start, and each step lands on a line
// chosen without regard to the page it leaves: about one step in `pages`
// stays in its page (the page-local chain stays for 63 steps in 64).
func TestRandomChainIsOneCycle(t *testing.T) {
	for _, c := range []struct{ size, line int }{{2 * 64, 64}, {64 * ChainPage, 64}, {37 * ChainPage, 128}, {1024 * ChainPage, 64}} {
		buf := mapped(t, c.size)
		start, lines, _ := BuildRandomChain(buf, c.line, ChainSeed, nil)
		if lines != c.size/c.line || start != unsafe.Pointer(&buf[0]) {
			t.Fatalf("size %d line %d: %d lines, want %d", c.size, c.line, lines, c.size/c.line)
		}
		base := uintptr(unsafe.Pointer(&buf[0]))
		seen := make([]bool, lines)
		samePage, next := 0, 0
		p := start
		prev := -1
		for i := 0; i < lines; i++ {
			off := int(uintptr(p) - base)
			if off < 0 || off >= c.size || off%c.line != 0 {
				t.Fatalf("step %d: address %p is not a line of the buffer", i, p)
			}
			if seen[off/c.line] {
				t.Fatalf("size %d: line %d visited twice after %d of %d steps", c.size, off/c.line, i, lines)
			}
			seen[off/c.line] = true
			if prev >= 0 && off/ChainPage == prev/ChainPage {
				samePage++
			}
			if off == prev+c.line {
				next++
			}
			prev = off
			p = *(*unsafe.Pointer)(p)
		}
		if p != start {
			t.Fatalf("size %d: after %d steps the chain is at %p, not back at the start", c.size, lines, p)
		}
		pages := (c.size + ChainPage - 1) / ChainPage
		if pages >= 64 && samePage > 4*lines/pages+8 {
			t.Errorf("size %d: %d of %d steps stay in their page, want about %d: the chain is page-local", c.size, samePage, lines, lines/pages)
		}
		if lines >= 1024 && next > 8 {
			t.Errorf("size %d: %d steps go to the next line: not random", c.size, next)
		}
	}
}

// TestIdleLatencyMatchesReference: numascope's idle latency (the whole of
// bench's latency path: buffer, binding, chain, chase, timing) agrees
// within 10% with testdata/bench/refchase.c, a chase written
// independently of numascope (its own random numbers, its own Sattolo
// over an index array, a plain p = *p loop, clock_gettime) over a buffer
// of the same size, on the same CPU, with huge pages asked for as bench
// does by default.
//
// Tolerance, 10% (the bound): both measure the same quantity, a
// dependent load to a uniformly random line, so what may differ is a few
// percent: the loop around the loads (hidden under a miss of 100 ns and
// more), THP coverage, and the load of a shared machine. For the load, the
// two run interleaved, round after round, on the same CPU, and the test
// compares the least of all their repeats (10 rounds of 15 each): a repeat
// is short (2^14 loads, a few ms), and another task that preempts one
// only adds to it, so the least of 150 is one that nothing interrupted.
// The median over rounds of each round's best, the statistic before, did
// not hold on a busy 2-CPU machine: with two other tasks on the CPU the
// median repeat of both is 700 ns (three tasks' time), and in some rounds
// none of the 15 repeats escapes (a round's best 470-530 ns against 175-225
// in the others), more often for the reference than for numascope (ratio
// 0.65 in a suite run, 0.94-0.97 beside two busy loops; the least 0.98-1.04). Rounds in
// which the kernel gave the two buffers different shares of huge pages are
// left out and replaced (below). numascope's reported figure is the median
// of the same repeats, the least is their minimum: both come from the same
// timed chase. With the page-local chain (--chain page-local, the default
// before issue 30) the ratio is about 0.36 on the build machines (55 ns
// against 155), as the issue measured on a quiet Xeon (42 against 113):
// the test fails by far.
//
// Size: 64 MiB, to keep the test to seconds (a chain of some GiB takes
// seconds to build, every round). It is below the last-level cache of some
// machines (the build machines' sysfs shows 480 MiB of L3; there 64 MiB
// gives 150-170 ns and 2 GiB some 550 ns, a VM's two-level page walks
// included), so the figure is partly the cache's there. The comparison
// holds all the same, since both chase the same size the same way, and the
// page-local chain still measures a third of it.
func TestIdleLatencyMatchesReference(t *testing.T) {
	topo := liveTopology(t)
	bin := buildReference(t, "refchase.c")
	ini, err := Initiators("", topo)
	if err != nil {
		t.Fatal(err)
	}
	node := ini[0]
	cpu := usableCPUs(topo)[node][0]
	const size, loads, repeat, rounds = 64 << 20, 1 << 14, 15, 10
	var ours, ref, oursMed, refMed, huge []float64
	var unlike []string
	numascope := func() (best, median, huge float64) {
		res, err := Run(Options{Topology: topo, Kinds: Kinds{Latency: true}, From: strconv.Itoa(node), To: strconv.Itoa(node),
			Size: size, Repeat: repeat, Loads: loads})
		if err != nil {
			t.Fatal(err)
		}
		huge = -1
		if h := res.Latency.HugeFraction[0][0]; h != nil {
			huge = *h
		}
		return *res.Latency.Min[0][0], *res.Latency.Matrix[0][0], huge
	}
	reference := func() (best, median, huge float64) {
		out, err := exec.Command(bin, "--size", strconv.Itoa(size), "--steps", strconv.Itoa(loads), "--repeat", strconv.Itoa(repeat),
			"--cpu", strconv.Itoa(cpu), "--thp").Output()
		if err != nil {
			t.Fatalf("refchase: %v", err)
		}
		fields := keyValues(out)
		if _, ok := fields["huge"]; !ok || fields["min_ns"] <= 0 || fields["median_ns"] <= 0 {
			t.Fatalf("refchase printed %q", out)
		}
		return fields["min_ns"], fields["median_ns"], fields["huge"]
	}
	// A round counts when both buffers had the same share of huge pages
	// (within 0.1, or neither could tell): a buffer on base pages adds a
	// TLB miss, and on a VM a two-level page walk, to every load (on the
	// build machines 560-1050 ns against 190-480 with huge pages, beside
	// the VM suite), so a round where the kernel gave one of them fewer
	// huge pages compares two different quantities. Such rounds are
	// logged and replaced, up to as many again.
	for r := 0; len(ours) < rounds && r < 2*rounds; r++ {
		var o, om, oh, c, cm, ch float64
		if r%2 == 0 {
			o, om, oh = numascope()
			c, cm, ch = reference()
		} else {
			c, cm, ch = reference()
			o, om, oh = numascope()
		}
		if math.Abs(oh-ch) > 0.1 {
			unlike = append(unlike, fmt.Sprintf("numascope %.1f ns on %.2f huge, reference %.1f ns on %.2f", o, oh, c, ch))
			continue
		}
		ours, oursMed = append(ours, o), append(oursMed, om)
		ref, refMed = append(ref, c), append(refMed, cm)
		huge = append(huge, oh, ch)
	}
	if len(unlike) > 0 {
		t.Logf("%d rounds left out, their buffers' huge-page shares differing by more than 0.1: %s", len(unlike), strings.Join(unlike, "; "))
	}
	if len(ours) < rounds/2 {
		t.Fatalf("only %d of %d rounds had both buffers on the same share of huge pages: the kernel could not back them alike (see /sys/kernel/mm/transparent_hugepage and memory fragmentation), so the two latencies are not comparable here", len(ours), len(ours)+len(unlike))
	}
	n, c := slices.Min(ours), slices.Min(ref)
	ratio := n / c
	t.Logf("idle latency, %d MiB, %d x %d loads, %d rounds: least repeat: numascope %.1f ns, reference %.1f ns, ratio %.3f; best repeat of each round: numascope %.1f, reference %.1f; median repeat: numascope %.1f, reference %.1f; huge-page share %.2f-%.2f",
		size>>20, repeat, loads, len(ours), n, c, ratio, ours, ref, oursMed, refMed, slices.Min(huge), slices.Max(huge))
	if math.Abs(ratio-1) > 0.10 {
		t.Errorf("numascope's idle latency %.1f ns is %.0f%% off the independent reference's %.1f ns (least of %d interleaved rounds of %d repeats; each round's best: numascope %.1f, reference %.1f); want within 10%%",
			n, 100*(ratio-1), c, len(ours), repeat, ours, ref)
	}
}

// buildReference builds testdata/bench/NAME, a C reference, with gcc -O2
// (static and with threads: a static binary runs the same in a VM and
// on the host). Without gcc the test is skipped, unless
// NUMASCOPE_VM_REQUIRED makes it a failure (the profiler's tests need gcc
// too).
func buildReference(t *testing.T, name string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipUnless(t, testutil.VMRequired, "no gcc to build testdata/bench/%s", name)
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(name, ".c"))
	src := filepath.Join(testutil.RepoRoot(t), "testdata", "bench", name)
	args := append(append([]string{"-O2"}, flags...), "-o", bin, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, out)
	}
	return bin
}

// keyValues reads a reference's "key=value ..." line.
func keyValues(out []byte) map[string]float64 {
	fields := map[string]float64{}
	for _, f := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k], _ = strconv.ParseFloat(v, 64)
		}
	}
	return fields
}
