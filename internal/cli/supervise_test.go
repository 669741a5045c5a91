package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testSession is a quiet session sampling one counter every 10 ms.
func testSession(t *testing.T) *session {
	t.Helper()
	dir := t.TempDir()
	s, err := newSession(&globals{}, sessionConfig{patterns: []string{"vmstat.pgfault"}, interval: 10 * time.Millisecond,
		ctl: filepath.Join(dir, "ctl"), samplerNode: "none", record: filepath.Join(dir, "r.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunCommandStatus: a command's exit status and the signal that killed
// it come back, with its output in the output file, and the recording has
// the sample after its end.
func TestRunCommandStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{{"echo hi; exit 3", 3, 0}, {"echo hi; kill -KILL $$", 128 + 9, syscall.SIGKILL}} {
		s := testSession(t)
		out := filepath.Join(t.TempDir(), "out")
		run, err := s.runCommand(context.Background(), supervision{argv: []string{"sh", "-c", c.script}, output: out,
			lastSample: time.Second})
		if err != nil || run.sampling != nil {
			t.Fatalf("%q: %v, sampling %v", c.script, err, run.sampling)
		}
		code, sig, err := run.status()
		if code != c.code || sig != c.sig || err != nil {
			t.Errorf("%q: status %d, signal %v, %v; want %d, %v", c.script, code, sig, err, c.code, c.sig)
		}
		if b, _ := os.ReadFile(out); string(b) != "hi\n" {
			t.Errorf("%q: output %q", c.script, b)
		}
		if run.start.IsZero() || run.wall <= 0 {
			t.Errorf("%q: start %v, wall %v", c.script, run.start, run.wall)
		}
		if s.rec.Written() < 1 {
			t.Errorf("%q: %d samples recorded", c.script, s.rec.Written())
		}
	}
}

// TestRunCommandStops: a timeout or a cancelled context stops the
// command (SIGTERM to its process group) well before the grace period, and
// a command that cannot start is a *startError.
func TestRunCommandStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for _, c := range []struct {
		ctx     context.Context
		timeout time.Duration
		want    error
	}{{context.Background(), 300 * time.Millisecond, errTimedOut}, {ctx, 0, context.DeadlineExceeded}} {
		s := testSession(t)
		began := time.Now()
		_, err := s.runCommand(c.ctx, supervision{argv: []string{"sh", "-c", "sleep 30; echo late"},
			output: filepath.Join(t.TempDir(), "out"), timeout: c.timeout})
		if !errors.Is(err, c.want) {
			t.Errorf("error %v, want %v", err, c.want)
		}
		if d := time.Since(began); d > stopGrace {
			t.Errorf("stopping took %v: SIGTERM did not reach the group", d)
		}
	}
	s := testSession(t)
	_, err := s.runCommand(context.Background(), supervision{argv: []string{filepath.Join(t.TempDir(), "absent")}, relay: true})
	var se *startError
	if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "cannot run ") {
		t.Errorf("start failure: %v", err)
	}
}
