package tui

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/numascope/numascope/internal/top"
)

// harness drives the model the way bubbletea does, synchronously: each
// command runs at once and its message goes back into Update. The refresh
// timer is held instead of started, and fired by tick.
type harness struct {
	t     *testing.T
	m     *model
	feed  *fakeFeed
	ticks []tea.Msg
	quit  bool
}

func newHarness(t *testing.T, opts Options, w, h int) *harness {
	t.Helper()
	feed := newFakeFeed()
	hs := &harness{t: t, feed: feed, m: newModel(feed, opts)}
	hs.m.schedule = func(_ time.Duration, msg tea.Msg) tea.Cmd {
		hs.ticks = append(hs.ticks, msg)
		return nil
	}
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.run(hs.m.Init())
	return hs
}

func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		h.send(msg)
	}
}

func (h *harness) send(msg tea.Msg) {
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

// tick fires the pending timers: the next refresh, if it is due.
func (h *harness) tick() {
	ticks := h.ticks
	h.ticks = nil
	for _, t := range ticks {
		h.send(t)
	}
}

// keys are the named keys press sends, as a terminal without the kitty
// keyboard protocol reports them.
var keys = map[string]tea.KeyPressMsg{
	"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown},
	"pgup": {Code: tea.KeyPgUp}, "pgdown": {Code: tea.KeyPgDown}, "backspace": {Code: tea.KeyBackspace},
	"ctrl+c": {Code: 'c', Mod: tea.ModCtrl}, "ctrl+u": {Code: 'u', Mod: tea.ModCtrl},
	"space": {Code: tea.KeySpace, Text: " "}, "home": {Code: tea.KeyHome}, "end": {Code: tea.KeyEnd},
}

// press sends each key: a name from keys, or text typed rune by rune.
func (h *harness) press(names ...string) {
	for _, k := range names {
		if msg, ok := keys[k]; ok {
			h.send(msg)
			continue
		}
		for _, r := range k {
			h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
	}
}

// screen is the view without the TUI's own styling.
func (h *harness) screen() string {
	return strings.NewReplacer(sgrBold, "", sgrReverse, "", sgrReset, "").Replace(h.m.render())
}

func (h *harness) contains(what ...string) {
	h.t.Helper()
	s := h.screen()
	for _, w := range what {
		if !strings.Contains(s, w) {
			h.t.Fatalf("screen lacks %q:\n%s", w, s)
		}
	}
}

func (h *harness) lacks(what ...string) {
	h.t.Helper()
	s := h.screen()
	for _, w := range what {
		if strings.Contains(s, w) {
			h.t.Fatalf("screen shows %q:\n%s", w, s)
		}
	}
}

// pids are the PIDs of the table's rows, top to bottom.
func (h *harness) pids() []int {
	var out []int
	rows := false
	for _, l := range strings.Split(h.screen(), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "PID" {
			rows = true
			continue
		}
		if !rows {
			continue
		}
		if len(f) == 0 {
			break
		}
		if n, err := strconv.Atoi(f[0]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// line is the screen line that holds s.
func (h *harness) line(s string) string {
	h.t.Helper()
	for _, l := range strings.Split(h.screen(), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	h.t.Fatalf("no line holds %q:\n%s", s, h.screen())
	return ""
}

func firstPID(t *testing.T, h *harness, want int) {
	t.Helper()
	if p := h.pids(); len(p) == 0 || p[0] != want {
		t.Fatalf("first row PID %v, want %d:\n%s", p, want, h.screen())
	}
}

func TestFirstFrameShowsNoRates(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.contains("serialinit", "first frame: rates (-) from the next one, in 1s")
	// Every rate of the first frame is "-", never a made-up 0; levels
	// (RSS, memory per node, nodes) are shown.
	f := strings.Fields(h.line("serialinit"))
	want := []string{"4242", "alice", "serialinit", "-", "8.00G", "6.25G", "512M", "512M", "768M", "1-3", "0", "-", "-", "-", "-"}
	if strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("first-frame serialinit row\n got %q\nwant %q", f, want)
	}
}

func TestProcessTable(t *testing.T) {
	h := newHarness(t, Options{Interval: 2 * time.Second}, 200, 50)
	h.tick()
	h.contains("every 2s", "sort: remote", "sources: faults kprobe:task_numa_fault",
		"migrations tracepoint:migrate:mm_migrate_pages", "memory numa_maps of the top 20, every 5 s",
		"PMU none", "lost records 3", "missing: PMU: no DRAM preset for this CPU",
		"N0", "N3", "REMOTE/s", "REM%", "MIGR/s")
	h.lacks("first frame", "LMA/s")
	firstPID(t, h, 4242)
	// serialinit: memory per node, runs on 1-3, prefers 0, remote-heavy.
	f := strings.Fields(h.line("serialinit"))
	want := []string{"4242", "alice", "serialinit", "350.0", "8.00G", "6.25G", "512M", "512M", "768M", "1-3", "0", "120", "9.80K", "98.8", "40"}
	if strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("serialinit row\n got %q\nwant %q", f, want)
	}
	// Unknown figures are "-": no faults source for the hostile process, no
	// numa_maps for it (not among the top N), no preferred node.
	f = strings.Fields(h.line(hostileShown))
	want = []string{"666", "mal[8ml~", hostileShown, "1.0", "1.00M", "-", "-", "-", "-", "0", "-", "-", "-", "-", "-"} // no migration source for it: "-", not 0
	if strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("hostile row\n got %q\nwant %q", f, want)
	}
	// No faults at all: rates 0, but no remote share.
	if f := strings.Fields(h.line("systemd")); f[len(f)-2] != "-" || f[len(f)-3] != "0" {
		t.Errorf("systemd row %q: want remote 0 and remote%% -", f)
	}
}

// TestRecentShareColumn: without fault rates, REM% shows the share of the
// balancer's recent faults marked ~, and the rates stay "-".
func TestRecentShareColumn(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.feed.recent = f64(0.78)
	h.tick()
	f := strings.Fields(h.line(hostileShown))
	if got := strings.Join(f[len(f)-4:], " "); got != "- - ~78% -" {
		t.Errorf("hostile row %q: LOCAL/s REMOTE/s REM%% MIGR/s = %q, want \"- - ~78%% -\"", f, got)
	}
}

func TestPMUColumnsOnlyWithAPreset(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.feed.pmu = "intel_icx"
	h.tick()
	h.contains("PMU intel_icx", "LMA/s", "RMA/s")
	if f := strings.Fields(h.line("serialinit")); f[len(f)-2] != "1.00K" || f[len(f)-1] != "50.0K" {
		t.Errorf("serialinit PMU figures %q", f)
	}
	if f := strings.Fields(h.line("cpuhog")); f[len(f)-1] != "-" || f[len(f)-2] != "-" {
		t.Errorf("cpuhog has no PMU figures, want -: %q", f)
	}
}

func TestSortKeys(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	firstPID(t, h, 4242)
	calls, _, _ := h.feed.state()

	// A direct key re-sorts the rows shown at once, without reading /proc,
	// and the feed sorts the next frame.
	h.press("c")
	h.contains("sort: cpu")
	firstPID(t, h, 1717)
	if c, _, _ := h.feed.state(); c != calls {
		t.Errorf("a sort key read the feed (%d refreshes, want %d)", c, calls)
	}
	h.tick()
	if _, sort, _ := h.feed.state(); sort != top.SortCPU {
		t.Errorf("feed sort %q after the next refresh, want cpu", sort)
	}
	firstPID(t, h, 1717)

	// s cycles through top.SortKeys, from cpu on.
	for _, tc := range []struct {
		key   top.SortKey
		first int
	}{{top.SortMemory, 4242}, {top.SortMigrated, 4242}, {top.SortPID, 1}, {top.SortRemote, 4242}, {top.SortLocal, 3131}} {
		h.press("s")
		h.contains("sort: " + string(tc.key))
		firstPID(t, h, tc.first)
	}
	h.press("m")
	firstPID(t, h, 4242)
	if p := h.pids(); p[1] != 3131 {
		t.Errorf("by memory: %v, want localhero (2 GiB) second", p)
	}
	h.press("#")
	if p := h.pids(); p[0] != 1 || p[len(p)-1] != 4242 {
		t.Errorf("by PID: %v", p)
	}
}

func TestFilter(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.press("/", "hog")
	h.contains("filter (command or PID): hog_")
	h.press("enter")
	// Enter refreshes at once with the feed's filter set.
	if _, _, f := h.feed.state(); f != "hog" {
		t.Fatalf("feed filter %q, want hog", f)
	}
	h.contains(`filter: "hog"`, "1 process,")
	if p := h.pids(); len(p) != 1 || p[0] != 1717 {
		t.Fatalf("filtered rows %v, want [1717]", p)
	}
	// Esc leaves the filter as it was.
	h.press("/", "backspace", "backspace", "backspace", "4242", "esc")
	if p := h.pids(); len(p) != 1 || p[0] != 1717 {
		t.Fatalf("after Esc rows %v, want [1717]", p)
	}
	// A PID; then an empty filter shows all again.
	h.press("/", "ctrl+u", "4242", "enter")
	if p := h.pids(); len(p) != 1 || p[0] != 4242 {
		t.Fatalf("PID filter rows %v, want [4242]", p)
	}
	h.press("/", "ctrl+u", "nomatch", "enter")
	h.contains(`no process matches "nomatch"`)
	h.press("/", "ctrl+u", "enter")
	if p := h.pids(); len(p) != len(fakeProcesses()) {
		t.Fatalf("unfiltered rows %v", p)
	}
	// Text is taken whole: one key may type a grapheme cluster.
	h.press("/", "ctrl+u")
	h.send(tea.KeyPressMsg{Code: 'e', Text: "e\u0301"})
	h.contains("filter (command or PID): e\u0301_")
	h.press("esc")
	// A paste is text for the prompt, and nothing outside it.
	h.press("/", "ctrl+u")
	h.send(tea.PasteMsg{Content: "q4242"})
	h.contains("filter (command or PID): q4242_")
	h.press("esc")
	h.send(tea.PasteMsg{Content: "q"})
	if h.quit {
		t.Fatal("a pasted q quit")
	}
	// Keys typed into the prompt are text, not commands.
	h.press("/", "q")
	if h.quit {
		t.Fatal("q in the filter prompt quit")
	}
	h.press("esc")
}

func TestFilterWhilePausedIsLocal(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.press("p")
	calls, _, _ := h.feed.state()
	h.press("/", "local", "enter")
	if p := h.pids(); len(p) != 1 || p[0] != 3131 {
		t.Fatalf("paused filter rows %v, want [3131]", p)
	}
	if c, _, _ := h.feed.state(); c != calls {
		t.Fatalf("the filter refreshed while paused")
	}
	h.press("p")
	if c, _, f := h.feed.state(); c != calls+1 || f != "local" {
		t.Fatalf("resume: %d refreshes (want %d), feed filter %q", c, calls+1, f)
	}
}

func TestPause(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.lacks("PAUSED")
	for _, key := range []string{"p", "space"} {
		h.press(key)
		h.contains("PAUSED")
		calls, _, _ := h.feed.state()
		h.tick() // the timer that was pending when paused
		h.tick()
		if c, _, _ := h.feed.state(); c != calls {
			t.Fatalf("%s: %d refreshes while paused", key, c-calls)
		}
		h.press(key)
		h.lacks("PAUSED")
		if c, _, _ := h.feed.state(); c != calls+1 {
			t.Fatalf("%s: resume made %d refreshes, want 1 at once", key, c-calls)
		}
		// One timer chain, not two.
		h.tick()
		if c, _, _ := h.feed.state(); c != calls+2 {
			t.Fatalf("%s: a tick after resuming made %d refreshes, want 1", key, c-calls-1)
		}
	}
}

func TestDrillDown(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	firstPID(t, h, 4242)
	h.press("enter")
	h.contains("process 4242 (serialinit): 4 threads, 3 memory areas", "hint: "+serialHint,
		"THREADS (4)", "worker-1", "worker-3", "MEMORY AREAS (3)", "heap", "anon", "bind:0",
		"not read: numa_maps of 4242: read 64 MiB, the rest [2Jskipped")
	// A worker: its CPU, its node, its preferred node 0, remote faults.
	if f := strings.Fields(h.line("worker-2")); strings.Join(f, " ") != "4244 99.5 8 2 0 10 3.00K worker-2" {
		t.Errorf("worker-2 row %q", f)
	}
	if f := strings.Fields(h.line("7f0000000000")); strings.Join(f, " ") != "7f0000000000 anon default 6.00G 512M 512M 768M" {
		t.Errorf("anon area row %q", f)
	}
	// numastat -p's rows: each category per node, then the total.
	h.contains("MEMORY BY CATEGORY (as numastat -p)")
	for name, want := range map[string]string{
		"huge ": "huge 0 0 0 0 0", "heap ": "heap 64.0M 64.0M 0 0 0",
		"private ": "private 7.75G 6.00G 512M 512M 768M", "total ": "total 7.81G 6.06G 512M 512M 768M",
	} {
		if f := strings.Fields(h.line(name)); strings.Join(f, " ") != want {
			t.Errorf("category row %q, want %q", strings.Join(f, " "), want)
		}
	}
	// A short terminal scrolls the drill-down under its title, down to
	// the last area and no further.
	h.send(tea.WindowSizeMsg{Width: 200, Height: 14})
	h.lacks("7f1000000000")
	h.press("pgdown", "pgdown", "pgdown", "down", "down")
	h.contains("process 4242 (serialinit)", "7f1000000000")
	h.lacks("hint:")
	h.press("up") // the scroll stopped at the end: one up hides the last line
	h.lacks("7f1000000000")
	h.press("down")
	h.contains("7f1000000000")
	h.press("home")
	h.contains("hint: " + serialHint)
	h.send(tea.WindowSizeMsg{Width: 200, Height: 50})
	// The drill-down follows the refreshes.
	before := h.feed.details
	h.tick()
	if h.feed.details != before+1 {
		t.Errorf("a refresh in the drill-down read Detail %d times, want 1", h.feed.details-before)
	}
	h.press("esc")
	h.lacks("THREADS")
	firstPID(t, h, 4242)

	// Backspace goes back too; a process that exited shows the error.
	h.press("/", "999", "enter", "enter")
	h.contains("process 999 (ghost)", "error: process 999 has exited")
	h.press("backspace")
	h.lacks("process 999 (ghost)")
	if p := h.pids(); len(p) != 1 || p[0] != 999 {
		t.Fatalf("rows %v after leaving the drill-down", p)
	}
}

// TestDrillDownOneThread: a process of one thread and one area is
// counted in the singular, and its thread's CPU% is "-" (unknown) on the
// first reading, a rate needing two, then measured.
func TestDrillDownOneThread(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.feed.kthreads = 1
	h.tick()
	h.contains("1 kernel thread hidden (K)")
	h.press("/", "cpuhog", "enter", "enter")
	h.contains("process 1717 (cpuhog): 1 thread, 1 memory area")
	h.lacks("1 threads", "1 memory areas")
	row := func() string { return strings.Join(strings.Fields(h.line(" cpuhog")), " ") }
	if r := row(); !strings.HasPrefix(r, "1717 - 0 0 ") {
		t.Errorf("first reading's thread row %q: want CPU%% -", r)
	}
	h.tick()
	if r := row(); !strings.HasPrefix(r, "1717 1.0 0 0 ") {
		t.Errorf("second reading's thread row %q: want CPU%% 1.0", r)
	}

	// A drill-down opened on the first frame: its threads' fault rates are
	// the frame's, not measured yet ("-", not 0).
	h = newHarness(t, Options{}, 200, 50)
	firstPID(t, h, 4242)
	h.press("enter")
	if f := strings.Fields(h.line("worker-2")); strings.Join(f[5:7], " ") != "- -" {
		t.Errorf("worker-2 on the first frame %q: want its faults -", f)
	}
}

func TestSelectionFollowsProcess(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.press("down", "down") // localhero, third by remote faults
	if h.m.selPID != 1717 && h.m.selPID != 3131 {
		t.Fatalf("selected PID %d", h.m.selPID)
	}
	sel := h.m.selPID
	h.press("c") // the rows move; the selection stays on the process
	if h.m.procs[h.m.sel].PID != sel {
		t.Fatalf("selection moved to PID %d, want %d", h.m.procs[h.m.sel].PID, sel)
	}
	h.press("enter")
	h.contains("process " + strconv.Itoa(sel))
	h.press("esc", "pgdown")
	if h.m.sel != len(h.m.procs)-1 {
		t.Fatalf("PgDn selected row %d of %d", h.m.sel, len(h.m.procs))
	}
	h.press("pgup")
	if h.m.sel != 0 {
		t.Fatalf("PgUp selected row %d", h.m.sel)
	}
	// The selected row is drawn in reverse video.
	for _, l := range strings.Split(h.m.render(), "\n") {
		if strings.HasPrefix(l, sgrReverse) && !strings.Contains(l, strconv.Itoa(h.m.procs[0].PID)) {
			t.Fatalf("reverse-video row %q is not the selected one", l)
		}
	}
}

func TestNodeView(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.press("n")
	h.contains("NODE", "USED", "FREE", "PROMO/s", "DEMO/s", "HIT/s", "MISS/s", "CPUS",
		"page migrations by reason, pages/s (tracepoint:migrate:mm_migrate_pages)", "numa_misplaced", "demotion")
	if f := strings.Fields(h.line("12-15")); strings.Join(f, " ") != "3 4.00G 12.0G 30.0 300 3.00K 90.9 3 0 1.50 12.3K 21 12-15" {
		t.Errorf("node 3 row %q", f)
	}
	// Reasons, most first.
	s := h.screen()
	if strings.Index(s, "numa_misplaced") > strings.Index(s, "demotion") {
		t.Errorf("reasons not by rate:\n%s", s)
	}
	h.press("n")
	h.lacks("PROMO/s")
	firstPID(t, h, 4242)
}

func TestCgroupView(t *testing.T) {
	h := newHarness(t, Options{Cgroups: true}, 200, 50)
	h.tick()
	h.contains("CGROUP", "HINT/s", "/system.slice/db.service", "2 cgroups")
	if f := strings.Fields(h.line("db.service")); strings.Join(f, " ") != "3 352.0 6.00G 1.00G 0 0 125 9.80K 98.7 9.93K 43 /system.slice/db.service" {
		t.Errorf("db.service row %q", f)
	}
	// A cgroup without memory.stat's numa fields: "-", not 0.
	if f := strings.Fields(h.line("/user.slice/")); strings.Join(f, " ") != "1 1.0 - - - - - - - - - /user.slice/[31mred" {
		t.Errorf("hostile cgroup row %q", f)
	}
	h.press("g")
	firstPID(t, h, 4242)
	h.press("g")
	h.contains("CGROUP")
	h.press("/", "db", "enter")
	h.lacks("/user.slice/")
	h.contains("db.service")
}

func TestHelp(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.press("?")
	h.contains("pause (nothing is read while paused)", "remote, local, cpu, memory, migrated, pid",
		"missing:", "PMU: no DRAM preset")
	h.press("x")
	h.lacks("pause (nothing is read")
	firstPID(t, h, 4242)
}

// TestManyMissing: several missing figures fold into one line; the help
// lists them all.
func TestManyMissing(t *testing.T) {
	h := newHarness(t, Options{}, 120, 24)
	for i := range 9 {
		h.feed.missing = append(h.feed.missing, "figure "+strconv.Itoa(i)+": why")
	}
	h.tick()
	h.contains("9 sources missing: ? for why", "serialinit")
	h.lacks("figure 0: why")
	h.press("?")
	h.contains("figure 0: why", "figure 8: why")
}

func TestQuit(t *testing.T) {
	for _, key := range []string{"q", "ctrl+c"} {
		h := newHarness(t, Options{}, 200, 50)
		h.press(key)
		if !h.quit {
			t.Fatalf("%s did not quit", key)
		}
		if v := h.m.render(); v != "" {
			t.Fatalf("%s: view after quitting %q", key, v)
		}
	}
	// Ctrl-C quits from the filter prompt and the drill-down as well.
	h := newHarness(t, Options{}, 200, 50)
	h.press("enter", "/", "ctrl+c")
	if !h.quit {
		t.Fatal("Ctrl-C in the filter prompt did not quit")
	}
}

func TestRefreshErrorShown(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.feed.mu.Lock()
	h.feed.err = errors.New("walking /proc: permission denied\x1b[2J")
	h.feed.mu.Unlock()
	h.tick()
	h.contains("refresh failed: walking /proc: permission denied[2J (trying again every 1s)", "serialinit")
	if len(h.ticks) != 1 {
		t.Fatalf("after an error %d timers, want 1 (try again)", len(h.ticks))
	}
	h.feed.mu.Lock()
	h.feed.err = nil
	h.feed.mu.Unlock()
	h.tick()
	h.lacks("refresh failed")
}

// TestHostileNamesInert: names from the kernel, files and errors hold
// escape sequences and control characters; every view shows them as inert
// text, and the only escape sequences left are the TUI's own styling.
func TestHostileNamesInert(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.feed.pmu = "x\x1b[2J"
	h.tick()
	check := func(what string) {
		t.Helper()
		s := h.screen()
		for i, r := range s {
			if r == '\n' {
				continue
			}
			if unicode.IsControl(r) || r == 0x7f || unicode.Is(unicode.Cf, r) {
				t.Fatalf("%s: control character %U at %d:\n%q", what, r, i, s)
			}
		}
	}
	check("table")
	h.contains(hostileShown, "mal[8ml~", "PMU x[2J")
	h.press("/", "666", "enter", "enter")
	check("drill-down of 666")
	h.press("esc", "/", "ctrl+u", "enter")
	firstPID(t, h, 4242)
	h.press("home", "enter")
	check("drill-down")
	h.contains("/tmp/[5mblink \uFFFD6n.so")
	h.press("esc", "n")
	check("nodes")
	h.press("g")
	check("cgroups")
	h.contains("/user.slice/[31mred")
	h.press("?")
	check("help")
}

func TestFitsTheTerminal(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	for _, size := range [][2]int{{60, 12}, {80, 24}, {132, 40}, {20, 5}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, keys := range [][]string{nil, {"enter"}, {"esc", "n"}, {"n", "g"}, {"g", "?"}, {"x"}} {
			h.press(keys...)
			lines := strings.Split(h.m.render(), "\n")
			if len(lines) > size[1] {
				t.Fatalf("%dx%d after %v: %d lines", size[0], size[1], keys, len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Fatalf("%dx%d after %v: line of width %d: %q", size[0], size[1], keys, w, l)
				}
			}
		}
	}
	// Narrow: the columns go by rank (RUN and PREF first), so that the
	// remote faults, the user and the memory of each node stay in sight.
	h.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	h.contains("USER", "REMOTE/s", "N3", "LOCAL/s")
	if f := strings.Fields(h.line("serialinit")); strings.Join(f, " ") != "4242 alice serialinit 350.0 8.00G 6.25G 512M 512M 768M 120 9.80K 98.8" {
		t.Errorf("serialinit at 100 columns %q", f)
	}
	// At 80 columns RSS, local faults and pages migrated go too; ? says so.
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	if f := strings.Fields(h.line("serialinit")); strings.Join(f, " ") != "4242 alice serialinit 350.0 6.25G 512M 512M 768M 9.80K 98.8" {
		t.Errorf("serialinit at 80 columns %q", f)
	}
	h.press("?")
	h.contains("left out at 80 columns: RSS, LOCAL/s, MIGR/s, RUN, PREF")
	h.press("x")
	h.press("g")
	h.contains("~lice/db.service")
	h.press("g")
	// A short terminal scrolls to keep the selection in sight.
	h.send(tea.WindowSizeMsg{Width: 200, Height: 9})
	h.press("end")
	if p := h.pids(); len(p) == 0 || p[len(p)-1] != h.m.procs[len(h.m.procs)-1].PID {
		t.Fatalf("End at 9 rows shows %v:\n%s", p, h.screen())
	}
}

func TestCPUPercent(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 0.5: "0.5", 99.94: "99.9", 999.94: "999.9", 12800: "12800", 1000.4: "1000"} {
		if got := cpuPercent(v); got != want || len(got) > 5 {
			t.Errorf("cpuPercent(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestNodeList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{nil, "-"}, {[]int{0}, "0"}, {[]int{3, 1, 2}, "1-3"}, {[]int{0, 1, 2, 3, 6, 8, 9}, "0-3,6,8-9"}, {[]int{2, 2}, "2"}} {
		if got := nodeList(tc.in); got != tc.want {
			t.Errorf("nodeList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := compact(map[string]uint64{"10": 1 << 30, "2": 30 << 20, "1": 0}); got != "N2 30.0M N10 1.00G" {
		t.Errorf("compact = %q", got)
	}
	if compact(nil) != "-" || compact(map[string]uint64{"0": 0}) != "0" {
		t.Error("compact of nil / zero")
	}
}

// TestRun runs the whole program on a pipe: it draws the table, quits on q
// and ends without error when the context is cancelled.
func TestRun(t *testing.T) {
	inR, inW := io.Pipe()
	var out syncWriter
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), newFakeFeed(), Options{Interval: 100 * time.Millisecond}, inR, &out)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "9.80K"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no second frame drawn in 10 s: %q", out.String())
		}
	}
	if _, err := inW.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end Run")
	}
	if s := out.String(); strings.Contains(s, "\x1b]2;PWNED") || strings.Contains(s, "\x1b[2J"+"evil") {
		t.Fatalf("output: %q", s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	inR2, _ := io.Pipe()
	go func() { done <- Run(ctx, newFakeFeed(), Options{}, inR2, io.Discard) }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the context did not end Run")
	}
}

// syncWriter is the terminal of TestRun: bubbletea's renderer writes from
// its own goroutine.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestKernelThreadsKey: kernel threads are hidden at start and counted in
// the header; K shows them, below every busy process; the sort on remote
// faults where none is measured falls back to CPU% and says so.
func TestKernelThreadsKey(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.feed.kthreads, h.feed.noFaults = 30, true
	h.tick()
	h.contains("sort: cpu", "6 processes, 30 kernel threads hidden (K)", "sort remote: none measured, sorted by cpu", "4 sources missing: ? for why")
	h.lacks("kworker/")
	firstPID(t, h, 1717)
	h.press("K")
	h.contains("36 processes with kernel threads (K)", "kworker/29")
	p := h.pids()
	if len(p) != 36 || slices.IndexFunc(p, func(pid int) bool { return pid < 100 && pid != 1 }) < 6 {
		t.Errorf("with kernel threads, rows %v: want the 6 user processes first", p)
	}
	h.press("K")
	h.lacks("kworker/")
	// The help gives the sort's whole note.
	h.press("?")
	h.contains("no process has remote faults measured here")
	h.press("x")
	// With the fault rates, remote is the sort again.
	h.feed.noFaults = false
	h.tick()
	h.contains("sort: remote")
	h.lacks("none measured")
	firstPID(t, h, 4242)
}

// TestDrillDownAreasBySize: areas largest first, whatever the feed's order.
func TestDrillDownAreasBySize(t *testing.T) {
	h := newHarness(t, Options{}, 200, 50)
	h.tick()
	h.press("enter")
	s := h.screen()
	a, b, c := strings.Index(s, "7f0000000000"), strings.Index(s, "55d0c0de0000"), strings.Index(s, "7f1000000000")
	if a < 0 || b < 0 || c < 0 || !(a < b && b < c) {
		t.Errorf("areas not largest first:\n%s", s)
	}
}

// TestCgroupsNeedFlag: g without --cgroup says what it needs, whole.
func TestCgroupsNeedFlag(t *testing.T) {
	h := newHarness(t, Options{}, 80, 24)
	h.feed.noFaults = true
	h.tick()
	h.press("g")
	h.contains("no cgroups: top reads them only when started with --cgroup", "numascope top --cgroup")
}
