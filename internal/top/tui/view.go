package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/numascope/numascope/internal/recording"
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
