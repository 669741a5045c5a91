package tui

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/top"
)

// helperEnv makes TestTUIHelper run the TUI on its terminal with the fake
// feed: the test binary stands in for `numascope top` under tmux.
const helperEnv = "NUMASCOPE_TEST_TUI"

func TestTUIHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestTUIInTmux")
	}
	feed := newFakeFeed()
	if os.Getenv(helperEnv) == "bare" {
		// The machine of issue 31: no event source, no PMU, 60 kernel
		// threads.
		feed.kthreads, feed.noFaults = 60, true
	}
	err := Run(context.Background(), feed, Options{Interval: 200 * time.Millisecond}, os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// screenPIDs are the PIDs of the process table's rows on a tmux screen.
func screenPIDs(screen string) []string {
	var out []string
	rows := false
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "PID":
			rows = true
		case rows && len(f) == 0:
			return out
		case rows:
			out = append(out, f[0])
		}
	}
	return out
}

func firstRow(pid string) func(string) bool {
	return func(screen string) bool {
		p := screenPIDs(screen)
		return len(p) > 0 && p[0] == pid
	}
}

// TestTUIInTmux drives the real program in a real terminal (tmux): the
// table sorted by remote faults, a sort key, the drill-down and back,
// quitting; and a hostile command name that must neither retitle the
// window nor clear the screen.
func TestTUIInTmux(t *testing.T) {
	tm := testutil.StartTmux(t, 200, 50, []string{helperEnv + "=1"}, os.Args[0], "-test.run=^TestTUIHelper$")

	// Rates come with the second frame: serialinit first by remote faults.
	screen := tm.WaitForText("sort: remote", "9.80K", "kprobe:task_numa_fault", "missing: PMU")
	if p := screenPIDs(screen); len(p) < 6 || p[0] != "4242" {
		t.Fatalf("rows by remote faults %v, want 4242 first:\n%s", p, screen)
	}
	if !strings.Contains(screen, hostileShown) {
		t.Errorf("the hostile command is not shown as text %q:\n%s", hostileShown, screen)
	}
	if title := tm.Format("#{pane_title}"); strings.Contains(title, "PWNED") {
		t.Errorf("a command name retitled the window: %q", title)
	}

	tm.SendKeys("c")
	tm.WaitFor("sort by CPU: cpuhog first", firstRow("1717"))
	tm.WaitForText("sort: cpu")
	tm.SendKeys("s")
	tm.WaitForText("sort: memory")
	tm.WaitFor("sort by memory: serialinit first", firstRow("4242"))

	tm.SendKeys("Enter")
	screen = tm.WaitForText("process 4242 (serialinit)", "THREADS (4)", "worker-1", "worker-3",
		"hint: "+serialHint, "MEMORY AREAS (3)")
	if strings.Contains(screen, "PID USER") {
		t.Errorf("the table still shows under the drill-down:\n%s", screen)
	}
	tm.SendKeys("Escape")
	tm.WaitFor("the table back", func(s string) bool {
		return strings.Contains(s, "PID USER") && !strings.Contains(s, "THREADS")
	})

	tm.SendKeys("/", "hog", "Enter")
	tm.WaitFor("filter hog: only cpuhog", func(s string) bool {
		p := screenPIDs(s)
		return len(p) == 1 && p[0] == "1717"
	})

	tm.SendKeys("p")
	tm.WaitForText("PAUSED")

	tm.SendKeys("q")
	if code := tm.WaitExit(); code != 0 {
		t.Fatalf("exit status %d after q; the screen:\n%s", code, tm.Screen())
	}
	// The alternate screen is gone: the terminal is back as it was.
	if s := tm.Screen(); strings.Contains(s, "PID USER") {
		t.Errorf("the table is left on the screen after quitting:\n%s", s)
	}
	if title := tm.Format("#{pane_title}"); strings.Contains(title, "PWNED") {
		t.Errorf("a command name retitled the window: %q", title)
	}
}

var _ top.Feed = (*fakeFeed)(nil)

// TestTUIAt80x24 runs top on an 80x24 terminal of a machine without an
// event source or a PMU and with 60 kernel threads (issue 31): the header
// is at most 3 lines, no line is cut mid-word, the missing sources fold
// into one line, the rows are by CPU% (the header says why), no kernel
// thread is shown, nor with K above a busy process; USER and the memory of
// every node stay; the PMU line says there is no PMU; g says what it
// needs; the drill-down shows the memory by category (numastat's rows)
// on all 4 nodes, and lists memory areas largest first.
func TestTUIAt80x24(t *testing.T) {
	tm := testutil.StartTmux(t, 80, 24, []string{helperEnv + "=bare"}, os.Args[0], "-test.run=^TestTUIHelper$")
	screen := tm.WaitForText("sort: cpu", "4 sources missing: ? for why", "60 kernel threads hidden (K)")
	t.Logf("80x24:\n%s", screen)
	lines := strings.Split(screen, "\n")
	head := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "PID ") })
	if head < 0 || head > 3 {
		t.Fatalf("the table heading is on line %d: want at most 3 header lines above it:\n%s", head+1, screen)
	}
	for _, want := range []string{"USER", "N0", "N1", "N2", "N3", "REM%", "PMU none (no PMU here)", "sort remote: none measured, sorted by cpu"} {
		if !strings.Contains(screen, want) {
			t.Errorf("80x24 lacks %q:\n%s", want, screen)
		}
	}
	for _, l := range lines[:head] {
		if len([]rune(strings.TrimRight(l, " "))) >= 80 && !strings.HasSuffix(strings.TrimRight(l, " "), "…") {
			t.Errorf("a header line cut at the terminal's edge, not between words: %q", l)
		}
	}
	if p := screenPIDs(screen); len(p) != 6 || p[0] != "1717" {
		t.Errorf("rows %v: want the 6 user processes by CPU%%, cpuhog (1717) first:\n%s", p, screen)
	}
	// K shows the kernel threads, every one below every busy process.
	tm.SendKeys("K")
	screen = tm.WaitForText("with kernel threads (K)", "kworker/")
	t.Logf("80x24:\n%s", screen)
	busy := true
	for _, l := range strings.Split(screen, "\n") {
		switch {
		case strings.Contains(l, "kworker/"):
			busy = false
		case !busy && (strings.Contains(l, "cpuhog") || strings.Contains(l, "serialinit") || strings.Contains(l, "localhero")):
			t.Errorf("a kernel thread above a busy process:\n%s", screen)
		}
	}
	tm.SendKeys("K")
	tm.WaitForText("60 kernel threads hidden (K)")

	// The help says why each source is missing and what the width left out.
	tm.SendKeys("?")
	screen = tm.WaitForText("this machine has no PMU", "left out at 80 columns:")
	t.Logf("80x24:\n%s", screen)
	feed := newFakeFeed()
	feed.noFaults = true
	f, _ := feed.Refresh()
	wholeWords(t, screen, f.Source.Missing...)
	tm.SendKeys("x")

	tm.SendKeys("g")
	screen = tm.WaitForText("numascope top --cgroup")
	wholeWords(t, screen, "no cgroups: top reads them only when started with --cgroup")
	tm.SendKeys("g")

	// The drill-down of serialinit (selected after Home, then down to it).
	tm.SendKeys("/", "serial", "Enter")
	tm.WaitFor("filter serial", firstRow("4242"))
	tm.SendKeys("Enter")
	// numastat -p's categories per node, all 4 nodes beside each other.
	screen = tm.WaitForText("MEMORY BY CATEGORY (as numastat -p)")
	t.Logf("80x24:\n%s", screen)
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "private" {
			if got := strings.Join(f, " "); got != "private 7.75G 6.00G 512M 512M 768M" {
				t.Errorf("private row %q, want its total then nodes 0-3", got)
			}
		}
	}
	// The areas follow: End scrolls to them.
	tm.SendKeys("End")
	screen = tm.WaitForText("MEMORY AREAS (3)", "7f1000000000")
	t.Logf("80x24:\n%s", screen)
	var areas []string
	inAreas := false
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "START":
			inAreas = true
		case inAreas && (len(f) == 0 || f[0] == "Esc"): // a blank line, or the footer
			inAreas = false
		case inAreas:
			areas = append(areas, f[0])
		}
	}
	if want := []string{"7f0000000000", "55d0c0de0000", "7f1000000000"}; !slices.Equal(areas, want) || !strings.Contains(screen, "N3") {
		t.Errorf("areas %v, want largest first %v:\n%s", areas, want, screen)
	}
	tm.SendKeys("q")
	tm.WaitExit()
}

// wholeWords fails unless each of texts is on screen, wrapped between
// words: the screen's lines joined by a space hold it.
func wholeWords(t *testing.T, screen string, texts ...string) {
	t.Helper()
	joined := strings.Join(strings.Fields(screen), " ")
	for _, s := range texts {
		if !strings.Contains(joined, strings.Join(strings.Fields(s), " ")) {
			t.Errorf("%q is not on the screen in whole words:\n%s", s, screen)
		}
	}
}
