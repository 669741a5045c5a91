package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/topology"
)

// TestMemAttrs: the measured matrices become hwloc's attributes in its
// units, pairs not measured left out.
func TestMemAttrs(t *testing.T) {
	p := &plan{initiators: []int{0}, targets: []int{0, 2}, opt: Options{Repeat: 1}}
	lat := p.newMatrix("")
	lat.set(0, 0, []float64{89.6}, true)
	bw := p.newMatrix("copy")
	bw.set(0, 1, []float64{1048.576}, false)
	attrs, err := (&Result{Latency: lat, Bandwidth: bw}).MemAttrs()
	if err != nil {
		t.Fatal(err)
	}
	want := []topology.MemAttr{{Name: "Latency", Initiator: 0, Target: 0, Value: 90}, {Name: "Bandwidth", Initiator: 0, Target: 2, Value: 1000}}
	if len(attrs) != 2 || attrs[0] != want[0] || attrs[1] != want[1] {
		t.Errorf("attrs %+v, want %+v", attrs, want)
	}
	if _, err := (&Result{Latency: p.newMatrix("")}).MemAttrs(); err == nil {
		t.Error("no error for a result with nothing measured")
	}
	bad := p.newMatrix("")
	bad.Matrix[0] = bad.Matrix[0][:1]
	if _, err := (&Result{Latency: bad}).MemAttrs(); err == nil || !strings.Contains(err.Error(), "1 values for 2 targets") {
		t.Errorf("ragged matrix: %v", err)
	}
}

// TestLoadResult reads back what bench --format json writes, and refuses
// with one line what is not such a result.
func TestLoadResult(t *testing.T) {
	p := &plan{initiators: []int{0}, targets: []int{0, 2}, opt: Options{Repeat: 1}}
	lat := p.newMatrix("")
	lat.set(0, 1, []float64{300}, true)
	res := &Result{Latency: lat}
	res.Rated = Rate(hmatTopology(), res)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "bench.json")
	os.WriteFile(good, b, 0o644)
	back, err := LoadResult(good)
	if err != nil {
		t.Fatal(err)
	}
	if attrs, err := back.MemAttrs(); err != nil || len(attrs) != 1 || attrs[0].Value != 300 || attrs[0].Target != 2 {
		t.Errorf("read back: %+v, %v", attrs, err)
	}
	for content, want := range map[string]string{
		"not json":         "is not the JSON of numascope bench --format json",
		`{"placement":{}}`: "has neither latency_ns nor bandwidth_mbs",
		`{"latency_ns":{"initiators":[0],"targets":[0],"matrix":[]}}`: "0 rows for 1 initiators",
	} {
		f := filepath.Join(dir, "bad.json")
		os.WriteFile(f, []byte(content), 0o644)
		if _, err := LoadResult(f); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", content, err, want)
		}
	}
	if _, err := LoadResult(filepath.Join(dir, "absent.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("absent file: %v", err)
	}
}
