package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/ctl"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/web"
)

// controlFIFO opens a real control FIFO served by l.Control, as numascope
// live serves --ctl; what its server reports goes to the returned log.
func controlFIFO(t *testing.T, l *Live) (string, *logBuf) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ctl")
	log := &logBuf{}
	srv, err := ctl.Listen(path, func(err error) { log.add(err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	go l.Control(srv)
	return path, log
}

// writeRaw writes line to the FIFO at path as a script's echo would,
// without ctl.Send's checks.
func writeRaw(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// TestControlFIFOCommandsGoThroughDispatch: every command of a real control
// FIFO reaches the hub typed and is carried out by ctl.Dispatch, in order:
// every client sees the label, pause, resume and interval as marks, and the
// state of each.
func TestControlFIFOCommandsGoThroughDispatch(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	path, log := controlFIFO(t, l)
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	for _, line := range []string{"label phase 2", "pause", "resume", "interval 20ms"} {
		if err := ctl.Send(path, line); err != nil {
			t.Fatal(err)
		}
	}
	isMark := func(mark string) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == mark }
	}
	if m := c.Next("label", isMark("label")); m["text"] != "phase 2" {
		t.Errorf("label mark %v", m)
	}
	c.Next("pause", isMark("pause"))
	c.Next("resume", isMark("resume"))
	if m := c.Next("interval", isMark("interval")); m["interval_s"] != 0.02 {
		t.Errorf("interval mark %v, want 0.02 s", m)
	}
	c.Next("state at 20ms", func(m map[string]any) bool {
		return m["type"] == "state" && m["state"].(map[string]any)["interval_s"] == 0.02
	})
	if len(log.lines) != 0 {
		t.Errorf("the FIFO reported %q", log.lines)
	}
}

// TestMalformedControlCommandIsReportedAsStatReportsIt: a malformed line on
// live's FIFO is one line naming the FIFO, the line and the valid commands,
// word for word what stat and record (ctl.Server.Serve) report for it, and
// it changes nothing: the next command is carried out.
func TestMalformedControlCommandIsReportedAsStatReportsIt(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	livePath, liveLog := controlFIFO(t, l)

	// stat's and record's way: ctl.Server.Serve on a session.
	statPath := filepath.Join(t.TempDir(), "ctl")
	statLog := &logBuf{}
	statSrv, err := ctl.Listen(statPath, func(err error) { statLog.add(err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	defer statSrv.Close()
	go statSrv.Serve(nopTarget{})

	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	for _, line := range []string{"interval fast", "lable x", "pause now"} {
		writeRaw(t, livePath, line)
		writeRaw(t, statPath, line)
	}
	if err := ctl.Send(livePath, "label after"); err != nil {
		t.Fatal(err)
	}
	c.Next("label after", func(m map[string]any) bool { return m["type"] == "mark" && m["text"] == "after" })
	deadline := time.Now().Add(10 * time.Second)
	for {
		liveLog.mu.Lock()
		statLog.mu.Lock()
		got := strings.ReplaceAll(strings.Join(liveLog.lines, "\n"), livePath, "FIFO")
		want := strings.ReplaceAll(strings.Join(statLog.lines, "\n"), statPath, "FIFO")
		n := len(liveLog.lines)
		statLog.mu.Unlock()
		liveLog.mu.Unlock()
		if n == 3 && got == want {
			for _, line := range strings.Split(got, "\n") {
				if !strings.HasPrefix(line, "control FIFO FIFO: ignored ") || !strings.Contains(line, "valid commands:") {
					t.Errorf("reported %q: want the FIFO, the line and the valid commands", line)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("live reported\n%s\nstat reported\n%s", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type nopTarget struct{}

func (nopTarget) Record(string)                   {}
func (nopTarget) Label(string)                    {}
func (nopTarget) Pause()                          {}
func (nopTarget) Resume()                         {}
func (nopTarget) SetInterval(time.Duration) error { return nil }
