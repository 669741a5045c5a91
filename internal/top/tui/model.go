package tui

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/numascope/numascope/internal/top"
)

// view is what the screen below the header shows.
type view int

const (
	viewProcesses view = iota
	viewNodes
	viewCgroups
)

// maxFilter bounds the filter the user types, in runes.
const maxFilter = 64

// Messages from the feed's commands and from the refresh timer.
type (
	// frameMsg is a Refresh's result and the sort and filter the feed
	// had when it made the frame.
	frameMsg struct {
		frame  *top.Frame
		err    error
		sort   top.SortKey
		filter string
	}
	detailMsg struct {
		pid    int
		detail *top.Detail
		err    error
	}
	// tickMsg asks for a refresh; one whose gen is not the model's is
	// stale (the user paused, resumed or refreshed since) and is dropped,
	// so that there is never more than one timer chain.
	tickMsg struct{ gen int }
)

// model is the bubbletea model. It is changed only by Update, on the event
// loop; the commands it returns capture only the serialFeed.
type model struct {
	feed     *serialFeed
	interval time.Duration
	// schedule returns a command that delivers msg after d; tests replace
	// it to fire the timer by hand.
	schedule func(d time.Duration, msg tea.Msg) tea.Cmd

	sort    top.SortKey
	filter  string
	editing bool   // the filter prompt is open
	input   []rune // the filter being typed
	paused  bool
	// kthreads shows the kernel threads (K), hidden by default: 50 of
	// them at 0% hid the busy processes (issue 31).
	kthreads bool
	view     view
	help     bool
	detail   *detailState // non-nil while drilled down into a process

	frame       *top.Frame
	frameSort   top.SortKey // the sort and filter the feed made frame with
	frameFilter string
	err         error // the last Refresh's error, nil once one succeeds

	// procs and cgroups are the rows shown: frame's, filtered and sorted
	// here when the user changed the sort or filter since the feed made
	// the frame (paused, or the next frame not in yet).
	procs   []top.Process
	cgroups []top.Cgroup
	// sortUsed is the key the rows are really in (top.ResolveSort), and
	// sortNote why it is not m.sort; hidden counts the kernel threads
	// left out of procs.
	sortUsed top.SortKey
	sortNote string
	hidden   int
	sel      int // selected row of the current table
	selPID   int // the selected process, followed across refreshes
	offset   int // first row shown

	width, height int

	gen      int  // the current timer chain
	inflight bool // a Refresh is running
	again    bool // refresh again as soon as the running one returns
	quitting bool
}

// detailState is one drilled-down process.
type detailState struct {
	pid    int
	comm   string
	detail *top.Detail
	err    error
	scroll int
}

func newModel(feed top.Feed, opts Options) *model {
	m := &model{
		interval: opts.Interval,
		sort:     opts.Sort,
		filter:   opts.Filter,
		width:    80,
		height:   24,
		schedule: func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		},
	}
	if m.interval == 0 {
		m.interval = DefaultInterval
	}
	m.interval = max(m.interval, minInterval)
	if m.sort == "" {
		m.sort = top.SortRemote
	}
	if opts.Cgroups {
		m.view = viewCgroups
	}
	m.feed = newSerialFeed(feed, m.sort, m.filter)
	return m
}

// Init starts the first refresh at once.
func (m *model) Init() tea.Cmd { return m.refresh() }

// refresh starts a Refresh (and a Detail when drilled down) unless one is
// running, in which case it runs again when that one returns.
func (m *model) refresh() tea.Cmd {
	m.gen++ // drops the pending timer: the next starts when this frame is in
	if m.inflight {
		m.again = true
		return nil
	}
	m.inflight = true
	feed := m.feed
	cmds := []tea.Cmd{func() tea.Msg { return feed.refresh() }}
	if m.detail != nil {
		cmds = append(cmds, m.fetchDetail(m.detail.pid))
	}
	return tea.Batch(cmds...)
}

func (m *model) fetchDetail(pid int) tea.Cmd {
	feed := m.feed
	return func() tea.Msg { return feed.detail(pid) }
}

// Update handles a key, a resize, a frame or a timer.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.clampSelection()
	case frameMsg:
		m.inflight = false
		if msg.err != nil {
			m.err = msg.err
		} else if msg.frame != nil {
			m.err = nil
			m.frame, m.frameSort, m.frameFilter = msg.frame, msg.sort, msg.filter
			m.rebuild()
		}
		if m.again && !m.paused {
			m.again = false
			return m, m.refresh()
		}
		m.again = false
		if m.paused {
			return m, nil
		}
		return m, m.schedule(m.interval, tickMsg{gen: m.gen})
	case detailMsg:
		if m.detail != nil && m.detail.pid == msg.pid {
			m.detail.err = msg.err
			if msg.err == nil {
				m.detail.detail = msg.detail
				sortAreas(msg.detail)
			}
		}
	case tickMsg:
		if msg.gen == m.gen && !m.paused && !m.inflight {
			return m, m.refresh()
		}
	case tea.PasteMsg: // pasted text is text: for the filter, never keys
		if m.editing {
			m.typed([]rune(msg.Content))
		}
	case tea.KeyPressMsg: // one key each: bubbletea splits what one read brought
		return m, m.key(msg)
	}
	return m, nil
}

// key handles one key press.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return m.quit()
	}
	if m.editing {
		return m.editKey(k)
	}
	if m.help {
		m.help = false // any key closes the help
		if k.String() == "q" {
			return m.quit()
		}
		return nil
	}
	switch k.String() {
	case "q":
		return m.quit()
	case "?", "h":
		m.help = true
		return nil
	case "p", "space":
		m.paused = !m.paused
		if m.paused {
			m.gen++ // stops the timer chain
			return nil
		}
		return m.refresh()
	}
	if m.detail != nil {
		return m.detailKey(k)
	}
	switch s := k.String(); s {
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-m.tableRows())
	case "pgdown":
		m.move(m.tableRows())
	case "home":
		m.move(-len(m.procs) - len(m.cgroups))
	case "end":
		m.move(len(m.procs) + len(m.cgroups))
	case "s":
		i := slices.Index(top.SortKeys, m.sort)
		m.setSort(top.SortKeys[(i+1)%len(top.SortKeys)])
	case "r", "l", "c", "m", "i", "#":
		m.setSort(directSort[s])
	case "K":
		m.kthreads = !m.kthreads
		m.rebuild()
	case "n":
		m.view = toggle(m.view, viewNodes)
		m.sel, m.offset = 0, 0
		m.followPID()
	case "g":
		m.view = toggle(m.view, viewCgroups)
		m.sel, m.offset = 0, 0
		m.followPID()
	case "/":
		m.editing = true
		m.input = []rune(m.filter)
	case "enter":
		if m.view == viewProcesses && m.sel < len(m.procs) {
			p := m.procs[m.sel]
			m.detail = &detailState{pid: p.PID, comm: p.Comm}
			return m.fetchDetail(p.PID)
		}
	}
	return nil
}

// directSort maps the keys that pick a sort at once to their keys.
var directSort = map[string]top.SortKey{
	"r": top.SortRemote, "l": top.SortLocal, "c": top.SortCPU,
	"m": top.SortMemory, "i": top.SortMigrated, "#": top.SortPID,
}

// toggle switches to v, or back to the process table when v is shown.
func toggle(cur, v view) view {
	if cur == v {
		return viewProcesses
	}
	return v
}

func (m *model) quit() tea.Cmd {
	m.quitting = true
	return tea.Quit
}

// detailKey handles a key in the drill-down: back, or scrolling.
func (m *model) detailKey(k tea.KeyPressMsg) tea.Cmd {
	d := m.detail
	switch k.String() {
	case "esc", "backspace", "left":
		m.detail = nil
	case "up", "k":
		d.scroll--
	case "down", "j":
		d.scroll++
	case "pgup":
		d.scroll -= m.bodyRows()
	case "pgdown":
		d.scroll += m.bodyRows()
	case "home":
		d.scroll = 0
	case "end":
		d.scroll = math.MaxInt / 2 // clamped to the last page when drawn
	}
	d.scroll = max(d.scroll, 0) // the bottom is clamped when drawn
	return nil
}

// editKey handles a key while the filter prompt is open: Enter applies the
// filter, Esc leaves it as it was.
func (m *model) editKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case k.Code == tea.KeyEnter:
		m.editing = false
		m.filter = strings.TrimSpace(string(m.input))
		m.feed.want(m.sort, m.filter)
		m.rebuild()
		if m.paused {
			return nil
		}
		return m.refresh()
	case k.Code == tea.KeyEscape:
		m.editing = false
	case k.Code == tea.KeyBackspace:
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case k.String() == "ctrl+u":
		m.input = m.input[:0]
	case k.Text != "": // typed text, space included
		m.typed([]rune(k.Text))
	}
	return nil
}

// typed appends runes to the filter, keeping only printable ones (a paste
// may carry anything).
func (m *model) typed(rs []rune) {
	for _, r := range rs {
		if len(m.input) < maxFilter && strconv.IsPrint(r) {
			m.input = append(m.input, r)
		}
	}
}

// setSort sorts the rows shown now, and the feed's next frames.
func (m *model) setSort(k top.SortKey) {
	m.sort = k
	m.feed.want(m.sort, m.filter)
	m.rebuild()
}

// rebuild computes the rows shown from the frame: the feed's order when it
// made the frame with the current sort and filter, otherwise sorted and
// filtered here, so that a key's effect shows at once (and while paused).
func (m *model) rebuild() {
	if m.frame == nil {
		return
	}
	m.procs, m.cgroups = m.frame.Processes, m.frame.Cgroups
	m.hidden = 0
	if !m.kthreads {
		m.procs, m.hidden = top.WithoutKernelThreads(m.procs)
	}
	if m.frameFilter != m.filter {
		m.procs = filterProcesses(m.procs, m.filter)
	}
	// The feed filters processes; in the cgroup table the filter is a
	// part of the cgroup's path, applied here.
	m.cgroups = filterCgroups(m.cgroups, m.filter)
	m.sortUsed, m.sortNote = top.ResolveSort(m.procs, m.sort)
	if m.frameSort != m.sort || m.frameFilter != m.filter || m.frame.Sort != m.sortUsed {
		m.procs = slices.Clone(m.procs)
		sortProcesses(m.procs, m.sortUsed)
		m.cgroups = slices.Clone(m.cgroups)
		sortCgroups(m.cgroups, m.sort)
	}
	m.followPID()
}

// followPID keeps the selected process selected when rows move.
func (m *model) followPID() {
	if m.view == viewProcesses && m.selPID != 0 {
		if i := slices.IndexFunc(m.procs, func(p top.Process) bool { return p.PID == m.selPID }); i >= 0 {
			m.sel = i
		}
	}
	m.clampSelection()
}

// move moves the selection by n rows.
func (m *model) move(n int) {
	m.sel += n
	m.clampSelection()
}

// clampSelection keeps the selection on a row and in sight.
func (m *model) clampSelection() {
	n := m.rowCount()
	m.sel = min(m.sel, n-1)
	m.sel = max(m.sel, 0)
	if m.view == viewProcesses && m.sel < len(m.procs) {
		m.selPID = m.procs[m.sel].PID
	}
	rows := m.tableRows()
	if m.sel < m.offset {
		m.offset = m.sel
	}
	if m.sel >= m.offset+rows {
		m.offset = m.sel - rows + 1
	}
	m.offset = max(min(m.offset, n-rows), 0)
}

// rowCount is the number of rows of the current table.
func (m *model) rowCount() int {
	switch m.view {
	case viewProcesses:
		return len(m.procs)
	case viewCgroups:
		return len(m.cgroups)
	}
	return 0
}

// filterProcesses keeps the processes whose command contains f or whose
// PID is f, as top.Feed.SetFilter does.
func filterProcesses(ps []top.Process, f string) []top.Process {
	if f == "" {
		return ps
	}
	pid, err := strconv.Atoi(f)
	if err != nil {
		pid = -1
	}
	var out []top.Process
	for _, p := range ps {
		if p.PID == pid || strings.Contains(p.Comm, f) {
			out = append(out, p)
		}
	}
	return out
}

// filterCgroups keeps the cgroups whose path contains f.
func filterCgroups(cs []top.Cgroup, f string) []top.Cgroup {
	if f == "" {
		return cs
	}
	var out []top.Cgroup
	for _, c := range cs {
		if strings.Contains(c.Path, f) {
			out = append(out, c)
		}
	}
	return out
}

// sortAreas orders a drill-down's memory areas largest first, as the
// collector does: a 101 MiB anonymous area listed by address sat among
// 4 KiB file mappings (issue 31).
func sortAreas(d *top.Detail) {
	if d == nil {
		return
	}
	slices.SortStableFunc(d.Areas, func(a, b top.Area) int {
		return cmp.Or(cmp.Compare(areaBytes(b), areaBytes(a)), cmp.Compare(a.Start, b.Start))
	})
}

func areaBytes(a top.Area) uint64 {
	var n uint64
	for _, b := range a.BytesByNode {
		n += b
	}
	return n
}
