// Package topology discovers the machine as a NUMA engineer sees it: nodes
// with their CPUs, memory and distances, CPU-less memory nodes, packages,
// cores, SMT siblings, caches, offline CPUs and the CPUs and nodes this
// process may use. It reads only sysfs and procfs through a sysfs.FS, so it
// runs unchanged on captured trees.
package topology

import (
	"slices"
	"strconv"
)

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
	// MemoryTiers are the kernel's memory tiers (memory_tierN under
	// /sys/devices/virtual/memory_tiering), fastest (lowest N) first; nil
	// when the kernel reports none (kernels before 6.1, or without
	// CONFIG_NUMA), which is not the same as an empty list.
	MemoryTiers []MemoryTier `json:"memory_tiers"`
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
	// MemoryTier is the N of the kernel's memory_tierN holding this node
	// (a lower N is a faster tier); nil when no tier lists it, which is
	// what a machine without memory tiering, or a node without memory, shows.
	MemoryTier *int `json:"memory_tier"`
	// Access holds the performance the firmware (ACPI HMAT) rates this
	// node at as a memory target, one entry per access class the kernel
	// exposes (nodeN/access0, access1); empty when it exposes none, as on
	// most machines and in VMs.
	Access []Access `json:"access"`
	// MemorySideCaches are the caches the firmware says sit in front of
	// this node's memory (nodeN/memory_side_cache/indexM, e.g. DRAM caching
	// persistent memory); empty when none is reported.
	MemorySideCaches []MemorySideCache `json:"memory_side_caches"`
}

// MemoryTier is one of the kernel's memory tiers: nodes of similar
// performance that the kernel demotes and promotes pages between.
type MemoryTier struct {
	// ID is the N of memory_tierN: derived from the tier's abstract
	// distance, so only the order means something (lower is faster).
	ID    int   `json:"id"`
	Nodes []int `json:"nodes"`
}

// Access is one access class of a memory target as the kernel exposes it
// under nodeY/accessN/initiators: the rated (not measured) performance of
// the target when accessed from the initiator nodes linked there. Class 0
// is the best initiators of any kind (CPUs, or generic initiators such as
// accelerators), class 1 the best initiators that have CPUs. A nil value
// was not reported: the file is absent, or the kernel wrote 0, which it
// does for a value the firmware left out.
type Access struct {
	Class int `json:"class"`
	// Initiators are the nodes the values hold for (the nodeX links).
	Initiators         []int   `json:"initiators"`
	ReadLatencyNS      *uint64 `json:"read_latency_ns"`
	WriteLatencyNS     *uint64 `json:"write_latency_ns"`
	ReadBandwidthMiBs  *uint64 `json:"read_bandwidth_mibs"`
	WriteBandwidthMiBs *uint64 `json:"write_bandwidth_mibs"`
}

// MemorySideCache is one level of memory-side cache in front of a node's
// memory. Index is the kernel's level: unlike CPU caches, a higher index
// is nearer the CPU. Nil fields were not reported.
type MemorySideCache struct {
	Index     int     `json:"index"`
	SizeBytes *uint64 `json:"size_bytes"`
	LineSize  *uint64 `json:"line_size"`
	// Indexing is 0 for direct-mapped, non-zero for an indexed
	// (associative) cache.
	Indexing *uint64 `json:"indexing"`
	// WritePolicy is 0 for write-back, 1 for write-through, other values
	// for other or unknown policies.
	WritePolicy *uint64 `json:"write_policy"`
}

// AccessFrom returns the access class of node target whose initiators
// include node initiator, preferring class 0, or nil.
func (n *Node) AccessFrom(initiator int) *Access {
	for i := range n.Access {
		if slices.Contains(n.Access[i].Initiators, initiator) {
			return &n.Access[i]
		}
	}
	return nil
}

// CPU is one logical CPU (hardware thread). Package, Die, Core and Node are
// Unknown (-1) when the kernel does not say: an offline CPU has no topology
// directory, old kernels have no die_id. Package IDs are the kernel's; where
// it reports none (ppc64, some ARM), or one for CPUs its package sibling sets
// separate (ia64), packages are numbered by their sibling sets. Core IDs
// repeat across packages (and dies): Siblings identifies a core.
type CPU struct {
	ID      int  `json:"id"`
	Node    int  `json:"node"`
	Package int  `json:"package"`
	Die     int  `json:"die"`
	Core    int  `json:"core"`
	Online  bool `json:"online"`
	Allowed bool `json:"allowed"`
	// Siblings are the SMT threads sharing this CPU's core, itself included:
	// the kernel's thread_siblings on the same package, die and core_id
	// (AMD family 15h lists a compute unit's two cores there too); empty
	// when unknown (offline CPU).
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
