package tui

// The screen's tables: columns fitted to the terminal's width, and the
// memory-per-node layout shared by the process and cgroup tables.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// column is one column of a table; width 0 takes what is left of the line.
type column struct {
	title   string
	width   int
	left    bool // left-aligned text rather than a right-aligned number
	keepEnd bool // cut from the left: the end of a path says most
}

// row lays out cells under cols, each cut to its column.
func row(cols []column, cells []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		s := cells[i]
		if c.width == 0 {
			b.WriteString(s)
			continue
		}
		if w := ansi.StringWidth(s); c.keepEnd && w > c.width {
			s = "~" + ansi.TruncateLeft(s, w-c.width+1, "")
		}
		s = ansi.Truncate(s, c.width, "~")
		pad := strings.Repeat(" ", c.width-ansi.StringWidth(s))
		if c.left {
			b.WriteString(s + pad)
		} else {
			b.WriteString(pad + s)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

func headings(cols []column) []string {
	t := make([]string, len(cols))
	for i, c := range cols {
		t[i] = c.title
	}
	return t
}

// table draws a heading and the rows from m.offset, the selected one in
// reverse video when sel.
func (m *model) table(cols []column, n, rows int, sel bool, cells func(i int) []string) []string {
	lines := []string{m.styled(sgrBold, row(cols, headings(cols)))}
	for i := m.offset; i < n && len(lines) <= rows-1; i++ {
		l := row(cols, cells(i))
		if sel && i == m.sel {
			lines = append(lines, m.styled(sgrReverse, l))
		} else {
			lines = append(lines, m.clip(l))
		}
	}
	return lines
}

// memLayout is how memory per node is shown: a column per node, or one
// compact column at the end.
type memLayout struct {
	nodes   []string // node numbers as the maps key them
	perNode bool
}

func (m *model) memLayout(fixed int) memLayout {
	var ids []int
	for _, n := range m.frame.Nodes {
		ids = append(ids, n.Node)
	}
	if len(ids) == 0 { // no node view: the nodes the processes have memory on
		seen := map[int]bool{}
		for _, p := range m.frame.Processes {
			for k := range p.MemoryByNode {
				if n, err := strconv.Atoi(k); err == nil && !seen[n] {
					seen[n] = true
					ids = append(ids, n)
				}
			}
		}
	}
	slices.Sort(ids)
	l := memLayout{}
	for _, n := range ids {
		l.nodes = append(l.nodes, strconv.Itoa(n))
	}
	// A column per node only where they all fit beside the others.
	l.perNode = len(ids) <= maxNodeColumns && fixed+7*len(ids) <= m.width
	return l
}

func (l memLayout) columns() []column {
	if !l.perNode {
		return nil
	}
	cols := make([]column, len(l.nodes))
	for i, n := range l.nodes {
		cols[i] = column{title: "N" + n, width: 6}
	}
	return cols
}

// cells are the per-node columns of by, "-" each where by is nil.
func (l memLayout) cells(by map[string]uint64) []string {
	if !l.perNode {
		return nil
	}
	out := make([]string, len(l.nodes))
	for i, n := range l.nodes {
		out[i] = "-"
		if by != nil {
			out[i] = bytes(by[n])
		}
	}
	return out
}

// compact is "N0 1.2G N1 30M": the nodes with memory, in node order.
func compact(by map[string]uint64) string {
	if by == nil {
		return "-"
	}
	keys := slices.SortedFunc(maps.Keys(by), func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	var parts []string
	for _, k := range keys {
		if by[k] > 0 {
			parts = append(parts, "N"+clean(k)+" "+bytes(by[k]))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

// nameColumns are a name column (a cgroup, a path) and, where memory per
// node is one compact column, that column after it. The name gets the
// width the line has left (beside 25 columns of memory), at least 16 and
// no more than its longest value, and keeps its end when cut.
func (m *model) nameColumns(title string, fixed, longest int, mem memLayout) []column {
	memW := 0
	if !mem.perNode {
		memW = 25
	}
	name := column{title: title, width: max(min(longest, m.width-fixed-memW), 16), left: true, keepEnd: true}
	if mem.perNode {
		return []column{name}
	}
	return []column{name, {"MEMORY BY NODE", 0, true, false}}
}

// longest is the widest of names, as shown.
func longest(n int, name func(i int) string) int {
	w := 0
	for i := range n {
		w = max(w, ansi.StringWidth(clean(name(i))))
	}
	return w
}

// rowWidth is the width of cols laid out in a row.
func rowWidth(cols []column) int {
	w := 0
	for _, c := range cols {
		w += c.width + 1
	}
	return w
}
