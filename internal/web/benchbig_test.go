package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/bench"
)

// bigC2C is the biggest document numascope bench writes, built from its
// own types and written as bench --format json writes it (indented):
// --kind c2c --pairs all on cpus CPUs (8 nodes, an LLC per 8 CPUs), every
// pair measured with repeat windows, each with its own placement entry.
// Figures have a float64's full digits, as measured ones do; each pair's
// class is the longest name. Notes are few whatever the CPUs: bench
// says once for all pairs what holds for many (a pair short of windows,
// a line off its node), where it wrote two per pair on a busy host.
func bigC2C(t testing.TB, cpus, repeat int) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	ns := func() float64 { return 40 + 300*rng.Float64() }
	m := &bench.C2C{Repeat: repeat, Method: "half the round trip", PairsTotal: cpus * (cpus - 1) / 2}
	for c := range cpus {
		m.CPUs = append(m.CPUs, c)
		m.Nodes = append(m.Nodes, c*8/cpus)
		m.LLCs = append(m.LLCs, c/8)
		m.Cores = append(m.Cores, fmt.Sprintf("%d:%d", c*2/cpus, c/2))
	}
	m.Matrix = make([][]*float64, cpus)
	for i := range m.Matrix {
		m.Matrix[i] = make([]*float64, cpus)
	}
	res := &bench.Result{C2C: m, Conditions: bench.Conditions{CPUModel: "a CPU"}, Skipped: []bench.Skip{}, Notes: []string{}}
	for a := range cpus {
		for b := a + 1; b < cpus; b++ {
			s := make([]float64, repeat)
			for k := range s {
				s[k] = ns()
			}
			med := ns()
			m.Matrix[a][b], m.Matrix[b][a] = &med, &med
			m.Pairs = append(m.Pairs, bench.C2CPair{A: a, B: b, Class: bench.ClassSMT, LineNode: m.Nodes[a], MedianNS: med, MinNS: ns(), MaxNS: ns(), Samples: s, RoundTrips: 65536})
			res.Placement.Pairs = append(res.Placement.Pairs, bench.Pair{Kind: "c2c", Initiator: a, Target: m.Nodes[a], FractionOnTarget: 1, PagesChecked: 1})
		}
	}
	for _, c := range []string{bench.ClassSMT, bench.ClassLLC, bench.ClassNode, bench.ClassCrossNode} {
		m.Classes = append(m.Classes, bench.C2CClass{Class: c, Pairs: len(m.Pairs), MedianNS: ns(), MinNS: ns(), MaxNS: ns()})
	}
	nodes := &bench.C2CNodeMatrix{}
	for n := range 8 {
		nodes.Initiators, nodes.Targets = append(nodes.Initiators, n), append(nodes.Targets, n)
		row, pairs := make([]*float64, 8), make([]int, 8)
		for k := range row {
			v := ns()
			row[k], pairs[k] = &v, 700
		}
		nodes.Matrix, nodes.Pairs = append(nodes.Matrix, row), append(nodes.Pairs, pairs)
	}
	res.C2CNode = nodes
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBenchWorstCase: the biggest document bench writes (300 CPUs,
// --kind c2c --pairs all, --repeat bench.MaxRepeat) is read within
// MaxBenchFileBytes and kept within MaxBenchBytes, each with margin, and
// view serves it end to end: the hello carries the whole CPU x CPU matrix
// and every pair, with the count of its samples in place of them. Before
// view slimmed what it reads, such a file (over 100 MiB; 17-23 MiB at the
// default --repeat) was refused over an 8 MiB limit.
func TestBenchWorstCase(t *testing.T) {
	if maxBenchRepeat != bench.MaxRepeat {
		t.Fatalf("maxBenchRepeat %d, bench.MaxRepeat %d: the error of a file too big names the wrong bound", maxBenchRepeat, bench.MaxRepeat)
	}
	const cpus = 300
	doc := bigC2C(t, cpus, bench.MaxRepeat)
	path := filepath.Join(t.TempDir(), "c2c-300.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	body, err := ReadBench(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("300 CPUs, --repeat %d: the file %.1f MiB (bound %d MiB), kept %.1f MiB (bound %d MiB)",
		bench.MaxRepeat, float64(len(doc))/(1<<20), MaxBenchFileBytes>>20, float64(len(body))/(1<<20), MaxBenchBytes>>20)
	if len(doc) > MaxBenchFileBytes*4/5 {
		t.Errorf("the worst case's file is %d bytes: within 20%% of MaxBenchFileBytes", len(doc))
	}
	if len(body) > MaxBenchBytes*3/5 {
		t.Errorf("the worst case's kept part is %d bytes: within 40%% of MaxBenchBytes", len(body))
	}
	// The hello's other fields (the file's name at most PATH_MAX) fit
	// beside the kept document in a client's queue.
	if MaxBenchBytes+8<<10 > DefaultQueueBytes {
		t.Errorf("MaxBenchBytes %d leaves no room for the hello in DefaultQueueBytes %d", MaxBenchBytes, DefaultQueueBytes)
	}
	doc = nil
	b := startBench(t, Options{}, path, body)
	h := dial(t, b.Server, "").Next("hello", typeIs("hello"))
	c2c := h["bench"].(map[string]any)["c2c_ns"].(map[string]any)
	matrix, pairs := c2c["matrix"].([]any), c2c["pairs"].([]any)
	if len(matrix) != cpus || len(matrix[cpus-1].([]any)) != cpus || len(pairs) != cpus*(cpus-1)/2 {
		t.Fatalf("the client got a %d-row matrix and %d pairs; want %d x %d and %d", len(matrix), len(pairs), cpus, cpus, cpus*(cpus-1)/2)
	}
	last := pairs[len(pairs)-1].(map[string]any)
	if last["repeats"] != float64(bench.MaxRepeat) || last["samples"] != nil || last["class"] != bench.ClassSMT || last["min_ns"] == nil || last["a"] != float64(cpus-2) {
		t.Errorf("the last pair reached the client as %v", last)
	}
}

// TestSlimBench: what slimBench drops and keeps, on a small document.
func TestSlimBench(t *testing.T) {
	in := `{"c2c_ns": {"cpus": [0, 1], "matrix": [[null, 50.25], [50.25, null]],
	  "pairs": [{"a": 0, "b": 1, "class": "same-llc", "line_node": 0, "median_ns": 50.25, "min_ns": 49, "max_ns": 51, "samples": [49, 50.25, 51], "round_trips": 4096}]},
	 "latency_ns": {"initiators": [0], "targets": [0], "matrix": [[90]], "samples": [[[89, 90, 91]]]},
	 "placement": {"min_fraction_on_target": 1, "pairs": [{"kind": "c2c", "initiator": 0, "target": 0, "fraction_on_target": 1, "pages_checked": 1},
	   {"kind": "latency", "initiator": 0, "target": 0, "fraction_on_target": 1, "pages_checked": 512},
	   {"kind": "c2c", "initiator": 1, "target": 0, "fraction_on_target": 1, "pages_checked": 1}]},
	 "notes": ["a < b & c", "\u00e9"], "rated": null, "virtual": false}`
	want := `{"c2c_ns":{"cpus":[0,1],"matrix":[[null,50.25],[50.25,null]],` +
		`"pairs":[{"a":0,"b":1,"class":"same-llc","line_node":0,"min_ns":49,"max_ns":51,"repeats":3}]},` +
		`"latency_ns":{"initiators":[0],"targets":[0],"matrix":[[90]],"samples":[[[89,90,91]]]},` +
		`"placement":{"min_fraction_on_target":1,"pairs":[{"kind":"latency","initiator":0,"target":0,"fraction_on_target":1,"pages_checked":512}]},` +
		`"notes":["a < b & c","é"],"rated":null,"virtual":false}`
	got, err := slimBench(strings.NewReader(in))
	if err != nil || string(got) != want {
		t.Fatalf("slimBench:\n got %s, %v\nwant %s", got, err, want)
	}
	for body, msg := range map[string]string{
		`{"c2c_ns": {"pairs": [{"samples": ["fast"]}]}}`: `c2c_ns: a pair's samples: want numbers, not fast`,
		`{"a": 1} {"b": 2}`: "more than one value",
		strings.Repeat("[", 40) + strings.Repeat("]", 40): "nested deeper than 32 levels",
		`{"a": 1,}`: "not valid JSON",
	} {
		if _, err := slimBench(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%.40s: err %v, want %q", body, err, msg)
		}
	}
	// What the page draws is bounded too: far more CPUs than 300 are
	// refused with what to do.
	huge := `{"notes": [` + strings.Repeat(`"`+strings.Repeat("x", 1<<20)+`",`, MaxBenchBytes>>20) + `"x"]}`
	if _, err := slimBench(strings.NewReader(huge)); err == nil || !strings.Contains(err.Error(), "--pairs \"sample 2000\"") {
		t.Errorf("kept over MaxBenchBytes: %v", err)
	}
	long := `{"notes": ["` + strings.Repeat("x", MaxBenchBytes+1) + `"]}`
	if _, err := slimBench(strings.NewReader(long)); err == nil || !strings.Contains(err.Error(), "a value of over 14 MiB") {
		t.Errorf("one string over MaxBenchBytes: %v", err)
	}
}
