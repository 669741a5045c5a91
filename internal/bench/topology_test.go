package bench

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// TestSummarize: the bench document's topology is what `numascope
// topology` reads from the captured two-socket machine with a CPU-less CXL
// node (internal/topology/testdata/two-node-cxl): each node's CPUs, list
// and memory, the CPU-less node marked, and the SLIT matrix in node order,
// under the keys the bench page reads (web/src/documents.ts).
func TestSummarize(t *testing.T) {
	topo, err := topology.Discover(sysfs.New(filepath.Join(testutil.RepoRoot(t), "internal", "topology", "testdata", "two-node-cxl")))
	if err != nil {
		t.Fatal(err)
	}
	s := summarize(topo)
	if len(s.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(s.Nodes))
	}
	for i, want := range []struct {
		list    string
		cpuless bool
	}{{"0-1,4-5", false}, {"2-3,6-7", false}, {"", true}} {
		n := s.Nodes[i]
		if n.ID != i || n.CPUList != want.list || n.CPULess != want.cpuless || n.MemoryTotal == 0 || n.MemoryTier != nil {
			t.Errorf("node %d: %+v, want CPUs %q, cpuless %v, memory, no tier", i, n, want.list, want.cpuless)
		}
	}
	var got [][]int
	for _, row := range s.Distances {
		var r []int
		for _, v := range row {
			if v == nil {
				t.Fatalf("distances %v: a null", s.Distances)
			}
			r = append(r, *v)
		}
		got = append(got, r)
	}
	if want := [][]int{{10, 21, 14}, {21, 10, 24}, {14, 24, 10}}; !reflect.DeepEqual(got, want) {
		t.Errorf("distances %v, want %v", got, want)
	}
	b, err := json.Marshal(&Result{Topology: s})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Topology struct {
			Nodes []struct {
				ID        *int           `json:"id"`
				CPUs      []int          `json:"cpus"`
				CPUList   *string        `json:"cpu_list"`
				CPULess   *bool          `json:"cpuless"`
				Tier      *int           `json:"memory_tier"`
				Distances map[string]int `json:"distances"`
			} `json:"nodes"`
			Distances [][]int `json:"distances"`
		} `json:"topology"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	n2 := doc.Topology.Nodes[2]
	if n2.ID == nil || *n2.ID != 2 || n2.CPUs == nil || len(n2.CPUs) != 0 || n2.CPULess == nil || !*n2.CPULess || n2.Distances["0"] != 14 || !reflect.DeepEqual(doc.Topology.Distances, got) {
		t.Errorf("JSON %s", b)
	}
}
