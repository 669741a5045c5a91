package bench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/topology"
)

// TestTextAndJSONOfSkippedPair: a pair not measured is "-" in the text and
// null in the JSON, with its reason listed in both.
func TestTextAndJSONOfSkippedPair(t *testing.T) {
	p := &plan{initiators: []int{0, 1}, targets: []int{0, 1, 3}, opt: Options{Repeat: 3}}
	m := p.newMatrix("")
	m.set(0, 0, []float64{90, 80, 100}, true)
	m.set(0, 2, []float64{300, 310, 290}, true)
	m.set(1, 0, []float64{140, 150, 145}, true)
	m.set(1, 2, []float64{350, 351, 349}, true)
	res := &Result{Latency: m, Skipped: []Skip{
		{"latency", 0, 1, "node 1 is outside this process's cpuset"}, {"latency", 1, 1, "node 1 is outside this process's cpuset"}}}
	res.Rated = Rate(&topology.Topology{Nodes: []topology.Node{{ID: 0}, {ID: 1}, {ID: 3}}}, res)
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"from\\to       0       1       3\n      0    90.0       -   300.0\n      1   145.0       -   350.0\n",
		"80.0-100.0",
		"Not measured: latency node 0 -> node 1: node 1 is outside this process's cpuset",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"matrix":[[90,null,300],[145,null,350]]`) || !strings.Contains(string(j), `"rated":{"initiators":[0,1],"targets":[0,1,3],"not_reported":"the kernel reports no HMAT`) {
		t.Errorf("JSON: %s", j)
	}
}
