package bench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// TestLoadedLatencyMatchesReference: numascope's loaded latency, and the
// bandwidth it says was injected meanwhile, agree with
// testdata/bench/refloaded.c, written apart from numascope: its own chain
// (Sattolo with splitmix64), its own readers (pthreads summing 64-bit
// integers, a loop the compiler vectorises), and a rate paced by the clock
// rather than by numascope's spin delays. Same CPUs (the chain on the
// node's first, the others injecting), the same sizes, the same read-only
// traffic (the load kernel), both under SCHED_FIFO as the other fidelity
// tests run them.
//
// Three steps of numascope's curve are compared, pair by pair, the tools
// taking turns measurement by measurement:
//   - idle: no injection, the chase alone (latency);
//   - half rate (numascope's delay factor 1) and full rate: the reference
//     is paced to the bandwidth numascope measured at that step (the
//     median of three measurements at the session's start), so it says
//     what latency a chase sees at that bandwidth; the latencies are
//     compared. A numascope that misreports the bandwidth of a step puts
//     its point off the reference's curve where the curve rises with load.
//   - full rate, bandwidth: numascope's against the reference's unpaced.
//
// The latencies are compared at one bandwidth, not at each tool's full
// rate, because the two injectors do not stream alike (below): a chase
// beside the one that streams less waits less.
//
// Each session starts both afresh (new arrays from the kernel; the one that
// starts first alternating) and takes the median of its pairs' ratios; the
// test holds the median of the sessions'. Seven short sessions, not three
// long ones: on the cloud build machines a process's memory can be slow for
// its whole life (the hypervisor backs the guest's pages as it likes; the
// guest hands freed memory back, free page reporting): one process of five
// or so chases at 270-460 ns where the others take 170-200, streaming 6-7
// GB/s for 16, whatever the guest's own huge pages. CI once saw two of
// three sessions so (numascope's injector at 0.64 and 0.72 of the
// reference, where the third read 1.02), which one median over three could
// not outvote; seven independent draws of memory need four bad ones alike.
//
// Tolerances: the idle latency 10% (measured on the build machine:
// 0.98-1.03, with the race detector or without). The latencies under
// load 15%: quiet they read 0.98-1.03 too, but in a quiet suite run beside
// the VM suite the full-rate step's sessions read 0.71-1.04, median 0.899,
// the reference's chase slower beside its paced reader than numascope's
// beside its injector. The full-rate bandwidth 25%: numascope's injector
// streams 0.92-0.98 times what the reference's reader does beside the
// chase, while the load kernel's bandwidth alone agrees within 2%
// (TestBandwidthMatchesReference); under the race detector, as CI builds
// this test binary and so the helper, 0.89-0.91, and beside the VM suite
// sessions of 0.79-1.01 (median 0.88).
// (Until the injectors' path was kept from the race detector's hooks, and
// their counters published once per batch of pieces rather than at each,
// it read 0.60-0.68 under -race, and a loaded CI-like run failed.) Ruled
// out for the gap without -race: the per-piece atomic operations, the
// piece size (32 KiB or 1 MiB pieces alone: the same), the array's size
// (the reference's reader over half of it, as numascope's injector
// streams: the same) and integer against floating-point sums (the same).
// What the bounds catch: bytes counted twice or half (2.0, 0.5), a latency
// over twice the loads (0.5), the race detector's hooks back on the
// injectors' path (0.60-0.68).
//
// On the build machines (one node, 2 CPUs: one injector) the curve is
// flat, some percent from idle to full, so the half-rate step checks the
// latency under load more than the bandwidth's position; on a machine
// whose curve is steep it checks both.
func TestLoadedLatencyMatchesReference(t *testing.T) {
	topo := liveTopology(t)
	ini, err := Initiators("", topo)
	if err != nil {
		t.Fatal(err)
	}
	node := ini[0]
	cpus := usableCPUs(topo)[node]
	if len(cpus) < 2 {
		// As bench itself: loaded latency needs a CPU to chase and one to
		// inject (TestRunLoaded holds the reason a pair without one gets).
		t.Skipf("node %d has %d usable CPU: loaded latency needs two", node, len(cpus))
	}
	bin := buildReference(t, "refloaded.c", "-O3", "-march=native", "-funroll-loops", "-pthread")
	const size, loads, sessions, warm, rounds = 256 << 20, 1 << 19, 7, 1, 4
	var inject []string
	for _, c := range cpus[1:] {
		inject = append(inject, strconv.Itoa(c))
	}
	med := func(v []float64) float64 {
		s := slices.Sorted(slices.Values(v))
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	type measure struct{ ours, ref []float64 }
	kinds := []string{"idle latency", "half-rate latency", "full-rate latency", "full-rate bandwidth"}
	perSession := map[string][]float64{}
	all := map[string]*measure{}
	for _, k := range kinds {
		all[k] = &measure{}
	}
	var paced []string
	for sess := range sessions {
		helper := exec.Command(os.Args[0], "-test.run=^$")
		helper.Env = append(os.Environ(), loadedHelper+"="+fmt.Sprintf("%d %d %d", node, size, loads))
		ref := exec.Command(bin, "--chase-cpu", strconv.Itoa(cpus[0]), "--inject-cpus", strings.Join(inject, ","),
			"--size", strconv.Itoa(size), "--loads", strconv.Itoa(loads), "--thp")
		ours, theirs := startSession(t, sess, helper, "refloaded", ref)
		// The paces: what numascope's half-rate and full-rate steps
		// stream, over three uncounted measurements each.
		var half, full []float64
		for range 3 {
			half = append(half, ours.ask("1")["mbs"])
			full = append(full, ours.ask("0")["mbs"])
		}
		halfPace, fullPace := strconv.FormatFloat(med(half), 'f', 1, 64), strconv.FormatFloat(med(full), 'f', 1, 64)
		ratios := map[string][]float64{}
		for i := range warm + rounds {
			// One measurement of each tool, in turn, the order alternating.
			both := func(ourReq, refReq string) (o, r map[string]float64) {
				if i%2 == 0 {
					o, r = ours.ask(ourReq), theirs.ask(refReq)
				} else {
					r, o = theirs.ask(refReq), ours.ask(ourReq)
				}
				return o, r
			}
			idleO, idleR := both("idle", "idle")
			ho, hr := both("1", halfPace)
			fo, fr := both("0", fullPace)
			unpaced := theirs.ask("full")
			if i < warm {
				continue
			}
			for _, m := range []struct {
				got  float64
				pace string
			}{{hr["mbs"], halfPace}, {fr["mbs"], fullPace}} {
				if want, _ := strconv.ParseFloat(m.pace, 64); math.Abs(m.got/want-1) > 0.05 {
					paced = append(paced, fmt.Sprintf("%.0f of %.0f MB/s", m.got, want))
				}
			}
			for k, v := range map[string][2]float64{
				"idle latency":        {idleO["lat_ns"], idleR["lat_ns"]},
				"half-rate latency":   {ho["lat_ns"], hr["lat_ns"]},
				"full-rate latency":   {fo["lat_ns"], fr["lat_ns"]},
				"full-rate bandwidth": {fo["mbs"], unpaced["mbs"]},
			} {
				all[k].ours = append(all[k].ours, v[0])
				all[k].ref = append(all[k].ref, v[1])
				ratios[k] = append(ratios[k], v[0]/v[1])
			}
		}
		ours.stop()
		theirs.stop()
		for _, k := range kinds {
			perSession[k] = append(perSession[k], med(ratios[k]))
		}
		t.Logf("session %d: huge pages %.2f and %.2f; paced at %s and %s MB/s; ratios %v", sess, ours.huge, theirs.huge, halfPace, fullPace, func() string {
			var b strings.Builder
			for _, k := range kinds {
				fmt.Fprintf(&b, "%s %.3f; ", k, med(ratios[k]))
			}
			return b.String()
		}())
	}
	if len(paced) > sessions*rounds {
		// The reference could not keep the pace asked of it: the
		// latencies were not compared at one bandwidth.
		t.Errorf("refloaded missed its pace by over 5%% in %d of %d measurements (%s): the latencies under load were not taken at the same bandwidth", len(paced), 2*sessions*rounds, strings.Join(paced, ", "))
	}
	for _, k := range kinds {
		ratio := med(perSession[k])
		unit, tolerance := "ns", 0.15
		switch {
		case k == "idle latency":
			tolerance = 0.10
		case strings.HasSuffix(k, "bandwidth"):
			unit, tolerance = "MB/s", 0.25
		}
		t.Logf("%s, chain on CPU %d, injecting %s, %d MiB each: median of %d sessions' median ratios %.3f (sessions %.3f); median measurement numascope %.1f %s, reference %.1f",
			k, cpus[0], strings.Join(inject, ","), size>>20, sessions, ratio, perSession[k], med(all[k].ours), unit, med(all[k].ref))
		if math.Abs(ratio-1) > tolerance {
			t.Errorf("numascope's %s is %.1f%% off the independent reference's (median of %d sessions' median ratios of interleaved measurements: %.3f; median: numascope %.1f %s, reference %.1f); want within %.0f%%",
				k, 100*(ratio-1), sessions, perSession[k], med(all[k].ours), unit, med(all[k].ref), 100*tolerance)
		}
	}
}

// ask sends one request line and returns the reply's key=value fields.
func (s *stepped) ask(req string) map[string]float64 {
	s.t.Helper()
	if _, err := fmt.Fprintln(s.in, req); err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
	line := s.line()
	f := keyValues([]byte(line))
	if f["lat_ns"] <= 0 {
		s.t.Fatalf("%s printed %q for %q", s.name, line, req)
	}
	return f
}

// loadedHelper, set to "NODE SIZE LOADS", makes the test binary numascope's
// side of TestLoadedLatencyMatchesReference (TestMain): bench's crew for
// the pair NODE -> NODE with the load kernel, buffers of SIZE bytes, stepped
// as refloaded is: for each line, "idle" or a delay factor (0: full rate),
// one measurement of LOADS loads, printed "lat_ns=L mbs=B".
const loadedHelper = "NUMASCOPE_BENCH_LOADED_HELPER"

// steppedLoaded is the helper process: as Run sets up a loaded pair (the
// plan, enough Ps, the collector off, the crew, the delays calibrated),
// then one step a line.
func steppedLoaded(spec string) error {
	var node, loads int
	var size uint64
	if _, err := fmt.Sscan(spec, &node, &size, &loads); err != nil {
		return err
	}
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		return err
	}
	p, err := newPlan(Options{Topology: topo, Kinds: Kinds{Loaded: true}, Kernel: Kernel(slices.Index(KernelNames, "load")),
		From: strconv.Itoa(node), To: strconv.Itoa(node), Size: size, Repeat: 1, Loads: loads})
	if err != nil {
		return err
	}
	defer enoughPs(p.threadsAtOnce() + 1)()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	chaseCPU := usableCPUs(topo)[node][0]
	c, err := p.newCrew(p.bwCPUs[0], chaseCPU, node)
	if err != nil {
		return err
	}
	defer c.close()
	inj := c.injectors(chaseCPU)
	pc, err := p.calibrate(c, inj, loads)
	if err != nil {
		return err
	}
	_, huge, err := placedAll(c.bufs, "loaded", node, node)
	if err != nil {
		return err
	}
	fmt.Printf("ready huge=%.3f\n", huge)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		active, turns, every := inj, 0, 1
		if req := in.Text(); req == "idle" {
			active = nil
		} else {
			f, err := strconv.ParseFloat(req, 64)
			if err != nil {
				return fmt.Errorf("%q: want idle or a delay factor", req)
			}
			turns, every = pc.at(f)
		}
		lat, bw := c.step(active, turns, every, loads)
		fmt.Printf("lat_ns=%.3f mbs=%.1f\n", lat, bw)
	}
	return in.Err()
}
