package sampler

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// TestBadFileFailsOnlyItsSource samples the real node sensor on a captured
// two-node tree while node 1's meminfo holds garbage, then is restored:
// node 0's columns go on with their values, node 1's and the sums over both
// nodes are missing (NaN), and after recovery no rate is a burst.
func TestBadFileFailsOnlyItsSource(t *testing.T) {
	src := filepath.Join("..", "sensor", "testdata", "twonode")
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	node := func(id, file string) string {
		return filepath.Join(root, "sys/devices/system/node", "node"+id, file)
	}
	setHit := func(id string, v int) {
		t.Helper()
		b, err := os.ReadFile(node(id, "numastat"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(b), "\n")
		lines[0] = "numa_hit " + strconv.Itoa(v) + "\n"
		if err := os.WriteFile(node(id, "numastat"), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	topo := &topology.Topology{NUMA: true, Nodes: []topology.Node{{ID: 0}, {ID: 1}}}
	cat := Open(sensor.Env{FS: sysfs.New(root), Topology: topo}, "node")
	t.Cleanup(func() { cat.Close() })
	cols, err := cat.Select([]string{"node.*.numa_hit", "node.*.MemFree", "node.numa_hit"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "node.0.numa_hit,node.1.numa_hit,node.0.MemFree,node.1.MemFree,node.numa_hit" {
		t.Fatalf("columns %v", names)
	}
	var msgs []string
	s, err := New(cols, Config{Interval: time.Second, Errors: func(e error) { msgs = append(msgs, e.Error()) },
		Notices: func(m string) { msgs = append(msgs, m) }})
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(node("1", "meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	const free0, free1 = 123456 * 1024, 3543052 * 1024
	if err := os.WriteFile(node("0", "meminfo"), []byte("Node 0 MemTotal: 9999999 kB\nNode 0 MemFree: 123456 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	// Each step: node 0 and node 1 numa_hit values, whether node 1's meminfo is
	// garbage, then the values the sampler must give (1 s per sample).
	hit0, hit1 := 1000, 5000
	setHit("0", hit0)
	setHit("1", hit1)
	s.Sample(time.Second) // prime
	for i, step := range []struct {
		d0, d1  int
		garbage bool
		want    []float64
	}{
		{10, 20, false, []float64{10, 20, free0, free1, 30}},
		{10, 20, true, []float64{10, nan, free0, nan, nan}},
		{10, 20, true, []float64{10, nan, free0, nan, nan}},
		// Back: the level is there, the rate needs a second good read.
		{10, 20, false, []float64{10, nan, free0, free1, nan}},
		{10, 20, false, []float64{10, 20, free0, free1, 30}},
	} {
		hit0 += step.d0
		hit1 += step.d1
		setHit("0", hit0)
		setHit("1", hit1)
		content := good
		if step.garbage {
			content = []byte("Node 1 MemTotal: 6121692 kB\nNode 1 MemFree: garbage kB\n")
		}
		if err := os.WriteFile(node("1", "meminfo"), content, 0o644); err != nil {
			t.Fatal(err)
		}
		v := s.Sample(time.Second)
		for j, w := range step.want {
			if math.IsNaN(w) != math.IsNaN(v[j]) || (!math.IsNaN(w) && v[j] != w) {
				t.Errorf("sample %d: %s = %v, want %v", i, cols[j].Name, v[j], w)
			}
		}
	}
	joined := strings.Join(msgs, "\n")
	if len(msgs) != 2 || !strings.Contains(msgs[0], "node: source 1: ") || !strings.Contains(msgs[0], "node1/meminfo") ||
		!strings.Contains(msgs[1], "node: source 1: reading works again after 2 failed samples") {
		t.Errorf("messages:\n%s", joined)
	}
}
