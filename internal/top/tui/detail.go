package tui

// The drill-down into one process: its threads, its memory by category and
// by area.

import (
	"fmt"
	"strconv"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/top"
)

// detailLines is the drill-down of one process, scrolled.
func (m *model) detailLines(rows int) []string {
	d := m.detail
	title := fmt.Sprintf("process %d (%s)", d.pid, clean(d.comm))
	var lines []string
	if dt := d.detail; dt != nil {
		title += ": " + term.Plural(len(dt.Threads), "thread", "threads") + ", " + term.Plural(len(dt.Areas), "memory area", "memory areas")
		if dt.Hint != "" {
			lines = append(lines, m.clip("hint: "+clean(dt.Hint)))
		}
		for _, e := range dt.Errors {
			lines = append(lines, m.clip("not read: "+clean(e)))
		}
	}
	if d.err != nil {
		lines = append(lines, m.clip("error: "+clean(d.err.Error())))
	} else if d.detail == nil {
		lines = append(lines, "reading...")
	}
	if dt := d.detail; dt != nil {
		lines = append(lines, "")
		lines = append(lines, m.threadLines(dt)...)
		if dt.MemoryByCategory != nil {
			lines = append(lines, "")
			lines = append(lines, m.categoryLines(dt)...)
		}
		lines = append(lines, "")
		lines = append(lines, m.areaLines(dt)...)
	}
	// The title stays; the rest scrolls, no further than its end.
	d.scroll = max(min(d.scroll, len(lines)-(rows-1)), 0)
	return append([]string{m.styled(sgrBold, title)}, lines[d.scroll:]...)
}

func (m *model) threadLines(d *top.Detail) []string {
	cols := []column{{"TID", 7, false, false}, {"CPU%", 5, false, false}, {"CPU", 4, false, false}, {"NODE", 4, false, false},
		{"PREF", 4, false, false}, {"LOCAL/s", 7, false, false}, {"REMOTE/s", 8, false, false}, {"COMM", 0, true, false}}
	lines := []string{m.clip(fmt.Sprintf("THREADS (%d)", len(d.Threads))), m.styled(sgrBold, row(cols, headings(cols)))}
	for _, t := range d.Threads {
		local, remote := "-", "-"
		// The faults are the frame's interval's: none in the first frame.
		if t.NUMAFaults != nil && m.frame != nil && m.frame.Interval > 0 {
			local, remote = term.Human(t.NUMAFaults.Local, ""), term.Human(t.NUMAFaults.Remote, "")
		}
		lines = append(lines, m.clip(row(cols, []string{strconv.Itoa(t.TID), threadCPU(t.CPUPercent),
			node(t.CPU), node(t.Node), node(t.PreferredNode), local, remote, clean(t.Comm)})))
	}
	return lines
}

// categoryLines is the process's memory per node in numastat -p's
// categories and rows: Huge, Heap, Stack, Private, then the total.
func (m *model) categoryLines(d *top.Detail) []string {
	cols := []column{{"CATEGORY", 8, true, false}, {"TOTAL", 6, false, false}}
	mem := m.memLayout(rowWidth(cols) + 17)
	cols = append(cols, mem.columns()...)
	if !mem.perNode {
		cols = append(cols, column{"MEMORY BY NODE", 0, true, false})
	}
	lines := []string{m.clip("MEMORY BY CATEGORY (as numastat -p)"),
		m.styled(sgrBold, row(cols, headings(cols)))}
	add := func(name string, by map[string]uint64) {
		var sum uint64
		for _, v := range by {
			sum += v
		}
		c := append([]string{name, bytes(sum)}, mem.cells(by)...)
		if !mem.perNode {
			c = append(c, compact(by))
		}
		lines = append(lines, m.clip(row(cols, c)))
	}
	for c := range procnuma.Categories {
		add(c.String(), d.MemoryByCategory.Category(c))
	}
	add("total", d.MemoryByNode)
	return lines
}

func (m *model) areaLines(d *top.Detail) []string {
	// Room for a 16-column path beside a column per node: at 80 columns
	// the memory of 4 nodes shows whole.
	cols := []column{{"START", 12, false, false}, {"KIND", 5, true, false}, {"POLICY", 14, true, false}}
	mem := m.memLayout(rowWidth(cols) + 17)
	cols = append(cols, mem.columns()...)
	cols = append(cols, m.nameColumns("PATH", rowWidth(cols), longest(len(d.Areas), func(i int) string { return d.Areas[i].Path }), mem)...)
	lines := []string{m.clip(fmt.Sprintf("MEMORY AREAS (%d)", len(d.Areas))), m.styled(sgrBold, row(cols, headings(cols)))}
	for _, a := range d.Areas {
		c := []string{strconv.FormatUint(a.Start, 16), clean(a.Kind), clean(a.Policy)}
		c = append(c, mem.cells(a.BytesByNode)...)
		c = append(c, clean(a.Path))
		if !mem.perNode {
			c = append(c, compact(a.BytesByNode))
		}
		lines = append(lines, m.clip(row(cols, c)))
	}
	return lines
}
