// Package topology discovers the machine as a NUMA engineer sees it: nodes
// with their CPUs, memory and distances, CPU-less memory nodes, packages,
// cores, SMT siblings, caches, offline CPUs and the CPUs and nodes this
// process may use. It reads only sysfs and procfs through a sysfs.FS, so it
// runs unchanged on captured trees.
package topology

import "strconv"

// Topology is the discovered machine. Its JSON form is part of numascope's
// public interface (topology --format json, recording headers): keys are only
// ever added, never renamed.
type Topology struct {
	Nodes  []Node  `json:"nodes"`
	CPUs   []CPU   `json:"cpus"`
	Caches []Cache `json:"caches"`
	// Packages lists the physical packages (sockets) with their CPUs.
	Packages []Package `json:"packages"`
	// AllowedCPUs and AllowedNodes are the sets this process may use
	// (cpuset/cgroup); nil means the information was not found.
	AllowedCPUs  []int `json:"allowed_cpus"`
	AllowedNodes []int `json:"allowed_nodes"`
	// AllowedSource names where the allowed sets were found (the status
	// file or the cgroup cpuset directory), so a surprising restriction can be
	// traced; empty when they were not found.
	AllowedSource string `json:"allowed_source,omitempty"`
	// NUMA is false when the kernel exposes no node directory; then Nodes
	// holds one synthetic node 0 with every CPU and /proc/meminfo's memory.
	NUMA bool `json:"numa"`
	// Warnings lists the quirks and unreadable files met on the way, each a
	// self-contained sentence. Discovery goes on past them.
	Warnings []string `json:"warnings,omitempty"`
}

// Node is one NUMA node.
type Node struct {
	ID   int   `json:"id"`
	CPUs []int `json:"cpus"`
	// MemoryTotal and MemoryFree come from the node's meminfo (bytes).
	MemoryTotal uint64 `json:"memory_total_bytes"`
	MemoryFree  uint64 `json:"memory_free_bytes"`
	// Distances maps a node ID (as a string, for JSON) to the SLIT distance.
	Distances map[string]int `json:"distances"`
	// CPULess marks a memory-only node (CXL, HBM, GPU or persistent memory).
	CPULess bool `json:"cpuless"`
	// Allowed is false when the node is outside this process's cpuset/cgroup.
	Allowed bool `json:"allowed"`
}

// CPU is one logical CPU (hardware thread). Package, Die, Core and Node are
// Unknown (-1) when the kernel does not say: an offline CPU has no topology
// directory, old kernels have no die_id. Package IDs are the kernel's; where
// it reports none (ppc64, some ARM), packages are numbered by their sibling
// sets. Core IDs repeat across packages (and dies): Siblings identifies a core.
type CPU struct {
	ID      int  `json:"id"`
	Node    int  `json:"node"`
	Package int  `json:"package"`
	Die     int  `json:"die"`
	Core    int  `json:"core"`
	Online  bool `json:"online"`
	Allowed bool `json:"allowed"`
	// Siblings are the SMT threads sharing this CPU's core, itself included;
	// empty when unknown (offline CPU).
	Siblings []int `json:"siblings"`
}

// Cache is one cache instance and the CPUs that share it.
type Cache struct {
	Level int `json:"level"`
	// Type is "Data", "Instruction" or "Unified".
	Type          string `json:"type"`
	SizeBytes     uint64 `json:"size_bytes"`
	LineSize      int    `json:"line_size"`
	Associativity int    `json:"associativity"`
	CPUs          []int  `json:"cpus"`
}

// Package is one physical package (socket).
type Package struct {
	ID    int   `json:"id"`
	CPUs  []int `json:"cpus"`
	Nodes []int `json:"nodes"`
}

// Node returns the node with the given ID, or nil.
func (t *Topology) Node(id int) *Node {
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return &t.Nodes[i]
		}
	}
	return nil
}

// Distance returns the distance from node a to node b, or 0 when unknown.
func (t *Topology) Distance(a, b int) int {
	n := t.Node(a)
	if n == nil {
		return 0
	}
	return n.Distances[strconv.Itoa(b)]
}
