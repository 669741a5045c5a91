package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TmuxRequired makes the terminal-interface tests that drive a program
// through tmux (Debian's tmux) fail rather than skip when tmux is missing.
const TmuxRequired = "NUMASCOPE_TMUX_REQUIRED"

// tmuxWait is how long Tmux waits for the screen to show what a test
// expects: long, for a loaded machine running the race detector; a passing
// test waits only as long as the program takes.
const tmuxWait = 30 * time.Second

// Tmux is a program running in a detached tmux session of its own, on a
// private tmux server (its own socket), so that a test drives a terminal
// interface the way a user does: keys in (send-keys), screen out
// (capture-pane). The server is killed at the end of the test.
type Tmux struct {
	t      testing.TB
	tmux   string // the tmux binary
	socket string
	target string
	status string // the file the program's exit status is written to
}

// StartTmux runs argv (with env added to the test's environment) in a new
// width×height tmux window. The pane, and its last screen, stay after the
// program exits. Without tmux the test skips, or
// fails when NUMASCOPE_TMUX_REQUIRED is set, as scripts/test does.
func StartTmux(t testing.TB, width, height int, env []string, argv ...string) *Tmux {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		SkipUnless(t, TmuxRequired, "tmux is not installed (sudo scripts/install-test-deps installs Debian's tmux)")
	}
	// A short directory: a socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "tmux")
	if err != nil {
		t.Fatal(err)
	}
	s := &Tmux{t: t, tmux: tmux, socket: filepath.Join(dir, "s"), target: "t", status: filepath.Join(dir, "status")}
	conf := filepath.Join(dir, "tmux.conf")
	// No status line: the program has every row. remain-on-exit keeps the
	// pane, and its exit status, after the program ends.
	if err := os.WriteFile(conf, []byte("set -g status off\nset -g remain-on-exit on\nset -g history-limit 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command(tmux, "-S", s.socket, "kill-server").Run()
		os.RemoveAll(dir)
	})
	// A shell runs argv through env, which adds the variables, and writes
	// its exit status to a file: tmux's own pane_dead_status is sometimes
	// never filled in (tmux 3.3a, a pane whose terminal closed before its
	// program was reaped).
	args := []string{"-S", s.socket, "-f", conf, "new-session", "-d", "-s", s.target,
		"-x", strconv.Itoa(width), "-y", strconv.Itoa(height), "--",
		"sh", "-c", `"$@"; echo $? >"$0.tmp" && mv "$0.tmp" "$0"`, s.status, "env"}
	args = append(append(args, env...), argv...)
	cmd := exec.Command(tmux, args...)
	cmd.Env = append(os.Environ(), "TMUX=", "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	return s
}

// tmux runs a tmux command against the session's server.
func (s *Tmux) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// SendKeys types keys as tmux's send-keys names them: text ("q", "/db"),
// or key names ("Enter", "Escape", "Up", "NPage", "C-c", "Space", "BSpace").
func (s *Tmux) SendKeys(keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys", "-t", s.target}, keys...)...)
}

// Screen is the visible screen as text, one line per row, without colours
// or attributes.
func (s *Tmux) Screen() string {
	s.t.Helper()
	return s.run("capture-pane", "-p", "-t", s.target)
}

// Format is a tmux format expanded for the pane, such as "#{pane_title}".
func (s *Tmux) Format(f string) string {
	s.t.Helper()
	return strings.TrimSuffix(s.run("display-message", "-p", "-t", s.target, f), "\n")
}

// WaitFor polls the screen until ok holds for it, and returns that screen;
// after a long wait it fails the test, saying what was awaited and showing
// the last screen.
func (s *Tmux) WaitFor(what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(tmuxWait)
	for {
		screen := s.Screen()
		if ok(screen) {
			return screen
		}
		if dead, code := s.Exited(); dead {
			s.t.Fatalf("waiting for %s: the program exited (status %d); its screen:\n%s", what, code, screen)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waiting for %s: not there after %s; the screen:\n%s", what, tmuxWait, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitForText waits until the screen holds every one of texts.
func (s *Tmux) WaitForText(texts ...string) string {
	s.t.Helper()
	return s.WaitFor(fmt.Sprintf("%q", texts), func(screen string) bool {
		for _, x := range texts {
			if !strings.Contains(screen, x) {
				return false
			}
		}
		return true
	})
}

// Exited reports whether the program has ended, and its exit status (128
// plus the signal's number when a signal ended it, as a shell says).
func (s *Tmux) Exited() (bool, int) {
	s.t.Helper()
	b, err := os.ReadFile(s.status)
	if os.IsNotExist(err) {
		return false, 0
	}
	if err != nil {
		s.t.Fatal(err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		s.t.Fatalf("exit status file %s: %q", s.status, b)
	}
	return true, code
}

// WaitExit waits until the program ends and returns its exit status.
func (s *Tmux) WaitExit() int {
	s.t.Helper()
	deadline := time.Now().Add(tmuxWait)
	for {
		if dead, code := s.Exited(); dead {
			return code
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the program did not exit within %s; the screen:\n%s", tmuxWait, s.Screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
