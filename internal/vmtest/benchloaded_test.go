package vmtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// loadedDoc is the part of numascope bench --kind loaded's JSON the test
// reads.
type loadedDoc struct {
	benchDoc // placement and skipped
	Peak     *struct {
		benchMatrix
		Mix string `json:"mix"`
	} `json:"peak_injection_mbs"`
	Loaded *struct {
		Kernel       string     `json:"kernel"`
		Mix          string     `json:"mix"`
		DelayFactors []*float64 `json:"delay_factors"`
		Pairs        []struct {
			Initiator    int        `json:"initiator"`
			Target       int        `json:"target"`
			CPU          int        `json:"cpu"`
			Injectors    []int      `json:"injectors"`
			BandwidthMBs []float64  `json:"bandwidth_mbs"`
			LatencyNS    []float64  `json:"latency_ns"`
			DelayNS      []*float64 `json:"delay_ns"`
			Reason       string     `json:"reason"`
		} `json:"pairs"`
	} `json:"loaded"`
}

// TestBenchLoaded runs numascope bench --kind loaded with a 2:1 mix in a
// VM of 4 nodes on 2 boards (nodes 0-1 and 2-3, distances 10/16/32), two
// CPUs on each of nodes 0-2 and a CPU-less memory node 3. Emulated timings
// mean nothing (TCG), so it asserts structure and placement: a peak
// injection matrix of 3 initiator rows by 4 target columns, the CPU-less
// node a column only; a curve for every pair, chased on the node's first
// CPU while its second injects, with one latency and one injected
// bandwidth per step, nothing injected at the idle step and something at
// full rate; every buffer on its target. Not that the bandwidth rises
// with the steps: under emulation it need not.
func TestBenchLoaded(t *testing.T) {
	requireVM(t)
	d := [][]int{{10, 16, 32, 32}, {16, 10, 32, 32}, {32, 32, 10, 16}, {32, 32, 16, 10}}
	// No in-guest timeout: numavm's limit, scaled by the guest's measured
	// speed, bounds a hang and names the section that was running. A fixed
	// `timeout 200` cut the first section off at 200 s on a slow host
	// (2026-11-29, the AMD build machine, the VM suite at 2 256 s), where
	// the scaled limit had let the VM run longer.
	script := "sec loaded numascope bench --kind loaded --mix 2:1 --format json --size 4M --repeat 1\n" +
		"sec text numascope bench --kind loaded --from 2 --to 3 --size 4M --repeat 1\n"
	r := runVM(t, []string{"--nodes", "4", "--cpus-per-node", "2", "--cpuless", "1", "--distances", distanceFlag(d)}, script)
	var doc loadedDoc
	if err := json.Unmarshal([]byte(r.section(t, "loaded")), &doc); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, r.section(t, "loaded"))
	}
	if doc.Latency != nil || doc.Bandwidth != nil {
		t.Errorf("--kind loaded wrote latency_ns or bandwidth_mbs")
	}
	pk := doc.Peak
	if pk == nil || doc.Loaded == nil {
		t.Fatalf("peak_injection_mbs %v, loaded %v: want both", pk, doc.Loaded)
	}
	if fmt.Sprint(pk.Initiators, pk.Targets) != "[0 1 2] [0 1 2 3]" || pk.Kernel != "mix" || pk.Mix != "2:1" {
		t.Errorf("peak: initiators %v targets %v kernel %q mix %q; want [0 1 2] by [0 1 2 3] (node 3 a target only), mix 2:1", pk.Initiators, pk.Targets, pk.Kernel, pk.Mix)
	}
	for i, row := range pk.Matrix {
		for j, v := range row {
			if v == nil || *v <= 0 {
				t.Errorf("peak[%d][%d] = %v, want a positive figure", i, j, v)
			}
		}
		if cpus := pk.CPUs[i]; fmt.Sprint(cpus) != fmt.Sprint([]int{2 * i, 2*i + 1}) {
			t.Errorf("peak from node %d on CPUs %v, want both of its CPUs", i, cpus)
		}
	}
	l := doc.Loaded
	steps := len(l.DelayFactors)
	if l.Kernel != "mix" || l.Mix != "2:1" || steps < 3 || l.DelayFactors[0] != nil || l.DelayFactors[steps-1] == nil || *l.DelayFactors[steps-1] != 0 {
		t.Errorf("loaded: kernel %q mix %q, delay factors %v; want mix 2:1, idle first and full rate last", l.Kernel, l.Mix, l.DelayFactors)
	}
	if len(l.Pairs) != 12 {
		t.Fatalf("%d loaded pairs, want 12 (3 initiators x 4 targets)", len(l.Pairs))
	}
	for k, p := range l.Pairs {
		what := fmt.Sprintf("loaded %d -> %d", p.Initiator, p.Target)
		if p.Initiator != k/4 || p.Target != k%4 {
			t.Errorf("pair %d is %s, want %d -> %d (matrix order; node 3 never an initiator)", k, what, k/4, k%4)
		}
		if p.CPU != 2*p.Initiator || fmt.Sprint(p.Injectors) != fmt.Sprint([]int{2*p.Initiator + 1}) || p.Reason != "" {
			t.Errorf("%s: chain on CPU %d, injectors %v (%q); want CPU %d chasing and CPU %d injecting", what, p.CPU, p.Injectors, p.Reason, 2*p.Initiator, 2*p.Initiator+1)
		}
		if len(p.LatencyNS) != steps || len(p.BandwidthMBs) != steps || len(p.DelayNS) != steps {
			t.Errorf("%s: %d latencies, %d bandwidths, %d delays; want %d steps", what, len(p.LatencyNS), len(p.BandwidthMBs), len(p.DelayNS), steps)
			continue
		}
		for s := range steps {
			if p.LatencyNS[s] <= 0 {
				t.Errorf("%s step %d: latency %v", what, s, p.LatencyNS[s])
			}
			// Nothing is injected at the idle step, and something at full
			// rate. Between the two, a step with a long wait may inject
			// less than 0.5 MB/s, which rounds to 0, when the host is busy
			// and its emulated injector CPU runs little in the window (seen
			// at step 2, a 3.3 ms wait after each 32 KiB, on a 2-CPU host
			// with load 4): a figure, not a fault.
			idle, full := s == 0, s == steps-1
			if idle != (p.DelayNS[s] == nil) || (idle && p.BandwidthMBs[s] != 0) || (full && p.BandwidthMBs[s] <= 0) || p.BandwidthMBs[s] < 0 {
				t.Errorf("%s step %d: injected %v MB/s with delay %v; want nothing injected at the idle step (0), a delay at every other, and something at full rate", what, s, p.BandwidthMBs[s], p.DelayNS[s])
			}
		}
	}
	if len(doc.Placement.Pairs) != 12 {
		t.Errorf("%d placements checked, want 12", len(doc.Placement.Pairs))
	}
	for _, p := range doc.Placement.Pairs {
		if p.Kind != "loaded" || p.FractionOnTarget < 0.99 || p.PagesChecked == 0 {
			t.Errorf("%s %d->%d: %.3f of %d pages on the target", p.Kind, p.Initiator, p.Target, p.FractionOnTarget, p.PagesChecked)
		}
	}
	if len(doc.Skipped) != 0 {
		t.Errorf("skipped %v, want none", doc.Skipped)
	}
	text := r.section(t, "text")
	t.Logf("text output:\n%s", text)
	for _, want := range []string{"Peak injection bandwidth (MB/s): copy kernel", "Loaded latency (ns)", "node 2 -> node 3: chain on CPU 4, 1 injector (CPU 5)", "idle", "Placement:"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
}
