package tui

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/numascope/numascope/internal/procnuma"
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

// maxHeader is the most lines the header takes: at 80x24, 6 of 24 lines
// of header (four "missing:" lines cut mid-word) left too few rows
// (issue 31).
const maxHeader = 3

// header is at most maxHeader lines, each cut only between words: the
// time, interval, sort, filter, pause and counts; the sources in use; and
// one line of notes (the last refresh's error, a sort that fell back, the
// missing sources folded into a count that ? lists, the first frame).
func (m *model) header() []string {
	f := m.frame
	var head []string
	if f != nil {
		head = append(head, f.Time.Local().Format("15:04:05"))
	}
	head = append(head, "every "+m.interval.String(), "sort: "+string(m.shownSort()))
	if m.filter != "" {
		head = append(head, fmt.Sprintf("filter: %q", clean(m.filter)))
	}
	if m.paused {
		head = append(head, "PAUSED")
	}
	short := slices.Clone(head)
	if f != nil {
		n := term.Plural(len(m.procs), "process", "processes")
		kt := ""
		switch {
		case m.hidden > 0:
			kt = ", " + term.Plural(m.hidden, "kernel thread", "kernel threads") + " hidden (K)"
		case m.kthreads:
			kt = " with kernel threads (K)"
		}
		cg := ""
		if m.view == viewCgroups || len(f.Cgroups) > 0 {
			cg = ", " + term.Plural(len(m.cgroups), "cgroup", "cgroups")
		}
		head = append(head, n+cg+kt)
		// Narrow: the cgroups count only in their view.
		if m.view != viewCgroups {
			cg = ""
		}
		short = append(short, n+cg+kt)
	}
	title := "numascope top  " + strings.Join(head, "  ")
	if ansi.StringWidth(title) > m.width {
		title = "top " + strings.Join(short, " ")
	}
	lines := []string{m.fit(title)}
	var notes []string
	if m.err != nil {
		notes = append(notes, fmt.Sprintf("refresh failed: %s (trying again every %s)", clean(m.err.Error()), m.interval))
	}
	if f == nil {
		if m.err == nil {
			notes = append(notes, "reading the first frame...")
		}
	} else {
		s := f.Source
		lines = append(lines, m.fit(fmt.Sprintf("sources: faults %s  PMU %s  migrations %s  memory %s  lost records %d",
			orNone(s.Faults), m.pmuSource(), orNone(s.Migrations), orNone(s.Memory), s.Lost)))
		if m.sortNote != "" {
			notes = append(notes, fmt.Sprintf("sort %s: none measured, sorted by %s", m.sort, m.sortUsed))
		}
		switch {
		case len(s.Missing) == 1 && len(notes) == 0:
			notes = append(notes, "missing: "+clean(s.Missing[0]))
		case len(s.Missing) == 1:
			notes = append(notes, "1 source missing: ? for why")
		case len(s.Missing) > 1:
			notes = append(notes, fmt.Sprintf("%d sources missing: ? for why", len(s.Missing)))
		}
		if f.Interval == 0 {
			notes = append(notes, fmt.Sprintf("first frame: rates (-) from the next one, in %s", m.interval))
		}
	}
	if len(notes) > 0 {
		// A single missing line that does not fit folds like several.
		l := strings.Join(notes, "  ")
		if f != nil && len(f.Source.Missing) == 1 && ansi.StringWidth(l) > m.width {
			notes[slices.Index(notes, "missing: "+clean(f.Source.Missing[0]))] = "1 source missing: ? for why"
			l = strings.Join(notes, "  ")
		}
		lines = append(lines, m.fit(l))
	}
	return lines[:min(len(lines), maxHeader)]
}

// shownSort is the key the rows are in: the one asked for until a frame
// says otherwise.
func (m *model) shownSort() top.SortKey {
	if m.sortUsed != "" {
		return m.sortUsed
	}
	return m.sort
}

// pmuSource names the PMU preset in use; without one, "none", or "none (no
// PMU here)" where the machine has none, rather than blame a preset.
func (m *model) pmuSource() string {
	s := m.frame.Source
	if s.PMU != "" {
		return clean(s.PMU)
	}
	for _, l := range s.Missing {
		if strings.Contains(l, "has no PMU") {
			return "none (no PMU here)"
		}
	}
	return "none"
}

// fit cuts s, which holds no escape sequence, to the terminal's width
// between two words, marking the cut with "…": a header cut mid-word
// reads as a different word.
func (m *model) fit(s string) string { return fitWords(s, m.width) }

func fitWords(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	if width < 2 {
		return ansi.Truncate(s, width, "")
	}
	cut := ansi.Truncate(s, width-1, "")
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ") + "…"
}

// wrap breaks s, which holds no escape sequence, into lines of the
// terminal's width at spaces, the lines after the first indented.
func (m *model) wrap(s, indent string) []string {
	var lines []string
	line := ""
	for _, w := range strings.Split(s, " ") {
		switch {
		case line == "":
			line = w
		case ansi.StringWidth(line)+1+ansi.StringWidth(w) <= m.width:
			line += " " + w
		default:
			lines = append(lines, m.fit(line))
			line = indent + w
		}
	}
	return append(lines, m.fit(line))
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
	if l := "q quit  ? help  s sort  / filter  K kernel threads  n nodes  g cgroups  Enter details  p pause"; ansi.StringWidth(l) <= m.width {
		return l
	}
	return m.fit("q quit ? help s sort / filter K kthreads n nodes g cgroups Enter details p pause")
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

// threadCPU is a drill-down thread's CPU%: "-" where it is not measured
// yet (a rate needs two readings; the first is unknown, not 0).
func threadCPU(v *float64) string {
	if v == nil {
		return "-"
	}
	return cpuPercent(*v)
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
			return m.wrap("no cgroups: top reads them only when started with --cgroup (memory.numa_stat and memory.stat of each cgroup v2). Quit (q) and run: numascope top --cgroup", "")
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

// helpLines lists every missing figure with its reason, then the keys.
func (m *model) helpLines() []string {
	var lines []string
	if m.frame != nil {
		if m.sortNote != "" {
			lines = append(lines, m.wrap("sort: "+clean(m.sortNote), "  ")...)
		}
		if len(m.frame.Source.Missing) > 0 {
			lines = append(lines, "missing:")
			for _, l := range m.frame.Source.Missing {
				lines = append(lines, m.wrap(clean(l), "    ")...)
			}
		}
		if m.view == viewProcesses && len(m.procs) > 0 {
			if _, _, dropped := m.processColumns(); len(dropped) > 0 {
				lines = append(lines, m.wrap("left out at "+strconv.Itoa(m.width)+" columns: "+strings.Join(dropped, ", ")+" (a wider terminal shows them)", "  ")...)
			}
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
	}
	keys := []string{
		"up/down, PgUp/PgDn, Home/End   select a row (scroll in the drill-down)",
		"Enter                          drill down into the selected process: threads, memory areas, hint",
		"Esc, Backspace                 back from the drill-down",
		"s                              next sort key: " + sortKeyList(),
		"r l c m i #                    sort by remote faults, local faults, CPU, memory, migrated pages, PID",
		"K                              show or hide the kernel threads (hidden at start)",
		"/                              filter by command or PID (Enter applies, Esc cancels; empty shows all)",
		"n                              node view (again: back to processes)",
		"g                              cgroup view (again: back to processes)",
		"p, space                       pause (nothing is read while paused)",
		"q, Ctrl-C                      quit",
		"",
		"- is a figure not measured (no source, or the first frame), never a 0.",
		"RUN: nodes its threads last ran on; PREF: the NUMA balancer's preferred node;",
		"LOCAL/s, REMOTE/s: NUMA hinting faults per second on local and remote memory.",
		"Drill-down memory by category, as numastat -p: huge (hugetlb), heap, stack (the main thread's),",
		"private (every other mapping, files included).",
		"A sort on a figure no process has falls back to CPU%, then memory; the header says so.",
	}
	for _, k := range keys {
		lines = append(lines, m.wrap(k, "                               ")...)
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
