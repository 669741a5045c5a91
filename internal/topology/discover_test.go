package topology

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
)

// The trees under testdata/ are small hand-made sysfs/procfs captures, each
// holding one situation the hwloc fixtures do not cover or do not isolate.
// They are plain files so that a reviewer can read them.

func discoverTree(t *testing.T, name string) *Topology {
	t.Helper()
	top, err := Discover(sysfs.New(filepath.Join("testdata", name)))
	if err != nil {
		t.Fatalf("Discover(%s): %v", name, err)
	}
	checkInvariants(t, top)
	return top
}

func TestTwoNodeCXL(t *testing.T) {
	top := discoverTree(t, "two-node-cxl")
	if !top.NUMA {
		t.Error("NUMA = false")
	}
	want := []Node{
		{ID: 0, CPUs: []int{0, 1, 4, 5}, MemoryTotal: 32654400 * 1024, MemoryFree: 20001000 * 1024,
			Distances: map[string]int{"0": 10, "1": 21, "2": 14}, Allowed: true, Access: []Access{}, MemorySideCaches: []MemorySideCache{}},
		// node1 has no cpulist: its CPUs come from cpumap.
		{ID: 1, CPUs: []int{2, 3, 6, 7}, MemoryTotal: 33021952 * 1024, MemoryFree: 30000000 * 1024,
			Distances: map[string]int{"0": 21, "1": 10, "2": 24}, Allowed: true, Access: []Access{}, MemorySideCaches: []MemorySideCache{}},
		{ID: 2, CPUs: []int{}, MemoryTotal: 134217728 * 1024, MemoryFree: 134000000 * 1024,
			Distances: map[string]int{"0": 14, "1": 24, "2": 10}, CPULess: true, Allowed: true, Access: []Access{}, MemorySideCaches: []MemorySideCache{}},
	}
	if !reflect.DeepEqual(top.Nodes, want) {
		t.Errorf("nodes:\n got %+v\nwant %+v", top.Nodes, want)
	}
	// CPU 7 is offline: no topology directory, node from node1's map.
	c7 := top.CPUs[7]
	if c7.Online || c7.Node != 1 || c7.Package != Unknown || c7.Core != Unknown || len(c7.Siblings) != 0 {
		t.Errorf("offline CPU 7 = %+v", c7)
	}
	// cpu0 has no online file (it cannot be offlined) and NUL-padded topology files.
	c0 := top.CPUs[0]
	if !c0.Online || c0.Package != 0 || c0.Die != 0 || c0.Core != 0 || !reflect.DeepEqual(c0.Siblings, []int{0, 4}) || c0.Node != 0 {
		t.Errorf("CPU 0 = %+v", c0)
	}
	if c := top.CPUs[6]; c.Package != 1 || c.Core != 0 || !reflect.DeepEqual(c.Siblings, []int{2, 6}) || c.Node != 1 {
		t.Errorf("CPU 6 = %+v", c)
	}
	if !reflect.DeepEqual(top.AllowedCPUs, []int{0, 1, 2, 3, 4, 5, 6, 7}) || !reflect.DeepEqual(top.AllowedNodes, []int{0, 1, 2}) ||
		top.AllowedSource != filepath.Join("testdata", "two-node-cxl", "proc", "self", "status") {
		t.Errorf("allowed = %v / %v from %q", top.AllowedCPUs, top.AllowedNodes, top.AllowedSource)
	}
	wantPk := []Package{{ID: 0, CPUs: []int{0, 1, 4, 5}, Nodes: []int{0}}, {ID: 1, CPUs: []int{2, 3, 6}, Nodes: []int{1}}}
	if !reflect.DeepEqual(top.Packages, wantPk) {
		t.Errorf("packages = %+v", top.Packages)
	}
	// Caches: per core L1d, L1i, L2 (4 cores, CPU 7 offline does not matter:
	// its sibling 3 describes the shared instance), one L3 per package.
	count := map[string]int{}
	for _, c := range top.Caches {
		count[cacheName(c)]++
	}
	if !reflect.DeepEqual(count, map[string]int{"L1d": 4, "L1i": 4, "L2": 4, "L3": 2}) {
		t.Errorf("cache instances = %v", count)
	}
	l3 := top.Caches[len(top.Caches)-1]
	if l3.Level != 3 || l3.SizeBytes != 16<<20 || l3.LineSize != 64 || l3.Associativity != 16 || !reflect.DeepEqual(l3.CPUs, []int{2, 3, 6, 7}) {
		t.Errorf("last cache = %+v", l3)
	}
	if len(top.Warnings) != 0 {
		t.Errorf("unexpected warnings: %q", top.Warnings)
	}
}

// TestJSONShape checks the public JSON contract: key names, and [] rather
// than null for empty lists (consumers iterate without nil checks).
func TestJSONShape(t *testing.T) {
	top := discoverTree(t, "two-node-cxl")
	b, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodes", "cpus", "caches", "packages", "allowed_cpus", "allowed_nodes", "numa"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	n2 := m["nodes"].([]any)[2].(map[string]any)
	for _, k := range []string{"id", "cpus", "memory_total_bytes", "memory_free_bytes", "distances", "cpuless", "allowed"} {
		if _, ok := n2[k]; !ok {
			t.Errorf("node JSON lacks %q", k)
		}
	}
	if cpus, ok := n2["cpus"].([]any); !ok || len(cpus) != 0 {
		t.Errorf("CPU-less node cpus = %#v, want []", n2["cpus"])
	}
	if n2["distances"].(map[string]any)["0"].(float64) != 14 {
		t.Errorf("distances = %v", n2["distances"])
	}
	c7 := m["cpus"].([]any)[7].(map[string]any)
	for _, k := range []string{"id", "node", "package", "core", "online", "allowed"} {
		if _, ok := c7[k]; !ok {
			t.Errorf("cpu JSON lacks %q", k)
		}
	}
	if c7["online"] != false || c7["node"].(float64) != 1 {
		t.Errorf("cpu 7 JSON = %v", c7)
	}
	// null is kept for what the kernel does not report (memory tiers:
	// this tree has none); nothing else may be null, lists included.
	if bytes.Contains(notReportedJSON.ReplaceAll(b, nil), []byte("null")) {
		t.Errorf("JSON contains null: %s", b)
	}
	if m["memory_tiers"] != nil || n2["memory_tier"] != nil {
		t.Errorf("memory tiers = %v, node 2's %v: want null (not reported)", m["memory_tiers"], n2["memory_tier"])
	}
	if a, ok := n2["access"].([]any); !ok || len(a) != 0 {
		t.Errorf("node 2 access = %#v, want []", n2["access"])
	}
}

// notReportedJSON matches the keys whose null means "the kernel does not
// report it".
var notReportedJSON = regexp.MustCompile(`"(memory_tiers|memory_tier|read_latency_ns|write_latency_ns|read_bandwidth_mibs|write_bandwidth_mibs|size_bytes|line_size|indexing|write_policy)":null`)

func TestCgroup2WithoutStatus(t *testing.T) {
	top := discoverTree(t, "cgroup2-restricted")
	// The process is in /job/step, which has no cpuset files (the
	// controller is not enabled there): its parent /job applies.
	if !reflect.DeepEqual(top.AllowedCPUs, []int{2, 3}) || !reflect.DeepEqual(top.AllowedNodes, []int{1}) {
		t.Errorf("allowed = %v / %v", top.AllowedCPUs, top.AllowedNodes)
	}
	if want := filepath.Join("testdata", "cgroup2-restricted", "sys", "fs", "cgroup", "job"); top.AllowedSource != want {
		t.Errorf("source = %q, want %q", top.AllowedSource, want)
	}
	for _, c := range top.CPUs {
		if c.Allowed != (c.ID >= 2) {
			t.Errorf("CPU %d allowed = %v", c.ID, c.Allowed)
		}
	}
	if top.Nodes[0].Allowed || !top.Nodes[1].Allowed {
		t.Errorf("node allowed = %v, %v", top.Nodes[0].Allowed, top.Nodes[1].Allowed)
	}
}

func TestCgroup1Noprefix(t *testing.T) {
	top := discoverTree(t, "cgroup1-noprefix")
	// The first cgroup2 mount lacks the cpuset controller and is skipped;
	// the v1 hierarchy mounted with noprefix has plain "cpus"/"mems".
	if !reflect.DeepEqual(top.AllowedCPUs, []int{0, 2}) || !reflect.DeepEqual(top.AllowedNodes, []int{0}) {
		t.Errorf("allowed = %v / %v", top.AllowedCPUs, top.AllowedNodes)
	}
	if want := filepath.Join("testdata", "cgroup1-noprefix", "dev", "cpuset", "batch", "job7"); top.AllowedSource != want {
		t.Errorf("source = %q, want %q", top.AllowedSource, want)
	}
	if top.CPUs[1].Allowed || !top.CPUs[2].Allowed || top.Nodes[1].Allowed {
		t.Errorf("flags: cpu1 %v cpu2 %v node1 %v", top.CPUs[1].Allowed, top.CPUs[2].Allowed, top.Nodes[1].Allowed)
	}
}

func TestNoNodeDirectory(t *testing.T) {
	top := discoverTree(t, "no-numa")
	if top.NUMA {
		t.Error("NUMA = true without a node directory")
	}
	want := []Node{{ID: 0, CPUs: []int{0, 1, 2, 3}, MemoryTotal: 8041312 * 1024, MemoryFree: 6120448 * 1024,
		Distances: map[string]int{"0": 10}, Allowed: true, Access: []Access{}, MemorySideCaches: []MemorySideCache{}}}
	if !reflect.DeepEqual(top.Nodes, want) {
		t.Errorf("nodes = %+v", top.Nodes)
	}
	for _, c := range top.CPUs {
		if c.Node != 0 {
			t.Errorf("CPU %d node %d", c.ID, c.Node)
		}
	}
	if len(top.Caches) != 3 || !reflect.DeepEqual(top.Caches[2].CPUs, []int{0, 1, 2, 3}) {
		t.Errorf("caches = %+v", top.Caches)
	}
	if len(top.Warnings) != 0 {
		t.Errorf("warnings: %q", top.Warnings)
	}
}

func TestGarbageFiles(t *testing.T) {
	top := discoverTree(t, "garbage")
	root := filepath.Join("testdata", "garbage")
	// Each garbled file gets a warning that names it, and discovery goes on.
	for _, want := range []string{
		filepath.Join(root, "sys/devices/system/cpu/online") + `: bad cpu list "0-3,zz"`,
		filepath.Join(root, "sys/devices/system/cpu/cpu1/topology/core_id") + `: "banana" is not an integer`,
		filepath.Join(root, "sys/devices/system/cpu/cpu2/cache/index0/size") + `: cache size "lots"`,
		filepath.Join(root, "sys/devices/system/node/node0/meminfo") + `: line 2: MemFree value "lots" is not a number`,
		filepath.Join(root, "sys/devices/system/node/node1/distance") + `: "x" is not a number`,
	} {
		if !hasWarning(top, want) {
			t.Errorf("no warning containing %q in %q", want, top.Warnings)
		}
	}
	// What could be read is there.
	if top.CPUs[1].Core != Unknown || top.CPUs[1].Package != 0 {
		t.Errorf("CPU 1 = %+v", top.CPUs[1])
	}
	// The unparsable online list falls back to the per-CPU files.
	if !top.CPUs[2].Online || top.CPUs[3].Online {
		t.Errorf("online: cpu2 %v cpu3 %v", top.CPUs[2].Online, top.CPUs[3].Online)
	}
	if n := top.Nodes[0]; n.MemoryTotal != 8388608*1024 || n.MemoryFree != 0 {
		t.Errorf("node 0 memory = %d/%d", n.MemoryTotal, n.MemoryFree)
	}
	if d := top.Nodes[1].Distances; len(d) != 0 {
		t.Errorf("node 1 distances = %v, want none", d)
	}
	if top.Distance(0, 1) != 20 {
		t.Errorf("distance 0->1 = %d", top.Distance(0, 1))
	}
	for _, w := range top.Warnings {
		if strings.Contains(w, "\n") {
			t.Errorf("warning spans lines: %q", w)
		}
	}
}

// TestNodeCPULinks: without cpulist and cpumap, a node's CPUs are the cpuM
// links in its directory. Links cannot live in testdata portably, so the
// tree is built here.
func TestNodeCPULinks(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"sys/devices/system/cpu/cpu0/topology/physical_package_id": "0",
		"sys/devices/system/cpu/cpu1/topology/physical_package_id": "0",
		"sys/devices/system/node/node0/meminfo":                    "Node 0 MemTotal: 1024 kB\nNode 0 MemFree: 512 kB\n",
		"sys/devices/system/node/node0/distance":                   "10",
	})
	for _, c := range []string{"cpu0", "cpu1"} {
		if err := os.Symlink("../../cpu/"+c, filepath.Join(root, "sys/devices/system/node/node0", c)); err != nil {
			t.Fatal(err)
		}
	}
	top, err := Discover(sysfs.New(root))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(top.Nodes[0].CPUs, []int{0, 1}) || top.Nodes[0].CPULess || top.CPUs[1].Node != 0 {
		t.Errorf("node 0 = %+v, cpu1 node %d", top.Nodes[0], top.CPUs[1].Node)
	}
}

func TestNothingToRead(t *testing.T) {
	if _, err := Discover(sysfs.New(t.TempDir())); err == nil || !strings.Contains(err.Error(), "no CPU") {
		t.Errorf("empty root: err = %v", err)
	}
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCgroupResolution covers the ways a cpuset can be exposed, each in a
// minimal tree: what matters is which file is read, so the trees hold little
// else.
func TestCgroupResolution(t *testing.T) {
	cpu := map[string]string{"sys/devices/system/cpu/cpu0/topology/physical_package_id": "0"}
	cases := []struct {
		name      string
		files     map[string]string
		cpus      []int
		mems      []int
		sourceEnd string
	}{
		{
			name: "status wins",
			files: map[string]string{
				"proc/self/status": "Cpus_allowed_list:\t1-2\nMems_allowed_list:\t0\n",
				"proc/self/cpuset": "/a\n", "proc/mounts": "none /dev/cpuset cpuset rw 0 0\n",
				"dev/cpuset/a/cpus": "3", "dev/cpuset/a/mems": "1",
			},
			cpus: []int{1, 2}, mems: []int{0}, sourceEnd: "proc/self/status",
		},
		{
			name: "status with masks only",
			files: map[string]string{
				"proc/self/status": "Cpus_allowed:\t00000000,0000000c\nMems_allowed:\t00000000,00000001\n",
			},
			cpus: []int{2, 3}, mems: []int{0}, sourceEnd: "proc/self/status",
		},
		{
			name: "legacy cpuset filesystem",
			files: map[string]string{
				"proc/self/cpuset": "/a\n", "proc/mounts": "none /dev/cpuset cpuset rw 0 0\n",
				"dev/cpuset/a/cpus": "0-6,12-15\n", "dev/cpuset/a/mems": "1-4\n",
			},
			cpus: []int{0, 1, 2, 3, 4, 5, 6, 12, 13, 14, 15}, mems: []int{1, 2, 3, 4}, sourceEnd: "dev/cpuset/a",
		},
		{
			name: "cgroup v1 with prefix, path from /proc/self/cgroup",
			files: map[string]string{
				"proc/self/cgroup": "5:memory:/other\n2:cpuset:/slurm/job1\n1:name=systemd:/x\n0::/unified\n",
				"proc/mounts":      "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,cpuset 0 0\n",
				"sys/fs/cgroup/cpuset/slurm/job1/cpuset.cpus": "4-7\n",
				"sys/fs/cgroup/cpuset/slurm/job1/cpuset.mems": "1\n",
				"sys/fs/cgroup/cpuset/slurm/job1/cpus":        "0\n", // noprefix names must not be read
			},
			cpus: []int{4, 5, 6, 7}, mems: []int{1}, sourceEnd: "sys/fs/cgroup/cpuset/slurm/job1",
		},
		{
			name: "cgroup v2 at the root cgroup",
			files: map[string]string{
				"proc/self/cgroup":                      "0::/\n",
				"proc/mounts":                           "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
				"sys/fs/cgroup/cgroup.controllers":      "cpuset memory\n",
				"sys/fs/cgroup/cpuset.cpus.effective":   "0-5\n",
				"sys/fs/cgroup/cpuset.mems.effective":   "0-2,4,6,8-9\n",
				"sys/fs/cgroup/user.slice/cgroup.procs": "1\n",
			},
			cpus: []int{0, 1, 2, 3, 4, 5}, mems: []int{0, 1, 2, 4, 6, 8, 9}, sourceEnd: "sys/fs/cgroup",
		},
		{
			name: "cgroup v2 mount point with an escaped space",
			files: map[string]string{
				"proc/self/cgroup":                "0::/j\n",
				"proc/mounts":                     "cgroup2 /cg\\040root cgroup2 rw 0 0\n",
				"cg root/j/cpuset.cpus.effective": "1\n",
				"cg root/j/cpuset.mems.effective": "0\n",
			},
			cpus: []int{1}, mems: []int{0}, sourceEnd: "cg root/j",
		},
		{
			name: "no mount table: conventional v1 location",
			files: map[string]string{
				"proc/self/cpuset":                   "/\n",
				"sys/fs/cgroup/cpuset/cpuset.cpus":   "0-1\n",
				"sys/fs/cgroup/cpuset/cpuset.mems":   "0\n",
				"sys/fs/cgroup/cpuset/notify_on_rel": "0\n",
			},
			cpus: []int{0, 1}, mems: []int{0}, sourceEnd: "sys/fs/cgroup/cpuset",
		},
		{
			name: "path climbing out of the mount is refused",
			files: map[string]string{
				"proc/self/cpuset":  "/../../etc\n",
				"proc/mounts":       "none /dev/cpuset cpuset rw 0 0\n",
				"dev/cpuset/cpus":   "0\n",
				"dev/cpuset/mems":   "0\n",
				"etc/cpus":          "9\n",
				"etc/mems":          "9\n",
				"dev/etc/cpus":      "9\n",
				"dev/etc/mems":      "9\n",
				"dev/cpuset/x/cpus": "9\n",
			},
			cpus: nil, mems: nil, sourceEnd: "",
		},
		{
			name:  "nothing found",
			files: map[string]string{"proc/mounts": "proc /proc proc rw 0 0\n"},
			cpus:  nil, mems: nil, sourceEnd: "",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, cpu)
			writeTree(t, root, c.files)
			top, err := Discover(sysfs.New(root))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(top.AllowedCPUs, c.cpus) || !reflect.DeepEqual(top.AllowedNodes, c.mems) {
				t.Errorf("allowed = %v / %v, want %v / %v (warnings %q)", top.AllowedCPUs, top.AllowedNodes, c.cpus, c.mems, top.Warnings)
			}
			want := ""
			if c.sourceEnd != "" {
				want = filepath.Join(root, c.sourceEnd)
			}
			if top.AllowedSource != want {
				t.Errorf("source = %q, want %q", top.AllowedSource, want)
			}
			if c.cpus == nil && !top.CPUs[0].Allowed {
				t.Errorf("unknown allowed set must not disallow CPUs")
			}
		})
	}
}

// TestDistanceColumns: distance columns follow node/online, which may be
// sparse and may differ from what a naive 0..N-1 numbering would give.
func TestDistanceColumns(t *testing.T) {
	root := t.TempDir()
	nd := "sys/devices/system/node/"
	writeTree(t, root, map[string]string{
		"sys/devices/system/cpu/cpu0/topology/physical_package_id": "0",
		"sys/devices/system/cpu/cpu1/topology/physical_package_id": "1",
		nd + "online":          "0,4\n",
		nd + "node0/cpulist":   "0\n",
		nd + "node0/distance":  "10 31\n",
		nd + "node0/meminfo":   "Node 0 MemTotal: 4 kB\n",
		nd + "node4/cpulist":   "1\n",
		nd + "node4/distance":  "32 10\n", // asymmetric on purpose: rows must not be mixed up with columns
		nd + "node4/meminfo":   "Node 4 MemTotal: 8 kB\n",
		"proc/self/status":     "Cpus_allowed_list:\t0-1\nMems_allowed_list:\t0,4\n",
		"proc/self/status.bak": "garbage",
	})
	top, err := Discover(sysfs.New(root))
	if err != nil {
		t.Fatal(err)
	}
	if top.Distance(0, 4) != 31 || top.Distance(4, 0) != 32 || top.Distance(4, 4) != 10 || top.Distance(0, 1) != 0 {
		t.Errorf("distances: %v %v", top.Nodes[0].Distances, top.Nodes[1].Distances)
	}
	if !hasWarning(top, "node 4 is closer to node 0") && top.Distance(4, 0) < 10 {
		t.Errorf("no SLIT warning")
	}
	if top.Nodes[1].MemoryTotal != 8192 {
		t.Errorf("node 4 memory %d", top.Nodes[1].MemoryTotal)
	}
}
