package testutil

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// numastatCaptures are real outputs of Debian's numastat -p (numactl
// 2.0.16, with NumastatEnv): a shell on the one-node build machine, and
// memmix under an interleave policy in the three-node NUMA VM, as
// TestTopMemoryMatchesNumastatVM logged it.
var numastatCaptures = []struct {
	file  string
	nodes []string
}{
	{"numastat-p-1node.txt", []string{"0"}},
	{"numastat-p-3node.txt", []string{"0", "1", "2"}},
}

func TestParseNumastat(t *testing.T) {
	for _, c := range numastatCaptures {
		out, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		table, err := ParseNumastat(out)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if !slices.Equal(table.Nodes(), c.nodes) {
			t.Errorf("%s: nodes %v, want %v", c.file, table.Nodes(), c.nodes)
		}
		// The Total row is the sum of the categories, and the Total column
		// the sum of the nodes, to numastat's rounding.
		for _, col := range append(slices.Clone(c.nodes), "Total") {
			var sum float64
			for _, r := range NumastatRows {
				sum += mb(t, table[r][col])
			}
			if d := sum - mb(t, table["Total"][col]); d > 0.03 || d < -0.03 {
				t.Errorf("%s: the categories on %s add up to %.2f, the Total row says %s", c.file, col, sum, table["Total"][col])
			}
		}
		// Cut short, or wrapped into a second header, it is an error.
		lines := strings.Split(string(out), "\n")
		for _, bad := range []string{strings.Join(lines[:len(lines)-3], "\n"), string(out) + string(out)} {
			if _, err := ParseNumastat([]byte(bad)); err == nil {
				t.Errorf("%s: a damaged table parsed: %q", c.file, bad)
			}
		}
	}
}

func mb(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("numastat figure %q: %v", s, err)
	}
	return v
}

// TestCompareNumastat: figures that print as numastat's do pass, and a
// difference of three 4 KiB pages, or memory on a node numastat does not
// show, is named cell by cell. On the one-node capture, whose Total column
// is its node's, so that figures rebuilt from the printed MB add up as
// numastat's own bytes did.
func TestCompareNumastat(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "numastat-p-1node.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseNumastat(out)
	if err != nil {
		t.Fatal(err)
	}
	// numascope's bytes for each cell: the MB figure in 4 KiB pages.
	bytes := func(s string) uint64 { return uint64(mb(t, s)*(1<<20)/4096+0.5) * 4096 }
	cats := map[string]map[string]uint64{}
	byNode := map[string]uint64{}
	for _, r := range NumastatRows {
		cats[strings.ToLower(r)] = map[string]uint64{}
		for _, n := range ref.Nodes() {
			cats[strings.ToLower(r)][n] = bytes(ref[r][n])
		}
	}
	for _, n := range ref.Nodes() {
		byNode[n] = bytes(ref["Total"][n])
	}
	if d := CompareNumastat(ref, byNode, cats); len(d) > 0 {
		t.Fatalf("the capture's own figures differ: %q", d)
	}
	cats["private"]["0"] += 3 * 4096
	d := CompareNumastat(ref, byNode, cats)
	if len(d) != 2 || !strings.HasPrefix(d[0], "Private on 0:") || !strings.HasPrefix(d[1], "Private on Total:") {
		t.Errorf("three pages more of Private on node 0: %q", d)
	}
	cats["private"]["0"] -= 3 * 4096
	cats["heap"]["7"] = 4096
	if d := CompareNumastat(ref, byNode, cats); len(d) == 0 || !strings.Contains(d[0], "node 7, which numastat does not show") {
		t.Errorf("heap on node 7: %q", d)
	}
}
