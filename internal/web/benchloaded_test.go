package web

import (
	"encoding/json"
	"testing"

	"github.com/numascope/numascope/internal/bench"
)

// TestBenchLoadedDocument: what numascope bench --kind loaded writes (a
// loaded section with a measured pair and one not measured, null with its
// reason, and the peak injection matrix) passes the view's check and
// reaches the page as written.
func TestBenchLoadedDocument(t *testing.T) {
	d, zero := 1000.0, 0.0
	res := bench.Result{
		PeakInjection: &bench.Matrix{Kernel: "mix", Mix: "3:1", Initiators: []int{0, 1}, Targets: []int{0}, Matrix: [][]*float64{{&d}, {&d}}},
		Loaded: &bench.Loaded{Kernel: "mix", Mix: "3:1", Repeat: 1, DelayFactors: []*float64{nil, &d, &zero}, Pairs: []bench.LoadedPair{
			{Initiator: 0, Target: 0, Injectors: []int{1}, BandwidthMBs: []float64{0, 500, 900}, LatencyNS: []float64{90, 95, 140},
				LatencyMinNS: []float64{90, 95, 140}, LatencyMaxNS: []float64{90, 95, 140}, DelayNS: []*float64{nil, &d, &zero}},
			{Initiator: 1, Target: 0, CPU: 2, Injectors: []int{}, Reason: "node 1 has only CPU 2 to use"},
		}},
		Skipped: []bench.Skip{{Kind: "loaded", Initiator: 1, Target: 0, Reason: "node 1 has only CPU 2 to use"}},
	}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	b := startBench(t, Options{}, "loaded.json", body)
	h := dial(t, b.Server, "").Next("hello", typeIs("hello"))
	doc := h["bench"].(map[string]any)
	pairs := doc["loaded"].(map[string]any)["pairs"].([]any)
	if len(pairs) != 2 || pairs[1].(map[string]any)["latency_ns"] != nil || pairs[0].(map[string]any)["latency_ns"].([]any)[2] != 140.0 {
		t.Errorf("loaded pairs in hello: %v", pairs)
	}
	// A pair with a latency missing is refused, as the page could not draw it.
	res.Loaded.Pairs[0].LatencyNS = res.Loaded.Pairs[0].LatencyNS[:2]
	body, _ = json.Marshal(res)
	if _, err := NewBench(Options{}, "bad.json", body); err == nil {
		t.Error("a loaded pair with 3 bandwidths and 2 latencies was accepted")
	}
}
