package ctl

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// calls is a Target that writes down each call (in an errLog, as text);
// it refuses intervals above a second, as a sampler refuses intervals out
// of its range.
type calls struct{ errLog }

func (c *calls) add(s string)       { c.errLog.add(errors.New(s)) }
func (c *calls) get() []string      { return c.messages() }
func (c *calls) Record(path string) { c.add("record " + path) }
func (c *calls) Label(text string)  { c.add("label " + text) }
func (c *calls) Pause()             { c.add("pause") }
func (c *calls) Resume()            { c.add("resume") }
func (c *calls) SetInterval(d time.Duration) error {
	if d > time.Second {
		return errors.New("too long")
	}
	c.add(fmt.Sprint("interval ", d))
	return nil
}

// TestDispatchReachesTheTarget: each command reaches its call, with its
// argument; a refused interval is an error naming the command.
func TestDispatchReachesTheTarget(t *testing.T) {
	var c calls
	for _, line := range []string{"record /tmp/x.jsonl", "label phase 2", "pause", "resume", "interval 250us"} {
		cmd, err := Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if err := Dispatch(&c, cmd); err != nil {
			t.Fatalf("Dispatch(%q): %v", line, err)
		}
	}
	want := "record /tmp/x.jsonl|label phase 2|pause|resume|interval 250µs"
	if got := strings.Join(c.get(), "|"); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	err := Dispatch(&c, Command{Op: OpInterval, Interval: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "interval") || !strings.Contains(err.Error(), "too long") {
		t.Errorf("refused interval: %v, want an error naming interval and the cause", err)
	}
	if err := Dispatch(&c, Command{}); err == nil || !strings.Contains(err.Error(), "valid commands") {
		t.Errorf("zero command: %v", err)
	}
	if n := len(c.get()); n != 5 {
		t.Errorf("%d calls after the refused ones, want 5", n)
	}
}

// TestServeCarriesOutFIFOCommands sends commands through a real FIFO: Serve
// hands each to the target in order and reports a refused interval to the
// server's onError without stopping.
func TestServeCarriesOutFIFOCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	var c calls
	served := make(chan struct{})
	go func() { s.Serve(&c); close(served) }()
	for _, line := range []string{"label a", "interval 2s", "pause", "interval 100ms", "resume", "record /r.jsonl.zst"} {
		if err := Send(path, line); err != nil {
			t.Fatal(err)
		}
	}
	want := "label a|pause|interval 100ms|resume|record /r.jsonl.zst"
	deadline := time.Now().Add(waitFor)
	for strings.Join(c.get(), "|") != want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := strings.Join(c.get(), "|"); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	if m := log.messages(); len(m) != 1 || !strings.Contains(m[0], "interval: too long") {
		t.Errorf("reported %q, want the refused interval", m)
	}
	s.Close()
	select {
	case <-served:
	case <-time.After(waitFor):
		t.Fatal("Serve did not return after Close")
	}
}
