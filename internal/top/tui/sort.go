package tui

import (
	"cmp"
	"math"
	"slices"

	"github.com/numascope/numascope/internal/top"
)

// The TUI sorts a frame itself only until the feed's next frame, sorted by
// the feed, comes in: for the keys' effect to show at once, and while
// paused. Largest first, PID (path) ascending on ties and for SortPID; an
// unknown figure (nil faults) sorts after every known one.

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

func processValue(p *top.Process, k top.SortKey) float64 {
	switch k {
	case top.SortRemote:
		return faultValue(p.NUMAFaults, true)
	case top.SortLocal:
		return faultValue(p.NUMAFaults, false)
	case top.SortCPU:
		return p.CPUPercent
	case top.SortMemory:
		return float64(p.RSSBytes)
	case top.SortMigrated:
		return p.PagesMigrated
	}
	return 0
}

func sortProcesses(ps []top.Process, k top.SortKey) {
	slices.SortStableFunc(ps, func(a, b top.Process) int {
		if c := cmp.Compare(processValue(&b, k), processValue(&a, k)); c != 0 {
			return c
		}
		return cmp.Compare(a.PID, b.PID)
	})
}

func cgroupValue(c *top.Cgroup, k top.SortKey) float64 {
	switch k {
	case top.SortRemote:
		return faultValue(c.NUMAFaults, true)
	case top.SortLocal:
		return faultValue(c.NUMAFaults, false)
	case top.SortCPU:
		return c.CPUPercent
	case top.SortMemory:
		if c.MemoryByNode == nil {
			return unknown
		}
		var sum uint64
		for _, b := range c.MemoryByNode {
			sum += b
		}
		return float64(sum)
	case top.SortMigrated:
		return c.PagesMigrated
	}
	return 0
}

func sortCgroups(cs []top.Cgroup, k top.SortKey) {
	slices.SortStableFunc(cs, func(a, b top.Cgroup) int {
		if c := cmp.Compare(cgroupValue(&b, k), cgroupValue(&a, k)); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
}
