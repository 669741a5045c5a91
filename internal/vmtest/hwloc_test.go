package vmtest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math/big"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// hwlocScript reads the VM's topology three ways: numascope's JSON, Debian's
// hwloc (lstopo, carried in with its loader and libraries, exporting XML),
// and the kernel's own node state masks (has_cpu is node_states[N_CPU],
// which the kernel keeps on CPU hotplug apart from the nodes' cpulists that
// numascope reads).
const hwlocScript = `lstopo() { /data/ld-linux-x86-64.so.2 --library-path /data /data/lstopo-no-graphics "$@"; }
sec topo numascope topology --format json
sec hwloc lstopo --of xml -
sec states sh -c 'for f in online has_cpu has_memory; do echo "$f $(cat /sys/devices/system/node/$f)"; done'
`

// TestTopologyMatchesHwlocVM holds numascope's topology of a machine with a
// CPU-less node, an ACPI HMAT and a memory-side cache to hwloc's reading of
// the same kernel, in the 3-node VM whose node 2 has memory and no CPUs
// (as CXL or HBM memory): which nodes are CPU-less (and, against the
// kernel's has_cpu, which are not), each node's memory, the distances, the
// CPUs hwloc attaches a CPU-less node to (its initiator's), the rated
// latencies and bandwidths (hwloc's memory attributes) and the memory-side
// cache. hwloc parses the same sysfs files with its own C code and its own
// model (a CPU-less node hangs under the CPUs of its initiator; a cache in
// front of memory is a MemCache object), so a misread value, a node or
// initiator mixed up, or a unit slip shows here.
func TestTopologyMatchesHwlocVM(t *testing.T) {
	requireVM(t)
	lstopo, err := exec.LookPath("lstopo-no-graphics")
	if err != nil {
		t.Fatal("hwloc's lstopo-no-graphics is not installed: scripts/install-test-deps installs Debian's hwloc")
	}
	opts := []string{"--nodes", "3", "--cpus-per-node", "2", "--cpuless", "1", "--hmat", "--distances", "10,20,14;20,10,24;14,24,10"}
	for _, a := range numastatFiles(t, lstopo) {
		opts = append(opts, "--add", a)
	}
	r := runVM(t, opts, hwlocScript)

	var topo hmatTopo
	if err := json.Unmarshal([]byte(r.section(t, "topo")), &topo); err != nil {
		t.Fatalf("numascope topology --format json: %v", err)
	}
	hw := parseHwlocVM(t, r.section(t, "hwloc"))
	states := map[string][]int{}
	for _, l := range strings.Split(r.section(t, "states"), "\n") {
		if name, list, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			states[name] = kernelList(t, list)
		}
	}
	t.Logf("kernel node states %v; hwloc nodes %v", states, hw.nodes)

	// Nodes, CPU-less or not, and memory.
	var ids []int
	for _, n := range topo.Nodes {
		ids = append(ids, n.ID)
	}
	if !slices.Equal(ids, states["online"]) || len(ids) != len(hw.nodes) {
		t.Fatalf("numascope's nodes %v, the kernel's online nodes %v, hwloc's %d nodes", ids, states["online"], len(hw.nodes))
	}
	cpuless := 0
	for _, n := range topo.Nodes {
		h, ok := hw.nodes[n.ID]
		if !ok {
			t.Errorf("node %d: not in hwloc's XML", n.ID)
			continue
		}
		if want := !slices.Contains(states["has_cpu"], n.ID); n.CPULess != want {
			t.Errorf("node %d: cpuless = %v, but the kernel's has_cpu is %v", n.ID, n.CPULess, states["has_cpu"])
		}
		if h.mem != n.MemoryTotal {
			t.Errorf("node %d: memory_total_bytes %d, hwloc's local_memory %d", n.ID, n.MemoryTotal, h.mem)
		}
		for id, d := range n.Distances {
			j, _ := strconv.Atoi(id)
			if hd, ok := hw.dist[[2]int{n.ID, j}]; !ok || hd != d {
				t.Errorf("distance %d->%d: numascope %d, hwloc %d (present %v)", n.ID, j, d, hd, ok)
			}
		}
		if len(n.Distances) != len(hw.nodes) {
			t.Errorf("node %d: %d distances, hwloc has %d nodes", n.ID, len(n.Distances), len(hw.nodes))
		}
		// CPUs: hwloc hangs a node under the CPUs it serves first. For
		// a node with CPUs those are its own; for a CPU-less one, its
		// initiators' (the kernel's access1, CPU initiators, links).
		want := n.CPUs
		if n.CPULess {
			cpuless++
			want = nil
			for _, in := range topo.initiators(n.ID, 1) {
				want = append(want, topo.node(in).CPUs...)
			}
			slices.Sort(want)
		}
		if len(want) == 0 || !slices.Equal(h.cpus, want) {
			t.Errorf("node %d (cpuless %v): hwloc attaches it to CPUs %v, numascope's CPUs (of its initiators when CPU-less) are %v",
				n.ID, n.CPULess, h.cpus, want)
		}
		// The memory-side cache in front of the node.
		if len(n.Caches) != len(h.caches) {
			t.Errorf("node %d: numascope reports %d memory-side caches, hwloc %d", n.ID, len(n.Caches), len(h.caches))
		}
		for _, c := range n.Caches {
			hc, ok := h.caches[int(*c["index"])]
			switch {
			case !ok:
				t.Errorf("node %d: cache index %d not in hwloc's XML (it has %v)", n.ID, *c["index"], h.caches)
			case hc.size != *c["size_bytes"] || hc.line != *c["line_size"]:
				t.Errorf("node %d cache %d: numascope size %d line %d, hwloc %d and %d", n.ID, *c["index"], *c["size_bytes"], *c["line_size"], hc.size, hc.line)
			case (*c["indexing"] == 0) != (hc.assoc == 1):
				// The kernel's indexing 0 is direct-mapped, which
				// hwloc writes as an associativity of 1.
				t.Errorf("node %d cache %d: numascope indexing %d, hwloc associativity %d", n.ID, *c["index"], *c["indexing"], hc.assoc)
			}
		}
	}
	if cpuless != 1 {
		t.Errorf("%d CPU-less nodes, the VM has 1", cpuless)
	}

	// Rated performance: hwloc's memory attributes, each a target node
	// and an initiator cpuset, against numascope's access class 1 (CPU
	// initiators; hwloc reads that class) values for that pair. Every
	// value either reports must be the other's.
	hwKey := map[string]uint64{}
	for k, v := range hw.attrs {
		in := hw.nodeOfCPUs(k.initiator, states["has_cpu"])
		if in < 0 {
			t.Errorf("hwloc's %s of node %d: initiator cpuset %v is no node's CPUs", k.name, k.target, k.initiator)
			continue
		}
		hwKey[fmt.Sprintf("%s %d->%d", k.name, in, k.target)] = v
	}
	ours := map[string]uint64{}
	for _, n := range topo.Nodes {
		for _, a := range n.Access {
			if a.Class != 1 {
				continue
			}
			for _, in := range a.Initiators {
				for name, v := range map[string]*uint64{"ReadLatency": a.ReadLat, "WriteLatency": a.WriteLat, "ReadBandwidth": a.ReadBW, "WriteBandwidth": a.WriteBW} {
					if v != nil {
						ours[fmt.Sprintf("%s %d->%d", name, in, n.ID)] = *v
					}
				}
			}
		}
	}
	if len(hwKey) == 0 {
		t.Fatal("hwloc reports no rated latency or bandwidth: the HMAT did not reach it")
	}
	agreeBothWays(t, "hwloc", hwKey, ours)
	t.Logf("hwloc's %d rated values: %v", len(hwKey), hwKey)
}

// hmatTopo is the part of `numascope topology --format json` that
// TestTopologyMatchesHwlocVM and TestHMAT compare.
type hmatTopo struct {
	Nodes []struct {
		ID          int            `json:"id"`
		CPUs        []int          `json:"cpus"`
		MemoryTotal uint64         `json:"memory_total_bytes"`
		Distances   map[string]int `json:"distances"`
		CPULess     bool           `json:"cpuless"`
		Access      []struct {
			Class      int     `json:"class"`
			Initiators []int   `json:"initiators"`
			ReadLat    *uint64 `json:"read_latency_ns"`
			WriteLat   *uint64 `json:"write_latency_ns"`
			ReadBW     *uint64 `json:"read_bandwidth_mibs"`
			WriteBW    *uint64 `json:"write_bandwidth_mibs"`
		} `json:"access"`
		Caches []map[string]*uint64 `json:"memory_side_caches"`
	} `json:"nodes"`
}

func (t *hmatTopo) node(id int) (n struct{ CPUs []int }) {
	for _, x := range t.Nodes {
		if x.ID == id {
			n.CPUs = x.CPUs
		}
	}
	return n
}

func (t *hmatTopo) initiators(id, class int) []int {
	for _, x := range t.Nodes {
		if x.ID != id {
			continue
		}
		for _, a := range x.Access {
			if a.Class == class {
				return a.Initiators
			}
		}
	}
	return nil
}

// hwlocVM is what the test reads from lstopo's XML export.
type hwlocVM struct {
	nodes map[int]*hwlocVMNode // by OS index
	dist  map[[2]int]int       // NUMALatency, by OS indexes
	attrs map[hwlocAttrKey]uint64
}

type hwlocVMNode struct {
	mem    uint64
	cpus   []int // the node object's cpuset
	caches map[int]hwlocVMCache
}

func (n *hwlocVMNode) String() string {
	return fmt.Sprintf("{mem %d cpus %v caches %v}", n.mem, n.cpus, n.caches)
}

type hwlocVMCache struct{ size, line, assoc uint64 }

type hwlocAttrKey struct {
	name      string
	target    int
	initiator string // the cpuset, as formatted by cpusetString
}

// nodeOfCPUs returns the node among withCPUs (the kernel's has_cpu) whose
// hwloc cpuset is the given one, or -1. A CPU-less node has its
// initiator's cpuset in hwloc, hence the kernel's word on which have CPUs.
func (h *hwlocVM) nodeOfCPUs(cpus string, withCPUs []int) int {
	for _, id := range withCPUs {
		if n, ok := h.nodes[id]; ok && fmt.Sprint(n.cpus) == cpus {
			return id
		}
	}
	return -1
}

// hwlocObj is an <object> of hwloc's XML (hwloc2.dtd), as far as read here.
type hwlocObj struct {
	Type      string     `xml:"type,attr"`
	OSIndex   string     `xml:"os_index,attr"`
	GPIndex   string     `xml:"gp_index,attr"`
	Cpuset    string     `xml:"cpuset,attr"`
	LocalMem  uint64     `xml:"local_memory,attr"`
	CacheSize uint64     `xml:"cache_size,attr"`
	CacheLine uint64     `xml:"cache_linesize,attr"`
	CacheAsso uint64     `xml:"cache_associativity,attr"`
	Depth     int        `xml:"depth,attr"`
	Children  []hwlocObj `xml:"object"`
}

func parseHwlocVM(t *testing.T, text string) *hwlocVM {
	t.Helper()
	var doc struct {
		Root  hwlocObj `xml:"object"`
		Dists []struct {
			Type    string `xml:"type,attr"`
			Name    string `xml:"name,attr"`
			Indexes string `xml:"indexes"`
			Values  string `xml:"u64values"`
		} `xml:"distances2"`
		Attrs []struct {
			Name   string `xml:"name,attr"`
			Values []struct {
				Target    string `xml:"target_obj_gp_index,attr"`
				Value     uint64 `xml:"value,attr"`
				Initiator string `xml:"initiator_cpuset,attr"`
			} `xml:"memattr_value"`
		} `xml:"memattr"`
	}
	if err := xml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("lstopo's XML: %v\n%s", err, tail(text, 2000))
	}
	h := &hwlocVM{nodes: map[int]*hwlocVMNode{}, dist: map[[2]int]int{}, attrs: map[hwlocAttrKey]uint64{}}
	byGP := map[string]int{}
	var walk func(o hwlocObj, cache *hwlocObj)
	walk = func(o hwlocObj, cache *hwlocObj) {
		switch o.Type {
		case "NUMANode":
			id := atoiOrFail(t, o.OSIndex)
			n := &hwlocVMNode{mem: o.LocalMem, cpus: cpusetCPUs(t, o.Cpuset), caches: map[int]hwlocVMCache{}}
			if cache != nil {
				n.caches[cache.Depth] = hwlocVMCache{cache.CacheSize, cache.CacheLine, cache.CacheAsso}
			}
			h.nodes[id] = n
			byGP[o.GPIndex] = id
		case "MemCache":
			cache = &o
		}
		for _, c := range o.Children {
			walk(c, cache)
		}
	}
	walk(doc.Root, nil)
	for _, d := range doc.Dists {
		if d.Type != "NUMANode" || d.Name != "NUMALatency" {
			continue
		}
		idx, vals := strings.Fields(d.Indexes), strings.Fields(d.Values)
		if len(vals) != len(idx)*len(idx) {
			t.Fatalf("hwloc's distances: %d values for %d nodes", len(vals), len(idx))
		}
		for i, a := range idx {
			for j, b := range idx {
				h.dist[[2]int{atoiOrFail(t, a), atoiOrFail(t, b)}] = atoiOrFail(t, vals[i*len(idx)+j])
			}
		}
	}
	for _, a := range doc.Attrs {
		switch a.Name {
		case "ReadLatency", "WriteLatency", "ReadBandwidth", "WriteBandwidth":
		default:
			continue
		}
		for _, v := range a.Values {
			target, ok := byGP[v.Target]
			if !ok {
				t.Fatalf("hwloc's %s names object %s, which is no NUMA node", a.Name, v.Target)
			}
			h.attrs[hwlocAttrKey{a.Name, target, fmt.Sprint(cpusetCPUs(t, v.Initiator))}] = v.Value
		}
	}
	if len(h.nodes) == 0 || len(h.dist) == 0 {
		t.Fatalf("lstopo's XML has %d NUMA nodes and %d distances:\n%s", len(h.nodes), len(h.dist), tail(text, 2000))
	}
	return h
}

// cpusetCPUs reads an hwloc bitmap ("0x00000003", 32-bit words from the
// most significant, separated by commas) into the CPUs it holds.
func cpusetCPUs(t *testing.T, s string) []int {
	t.Helper()
	hex := strings.ReplaceAll(strings.TrimPrefix(s, "0x"), ",0x", "")
	hex = strings.ReplaceAll(hex, ",", "")
	b, ok := new(big.Int).SetString(hex, 16)
	if !ok {
		t.Fatalf("hwloc cpuset %q", s)
	}
	var cpus []int
	for i := 0; i < b.BitLen(); i++ {
		if b.Bit(i) == 1 {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// kernelList reads the kernel's list format ("0-1,3"), written here apart
// from numascope's parser.
func kernelList(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a := atoiOrFail(t, lo)
		b := a
		if isRange {
			b = atoiOrFail(t, hi)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}

func atoiOrFail(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
