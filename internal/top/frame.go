// Package top is the model and the collector of `numascope top`: which
// processes (and cgroups) pay for remote memory, refreshed each interval.
//
// A Collector turns the kernel's per-process sources (internal/procnuma) and
// its NUMA event counts (internal/numatrace, where the kernel and the
// permissions allow) into Frames. The interfaces (the batch printer, the
// JSON encoder, the TUI in internal/top/tui and the processes page of
// `live`) only read Frames and Details; none of them reads /proc.
package top

import (
	"fmt"
	"strconv"
	"time"

	"github.com/numascope/numascope/internal/procnuma"
)

// Frame is one refresh: every process, every node, and where the numbers
// came from. Rates are per second over the interval that ended at Time,
// except those of files read after the walk of /proc (the node files,
// /proc/vmstat, memory.stat), which are over the time between their own
// reads (counters).
type Frame struct {
	Time time.Time `json:"time"`
	// Interval is the time since the previous frame in seconds; 0 for the
	// first frame, whose rates are all 0.
	Interval float64 `json:"interval_seconds"`
	// Processes are sorted by Sort, best first. Kernel threads are in
	// (KernelThread marks them): the tables hide them unless asked.
	Processes []Process `json:"processes"`
	// Sort is the key the processes are really in: the one asked for
	// unless no process has that figure (ResolveSort), SortNote then
	// saying why.
	Sort     SortKey `json:"sort"`
	SortNote string  `json:"sort_note,omitempty"`
	// Cgroups are filled with --cgroup (Options.Cgroups), sorted like the
	// processes.
	Cgroups []Cgroup `json:"cgroups,omitempty"`
	Nodes   []Node   `json:"nodes"`
	// Migrations are the pages migrated per second, by the kernel's reason
	// (numa_misplaced, demotion, compaction, syscall_or_cpuset, ...), from
	// the migrate:mm_migrate_pages tracepoint; nil where it is not read
	// (Source says why).
	Migrations map[string]float64 `json:"migrations_by_reason"`
	// System are the machine's NUMA hinting faults per second from
	// /proc/vmstat (numa_hint_faults, numa_hint_faults_local), which any
	// user can read; nil on a kernel without NUMA balancing.
	System *Faults `json:"system_numa_faults"`
	// SystemPagesMigrated is /proc/vmstat's numa_pages_migrated per second.
	SystemPagesMigrated float64 `json:"system_pages_migrated"`
	Source              Source  `json:"source"`
}

// Faults are NUMA hinting faults per second, split by whether the memory
// was on the node of the CPU that took the fault (the kernel's
// TNF_FAULT_LOCAL).
type Faults struct {
	Local  float64 `json:"local"`
	Remote float64 `json:"remote"`
}

// Process is one row of the table.
type Process struct {
	PID     int    `json:"pid"`
	Comm    string `json:"comm"`
	User    string `json:"user"`
	Threads int    `json:"threads"`
	// KernelThread marks a kernel thread (PF_KTHREAD): no memory of its
	// own, never read in full, hidden by the tables by default.
	KernelThread bool    `json:"kernel_thread,omitempty"`
	CPUPercent   float64 `json:"cpu_percent"`
	RSSBytes     uint64  `json:"rss_bytes"`
	// MemoryByNode is the resident memory per node ("0", "1", ...) from
	// numa_maps. It is read only for the processes shown (Options.Detailed)
	// and at a lower rate (Options.MapsEvery); nil for the others.
	MemoryByNode map[string]uint64 `json:"memory_bytes_by_node"`
	// MemoryByCategory splits MemoryByNode as `numastat -p` does (Huge,
	// Heap, Stack, Private); nil with it.
	MemoryByCategory *MemoryCategories `json:"memory_bytes_by_category,omitempty"`
	// MemoryAge is how many seconds old MemoryByNode is.
	MemoryAge float64 `json:"memory_age_seconds,omitempty"`
	// MemoryError says why numa_maps could not be read for a detailed
	// process (it needs the right to ptrace the process).
	MemoryError string `json:"memory_error,omitempty"`
	// NodesRunning are the nodes of the CPUs the process's threads last ran
	// on (all threads for the processes shown, the main thread otherwise).
	NodesRunning []int `json:"nodes_running"`
	// PreferredNode is the NUMA balancer's preferred node of the main
	// thread, -1 when it has none (or NUMA balancing is off).
	PreferredNode int `json:"preferred_node"`
	// NUMAFaults are per second; nil when no source gives them (Source).
	NUMAFaults *Faults `json:"numa_faults"`
	// RecentRemoteShare is given where no source gives NUMAFaults, for the
	// detailed processes: the share of the NUMA balancer's recent hinting
	// faults that were on memory off the node each thread last ran on,
	// from the decayed per-node faults of /proc/PID/task/TID/sched. It
	// weighs recent faults over older ones and is no rate; nil otherwise.
	RecentRemoteShare *float64 `json:"recent_remote_share,omitempty"`
	// PagesMigrated is pages per second migrated by NUMA balancing on this
	// process's faults; nil when no source gives it.
	PagesMigrated *float64 `json:"pages_migrated"`
	// PMU holds numatop's LMA/RMA (local and remote DRAM accesses per
	// second, sampled) where the CPU has a preset; nil otherwise.
	PMU *Faults `json:"pmu_dram_accesses,omitempty"`
	// Cgroup is the process's cgroup v2 path ("" when unknown).
	Cgroup string `json:"cgroup,omitempty"`
}

// RemoteShare is the fraction of the NUMA faults that were remote, 0 when
// there were none or no source gives them.
func (p *Process) RemoteShare() float64 {
	if p.NUMAFaults == nil {
		return 0
	}
	t := p.NUMAFaults.Local + p.NUMAFaults.Remote
	if t == 0 {
		return 0
	}
	return p.NUMAFaults.Remote / t
}

// ShareText is the REM% cell of the tables: the remote share of the fault
// rates ("42%"), else of the balancer's recent faults ("~42%"), else "-".
func (p *Process) ShareText() string {
	switch {
	case p.NUMAFaults != nil && p.NUMAFaults.Local+p.NUMAFaults.Remote > 0:
		return fmt.Sprintf("%.0f%%", 100*p.RemoteShare())
	case p.NUMAFaults == nil && p.RecentRemoteShare != nil:
		return fmt.Sprintf("~%.0f%%", 100**p.RecentRemoteShare)
	}
	return "-"
}

// MemoryCategories is a process's resident memory per node ("0", "1",
// ...) in the categories of numactl's `numastat -p` (procnuma.Category):
// per node, the four sum to the process's memory on it. A map holds the
// nodes where its category has memory; an empty map is none.
type MemoryCategories struct {
	// Huge is hugetlb memory (MAP_HUGETLB, hugetlbfs), not transparent
	// huge pages, which count where their mapping does.
	Huge map[string]uint64 `json:"huge"`
	// Heap is the brk heap ([heap]); Stack the main thread's stack.
	Heap  map[string]uint64 `json:"heap"`
	Stack map[string]uint64 `json:"stack"`
	// Private is numastat's catch-all: every other mapping, anonymous or
	// file-backed (libraries, page cache, shared memory).
	Private map[string]uint64 `json:"private"`
}

// Category returns the map of category c.
func (m *MemoryCategories) Category(c procnuma.Category) map[string]uint64 {
	switch c {
	case procnuma.CategoryHuge:
		return m.Huge
	case procnuma.CategoryHeap:
		return m.Heap
	case procnuma.CategoryStack:
		return m.Stack
	}
	return m.Private
}

// memoryMaps turns numa_maps totals into the maps of a Process or a Detail:
// the nodes with memory, in all and by category.
func memoryMaps(t *procnuma.Totals) (map[string]uint64, *MemoryCategories) {
	mem := make(map[string]uint64, len(t.Bytes))
	cats := &MemoryCategories{Huge: map[string]uint64{}, Heap: map[string]uint64{}, Stack: map[string]uint64{}, Private: map[string]uint64{}}
	for n, b := range t.Bytes {
		if b == 0 {
			continue
		}
		key := strconv.Itoa(n)
		mem[key] = b
		for c := range procnuma.Categories {
			if v := t.ByCategory[c][n]; v > 0 {
				cats.Category(c)[key] = v
			}
		}
	}
	return mem, cats
}

// Cgroup is one row of the --cgroup table: the processes of one cgroup v2
// summed, and the cgroup's own memory figures.
type Cgroup struct {
	Path       string  `json:"path"`
	Processes  int     `json:"processes"`
	CPUPercent float64 `json:"cpu_percent"`
	// MemoryByNode is anon+file per node from memory.numa_stat; nil where
	// the cgroup has none (root cgroup, no memory controller).
	MemoryByNode map[string]uint64 `json:"memory_bytes_by_node"`
	NUMAFaults   *Faults           `json:"numa_faults"`
	// HintFaults, PagesMigrated are per second from memory.stat's
	// numa_hint_faults and numa_pages_migrated (the kernel's own count for
	// the cgroup, children included); -1 where memory.stat lacks them.
	HintFaults    float64 `json:"numa_hint_faults"`
	PagesMigrated float64 `json:"pages_migrated"`
}

// Node is one row of the node view.
type Node struct {
	Node       int     `json:"node"`
	CPUs       []int   `json:"cpus"`
	MemTotal   uint64  `json:"memory_total_bytes"`
	MemFree    uint64  `json:"memory_free_bytes"`
	MemUsed    uint64  `json:"memory_used_bytes"`
	CPUPercent float64 `json:"cpu_percent"`
	NUMAFaults *Faults `json:"numa_faults"`
	// PagesMigrated is pages per second that NUMA balancing migrated off
	// this node; Promoted and Demoted are pages per second from the node's
	// vmstat (pgpromote_success; pgdemote_kswapd+direct+khugepaged).
	PagesMigrated float64 `json:"pages_migrated"`
	Promoted      float64 `json:"pages_promoted"`
	Demoted       float64 `json:"pages_demoted"`
	// NUMAHit, NUMAMiss are per second (the node's numastat).
	NUMAHit  float64 `json:"numa_hit"`
	NUMAMiss float64 `json:"numa_miss"`
}

// Source says which source gives each figure, and what is missing and why,
// so that a zero is never mistaken for "not measured".
type Source struct {
	// Faults names the source of the local/remote fault rates, such as
	// "kprobe:task_numa_fault"; "" when none works.
	Faults string `json:"faults"`
	// Migrations names the source of Frame.Migrations.
	Migrations string `json:"migrations"`
	// Memory describes how MemoryByNode is read ("numa_maps of the top 20,
	// every 5 s").
	Memory string `json:"memory"`
	// PMU names the preset of Process.PMU, "" when none.
	PMU string `json:"pmu"`
	// Missing has one line per figure not shown: what, and why.
	Missing []string `json:"missing"`
	// Lost counts kernel records dropped since the start (full rings); the
	// rates of the intervals that lost some are low by that much.
	Lost uint64 `json:"lost_records"`
}

// Detail is the drill-down of one process.
type Detail struct {
	PID     int      `json:"pid"`
	Comm    string   `json:"comm"`
	Threads []Thread `json:"threads"`
	// MemoryByNode is the process's resident memory per node, from the
	// same read of numa_maps as Areas; MemoryByCategory splits it as
	// `numastat -p PID` does. Both nil when numa_maps could not be read
	// (Errors says why).
	MemoryByNode     map[string]uint64 `json:"memory_bytes_by_node"`
	MemoryByCategory *MemoryCategories `json:"memory_bytes_by_category"`
	// Areas are the mappings with resident memory, the largest first.
	Areas []Area `json:"areas"`
	// Hint is one plain sentence about the placement, such as "78% of its
	// memory is on node 0 while its threads run on nodes 1-3"; "" when
	// nothing stands out.
	Hint string `json:"hint"`
	// Errors are the sources that could not be read for this process.
	Errors []string `json:"errors,omitempty"`
}

// Thread is one task of a drilled-down process.
type Thread struct {
	TID  int    `json:"tid"`
	Comm string `json:"comm"`
	// CPUPercent is over the time since the previous drill-down of the
	// process; nil (null) on the first, which has nothing to measure from.
	CPUPercent    *float64 `json:"cpu_percent"`
	CPU           int      `json:"cpu"`
	Node          int      `json:"node"`
	PreferredNode int      `json:"preferred_node"`
	NUMAFaults    *Faults  `json:"numa_faults"`
}

// Area is one mapping of numa_maps.
type Area struct {
	Start uint64 `json:"start"`
	// Kind is heap, stack, file, anon, huge or shm; Path the file behind a
	// file mapping.
	Kind        string            `json:"kind"`
	Path        string            `json:"path,omitempty"`
	Policy      string            `json:"policy"`
	BytesByNode map[string]uint64 `json:"bytes_by_node"`
}

// SortKey orders the process and cgroup tables.
type SortKey string

// The sort keys; SortRemote is the default: who pays for remote memory.
const (
	SortRemote   SortKey = "remote"
	SortLocal    SortKey = "local"
	SortCPU      SortKey = "cpu"
	SortMemory   SortKey = "memory"
	SortMigrated SortKey = "migrated"
	SortPID      SortKey = "pid"
)

// SortKeys lists the keys in the order the TUI cycles through them.
var SortKeys = []SortKey{SortRemote, SortLocal, SortCPU, SortMemory, SortMigrated, SortPID}

// Feed is what the interfaces (TUI, live page) read: the Collector, or a
// fake in tests. Refresh reads the kernel now and returns the next frame;
// the caller decides when (interval, pause).
type Feed interface {
	Refresh() (*Frame, error)
	// Detail reads one process in full: threads, numa_maps areas, hint.
	Detail(pid int) (*Detail, error)
	// SetSort changes the order of the next frames (and which processes
	// get their numa_maps read); SetFilter keeps only the processes whose
	// command contains the text or whose PID is it ("" keeps all).
	SetSort(SortKey)
	SetFilter(string)
}
