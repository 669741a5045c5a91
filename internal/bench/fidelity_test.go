package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
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
// more), THP coverage, and the load of a shared machine. For the load,
// each tool runs as a process of its own under SCHED_FIFO (when the test
// may set it: root), so that no other task preempts a repeat, and the two
// run interleaved, round after round, on the same CPU; the test holds the
// median over 10 rounds of each round's ratio of the two tools' best of
// 15 repeats. Before 2026-12-07 the tools ran scheduled as usual, and
// neither statistic held everywhere: the median of the rounds' ratios
// failed on a busy 2-CPU machine (with two other tasks on the CPU some
// rounds had no repeat that escaped preemption, a round's best 470-530 ns
// against 175-225 in the others: ratio 0.65 in a suite run), and the
// least repeat of all, which replaced it, failed in a quiet suite run on
// one lucky repeat of the reference (106 ns, its other rounds' best
// 126-141, numascope's 130-142: ratio 1.23, where the rounds' ratios had
// a median of 1.04): the host, not only other tasks, moves a repeat, both
// ways. Rounds in which the kernel gave the two buffers different shares
// of huge pages are left out and replaced (below). numascope's reported
// figure is the median of the same repeats, the best is their minimum:
// both come from the same timed chase. With the page-local chain (--chain
// page-local, the default before issue 30) the ratio is about 0.36 on the
// build machines (55 ns against 155), as the issue measured on a quiet
// Xeon (42 against 113): the test fails by far.
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
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), latencyHelper+"="+fmt.Sprintf("%d %d %d %d", node, size, loads, repeat))
		out := runFIFO(t, cmd)
		fields := keyValues(out)
		if _, ok := fields["huge"]; !ok || fields["min_ns"] <= 0 || fields["median_ns"] <= 0 {
			t.Fatalf("numascope's latency run printed %q", out)
		}
		return fields["min_ns"], fields["median_ns"], fields["huge"]
	}
	reference := func() (best, median, huge float64) {
		out := runFIFO(t, exec.Command(bin, "--size", strconv.Itoa(size), "--steps", strconv.Itoa(loads), "--repeat", strconv.Itoa(repeat),
			"--cpu", strconv.Itoa(cpu), "--thp"))
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
	medianRatio := func(a, b []float64) (float64, []float64) {
		rs := make([]float64, len(a))
		for i := range a {
			rs[i] = a[i] / b[i]
		}
		slices.Sort(rs)
		return (rs[(len(rs)-1)/2] + rs[len(rs)/2]) / 2, rs
	}
	ratio, ratios := medianRatio(ours, ref)
	// The same for the rounds' median repeats, numascope's printed
	// figure: the two statistics weigh the host's noise differently (a
	// lucky repeat moves a best, not a median), while a real difference
	// of the chases moves both.
	medRatio, medRatios := medianRatio(oursMed, refMed)
	t.Logf("idle latency, %d MiB, %d x %d loads, %d rounds: median of the rounds' ratios of their best repeats %.3f (%.2f-%.2f); least repeat: numascope %.1f ns, reference %.1f ns; best repeat of each round: numascope %.1f, reference %.1f; median repeat: numascope %.1f, reference %.1f; huge-page share %.2f-%.2f",
		size>>20, repeat, loads, len(ours), ratio, ratios[0], ratios[len(ratios)-1], slices.Min(ours), slices.Min(ref), ours, ref, oursMed, refMed, slices.Min(huge), slices.Max(huge))
	t.Logf("median of the rounds' ratios of their median repeats %.3f (%.2f-%.2f)", medRatio, medRatios[0], medRatios[len(medRatios)-1])
	// Either statistic within 10% passes: on 2026-12-07 a quiet suite run
	// read 1.113 by the best repeats (rounds of 0.95-1.00 and 1.10-1.17:
	// the reference's best ranged 100-131 ns from round to round, its
	// median 121-138) and 1.01 by the medians. A slower or faster chase
	// (the page-local chain's 0.36, the race detector's hooks' 1.05-1.12)
	// moves both.
	if math.Abs(ratio-1) > 0.10 && math.Abs(medRatio-1) > 0.10 {
		t.Errorf("numascope's idle latency is %.0f%% off the independent reference's by the best repeats, %.0f%% by the medians (median of %d interleaved rounds' ratios of their best of %d repeats: %.2f; of their medians: %.2f; each round's best: numascope %.1f ns, reference %.1f); want either within 10%%",
			100*(ratio-1), 100*(medRatio-1), len(ours), repeat, ratios, medRatios, ours, ref)
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

// TestBandwidthMatchesReference: numascope's bandwidth pass (the plan's
// array size and CPUs, the buffers bound to the node, the pinned threads
// and their first touch, the gate, the kernel and STREAM's counting)
// agrees with testdata/bench/refstream.c, a STREAM-like OpenMP
// program written apart from numascope (its own threads, placement,
// barrier, clock and compiler-made loops), on the same CPUs with arrays of
// the same size: copy on one CPU, and every kernel (copy, triad, load,
// store and the three with non-temporal stores) on all the node's. Run's
// loop around the passes (an uncounted one, then the best of --repeat) is
// TestRunLive's.
//
// Each tool runs as a process of its own under SCHED_FIFO (when the test
// may set it: root): a pass with a measuring thread descheduled for part
// of it is another quantity, and which tool such a pass hits is chance.
// Beside the NUMA VM suite in CI, QEMU's threads take the two CPUs for
// minutes: there, scheduled as usual, whole runs of the two compared
// 0.36-1.65 round by round (CI of 2026-12-02). Real-time threads run
// before QEMU's and before busy loops.
//
// The host moves more than the tolerance. On the build machines (KVM
// guests) a pass reads 9-30 GB/s within one run, and a run's best 22-42
// GB/s from one second to the next, with the neighbours' traffic: whole
// runs compared round by round spread 0.71-1.53 a round. So the two tools
// take turns pass by pass (refstream --stepped, and this test binary as
// numascope's helper, driving bench's own team of threads), each pass
// 20-30 ms from the other tool's, and a session's ratio is the median of
// its pairs' (the order alternating from pair to pair; no order effect
// was seen). Sessions still differ, by the arrays the kernel gave each
// process (on a VM, host memory of another speed behind them): 0.95-1.23
// for copy on one CPU. So the test starts both afresh for each of 5
// sessions, the one that starts first alternating, and holds the median
// of the sessions' ratios.
//
// Tolerances. Both move the same bytes with the same kind of stores over
// arrays of the same size, far beyond the caches, and each times a pass
// from all its threads streaming to the last one's end (probed: on the
// build machine every thread started within 1 us of numascope's clock and
// 7 us of the reference's). On the AMD build machine, 2026-12-07, quiet
// and beside four busy loops: load 0.97-0.99, store 1.01, nt-store
// 1.00, copy-nt 1.02 (10%, latency's bound); copy 1.00-1.04 on two CPUs
// and 1.04-1.07 on one, triad 1.00-1.01, triad-nt 1.04-1.05 (15%: the
// kernels that read two streams or more at once, the write-allocate
// counted, drifted most before the offsets below).
//
// History: until 2026-12-07 the reference's arrays all began page-aligned,
// and the kernels that read two streams or more read over it, drifting
// over an hour (copy 0.99-1.21, triad 1.10-1.23, triad-nt 1.12-1.15;
// bounds of 35%), while the one-stream kernels agreed. Ruled out then: the
// clocks, huge pages, numascope's ISA, the reference's unrolling, the order
// of the first touch, which process maps first, and binding the
// reference's memory. The arrays' relative placement was it: the reference
// with its arrays 4 KiB + 192 bytes apart in their pages, as STREAM's
// arrays, declared one after another, are not page-aligned alike either,
// read copy, triad and triad-nt within 2% of numascope (0.98-1.01), 1 KiB
// apart 1.05, 64 bytes 1.01-1.11. So refstream offsets them by default.
// numascope's own arrays are page-aligned alike and read as the offset
// reference does; why its assembly does not lose by it was not examined.
//
// What the bounds catch: copying with non-temporal stores (copy-nt reads
// 1.6-1.7 times the reference), counting the write-allocate's read (1.5
// for copy), threads that take turns (0.5).
func TestBandwidthMatchesReference(t *testing.T) {
	topo := liveTopology(t)
	bin := buildReference(t, "refstream.c", "-O3", "-march=native", "-fopenmp", "-fno-tree-loop-distribute-patterns", "-ffp-contract=off", "-funroll-loops")
	ini, err := Initiators("", topo)
	if err != nil {
		t.Fatal(err)
	}
	node := ini[0]
	all, err := threadCPUs(node, 0, topo)
	if err != nil {
		t.Fatal(err)
	}
	// The tolerances: see above.
	tolerance := map[string]float64{"copy": 0.15, "triad": 0.15, "load": 0.10, "store": 0.10, "nt-store": 0.10, "copy-nt": 0.10, "triad-nt": 0.15}
	t.Run("copy on one CPU", func(t *testing.T) { matchReference(t, bin, node, 1, "copy", tolerance["copy"]) })
	if len(all) > 1 {
		for _, k := range []string{"copy", "triad", "load", "store", "nt-store", "copy-nt", "triad-nt"} {
			t.Run(k+" on all CPUs", func(t *testing.T) {
				if kern, _ := ParseKernel(k); CheckKernel(kern, DefaultISA()) != nil {
					t.Skipf("numascope runs no %s on this CPU: %v", k, CheckKernel(kern, DefaultISA()))
				}
				matchReference(t, bin, node, len(all), k, tolerance[k])
			})
		}
	}
}

// matchReference compares the two tools' passes of kernel on the node's
// first threads CPUs (TestBandwidthMatchesReference), over several
// sessions: each starts both tools afresh, and so on arrays the kernel gave
// them anew. The arrays hold 512 MiB in all, whatever their number.
func matchReference(t *testing.T, bin string, node, threads int, kernel string, tolerance float64) {
	cpus, err := threadCPUs(node, threads, liveTopology(t))
	if err != nil {
		t.Fatal(err)
	}
	const total, sessions, warm, pairs = 512 << 20, 5, 2, 32
	k := slices.Index(KernelNames, kernel)
	perArray := total / (stream{kernel: Kernel(k)}).arrays()
	ourKernel := kernel
	if kernel == "copy" {
		ourKernel = kernelHelper // a mutation test's
	}
	places := make([]string, len(cpus))
	for i, c := range cpus {
		places[i] = "{" + strconv.Itoa(c) + "}"
	}
	med := func(v []float64) float64 {
		s := slices.Sorted(slices.Values(v))
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	var perSession, o, c []float64
	var huge []string
	for sess := range sessions {
		helper := exec.Command(os.Args[0], "-test.run=^$")
		helper.Env = append(os.Environ(), bandwidthHelper+"="+fmt.Sprintf("%d %d %d %s", node, total, threads, ourKernel))
		ref := exec.Command(bin, "--kernel", kernel, "--size", strconv.Itoa(perArray), "--thp", "--stepped")
		ref.Env = append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(len(cpus)), "OMP_PLACES="+strings.Join(places, ","), "OMP_PROC_BIND=close")
		ours, theirs := startSession(t, sess, helper, "refstream", ref)
		huge = append(huge, fmt.Sprintf("%.2f/%.2f", ours.huge, theirs.huge))
		var ratios []float64
		for i := range warm + pairs {
			var a, b float64
			if i%2 == 0 {
				a, b = ours.pass(), theirs.pass()
			} else {
				b, a = theirs.pass(), ours.pass()
			}
			if i >= warm {
				o, c, ratios = append(o, a), append(c, b), append(ratios, a/b)
			}
		}
		ours.stop()
		theirs.stop()
		perSession = append(perSession, med(ratios))
	}
	ratio := med(perSession)
	t.Logf("%s bandwidth, %d MiB an array, %d threads on CPUs %v, %d sessions of %d pairs of passes: median of the sessions' median ratios %.3f (sessions %.3f); huge-page shares %s; median pass, numascope %.0f MB/s, reference %.0f; best pass, numascope %.0f, reference %.0f",
		kernel, perArray>>20, len(cpus), cpus, sessions, pairs, ratio, perSession, huge, med(o), med(c), slices.Max(o), slices.Max(c))
	if math.Abs(ratio-1) > tolerance {
		t.Errorf("numascope's %s bandwidth on %d CPUs is %.1f%% off the STREAM-like reference's (median of %d sessions' median ratios of interleaved passes: %.3f; median pass: numascope %.0f MB/s, reference %.0f); want within %.0f%%",
			kernel, len(cpus), 100*(ratio-1), sessions, perSession, med(o), med(c), 100*tolerance)
	}
}

// startSession starts numascope's helper and the reference for a session
// of a stepped comparison. Whichever starts first maps its buffers first;
// the order alternates from session to session. The two must have their
// buffers alike on huge pages, or the figures are not comparable.
func startSession(t *testing.T, sess int, helper *exec.Cmd, refName string, ref *exec.Cmd) (ours, theirs *stepped) {
	t.Helper()
	if sess%2 == 0 {
		ours = startStepped(t, "numascope", helper)
		theirs = startStepped(t, refName, ref)
	} else {
		theirs = startStepped(t, refName, ref)
		ours = startStepped(t, "numascope", helper)
	}
	if math.Abs(ours.huge-theirs.huge) > 0.1 {
		t.Fatalf("numascope's buffers are %.2f on huge pages, %s's %.2f: the kernel could not back them alike (see /sys/kernel/mm/transparent_hugepage and memory fragmentation), so the two are not comparable here", ours.huge, refName, theirs.huge)
	}
	return ours, theirs
}

// stepped is a process that measures once for each line it reads and
// prints the figure: refstream --stepped and refloaded, or numascope's
// helpers.
type stepped struct {
	t    *testing.T
	name string
	in   io.WriteCloser
	out  *bufio.Scanner
	huge float64
	stop func() // ends it: its input closed, its exit awaited
}

// startStepped starts cmd under SCHED_FIFO and reads its "ready huge=S".
func startStepped(t *testing.T, name string, cmd *exec.Cmd) *stepped {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	startFIFO(t, cmd)
	s := &stepped{t: t, name: name, in: in, out: bufio.NewScanner(out)}
	s.stop = sync.OnceFunc(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v: %s", name, err, stderr.String())
		}
	})
	t.Cleanup(s.stop)
	line := s.line()
	h, ok := strings.CutPrefix(line, "ready huge=")
	if !ok {
		t.Fatalf("%s printed %q, want ready huge=S (%s)", name, line, stderr.String())
	}
	if s.huge, err = strconv.ParseFloat(h, 64); err != nil {
		t.Fatalf("%s: %q: %v", name, line, err)
	}
	return s
}

func (s *stepped) line() string {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("%s ended early (%v)", s.name, s.out.Err())
	}
	return s.out.Text()
}

// pass asks for one pass and returns its MB/s.
func (s *stepped) pass() float64 {
	s.t.Helper()
	if _, err := io.WriteString(s.in, "pass\n"); err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
	line := s.line()
	v, err := strconv.ParseFloat(line, 64)
	if err != nil || v <= 0 {
		s.t.Fatalf("%s printed %q for a pass", s.name, line)
	}
	return v
}

// bandwidthHelper, set to "NODE SIZE THREADS KERNEL", makes the test
// binary numascope's side of TestBandwidthMatchesReference (TestMain):
// bench's team of THREADS threads for the pair NODE -> NODE, with arrays of
// SIZE bytes in all, stepped as refstream --stepped is. A process of its own, so that it
// runs under the scheduling policy its parent gave it, as the reference
// does.
const bandwidthHelper = "NUMASCOPE_BENCH_BANDWIDTH_HELPER"

// kernelHelper is the kernel the helper runs where the test asks for
// copy: a mutation test of TestBandwidthMatchesReference sets it to
// copy-nt, and the test must fail.
var kernelHelper = "copy"

func TestMain(m *testing.M) {
	for env, helper := range map[string]func(string) error{bandwidthHelper: steppedBandwidth, latencyHelper: measureLatency, loadedHelper: steppedLoaded} {
		if spec := os.Getenv(env); spec != "" {
			if err := helper(spec); err != nil {
				fmt.Fprintf(os.Stderr, "%s=%q: %v\n", env, spec, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// latencyHelper, set to "NODE SIZE LOADS REPEAT", makes the test binary
// numascope's side of TestIdleLatencyMatchesReference (TestMain): bench's
// Run of the latency from NODE to itself, printing "min_ns=X median_ns=M
// huge=S". A process of its own, so that it runs under the scheduling
// policy its parent gave it, as the reference does.
const latencyHelper = "NUMASCOPE_BENCH_LATENCY_HELPER"

// measureLatency is the latency helper process.
func measureLatency(spec string) error {
	var node, size, loads, repeat int
	if _, err := fmt.Sscan(spec, &node, &size, &loads, &repeat); err != nil {
		return err
	}
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		return err
	}
	res, err := Run(Options{Topology: topo, Kinds: Kinds{Latency: true}, From: strconv.Itoa(node), To: strconv.Itoa(node),
		Size: uint64(size), Repeat: repeat, Loads: loads})
	if err != nil {
		return err
	}
	huge := -1.0
	if h := res.Latency.HugeFraction[0][0]; h != nil {
		huge = *h
	}
	fmt.Printf("min_ns=%.3f median_ns=%.3f huge=%.3f\n", *res.Latency.Min[0][0], *res.Latency.Matrix[0][0], huge)
	return nil
}

// runFIFO runs cmd to its end under SCHED_FIFO, as startFIFO starts it,
// and returns its standard output.
func runFIFO(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	startFIFO(t, cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v: %s", filepath.Base(cmd.Path), err, stderr.String())
	}
	return stdout.Bytes()
}

// steppedBandwidth is the helper process: as Run sets up a bandwidth pair
// (the plan, enough Ps, the collector off), then a pass a line.
func steppedBandwidth(spec string) error {
	var node, threads int
	var size uint64
	var kernel string
	if _, err := fmt.Sscan(spec, &node, &size, &threads, &kernel); err != nil {
		return err
	}
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		return err
	}
	k := slices.Index(KernelNames, kernel)
	p, err := newPlan(Options{Topology: topo, Kinds: Kinds{Bandwidth: true}, Kernel: Kernel(k), From: strconv.Itoa(node), To: strconv.Itoa(node),
		Size: size, Repeat: 1, Threads: threads})
	if err != nil {
		return err
	}
	defer enoughPs(p.threadsAtOnce() + 1)()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	tm, err := p.newTeam(p.bwCPUs[0], node)
	if err != nil {
		return err
	}
	defer tm.close()
	_, huge, err := placedAll(tm.bufs, "bandwidth", node, node)
	if err != nil {
		return err
	}
	fmt.Printf("ready huge=%.3f\n", huge)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Printf("%.1f\n", tm.pass())
	}
	return in.Err()
}

// startFIFO starts cmd under SCHED_FIFO (priority 1), which the child
// takes from the thread that forks it. Where the test may not set the
// policy (not root), cmd runs as scheduled before, and the test says so.
func startFIFO(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	ch := make(chan error, 1)
	go func() {
		// The thread is left locked: it exits with the goroutine, its
		// policy with it.
		runtime.LockOSThread()
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			t.Logf("%s runs as scheduled before, not under SCHED_FIFO (%v): another task may take its CPUs during a pass", filepath.Base(cmd.Path), err)
		}
		ch <- cmd.Start()
	}()
	if err := <-ch; err != nil {
		t.Fatalf("%s: %v", filepath.Base(cmd.Path), err)
	}
}
