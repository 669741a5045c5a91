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

// SortValue is p's figure under key and whether p has it: the fault
// rates and the pages migrated are not measured everywhere (nil), and an
// unmeasured figure is no 0. Memory is numa_maps' sum where it was read,
// RSS otherwise.
func SortValue(p *Process, key SortKey) (float64, bool) {
	switch key {
	case SortRemote, SortLocal:
		if p.NUMAFaults == nil {
			return 0, false
		}
		if key == SortRemote {
			return p.NUMAFaults.Remote, true
		}
		return p.NUMAFaults.Local, true
	case SortMigrated:
		if p.PagesMigrated == nil {
			return 0, false
		}
		return *p.PagesMigrated, true
	case SortCPU:
		return p.CPUPercent, true
	case SortMemory:
		return float64(memoryOf(p)), true
	}
	return float64(p.PID), true
}

// sortFigure names a key's figure in the note that says it was not used.
var sortFigure = map[SortKey]string{
	SortRemote: "remote faults", SortLocal: "local faults", SortMigrated: "pages migrated",
}

// ResolveSort is the one rule of the default order, shared by the TUI,
// top -b and the processes page of live: the key asked for where at least
// one process has a figure for it; else CPU%, whose ties (all of them on
// the first frame, which has no interval to measure over) go by memory. A
// table sorted on a column of "-" put kernel threads first by PID and the
// busy processes last (issue 31). note says, in one line, why the key used
// is not the one asked for ("" when it is).
func ResolveSort(ps []Process, asked SortKey) (used SortKey, note string) {
	switch asked {
	case SortMemory, SortPID, SortCPU:
		return asked, ""
	}
	for i := range ps {
		if _, ok := SortValue(&ps[i], asked); ok {
			return asked, ""
		}
	}
	why := "the fault rates need a kernel event source; the missing sources say why there is none"
	if asked == SortMigrated {
		why = "no event source counts them, and /proc gives them only for the processes read in full"
	}
	return SortCPU, "no process has " + sortFigure[asked] + " measured here (" + why + "): sorted by cpu"
}

// CompareProcesses orders a before b (< 0) under key: the larger figure
// first (asc: the smaller), a process without the figure after every one
// with it either way; ties by CPU%, then memory (largest first), then PID,
// so the order holds from frame to frame.
func CompareProcesses(a, b *Process, key SortKey, asc bool) int {
	va, oka := SortValue(a, key)
	vb, okb := SortValue(b, key)
	if oka != okb {
		if oka {
			return -1
		}
		return 1
	}
	c := cmp.Compare(vb, va)
	if asc {
		c = -c
	}
	if c == 0 {
		c = cmp.Compare(b.CPUPercent, a.CPUPercent)
	}
	if c == 0 {
		c = cmp.Compare(memoryOf(b), memoryOf(a))
	}
	if c == 0 {
		c = cmp.Compare(a.PID, b.PID)
	}
	return c
}

// sortRow is what CompareProcesses reads of one process, taken once: a
// sort then compares 40 bytes it holds, rather than looking up the key's
// figure and summing the memory map in every comparison, and moves those,
// not the Processes (of about 200 bytes each). compareRows orders rows as
// CompareProcesses orders their processes, which stays the readable
// definition (TestSortProcessesIsCompareProcesses holds the two equal).
type sortRow struct {
	v, cpu float64
	mem    uint64
	pid    int
	has    bool
	i      int32 // the process's place before the sort (pid_max is at most 2^22); -1 once moved
}

func sortRowOf(p *Process, key SortKey, i int) sortRow {
	v, ok := SortValue(p, key)
	return sortRow{v: v, has: ok, cpu: p.CPUPercent, mem: memoryOf(p), pid: p.PID, i: int32(i)}
}

func compareRows(a, b *sortRow, asc bool) int {
	if a.has != b.has {
		if a.has {
			return -1
		}
		return 1
	}
	c := cmp.Compare(b.v, a.v)
	if asc {
		c = -c
	}
	if c == 0 {
		c = cmp.Compare(b.cpu, a.cpu)
	}
	if c == 0 {
		c = cmp.Compare(b.mem, a.mem)
	}
	if c == 0 {
		c = cmp.Compare(a.pid, b.pid)
	}
	return c
}

// SortProcesses orders ps by key as the tables show it: largest first,
// PID smallest first. The order is CompareProcesses', a total one where
// PIDs differ (as in one reading of /proc), so an unstable sort gives the
// stable one's result; at 1 000 processes this takes a fifth of the time
// a stable sort of the Processes took (BenchmarkSortProcesses), once or
// twice a refresh.
func SortProcesses(ps []Process, key SortKey) {
	rows := make([]sortRow, len(ps))
	for i := range ps {
		rows[i] = sortRowOf(&ps[i], key, i)
	}
	asc := key == SortPID
	slices.SortFunc(rows, func(a, b sortRow) int { return compareRows(&a, &b, asc) })
	// Place j takes the process that was at rows[j].i: follow each cycle
	// of the permutation, holding one Process aside.
	for j := range rows {
		if rows[j].i < 0 {
			continue
		}
		held, k := ps[j], j
		for {
			from := int(rows[k].i)
			rows[k].i = -1
			if from == j {
				ps[k] = held
				break
			}
			ps[k] = ps[from]
			k = from
		}
	}
}

// WithoutKernelThreads is ps less its kernel threads, and how many those
// were: the tables hide them by default (they hold no memory of their own
// to place, and 50 of them at 0% hid the busy processes). ps itself when
// it holds none.
func WithoutKernelThreads(ps []Process) ([]Process, int) {
	n := 0
	for i := range ps {
		if ps[i].KernelThread {
			n++
		}
	}
	if n == 0 {
		return ps, 0
	}
	out := make([]Process, 0, len(ps)-n)
	for i := range ps {
		if !ps[i].KernelThread {
			out = append(out, ps[i])
		}
	}
	return out, n
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
