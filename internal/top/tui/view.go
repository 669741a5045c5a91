package tui

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/top"
)

// The only escape sequences the TUI writes itself (bubbletea adds cursor
// movement): reverse video for the selected row, bold for headings.
const (
	sgrReverse = "\x1b[7m"
	sgrBold    = "\x1b[1m"
	sgrReset   = "\x1b[0m"
)

// maxNodeColumns is the most nodes that get a memory column each; with
// more, the memory per node is one compact column ("N0 1.2G N1 30M") at the
// end of the row.
const maxNodeColumns = 4

// View is the whole screen, on the terminal's alternate screen (the
// shell's screen comes back when top ends).
func (m *model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	return v
}

// render draws the whole screen: header, body, footer, each line cut to the
// terminal's width.
func (m *model) render() string {
	if m.quitting {
		return ""
	}
	head := m.header()
	body := m.body(m.bodyRows())
	lines := make([]string, 0, m.height)
	lines = append(lines, head...)
	lines = append(lines, body...)
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	// A terminal too short for the header keeps its top and the footer.
	lines = append(lines[:max(m.height-1, 0)], m.footer())
	return strings.Join(lines, "\n")
}

// bodyRows is the number of lines between the header and the footer.
func (m *model) bodyRows() int { return max(m.height-len(m.header())-1, 1) }

// tableRows is the number of table rows shown (the body less its heading).
func (m *model) tableRows() int { return max(m.bodyRows()-1, 1) }

// clean is how every name from the kernel, a file or an error is shown.
func clean(s string) string { return recording.SanitizeText(s) }

// clip cuts s, which holds no escape sequence, to the terminal's width.
func (m *model) clip(s string) string { return ansi.Truncate(s, m.width, "") }

// styled draws s over the whole width in an SGR style.
func (m *model) styled(sgr, s string) string {
	s = m.clip(s)
	return sgr + s + strings.Repeat(" ", max(m.width-ansi.StringWidth(s), 0)) + sgrReset
}

// header is the first lines: time, interval, sort, filter and pause; the
// sources in use, and what is missing and why; the last refresh's error.
func (m *model) header() []string {
	var b strings.Builder
	b.WriteString("numascope top")
	f := m.frame
	if f != nil {
		b.WriteString("  " + f.Time.Local().Format("15:04:05"))
	}
	fmt.Fprintf(&b, "  every %s  sort: %s", m.interval, m.sort)
	if m.filter != "" {
		fmt.Fprintf(&b, "  filter: %q", clean(m.filter))
	}
	if m.paused {
		b.WriteString("  PAUSED")
	}
	if f != nil {
		fmt.Fprintf(&b, "  %d processes", len(m.procs))
		if m.view == viewCgroups || len(f.Cgroups) > 0 {
			fmt.Fprintf(&b, ", %d cgroups", len(m.cgroups))
		}
	}
	lines := []string{m.clip(b.String())}
	if f == nil {
		if m.err == nil {
			lines = append(lines, m.clip("reading the first frame..."))
		}
	} else {
		s := f.Source
		lines = append(lines, m.clip(fmt.Sprintf("sources: faults %s  migrations %s  memory %s  PMU %s  lost records %d",
			orNone(s.Faults), orNone(s.Migrations), orNone(s.Memory), orNone(s.PMU), s.Lost)))
		if len(s.Missing) > 0 && len(s.Missing) <= max(m.height/3, 1) {
			for _, l := range s.Missing {
				lines = append(lines, m.clip("missing: "+clean(l)))
			}
		} else if len(s.Missing) > 0 {
			lines = append(lines, m.clip(fmt.Sprintf("missing: %d figures (? lists them)", len(s.Missing))))
		}
		if f.Interval == 0 {
			lines = append(lines, m.clip(fmt.Sprintf("first frame: rates (-) from the next one, in %s", m.interval)))
		}
	}
	if m.err != nil {
		lines = append(lines, m.clip(fmt.Sprintf("refresh failed: %s (trying again every %s)", clean(m.err.Error()), m.interval)))
	}
	return append(lines, "")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return clean(s)
}

// footer is the last line: the filter prompt, or the main keys.
func (m *model) footer() string {
	switch {
	case m.editing:
		return m.clip("filter (command or PID): " + string(m.input) + "_   Enter apply, Esc cancel, Ctrl-U clear")
	case m.help:
		return m.clip("any key: back")
	case m.detail != nil:
		return m.clip("Esc back  up/down scroll  p pause  ? help  q quit")
	}
	return m.clip("q quit  ? help  s sort  / filter  n nodes  g cgroups  Enter details  p pause")
}

// body is the view below the header, at most rows lines.
func (m *model) body(rows int) []string {
	var lines []string
	switch {
	case m.help:
		lines = m.helpLines()
	case m.detail != nil:
		lines = m.detailLines(rows)
	case m.frame == nil:
	case m.view == viewNodes:
		lines = m.nodeLines()
	case m.view == viewCgroups:
		lines = m.cgroupLines(rows)
	default:
		lines = m.processLines(rows)
	}
	return lines[:min(len(lines), rows)]
}

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

func bytes(v uint64) string { return term.Human(float64(v), "bytes") }

// rate is a per-second figure of frame f; "-" on the first frame, which
// has no interval to measure over.
func rate(f *top.Frame, v float64) string {
	if f.Interval == 0 {
		return "-"
	}
	return term.Human(v, "")
}

// optRate is rate for a figure that may have no source (nil: "-").
func optRate(f *top.Frame, v *float64) string {
	if v == nil {
		return "-"
	}
	return rate(f, *v)
}

func percent(f *top.Frame, v float64) string {
	if f.Interval == 0 {
		return "-"
	}
	return cpuPercent(v)
}

// cpuPercent is a CPU% in at most 5 characters: a process on 128 CPUs
// shows 12800.
func cpuPercent(v float64) string {
	if v >= 999.95 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return term.Human(v, "%")
}

// faults are the local and remote rates and the remote share; "-" for
// each where no source gives them (nil), or for the share when there were
// no faults to share.
func faults(f *top.Frame, x *top.Faults) (local, remote, share string) {
	if x == nil || f.Interval == 0 {
		return "-", "-", "-"
	}
	share = "-"
	if t := x.Local + x.Remote; t > 0 {
		share = term.Human(100*x.Remote/t, "%")
	}
	return term.Human(x.Local, ""), term.Human(x.Remote, ""), share
}

// node is a node number, "-" for none (-1).
func node(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// nodeList is a list of nodes or CPUs as ranges: "0-3,6"; "-" when empty.
func nodeList(ns []int) string {
	if len(ns) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ns))
	return sysfs.FormatCPUList(slices.Compact(s))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// processLines is the process table.
func (m *model) processLines(rows int) []string {
	f := m.frame
	if len(m.procs) == 0 {
		if m.filter != "" {
			return []string{fmt.Sprintf("no process matches %q (/ changes the filter)", clean(m.filter))}
		}
		return []string{"no processes"}
	}
	pmu := f.Source.PMU != ""
	user := column{"USER", 8, true, false}
	head := []column{{"PID", 7, false, false}, user, {"COMM", 15, true, false}, {"CPU%", 5, false, false}, {"RSS", 6, false, false}}
	tail := []column{{"RUN", 5, true, false}, {"PREF", 4, false, false}, {"LOCAL/s", 7, false, false},
		{"REMOTE/s", 8, false, false}, {"REM%", 5, false, false}, {"MIGR/s", 6, false, false}}
	if pmu {
		tail = append(tail, column{"LMA/s", 7, false, false}, column{"RMA/s", 7, false, false})
	}
	// On a narrow terminal the user goes first: the fault columns stay.
	withUser := rowWidth(head)+rowWidth(tail) <= m.width
	if !withUser {
		head = slices.Delete(head, 1, 2)
	}
	mem := m.memLayout(rowWidth(head) + rowWidth(tail))
	cols := append(append(head, mem.columns()...), tail...)
	if !mem.perNode {
		cols = append(cols, column{"MEMORY BY NODE", 0, true, false})
	}
	return m.table(cols, len(m.procs), rows, true, func(i int) []string {
		p := &m.procs[i]
		c := []string{strconv.Itoa(p.PID), orDash(clean(p.User)), clean(p.Comm), percent(f, p.CPUPercent), bytes(p.RSSBytes)}
		if !withUser {
			c = slices.Delete(c, 1, 2)
		}
		c = append(c, mem.cells(p.MemoryByNode)...)
		local, remote, share := faults(f, p.NUMAFaults)
		if p.NUMAFaults == nil && p.RecentRemoteShare != nil {
			share = p.ShareText()
		}
		c = append(c, nodeList(p.NodesRunning), node(p.PreferredNode), local, remote, share, optRate(f, p.PagesMigrated))
		if pmu {
			lma, rma, _ := faults(f, p.PMU)
			c = append(c, lma, rma)
		}
		if !mem.perNode {
			c = append(c, compact(p.MemoryByNode))
		}
		return c
	})
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
			return []string{"no cgroups in this frame (numascope top reads them with --cgroup)"}
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

// orUnread is a rate that is -1 where its source lacks it.
func orUnread(f *top.Frame, v float64) string {
	if v < 0 {
		return "-"
	}
	return rate(f, v)
}

// detailLines is the drill-down of one process, scrolled.
func (m *model) detailLines(rows int) []string {
	d := m.detail
	title := fmt.Sprintf("process %d (%s)", d.pid, clean(d.comm))
	var lines []string
	if dt := d.detail; dt != nil {
		title += fmt.Sprintf(": %d threads, %d memory areas", len(dt.Threads), len(dt.Areas))
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
		if t.NUMAFaults != nil {
			local, remote = term.Human(t.NUMAFaults.Local, ""), term.Human(t.NUMAFaults.Remote, "")
		}
		lines = append(lines, m.clip(row(cols, []string{strconv.Itoa(t.TID), cpuPercent(t.CPUPercent),
			node(t.CPU), node(t.Node), node(t.PreferredNode), local, remote, clean(t.Comm)})))
	}
	return lines
}

func (m *model) areaLines(d *top.Detail) []string {
	cols := []column{{"START", 12, false, false}, {"KIND", 5, true, false}, {"POLICY", 16, true, false}}
	mem := m.memLayout(rowWidth(cols) + 30)
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

// helpLines lists every missing figure with its reason, then the keys.
func (m *model) helpLines() []string {
	var lines []string
	if m.frame != nil && len(m.frame.Source.Missing) > 0 {
		lines = append(lines, "missing:")
		for _, l := range m.frame.Source.Missing {
			lines = append(lines, "  "+clean(l))
		}
		lines = append(lines, "")
	}
	lines = append(lines,
		"up/down, PgUp/PgDn, Home/End   select a row (scroll in the drill-down)",
		"Enter                          drill down into the selected process: threads, memory areas, hint",
		"Esc, Backspace                 back from the drill-down",
		"s                              next sort key: "+sortKeyList(),
		"r l c m i #                    sort by remote faults, local faults, CPU, memory, migrated pages, PID",
		"/                              filter by command or PID (Enter applies, Esc cancels; empty shows all)",
		"n                              node view (again: back to processes)",
		"g                              cgroup view (again: back to processes)",
		"p, space                       pause (nothing is read while paused)",
		"q, Ctrl-C                      quit",
		"",
		"- is a figure not measured (no source, or the first frame), never a 0.",
		"RUN: nodes its threads last ran on; PREF: the NUMA balancer's preferred node;",
		"LOCAL/s, REMOTE/s: NUMA hinting faults per second on local and remote memory.",
	)
	for i := range lines {
		lines[i] = m.clip(lines[i])
	}
	return lines
}

func sortKeyList() string {
	var s []string
	for _, k := range top.SortKeys {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}
