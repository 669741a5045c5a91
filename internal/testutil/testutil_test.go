package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "internal", "testutil", "testutil.go")); err != nil {
		t.Errorf("RepoRoot = %s, which does not hold this package: %v", root, err)
	}
}

func TestMarkedLine(t *testing.T) {
	lines := []string{"a", "b /* @init */", "c /* @compute */"}
	if got := MarkedLine(t, lines, "compute"); got != 3 {
		t.Errorf("MarkedLine(compute) = %d, want 3", got)
	}
	path := filepath.Join(t.TempDir(), "w.c")
	if err := os.WriteFile(path, []byte("x\n/* @init */ y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := MarkedLineIn(t, path, "init"); got != 2 {
		t.Errorf("MarkedLineIn(init) = %d, want 2", got)
	}
}

func TestRun(t *testing.T) {
	out, errs, code := Run(t, exec.Command("sh", "-c", "echo out; echo err >&2; exit 3"))
	if out != "out\n" || errs != "err\n" || code != 3 {
		t.Errorf("Run = %q, %q, %d; want out, err, 3", out, errs, code)
	}
}

// outcome is how a helper ended a test: failed, skipped (with the message)
// or neither.
type outcome struct {
	testing.TB
	failed, skipped string
}

func (o *outcome) Helper() {}
func (o *outcome) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (o *outcome) Skipf(format string, args ...any) {
	o.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls helper with an outcome in its own goroutine, as the testing
// package runs a test, so that Fatalf and Skipf end only the helper.
func run(t *testing.T, helper func(testing.TB)) *outcome {
	o := &outcome{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(o)
	}()
	<-done
	return o
}

// TestSkipUnless: a missing dependency skips, and fails once its switch is set.
func TestSkipUnless(t *testing.T) {
	const env = "NUMASCOPE_TESTUTIL_SWITCH"
	skip := func(tb testing.TB) { SkipUnless(tb, env, "no %s", "thing") }
	t.Setenv(env, "")
	if o := run(t, skip); o.failed != "" || !strings.Contains(o.skipped, "no thing") || !strings.Contains(o.skipped, env+"=1") {
		t.Errorf("switch unset: failed %q, skipped %q; want a skip naming the switch", o.failed, o.skipped)
	}
	t.Setenv(env, "1")
	if o := run(t, skip); o.skipped != "" || !strings.Contains(o.failed, "no thing") {
		t.Errorf("switch set: failed %q, skipped %q; want a failure", o.failed, o.skipped)
	}
}

// TestNotPermitted: as root the test fails; otherwise it fails unless
// NUMASCOPE_TEST_NO_ROOT is set, when it skips.
func TestNotPermitted(t *testing.T) {
	denied := func(tb testing.TB) { NotPermitted(tb, "perf says %s", "EACCES") }
	for _, noRoot := range []string{"", "1"} {
		t.Setenv(NoRoot, noRoot)
		o := run(t, denied)
		wantSkip := os.Geteuid() != 0 && noRoot != ""
		switch {
		case wantSkip && (o.skipped == "" || o.failed != ""):
			t.Errorf("not root, %s=%q: failed %q, skipped %q; want a skip", NoRoot, noRoot, o.failed, o.skipped)
		case !wantSkip && (o.failed == "" || o.skipped != ""):
			t.Errorf("euid %d, %s=%q: failed %q, skipped %q; want a failure", os.Geteuid(), NoRoot, noRoot, o.failed, o.skipped)
		case !strings.Contains(o.failed+o.skipped, "perf says EACCES"):
			t.Errorf("the message %q does not say why", o.failed+o.skipped)
		}
	}
}

// TestTmux runs a shell in tmux: what it prints is on the screen, keys
// reach it, and its exit status is read back.
func TestTmux(t *testing.T) {
	tm := StartTmux(t, 40, 5, []string{"GREETING=hello"}, "sh", "-c", `echo "$GREETING from tmux"; read x; echo "got $x"; read y; exit 3`)
	tm.WaitForText("hello from tmux")
	if dead, _ := tm.Exited(); dead {
		t.Fatal("the shell exited before reading")
	}
	tm.SendKeys("abc", "Enter")
	screen := tm.WaitForText("got abc")
	if n := strings.Count(screen, "\n"); n != 5 {
		t.Errorf("screen of %d rows, want 5 (no status line):\n%s", n, screen)
	}
	tm.SendKeys("Enter")
	if code := tm.WaitExit(); code != 3 {
		t.Fatalf("exit status %d, want 3", code)
	}
}
