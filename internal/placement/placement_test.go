package placement

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// cxlTopology is a captured two-socket machine with a CPU-less CXL memory
// node 2 and CPU 7 offline (internal/topology/testdata/two-node-cxl).
func cxlTopology(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := topology.Discover(sysfs.New("../topology/testdata/two-node-cxl"))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestParsePolicy(t *testing.T) {
	topo := cxlTopology(t)
	for in, want := range map[string]string{
		"first-touch":    "first-touch",
		"default":        "first-touch",
		"local":          "local",
		"interleave":     "interleave:0-2",
		"interleave:0,2": "interleave:0,2",
		"bind:1-2":       "bind:1-2",
		"membind:1":      "bind:1",
		"preferred:2":    "preferred:2",
	} {
		p, err := ParsePolicy(in, topo)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if p.String() != want {
			t.Errorf("%s parsed as %s, want %s", in, p, want)
		}
	}
	for in, want := range map[string]string{
		"bind:3":          "node 3 does not exist; the nodes are 0-2, with memory and allowed: 0-2",
		"bind":            "bind needs nodes",
		"preferred:0-1":   "exactly one node",
		"local:0":         "local takes no nodes",
		"interleave:x":    "not a node list",
		"spread":          "unknown policy; want first-touch | interleave",
		"first-touch:0-1": "takes no nodes",
	} {
		_, err := ParsePolicy(in, topo)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", in, err, want)
		}
	}
}

func TestResolveCPUs(t *testing.T) {
	topo := cxlTopology(t)
	for _, c := range []struct {
		cpus, nodes string
		per         int
		want        string
	}{
		{"", "", 0, ""},
		{"1-3", "", 0, "1-3"},
		{"", "1", 0, "2-3,6"}, // CPU 7 is offline
		{"", "0-1", 0, "0-6"},
		{"", "", 1, "0,2"},
		{"", "0", 2, "0-1"},  // one thread per core first: 0 and 1, not 0 and 4
		{"", "", 3, "0-4,6"}, // node 0: cores {0,4} {1,5}; node 1 has 2, 3, 6
	} {
		got, err := ResolveCPUs(c.cpus, c.nodes, c.per, topo)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if s := sysfs.FormatCPUList(got); s != c.want {
			t.Errorf("%+v: %s, want %s", c, s, c.want)
		}
	}
	for _, c := range []struct {
		cpus, nodes string
		per         int
		want        string
	}{
		{"7", "", 0, "CPU 7 is offline; usable CPUs: 0-6"},
		{"8-9", "", 0, "CPU 8 does not exist; usable CPUs: 0-6"},
		{"", "2", 0, "node 2 has no online, allowed CPUs; nodes with usable CPUs: 0-1"},
		{"", "5", 0, "nodes with usable CPUs: 0-1"},
		{"0", "0", 0, "exclusive"},
		{"", "1", 4, "node 1 has only 3 usable CPUs"},
		{"a", "", 0, "not a CPU list"},
		{"0", "", 1, "--threads-per-node goes with --nodes"},
	} {
		_, err := ResolveCPUs(c.cpus, c.nodes, c.per, topo)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c, err, c.want)
		}
	}
}

func TestNodeMask(t *testing.T) {
	mask, maxnode := nodeMask([]int{0, 3, 64})
	if len(mask) != 2 || mask[0] != 9 || mask[1] != 1 || maxnode != 129 {
		t.Fatalf("mask %x maxnode %d", mask, maxnode)
	}
}

// liveTopology is this machine's.
func liveTopology(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestApplySetsThreadPolicy sets every policy on a locked thread of this
// process and reads it back with get_mempolicy.
func TestApplySetsThreadPolicy(t *testing.T) {
	topo := liveTopology(t)
	node := memoryNodes(topo)[0]
	for _, spec := range []string{fmt.Sprintf("interleave:%d", node), fmt.Sprintf("bind:%d", node),
		fmt.Sprintf("preferred:%d", node), "local", "first-touch"} {
		p, err := ParsePolicy(spec, topo)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			// The thread keeps the policy: never unlock, so that it is
			// discarded when the goroutine ends.
			runtime.LockOSThread()
			if err := (Plan{Policy: p}).Apply(); err != nil {
				done <- err
				return
			}
			got, err := GetMemPolicy()
			if err != nil {
				done <- err
				return
			}
			if got.Mode != p.Mode || fmt.Sprint(got.Nodes) != fmt.Sprint(p.Nodes) {
				done <- fmt.Errorf("%s: get_mempolicy says %s %v", spec, got.Mode, got.Nodes)
				return
			}
			done <- nil
		}()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// The test binary doubles as the program that execs: with this variable
// set, TestMain applies the plan it names and execs the rest of os.Args.
const helperEnv = "NUMASCOPE_PLACEMENT_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		policy, cpus, _ := strings.Cut(spec, "|")
		topo, err := topology.Discover(sysfs.New(""))
		if err == nil {
			var plan Plan
			if plan.Policy, err = ParsePolicy(policy, topo); err == nil {
				if plan.CPUs, err = ResolveCPUs(cpus, "", 0, topo); err == nil {
					err = plan.Exec(os.Args[1:], os.Environ())
				}
			}
		}
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// execWith runs the test binary as the helper: it applies policy and cpus
// and execs argv, whose output is returned.
func execWith(t *testing.T, policy, cpus string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), helperEnv+"="+policy+"|"+cpus)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("exec under %s|%s: %v", policy, cpus, err)
	}
	return string(out)
}

// TestExecInheritsPlan checks what the exec'd program really got: the
// policy of its mappings in its own /proc/self/numa_maps, and its allowed
// CPUs in /proc/self/status.
func TestExecInheritsPlan(t *testing.T) {
	if _, err := os.Stat("/proc/self/numa_maps"); err != nil {
		t.Skipf("no /proc/self/numa_maps (kernel without NUMA): %v", err)
	}
	topo := liveTopology(t)
	node := memoryNodes(topo)[0]
	cpus := slices.Sorted(maps.Keys(usableCPUs(topo)))
	last := cpus[len(cpus)-1]
	for policy, want := range map[string]string{
		fmt.Sprintf("interleave:%d", node): fmt.Sprintf(" interleave:%d ", node),
		fmt.Sprintf("bind:%d", node):       fmt.Sprintf(" bind:%d ", node),
		fmt.Sprintf("preferred:%d", node):  fmt.Sprintf(" prefer:%d ", node),
		"local":                            " local ",
		"first-touch":                      " default ",
	} {
		maps := execWith(t, policy, "", "cat", "/proc/self/numa_maps")
		heap := ""
		for _, l := range strings.Split(maps, "\n") {
			if strings.Contains(l, " heap") || strings.Contains(l, "anon=") {
				heap = l
				break
			}
		}
		if !strings.Contains(heap, want) {
			t.Errorf("%s: cat's anonymous mapping is %q, want policy %q", policy, heap, strings.TrimSpace(want))
		}
	}
	status := execWith(t, "first-touch", fmt.Sprint(last), "cat", "/proc/self/status")
	if !strings.Contains(status, fmt.Sprintf("Cpus_allowed_list:\t%d\n", last)) {
		t.Errorf("--cpus %d: the child's status says\n%s", last, grepLine(status, "Cpus_allowed_list"))
	}
}

func grepLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return "(no " + prefix + " line)"
}

func TestExecErrors(t *testing.T) {
	if err := (Plan{}).Exec(nil, nil); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Errorf("empty argv: %v", err)
	}
	if err := (Plan{}).Exec([]string{"/nonexistent/numascope-test"}, nil); err == nil || !strings.Contains(err.Error(), "cannot run") {
		t.Errorf("missing program: %v", err)
	}
}

// FuzzParsePolicyAndCPUs: no input makes the parsers panic, errors are one
// line, and what is accepted lies within the topology.
func FuzzParsePolicyAndCPUs(f *testing.F) {
	topo, err := topology.Discover(sysfs.New("../topology/testdata/two-node-cxl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"interleave:0-2", "bind:1", "preferred:2", "local", "interleave", "bind:0-1,2", "bind:9999999999"} {
		f.Add(s, "0-3", "", 0)
		f.Add(s, "", "1", 2)
	}
	f.Fuzz(func(t *testing.T, policy, cpus, nodes string, per int) {
		p, err := ParsePolicy(policy, topo)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
		} else {
			for _, n := range p.Nodes {
				if topo.Node(n) == nil {
					t.Fatalf("%q accepted node %d", policy, n)
				}
			}
		}
		list, err := ResolveCPUs(cpus, nodes, per, topo)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		usable := usableCPUs(topo)
		for _, c := range list {
			if _, ok := usable[c]; !ok {
				t.Fatalf("cpus %q nodes %q per %d: accepted CPU %d", cpus, nodes, per, c)
			}
		}
	})
}
