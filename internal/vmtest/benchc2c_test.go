package vmtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// c2cDoc is the part of numascope bench --kind c2c's JSON the test reads.
type c2cDoc struct {
	benchDoc // placement, conditions and skipped
	C2C      *struct {
		CPUs    []int        `json:"cpus"`
		Nodes   []int        `json:"nodes"`
		Matrix  [][]*float64 `json:"matrix"`
		Classes []struct {
			Class    string  `json:"class"`
			Pairs    int     `json:"pairs"`
			MedianNS float64 `json:"median_ns"`
		} `json:"classes"`
		Pairs []struct {
			A, B     int
			Class    string  `json:"class"`
			LineNode int     `json:"line_node"`
			MedianNS float64 `json:"median_ns"`
		} `json:"pairs"`
		LineNode *int `json:"line_node"`
	} `json:"c2c_ns"`
	Node *struct {
		Initiators []int        `json:"initiators"`
		Targets    []int        `json:"targets"`
		Matrix     [][]*float64 `json:"matrix"`
		LineNode   *int         `json:"line_node"`
	} `json:"c2c_node_ns"`
	Notes []string `json:"notes"`
}

// TestBenchC2C runs numascope bench --kind c2c in a VM of two nodes of two
// CPUs and a CPU-less memory node 2, the line homed on that third node
// (--line-node 2). The node classes exist there, but every figure is the
// emulator's (QEMU TCG: vCPUs are host threads, and a compare-and-swap is
// emulated), so it asserts structure and placement, not figures: every
// pair of the four CPUs measured, the two same-node pairs in a same-node
// class (same-llc where the guest shows a shared L3) and the four others
// cross-node; a 2 x 2 node matrix filled; the line's page on node 2 for
// every pair (move_pages), and the JSON and the text saying which node the
// line was on; the result calls itself a virtual machine's and says the
// figures are the emulator's.
func TestBenchC2C(t *testing.T) {
	requireVM(t)
	// A pair's budget of 30 s: under TCG on a loaded host a round trip
	// waits for the host to run both vCPU threads at once.
	script := "sec c2c gtimeout 300 numascope bench --kind c2c --line-node 2 --repeat 3 --pair-budget 30s --format json\n" +
		"sec text gtimeout 300 numascope bench --kind c2c --pairs 'sample 2' --repeat 1 --pair-budget 30s\n"
	r := runVM(t, []string{"--nodes", "3", "--cpus-per-node", "2", "--cpuless", "1"}, script)
	var doc c2cDoc
	if err := json.Unmarshal([]byte(r.section(t, "c2c")), &doc); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, r.section(t, "c2c"))
	}
	c := doc.C2C
	if c == nil || doc.Node == nil {
		t.Fatalf("c2c_ns %v, c2c_node_ns %v: want both", c, doc.Node)
	}
	if fmt.Sprint(c.CPUs, c.Nodes) != "[0 1 2 3] [0 0 1 1]" || len(c.Matrix) != 4 || c.LineNode == nil || *c.LineNode != 2 {
		t.Errorf("cpus %v nodes %v, %d rows, line node %v; want CPUs 0-3 on nodes 0,0,1,1 and the line on node 2", c.CPUs, c.Nodes, len(c.Matrix), c.LineNode)
	}
	if len(c.Pairs) != 6 || len(doc.Skipped) != 0 {
		t.Fatalf("%d pairs measured, skipped %v; want all 6", len(c.Pairs), doc.Skipped)
	}
	classes := map[string]int{}
	for _, p := range c.Pairs {
		same := p.A/2 == p.B/2
		if same == (p.Class == "cross-node") || p.LineNode != 2 || p.MedianNS <= 0 {
			t.Errorf("pair %+v: want class cross-node exactly when the CPUs are on two nodes, the line on node 2, a figure", p)
		}
		classes[p.Class]++
	}
	if classes["cross-node"] != 4 || classes["same-llc"]+classes["same-node"] != 2 {
		t.Errorf("classes %v: want 4 cross-node and 2 same-node (or same-llc) pairs", classes)
	}
	n := doc.Node
	if fmt.Sprint(n.Initiators, n.Targets) != "[0 1] [0 1]" || n.LineNode == nil || *n.LineNode != 2 {
		t.Errorf("node matrix %v x %v, line %v; want nodes 0-1, line on node 2", n.Initiators, n.Targets, n.LineNode)
	}
	for i, row := range n.Matrix {
		for j, v := range row {
			if v == nil || *v <= 0 {
				t.Errorf("c2c_node_ns[%d][%d] = %v, want a figure", i, j, v)
			}
		}
	}
	if len(doc.Placement.Pairs) != 6 {
		t.Errorf("%d placements checked, want 6", len(doc.Placement.Pairs))
	}
	for _, p := range doc.Placement.Pairs {
		if p.Kind != "c2c" || p.Target != 2 || p.FractionOnTarget < 1 || p.PagesChecked != 1 {
			t.Errorf("placement %+v: want the line's page on node 2", p)
		}
	}
	if !doc.Conditions.Virtual || !strings.Contains(strings.Join(doc.Notes, "\n"), "the emulator's") {
		t.Errorf("virtual %v, notes %q: want the VM named and the figures called the emulator's", doc.Conditions.Virtual, doc.Notes)
	}
	text := r.section(t, "text")
	for _, want := range []string{"Measuring core-to-core transfer latency (in ns)", "a sample of 2 of the 6 pairs", "cross node", "\t\tNuma node\n", "SMT "} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}
