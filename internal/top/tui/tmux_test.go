package tui

import (
	"context"
	"fmt"
	"os"
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
	err := Run(context.Background(), newFakeFeed(), Options{Interval: 200 * time.Millisecond}, os.Stdin, os.Stdout)
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
