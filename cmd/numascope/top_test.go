package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/top"
)

// sleeper starts `sleep 300` for the test's duration and returns its PID.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestTopBatchJSON: `top -b --format json -n 2` prints two frames, one per
// line, with the keys issue 18 names; a sleep started here is a row, and
// the source block says what gives the faults or why nothing does.
func TestTopBatchJSON(t *testing.T) {
	pid := sleeper(t)
	out, errs, code := run(t, "top", "-b", "--format", "json", "-n", "2", "-d", "300ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 frames:\n%.2000s", len(lines), out)
	}
	for i, l := range lines {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &raw); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		for _, k := range []string{"time", "processes", "nodes", "source"} {
			if raw[k] == nil {
				t.Errorf("frame %d has no %q", i, k)
			}
		}
		var f top.Frame
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatal(err)
		}
		if f.Interval < 0.25 || len(f.Nodes) == 0 {
			t.Errorf("frame %d: interval %.3f s, %d nodes", i, f.Interval, len(f.Nodes))
		}
		if f.Source.Faults == "" && len(f.Source.Missing) == 0 {
			t.Errorf("frame %d: no fault source and no line saying why", i)
		}
		found := false
		for _, p := range f.Processes {
			if p.PID == pid {
				found = p.Comm == "sleep" && len(p.NodesRunning) == 1
			}
		}
		if !found {
			t.Errorf("frame %d: the sleep %d is not a row with its node", i, pid)
		}
	}
}

// TestTopText: -b prints the node view and the process table as text.
func TestTopText(t *testing.T) {
	pid := sleeper(t)
	out, errs, code := run(t, "top", "-b", "-n", "1", "-d", "200ms", "--filter", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"numascope top", "NODE", "PID", "COMMAND", " sleep\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestTopErrors: every wrong use is one line naming the problem and the fix.
func TestTopErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"top"}, "needs a terminal: use -b"},
		{[]string{"top", "-b", "--sort", "bogus"}, `unknown sort key "bogus"`},
		{[]string{"top", "-b", "-d", "10ms"}, "at least 100ms"},
		{[]string{"top", "-b", "--format", "xml"}, `--format "xml": one of text, json`},
		{[]string{"top", "-b", "-n", "-1"}, "give a count of frames"},
	} {
		_, errs, code := run(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q: want one line with %q", c.args, code, errs, c.want)
		}
	}
}

// TestTopInTmux drives the real interactive view in a terminal: the table,
// a sort key, the filter, a drill-down into a sleep started here, back,
// and q.
func TestTopInTmux(t *testing.T) {
	pid := sleeper(t)
	tm := testutil.StartTmux(t, 200, 50, nil, binary, "top", "-d", "300ms")
	// The header shows the sort really used: remote where this kernel
	// gives fault rates, cpu where it does not (issue 31).
	tm.WaitForText("PID", "COMM", "sort: ")
	tm.SendKeys("m")
	tm.WaitForText("sort: memory")
	tm.SendKeys("c")
	tm.WaitForText("sort: cpu")
	tm.SendKeys("/", strconv.Itoa(pid), "Enter")
	tm.WaitFor("the filter keeps the sleep alone", func(s string) bool {
		return strings.Contains(s, " sleep") && strings.Contains(s, strconv.Itoa(pid))
	})
	tm.SendKeys("Enter")
	screen := tm.WaitForText("THREADS (1)", "MEMORY AREAS")
	if !strings.Contains(screen, "/usr/bin/sleep") && !strings.Contains(screen, "/bin/sleep") {
		t.Errorf("the drill-down does not show the sleep's mapped file:\n%s", screen)
	}
	tm.SendKeys("Escape")
	tm.WaitFor("the table back", func(s string) bool { return !strings.Contains(s, "THREADS (") })
	tm.SendKeys("q")
	if code := tm.WaitExit(); code != 0 {
		t.Fatalf("exit status %d after q:\n%s", code, tm.Screen())
	}
}
