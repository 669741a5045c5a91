package top

import (
	"cmp"
	"slices"
)

// memoryOf is a process's resident memory: numa_maps' sum where it was
// read, RSS otherwise.
func memoryOf(p *Process) uint64 {
	if p.MemoryByNode == nil {
		return p.RSSBytes
	}
	var n uint64
	for _, b := range p.MemoryByNode {
		n += b
	}
	return n
}

func faultsOf(f *Faults, remote bool) float64 {
	switch {
	case f == nil:
		return -1
	case remote:
		return f.Remote
	}
	return f.Local
}

func migratedOf(p *Process) float64 {
	if p.PagesMigrated == nil {
		return -1
	}
	return *p.PagesMigrated
}

// sortProcesses orders ps by key, the largest first (PID: smallest
// first), ties by CPU% and then PID so the order is stable from frame to
// frame. Without fault rates the remote and local keys order by CPU%.
func sortProcesses(ps []Process, key SortKey) {
	slices.SortStableFunc(ps, func(a, b Process) int {
		var c int
		switch key {
		case SortRemote:
			c = cmp.Compare(faultsOf(b.NUMAFaults, true), faultsOf(a.NUMAFaults, true))
		case SortLocal:
			c = cmp.Compare(faultsOf(b.NUMAFaults, false), faultsOf(a.NUMAFaults, false))
		case SortMemory:
			c = cmp.Compare(memoryOf(&b), memoryOf(&a))
		case SortMigrated:
			c = cmp.Compare(migratedOf(&b), migratedOf(&a))
		case SortPID:
			return cmp.Compare(a.PID, b.PID)
		}
		if c == 0 {
			c = cmp.Compare(b.CPUPercent, a.CPUPercent)
		}
		if c == 0 {
			c = cmp.Compare(a.PID, b.PID)
		}
		return c
	})
}

// sortCgroups orders the cgroups like the processes.
func sortCgroups(gs []Cgroup, key SortKey) {
	slices.SortStableFunc(gs, func(a, b Cgroup) int {
		var c int
		switch key {
		case SortRemote:
			c = cmp.Compare(faultsOf(b.NUMAFaults, true), faultsOf(a.NUMAFaults, true))
		case SortLocal:
			c = cmp.Compare(faultsOf(b.NUMAFaults, false), faultsOf(a.NUMAFaults, false))
		case SortMemory:
			c = cmp.Compare(sumBytes(b.MemoryByNode), sumBytes(a.MemoryByNode))
		case SortMigrated:
			c = cmp.Compare(b.PagesMigrated, a.PagesMigrated)
		case SortPID:
			return cmp.Compare(a.Path, b.Path)
		}
		if c == 0 {
			c = cmp.Compare(b.CPUPercent, a.CPUPercent)
		}
		if c == 0 {
			c = cmp.Compare(a.Path, b.Path)
		}
		return c
	})
}

func sumBytes(m map[string]uint64) uint64 {
	var n uint64
	for _, b := range m {
		n += b
	}
	return n
}
