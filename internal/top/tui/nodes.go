package tui

// The per-node and per-cgroup views.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// nodeLines is the node view: a row per node, then the page migrations by
// reason.
func (m *model) nodeLines() []string {
	f := m.frame
	cols := []column{{"NODE", 4, false, false}, {"USED", 6, false, false}, {"FREE", 6, false, false},
		{"CPU%", 5, false, false}, {"LOCAL/s", 7, false, false}, {"REMOTE/s", 8, false, false}, {"REM%", 5, false, false},
		{"MIGR/s", 6, false, false}, {"PROMO/s", 7, false, false}, {"DEMO/s", 6, false, false},
		{"HIT/s", 6, false, false}, {"MISS/s", 6, false, false}, {"CPUS", 0, true, false}}
	lines := []string{m.styled(sgrBold, row(cols, headings(cols)))}
	for _, n := range f.Nodes {
		local, remote, share := faults(f, n.NUMAFaults)
		lines = append(lines, m.clip(row(cols, []string{
			strconv.Itoa(n.Node), bytes(n.MemUsed), bytes(n.MemFree), percent(f, n.CPUPercent),
			local, remote, share, rate(f, n.PagesMigrated), rate(f, n.Promoted), rate(f, n.Demoted),
			rate(f, n.NUMAHit), rate(f, n.NUMAMiss), nodeList(n.CPUs)})))
	}
	if len(f.Nodes) == 0 {
		lines = append(lines, "no nodes in this frame")
	}
	lines = append(lines, "")
	if f.Migrations == nil {
		return append(lines, m.clip("page migrations by reason: not read (see missing above)"))
	}
	lines = append(lines, m.styled(sgrBold, "page migrations by reason, pages/s ("+orNone(f.Source.Migrations)+")"))
	reasons := slices.Sorted(maps.Keys(f.Migrations))
	slices.SortStableFunc(reasons, func(a, b string) int {
		x, y := f.Migrations[a], f.Migrations[b]
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	if len(reasons) == 0 {
		lines = append(lines, "  none")
	}
	for _, r := range reasons {
		lines = append(lines, m.clip(fmt.Sprintf("  %-24s %7s", clean(r), rate(f, f.Migrations[r]))))
	}
	return lines
}

// cgroupLines is the cgroup table.
func (m *model) cgroupLines(rows int) []string {
	f := m.frame
	if len(m.cgroups) == 0 {
		if len(f.Cgroups) == 0 {
			return m.wrap("no cgroups: top reads them only when started with --cgroup (memory.numa_stat and CPU time of each cgroup, v2 or v1). Quit (q) and run: numascope top --cgroup", "")
		}
		return []string{fmt.Sprintf("no cgroup matches %q (/ changes the filter)", clean(m.filter))}
	}
	cols := []column{{"PROCS", 5, false, false}, {"CPU%", 5, false, false}}
	tail := []column{{"LOCAL/s", 7, false, false}, {"REMOTE/s", 8, false, false}, {"REM%", 5, false, false},
		{"HINT/s", 6, false, false}, {"MIGR/s", 6, false, false}}
	mem := m.memLayout(rowWidth(cols) + rowWidth(tail) + 20)
	cols = append(append(cols, mem.columns()...), tail...)
	cols = append(cols, m.nameColumns("CGROUP", rowWidth(cols), longest(len(m.cgroups), func(i int) string { return m.cgroups[i].Path }), mem)...)
	return m.table(cols, len(m.cgroups), rows, true, func(i int) []string {
		g := &m.cgroups[i]
		c := []string{strconv.Itoa(g.Processes), percent(f, g.CPUPercent)}
		c = append(c, mem.cells(g.MemoryByNode)...)
		local, remote, share := faults(f, g.NUMAFaults)
		c = append(c, local, remote, share, orUnread(f, g.HintFaults), orUnread(f, g.PagesMigrated), orDash(clean(g.Path)))
		if !mem.perNode {
			c = append(c, compact(g.MemoryByNode))
		}
		return c
	})
}
