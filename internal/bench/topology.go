package bench

import (
	"slices"
	"strconv"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// Nodes is the part of the machine's topology a reader of the matrices
// needs to explain them (bench --format json's "topology"): each node's
// CPUs, memory, memory tier and NUMA distances, as `numascope topology`
// reads them from sysfs. Its node keys are topology --format json's, so
// one reader serves both; keys are only ever added.
type Nodes struct {
	Nodes []NodeSummary `json:"nodes"`
	// Distances is the SLIT distance matrix, rows and columns in the
	// order of Nodes; null where sysfs gives none.
	Distances [][]*int `json:"distances"`
	// MemoryTiers are the kernel's memory tiers, fastest first; null
	// when the kernel reports none (before Linux 6.1).
	MemoryTiers []topology.MemoryTier `json:"memory_tiers"`
}

// NodeSummary is one node of Nodes.
type NodeSummary struct {
	ID   int   `json:"id"`
	CPUs []int `json:"cpus"`
	// CPUList is CPUs in the kernel's list syntax ("0-3,8"; "" for none).
	CPUList     string `json:"cpu_list"`
	CPULess     bool   `json:"cpuless"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
	// MemoryTier is the N of the kernel's memory_tierN holding the node
	// (lower is faster); null in none.
	MemoryTier *int `json:"memory_tier"`
	// Distances maps a node id to the SLIT distance, as topology's.
	Distances map[string]int `json:"distances"`
}

// summarize takes Nodes out of the topology the run measured.
func summarize(topo *topology.Topology) *Nodes {
	out := &Nodes{Nodes: []NodeSummary{}, Distances: [][]*int{}, MemoryTiers: topo.MemoryTiers}
	for _, n := range topo.Nodes {
		cpus := slices.Clone(n.CPUs)
		if cpus == nil {
			cpus = []int{}
		}
		d := map[string]int{}
		for k, v := range n.Distances {
			d[k] = v
		}
		out.Nodes = append(out.Nodes, NodeSummary{ID: n.ID, CPUs: cpus, CPUList: sysfs.FormatCPUList(cpus), CPULess: n.CPULess,
			MemoryTotal: n.MemoryTotal, MemoryTier: n.MemoryTier, Distances: d})
	}
	for _, a := range out.Nodes {
		row := make([]*int, len(out.Nodes))
		for c, b := range out.Nodes {
			if v, ok := a.Distances[strconv.Itoa(b.ID)]; ok {
				row[c] = &v
			}
		}
		out.Distances = append(out.Distances, row)
	}
	return out
}
