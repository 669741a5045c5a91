package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCalibrateSpin: the spin rate is turns over the time of the first
// run of at least 2 ms, on a clock that the fake spin advances by half a
// nanosecond a turn (2 turns per ns); a spin that takes no time is an
// error, not a hang.
func TestCalibrateSpin(t *testing.T) {
	var clock time.Time
	now := func() time.Time { return clock }
	var calls []int
	rate, err := calibrateSpin(func(n int) { calls = append(calls, n); clock = clock.Add(time.Duration(n / 2)) }, now)
	if err != nil || rate != 2 {
		t.Errorf("rate %v, %v; want 2 turns per ns", rate, err)
	}
	// Doubling from 1024 until 2 ms: 4M turns (2.1 ms) is the first.
	if last := calls[len(calls)-1]; last != 1<<22 || calls[0] != 1<<10 {
		t.Errorf("spun %v, want doubling from 1024 to 4194304", calls)
	}
	if _, err := calibrateSpin(func(int) {}, now); err == nil || !strings.Contains(err.Error(), "does not take time") {
		t.Errorf("a spin without time: %v", err)
	}
	// The real spin takes time, more for more turns.
	if r, err := calibrateSpin(spin, time.Now); err != nil || r <= 0 {
		t.Errorf("real spin: %v turns/ns, %v", r, err)
	}
}

// TestSteps: the steps go from idle through decreasing delays to none,
// and a delay is its factor times a piece's time, in turns.
func TestSteps(t *testing.T) {
	f := delayFactors()
	if len(f) != len(loadedFactors)+1 || f[0] != nil || *f[len(f)-1] != 0 {
		t.Fatalf("delay factors %v: want idle (null) first and full rate (0) last", f)
	}
	for k := 2; k < len(f); k++ {
		if *f[k] >= *f[k-1] {
			t.Errorf("factor %d (%v) not below the one before (%v): the load must rise step by step", k, *f[k], *f[k-1])
		}
	}
	for _, c := range []struct {
		factor, pieceNS, rate float64
		want                  int
	}{{0, 5000, 3, 0}, {1, 5000, 3, 15000}, {0.5, 1000, 2.5, 1250}, {32, 10, 0.1, 32}} {
		if got := delayTurns(c.factor, c.pieceNS, c.rate); got != c.want {
			t.Errorf("delayTurns(%v, %v, %v) = %d, want %d", c.factor, c.pieceNS, c.rate, got, c.want)
		}
	}
}

// TestRunLoaded measures loaded latency and peak injection on this
// machine with small buffers, and checks the shape: a peak for every pair,
// a curve of one value per step for every pair whose initiator has a CPU
// to inject beside the chaser's (else null and the reason), the idle step
// with nothing injected, the placement of every buffer, the progress and
// the text. Not how fast: this machine is shared.
func TestRunLoaded(t *testing.T) {
	topo := liveTopology(t)
	var progress []string
	res, err := Run(Options{Topology: topo, Kinds: Kinds{Loaded: true}, Kernel: Copy, Size: 8 << 20, Repeat: 1,
		Progress: func(done, total int, what string) { progress = append(progress, what) }})
	if err != nil {
		t.Fatal(err)
	}
	ini, _ := Initiators("", topo)
	tg, _ := Targets("", topo)
	if res.Latency != nil || res.Bandwidth != nil || res.PeakInjection == nil || res.Loaded == nil {
		t.Fatalf("--kind loaded: latency %v, bandwidth %v, peak %v, loaded %v", res.Latency, res.Bandwidth, res.PeakInjection, res.Loaded)
	}
	pk := res.PeakInjection
	if len(pk.Matrix) != len(ini) || len(pk.Matrix[0]) != len(tg) || pk.Kernel != "copy" {
		t.Fatalf("peak %dx%d %q, want %dx%d copy", len(pk.Matrix), len(pk.Matrix[0]), pk.Kernel, len(ini), len(tg))
	}
	l := res.Loaded
	if len(l.Pairs) != len(ini)*len(tg) || l.Kernel != "copy" || l.Loads < minSteps || len(l.DelayFactors) != len(loadedFactors)+1 {
		t.Fatalf("loaded: %d pairs, kernel %q, %d loads, %d steps", len(l.Pairs), l.Kernel, l.Loads, len(l.DelayFactors))
	}
	cpus := usableCPUs(topo)
	for k, p := range l.Pairs {
		r, c := k/len(tg), k%len(tg)
		if p.Initiator != ini[r] || p.Target != tg[c] || p.CPU != cpus[p.Initiator][0] {
			t.Errorf("pair %d: %d -> %d on CPU %d, want %d -> %d in matrix order on the node's first CPU", k, p.Initiator, p.Target, p.CPU, ini[r], tg[c])
		}
		if v := pk.Matrix[r][c]; v == nil || *v <= 0 {
			t.Errorf("peak %d -> %d = %v", p.Initiator, p.Target, v)
		}
		if len(cpus[p.Initiator]) < 2 {
			if p.LatencyNS != nil || !strings.Contains(p.Reason, "no CPU is left to inject") {
				t.Errorf("%d -> %d, one CPU: latency %v, reason %q; want null and why", p.Initiator, p.Target, p.LatencyNS, p.Reason)
			}
			continue
		}
		n := len(l.DelayFactors)
		if len(p.LatencyNS) != n || len(p.BandwidthMBs) != n || len(p.DelayNS) != n || len(p.LatencyMinNS) != n || len(p.LatencyMaxNS) != n || p.Reason != "" {
			t.Fatalf("%d -> %d: %+v, want %d steps", p.Initiator, p.Target, p, n)
		}
		// The curve follows idle latency's chain, and says whether it is
		// monotonic (a note when not).
		if l.Chain != "random" || p.Monotonic == nil || *p.Monotonic != (p.NotMonotonic == "") {
			t.Errorf("%d -> %d: chain %q, monotonic %v %q", p.Initiator, p.Target, l.Chain, p.Monotonic, p.NotMonotonic)
		}
		if p.NotMonotonic != "" && !strings.Contains(strings.Join(res.Notes, "\n"), "is not monotonic: "+p.NotMonotonic) {
			t.Errorf("%d -> %d: not monotonic (%s) without a note: %q", p.Initiator, p.Target, p.NotMonotonic, res.Notes)
		}
		if res.PeakInjection.Method != peakMethod {
			t.Errorf("peak method %q", res.PeakInjection.Method)
		}
		if len(p.Injectors) != len(res.PeakInjection.CPUs[r])-1 {
			t.Errorf("%d -> %d: injectors %v, want every bandwidth CPU but the chaser's", p.Initiator, p.Target, p.Injectors)
		}
		for s := range n {
			if p.LatencyNS[s] <= 0 || p.LatencyMinNS[s] > p.LatencyNS[s] || p.LatencyMaxNS[s] < p.LatencyNS[s] {
				t.Errorf("%d -> %d step %d: latency %v (%v-%v)", p.Initiator, p.Target, s, p.LatencyNS[s], p.LatencyMinNS[s], p.LatencyMaxNS[s])
			}
			switch {
			case s == 0 && (p.BandwidthMBs[0] != 0 || p.DelayNS[0] != nil):
				t.Errorf("%d -> %d: idle step injected %v MB/s with delay %v", p.Initiator, p.Target, p.BandwidthMBs[0], p.DelayNS[0])
			case s > 0 && (p.BandwidthMBs[s] <= 0 || p.DelayNS[s] == nil):
				t.Errorf("%d -> %d step %d: injected %v MB/s, delay %v", p.Initiator, p.Target, s, p.BandwidthMBs[s], p.DelayNS[s])
			}
		}
	}
	if len(res.Placement.Pairs) != len(ini)*len(tg)-countSkipped(res, "loaded", true) {
		t.Errorf("%d placements for %d pairs", len(res.Placement.Pairs), len(ini)*len(tg))
	}
	for _, pl := range res.Placement.Pairs {
		if pl.Kind != "loaded" || pl.FractionOnTarget < 0.99 || pl.PagesChecked == 0 {
			t.Errorf("placement %+v", pl)
		}
	}
	if len(progress) == 0 || !strings.HasPrefix(progress[0], "loaded node") || !strings.Contains(strings.Join(progress, "\n"), "peak injection") {
		t.Errorf("progress %q", progress)
	}
	var out strings.Builder
	if err := res.WriteText(&out); err != nil || !strings.Contains(out.String(), "Peak injection bandwidth (MB/s): copy kernel") || !strings.Contains(out.String(), "Loaded latency (ns)") {
		t.Errorf("text: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(j, &doc); err != nil || doc["loaded"] == nil || doc["peak_injection_mbs"] == nil || doc["latency_ns"] != nil {
		t.Errorf("JSON keys of --kind loaded: %s", j)
	}
}

// countSkipped counts res's skipped pairs of kind, only those whose
// buffers were never mapped when unplaced is true (a pair measured for
// peak but without a curve was placed).
func countSkipped(res *Result, kind string, unplaced bool) int {
	n := 0
	for _, s := range res.Skipped {
		if s.Kind != kind {
			continue
		}
		if unplaced && strings.Contains(s.Reason, "no CPU is left to inject") {
			continue
		}
		n++
	}
	return n
}

// TestLoadedTextAndJSON: a curve is a table of steps in the text, and a
// pair without one is null in the JSON with its reason, in the text too.
func TestLoadedTextAndJSON(t *testing.T) {
	p := &plan{initiators: []int{0, 1}, targets: []int{0}, opt: Options{Repeat: 1}, stream: stream{mix: &Mix{3, 1}}}
	peak := p.newMatrix("mix")
	peak.set(0, 0, []float64{20000}, false)
	peak.set(1, 0, []float64{9000}, false)
	d := 1000.0
	zero := 0.0
	res := &Result{PeakInjection: peak, Loaded: &Loaded{Kernel: "mix", Mix: "3:1", Repeat: 1, Loads: 1 << 21, DelayFactors: []*float64{nil, &d, &zero}, Pairs: []LoadedPair{
		{Initiator: 0, Target: 0, CPU: 0, Injectors: []int{1, 2}, BandwidthMBs: []float64{0, 5000, 15000}, LatencyNS: []float64{90, 95, 140},
			LatencyMinNS: []float64{89, 94, 130}, LatencyMaxNS: []float64{91, 96, 150}, DelayNS: []*float64{nil, &d, &zero}},
		{Initiator: 1, Target: 0, CPU: 3, Injectors: []int{}, Reason: "node 1 has only CPU 3 to use"},
	}}}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"Peak injection bandwidth (MB/s): mix 3:1 kernel",
		"from\\to       0\n      0   20000\n      1    9000\n",
		"node 0 -> node 0: chain on CPU 0, 2 injectors (CPUs 1,2)\n    delay injected MB/s latency ns      spread\n     idle             0       90.0   89.0-91.0\n  1000 ns          5000       95.0   94.0-96.0\n     0 ns         15000      140.0 130.0-150.0\n",
		"node 1 -> node 0: not measured: node 1 has only CPU 3 to use",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"peak_injection_mbs":{"kernel":"mix","mix":"3:1","initiators":[0,1],"targets":[0],"matrix":[[20000],[9000]]`,
		`"loaded":{"kernel":"mix","mix":"3:1",`, `"delay_factors":[null,1000,0]`,
		`{"initiator":1,"target":0,"cpu":3,"injectors":[],"bandwidth_mbs":null,"latency_ns":null,"latency_min_ns":null,"latency_max_ns":null,"delay_ns":null,"reason":"node 1 has only CPU 3 to use","monotonic":null}`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON lacks %s:\n%s", want, j)
		}
	}
}

// TestPlanLoaded: loaded latency holds the chain and the injectors'
// arrays at once, so the free memory it needs on a target is both; a
// --size each fits alone can be refused for --kind loaded.
func TestPlanLoaded(t *testing.T) {
	topo := fourNodes() // 900M free per node
	for _, k := range []Kinds{{Latency: true}, {Bandwidth: true}} {
		if _, err := newPlan(Options{Topology: topo, Kinds: k, Kernel: Triad, Repeat: 1, Size: 512 << 20, To: "0"}); err != nil {
			t.Errorf("%+v with 512M: %v", k, err)
		}
	}
	_, err := newPlan(Options{Topology: topo, Kinds: Kinds{Loaded: true}, Kernel: Triad, Repeat: 1, Size: 512 << 20, To: "0"})
	if err == nil || !strings.Contains(err.Error(), "--size needs 1072M") {
		t.Errorf("loaded with a 512M chain and 4 x 128M arrays on 900M free: %v, want the 1G and margin it needs named", err)
	}
	p, err := newPlan(Options{Topology: topo, Kinds: Kinds{Loaded: true}, Mix: &Mix{3, 1}, Repeat: 1, Size: 64 << 20})
	if err != nil || p.stream.arrays() != 1 || p.bwPerArray != 64<<20 || p.latSize != 64<<20 {
		t.Errorf("loaded with a mix: %v, %+v; want one 64M array beside the 64M chain", err, p)
	}
}
