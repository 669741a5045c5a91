package bench

import (
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/topology"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"1048576": 1 << 20, "64M": 64 << 20, "64MiB": 64 << 20, "1G": 1 << 30, "512k": 512 << 10, "2GB": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "M", "-1M", "1.5G", "12X"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
	for in, want := range map[uint64]string{64 << 20: "64M", 1 << 30: "1G", 4096: "4K", 100: "100"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", in, got, want)
		}
	}
}

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kinds{"latency": {Latency: true}, "bandwidth": {Bandwidth: true}, "all": {Latency: true, Bandwidth: true, Loaded: true}, "loaded": {Loaded: true}} {
		if got, err := ParseKind(in); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"speed", "load"} {
		if _, err := ParseKind(in); err == nil {
			t.Errorf("ParseKind(%q): no error", in)
		}
	}
}

// fourNodes is a machine with CPUs on nodes 0-2 (two per node, node 2's
// outside the cpuset) and a CPU-less memory node 3, a shared 32 MiB L3 per
// node.
func fourNodes() *topology.Topology {
	t := &topology.Topology{NUMA: true, AllowedCPUs: []int{0, 1, 2, 3}}
	for id := range 4 {
		n := topology.Node{ID: id, MemoryTotal: 1 << 30, MemoryFree: 900 << 20, Allowed: id != 2, CPULess: id == 3}
		if id < 3 {
			n.CPUs = []int{2 * id, 2*id + 1}
			t.Caches = append(t.Caches, topology.Cache{Level: 3, Type: "Unified", SizeBytes: 32 << 20, LineSize: 64, CPUs: n.CPUs})
		}
		t.Nodes = append(t.Nodes, n)
	}
	for c := range 6 {
		t.CPUs = append(t.CPUs, topology.CPU{ID: c, Node: c / 2, Online: true, Allowed: c < 4, Core: c, Siblings: []int{c}})
	}
	return t
}

func TestInitiatorsTargets(t *testing.T) {
	topo := fourNodes()
	ini, err := Initiators("", topo)
	if err != nil || len(ini) != 2 || ini[0] != 0 || ini[1] != 1 {
		t.Errorf("default initiators %v, %v; want [0 1] (node 2's CPUs are outside the cpuset, node 3 has none)", ini, err)
	}
	tg, err := Targets("", topo)
	if err != nil || len(tg) != 4 {
		t.Errorf("default targets %v, %v; want all four memory nodes", tg, err)
	}
	for from, want := range map[string]string{"3": "no CPUs", "2": "no online CPU this process may use", "7": "does not exist", "x": "not a node list"} {
		if _, err := Initiators(from, topo); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--from %s: %v, want an error saying %q", from, err, want)
		}
	}
	if _, err := Targets("3", topo); err != nil {
		t.Errorf("--to 3 (CPU-less): %v", err)
	}
	topo.Nodes[1].MemoryTotal = 0
	for to, want := range map[string]string{"1": "no memory", "2": "cpuset", "9": "does not exist"} {
		if _, err := Targets(to, topo); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--to %s: %v, want an error saying %q", to, err, want)
		}
	}
}

func TestPlan(t *testing.T) {
	topo := fourNodes()
	p, err := newPlan(Options{Topology: topo, Kinds: Kinds{Latency: true, Bandwidth: true}, Kernel: Triad, Repeat: 3})
	if err != nil {
		t.Fatal(err)
	}
	// 4x the 32 MiB L3 per array.
	if p.latSize != 128<<20 || p.bwPerArray != 128<<20 || p.line != 64 {
		t.Errorf("default sizes: latency %d, per array %d, line %d; want 128M, 128M, 64", p.latSize, p.bwPerArray, p.line)
	}
	// Node 2 is outside the cpuset; triad's 4 x 128M do not fit in 900M free
	// with the margin? They do (512M): nothing else skipped.
	if len(p.skip) != 1 || !strings.Contains(p.skip[2], "cpuset") {
		t.Errorf("skipped %v, want node 2 (cpuset) only", p.skip)
	}
	if len(p.bwCPUs) != 2 || len(p.bwCPUs[0]) != 2 {
		t.Errorf("bandwidth CPUs %v, want both CPUs of nodes 0 and 1", p.bwCPUs)
	}
	if _, err := newPlan(Options{Topology: topo, Kinds: Kinds{Latency: true}, Repeat: 1, Size: 2 << 30, To: "3"}); err == nil || !strings.Contains(err.Error(), "node 3 has 900M free") {
		t.Errorf("2G on a node with 900M free: %v", err)
	}
	p, err = newPlan(Options{Topology: topo, Kinds: Kinds{Latency: true}, Repeat: 1, Size: 2 << 30})
	if err == nil {
		t.Errorf("2G everywhere: no error, skipped %v", p.skip)
	}
	if _, err := newPlan(Options{Topology: topo, Kinds: Kinds{Bandwidth: true}, Repeat: 1, Threads: 3}); err == nil || !strings.Contains(err.Error(), "only 2 usable CPUs") {
		t.Errorf("--threads 3 on 2-CPU nodes: %v", err)
	}
	if _, err := newPlan(Options{Topology: topo, Kinds: Kinds{Latency: true, Bandwidth: true}, Repeat: 0}); err == nil {
		t.Error("--repeat 0: no error")
	}
}

// TestRepeatBounded: --repeat past MaxRepeat is refused before anything
// is measured, so that the biggest document bench writes is known (what
// numascope view bounds its reading by).
func TestRepeatBounded(t *testing.T) {
	for _, r := range []int{0, MaxRepeat + 1} {
		if _, err := newPlan(Options{Kinds: Kinds{C2C: true}, Repeat: r}); err == nil || !strings.Contains(err.Error(), "want 1 to 100") {
			t.Errorf("--repeat %d: %v", r, err)
		}
	}
}
