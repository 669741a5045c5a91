package experiment

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// writeRecording writes a recording of three nodes' numa_hit (a counter,
// per node), vmstat's numa_hint_faults (a counter, no sources) and
// MemUsed (a gauge, per node): 4 samples, 0.5 s apart.
func writeRecording(t *testing.T, path string, scale float64) {
	t.Helper()
	w, err := recording.Create(path, true)
	if err != nil {
		t.Fatal(err)
	}
	cols := []recording.Column{
		{Name: "node.0.numa_hit", Sensor: "node", Event: "numa_hit", Sources: []string{"0"}, Unit: "pages", Kind: recording.Counter},
		{Name: "node.1.numa_hit", Sensor: "node", Event: "numa_hit", Sources: []string{"1"}, Unit: "pages", Kind: recording.Counter},
		{Name: "node.2.numa_hit", Sensor: "node", Event: "numa_hit", Sources: []string{"2"}, Unit: "pages", Kind: recording.Counter},
		{Name: "vmstat.numa_hint_faults", Sensor: "vmstat", Event: "numa_hint_faults", Sources: []string{""}, Unit: "faults", Kind: recording.Counter},
		{Name: "node.0.MemUsed", Sensor: "node", Event: "MemUsed", Sources: []string{"0"}, Unit: "bytes", Kind: recording.Gauge},
		{Name: "node.1.MemUsed", Sensor: "node", Event: "MemUsed", Sources: []string{"1"}, Unit: "bytes", Kind: recording.Gauge},
	}
	if err := w.WriteHeader(&recording.Header{Interval: 0.5, Columns: cols}); err != nil {
		t.Fatal(err)
	}
	// Rates per second: node 2 carries most of the traffic.
	for i, v := range [][]float64{
		{100, 100, 1000, 10, 1e9, 2e9},
		{100, 100, 1000, 20, 1e9, 2e9},
		{100, 100, 1000, math.NaN(), 3e9, 2e9},
		{100, 100, 1000, 30, 3e9, 2e9},
	} {
		for j := range v {
			v[j] *= scale
		}
		if err := w.WriteSample(time.Duration(i+1)*500*time.Millisecond, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(recording.End{Samples: 4}); err != nil {
		t.Fatal(err)
	}
}

func TestSummarize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	writeRecording(t, path, 1)
	rec, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ev := Summarize(rec)
	hit := ev["node.numa_hit"]
	// 2 s at 100/s, 100/s and 1000/s.
	if hit.Kind != "counter" || hit.Total != 2400 || hit.PerNode["0"] != 200 || hit.PerNode["2"] != 2000 {
		t.Errorf("numa_hit %+v", hit)
	}
	d := hit.Distribution
	if d == nil || d.Min != 200 || d.Median != 200 || d.Max != 2000 || d.MaxNode != "2" || math.Abs(d.MaxShare-2000.0/2400) > 1e-12 || !d.Outlier {
		t.Errorf("numa_hit distribution %+v", d)
	}
	// The NaN sample contributes nothing: 0.5*(10+20+30).
	if hf := ev["vmstat.numa_hint_faults"]; hf.Total != 30 || hf.PerNode != nil || hf.Distribution != nil {
		t.Errorf("numa_hint_faults %+v", hf)
	}
	// Gauges: mean levels, summed over nodes.
	if mu := ev["node.MemUsed"]; mu.Kind != "gauge" || mu.PerNode["0"] != 2e9 || mu.Total != 4e9 {
		t.Errorf("MemUsed %+v", mu)
	}
	if ev["node.MemUsed"].Distribution.Outlier {
		t.Errorf("two equal-ish nodes cannot have an outlier")
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 10}
	for q, want := range map[float64]float64{0: 1, 0.25: 2, 0.5: 3, 0.75: 4, 1: 10, 0.9: 7.6} {
		if got := Quantile(v, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if d := NewDistribution(map[string]float64{"0": 5}); d != nil {
		t.Errorf("one node has no distribution: %+v", d)
	}
	// Node names sort numerically; ties go to the first node.
	d := NewDistribution(map[string]float64{"10": 7, "2": 7, "1": 1, "3": 1})
	if d.MaxNode != "2" || d.Q1 != 1 || d.Q3 != 7 || d.Outlier {
		t.Errorf("%+v", d)
	}
}
