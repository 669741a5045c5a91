package tui

import (
	"cmp"
	"math"
	"slices"

	"github.com/numascope/numascope/internal/top"
)

// The TUI sorts a frame itself only until the feed's next frame, sorted by
// the feed, comes in: for the keys' effect to show at once, and while
// paused. Processes go by top's rule (top.ResolveSort, top.SortProcesses);
// cgroups largest first, path ascending on ties and for SortPID; an unknown
// figure (nil faults) sorts after every known one.

// unknown is the sort value of a figure no source gives.
var unknown = math.Inf(-1)

func faultValue(f *top.Faults, remote bool) float64 {
	switch {
	case f == nil:
		return unknown
	case remote:
		return f.Remote
	}
	return f.Local
}

// value is the figure that key k sorts by.
func value(k top.SortKey, f *top.Faults, cpu, memory, migrated float64) float64 {
	switch k {
	case top.SortRemote:
		return faultValue(f, true)
	case top.SortLocal:
		return faultValue(f, false)
	case top.SortCPU:
		return cpu
	case top.SortMemory:
		return memory
	case top.SortMigrated:
		return migrated
	}
	return 0
}

// sortProcesses orders the rows as the feed does: top's one rule.
func sortProcesses(ps []top.Process, k top.SortKey) { top.SortProcesses(ps, k) }

func cgroupValue(c *top.Cgroup, k top.SortKey) float64 {
	memory := unknown // no memory.numa_stat
	if c.MemoryByNode != nil {
		var sum uint64
		for _, b := range c.MemoryByNode {
			sum += b
		}
		memory = float64(sum)
	}
	return value(k, c.NUMAFaults, c.CPUPercent, memory, c.PagesMigrated)
}

func sortCgroups(cs []top.Cgroup, k top.SortKey) {
	slices.SortStableFunc(cs, func(a, b top.Cgroup) int {
		if c := cmp.Compare(cgroupValue(&b, k), cgroupValue(&a, k)); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
}
