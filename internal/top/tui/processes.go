package tui

// The process table, the main view: which columns fit, and its rows.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/top"
)

// pcol is a column of the process table: its cell, and its rank when the
// terminal is too narrow for all of them (0 first kept).
type pcol struct {
	column
	rank int
	cell func(p *top.Process) string
}

// Ranks of the process table's columns: what is kept on a narrow
// terminal. At 80 columns the command, CPU%, the remote faults and share,
// the memory of every node (up to 4) and the user stay; RSS, local
// faults, pages migrated, RUN and PREF go in that order as the width asks
// (? lists what is left out). A rate column that no process has a figure
// for ranks last: it would show only "-".
const (
	rankKey = iota
	rankCPU
	rankRemote
	rankShare
	rankMemory
	rankUser
	rankRSS
	rankLocal
	rankMigrated
	rankRun
	rankPref
	rankPMU
	rankUnmeasured
)

// processColumns lays out the process table at the terminal's width: the
// columns that fit by rank, in their order, and the titles left out.
func (m *model) processColumns() ([]pcol, memLayout, []string) {
	f := m.frame
	measured := func(k top.SortKey, r int) int {
		for i := range m.procs {
			if _, ok := top.SortValue(&m.procs[i], k); ok {
				return r
			}
		}
		return rankUnmeasured
	}
	comm := 15
	if m.width < 100 {
		comm = 12
	}
	faultCell := func(local bool) func(p *top.Process) string {
		return func(p *top.Process) string {
			l, r, _ := faults(f, p.NUMAFaults)
			if local {
				return l
			}
			return r
		}
	}
	before := []pcol{
		{column{"PID", 7, false, false}, rankKey, func(p *top.Process) string { return strconv.Itoa(p.PID) }},
		{column{"USER", 8, true, false}, rankUser, func(p *top.Process) string { return orDash(clean(p.User)) }},
		{column{"COMM", comm, true, false}, rankKey, func(p *top.Process) string { return clean(p.Comm) }},
		{column{"CPU%", 5, false, false}, rankCPU, func(p *top.Process) string { return percent(f, p.CPUPercent) }},
		{column{"RSS", 6, false, false}, rankRSS, func(p *top.Process) string { return bytes(p.RSSBytes) }},
	}
	after := []pcol{
		{column{"RUN", 5, true, false}, rankRun, func(p *top.Process) string { return nodeList(p.NodesRunning) }},
		{column{"PREF", 4, false, false}, rankPref, func(p *top.Process) string { return node(p.PreferredNode) }},
		{column{"LOCAL/s", 7, false, false}, measured(top.SortLocal, rankLocal), faultCell(true)},
		{column{"REMOTE/s", 8, false, false}, measured(top.SortRemote, rankRemote), faultCell(false)},
		{column{"REM%", 5, false, false}, rankShare, func(p *top.Process) string {
			_, _, share := faults(f, p.NUMAFaults)
			if p.NUMAFaults == nil && p.RecentRemoteShare != nil {
				share = p.ShareText()
			}
			return share
		}},
		{column{"MIGR/s", 6, false, false}, measured(top.SortMigrated, rankMigrated), func(p *top.Process) string { return optRate(f, p.PagesMigrated) }},
	}
	if f.Source.PMU != "" {
		pmu := func(remote bool) func(p *top.Process) string {
			return func(p *top.Process) string {
				l, r, _ := faults(f, p.PMU)
				if remote {
					return r
				}
				return l
			}
		}
		after = append(after, pcol{column{"LMA/s", 7, false, false}, rankPMU, pmu(false)},
			pcol{column{"RMA/s", 7, false, false}, rankPMU, pmu(true)})
	}
	// The memory of every node is a column each where they fit (ranked
	// as one), else one compact column at the end, "N0 1.2G N1 30M".
	mem := m.memLayout(0)
	var nodes []pcol
	for _, n := range mem.nodes {
		nodes = append(nodes, pcol{column{"N" + n, 6, false, false}, rankMemory, func(p *top.Process) string {
			if p.MemoryByNode == nil {
				return "-"
			}
			return bytes(p.MemoryByNode[n])
		}})
	}
	all := append(append(slices.Clone(before), nodes...), after...)
	keep := map[string]bool{}
	width := 0
	mem.perNode = len(nodes) > 0 && len(nodes) <= maxNodeColumns
	var dropped []string
	for r := rankKey; r <= rankUnmeasured; r++ {
		var group []pcol
		for _, c := range all {
			if c.rank == r && (c.rank != rankMemory || mem.perNode) {
				group = append(group, c)
			}
		}
		if r == rankMemory && !mem.perNode {
			group = []pcol{{column{"MEMORY BY NODE", 24, true, false}, rankMemory, nil}}
		}
		w := 0
		for _, c := range group {
			w += c.width + 1
		}
		if width+w-1 > m.width && r != rankKey {
			if r == rankMemory && mem.perNode {
				// Too narrow for a column per node: one compact column.
				mem.perNode = false
				group = []pcol{{column{"MEMORY BY NODE", 24, true, false}, rankMemory, nil}}
				w = 25
			}
			if width+w-1 > m.width {
				for _, c := range group {
					dropped = append(dropped, c.title)
				}
				continue
			}
		}
		width += w
		for _, c := range group {
			keep[c.title] = true
		}
	}
	var cols []pcol
	for _, c := range all {
		if keep[c.title] && (c.rank != rankMemory || mem.perNode) {
			cols = append(cols, c)
		}
	}
	if keep["MEMORY BY NODE"] {
		cols = append(cols, pcol{column{"MEMORY BY NODE", 0, true, false}, rankMemory, func(p *top.Process) string { return compact(p.MemoryByNode) }})
	}
	return cols, mem, dropped
}

// processLines is the process table.
func (m *model) processLines(rows int) []string {
	if len(m.procs) == 0 {
		if m.filter != "" {
			return m.wrap(fmt.Sprintf("no process matches %q (/ changes the filter)", clean(m.filter)), "")
		}
		if m.hidden > 0 {
			return m.wrap("no processes but "+term.Plural(m.hidden, "kernel thread", "kernel threads")+" (K shows them)", "")
		}
		return []string{"no processes"}
	}
	cols, _, _ := m.processColumns()
	plain := make([]column, len(cols))
	for i, c := range cols {
		plain[i] = c.column
	}
	return m.table(plain, len(m.procs), rows, true, func(i int) []string {
		p := &m.procs[i]
		cells := make([]string, len(cols))
		for j, c := range cols {
			cells[j] = c.cell(p)
		}
		return cells
	})
}
