package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// startLive starts numascope live with args on a free port, sampling
// vmstat.pgfault every 10 ms; it is killed at the end of the test if it
// is still running. wait sends sig (unless 0) and waits at most 10 s for
// it to end.
func startLive(t *testing.T, args ...string) (stderr *strings.Builder, wait func(sig syscall.Signal) error) {
	t.Helper()
	cmd := numascopeCmd(append([]string{"live", "--listen", "127.0.0.1:0", "-i", "10ms", "-e", "vmstat.pgfault",
		"--sampler-node", "none"}, args...))
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return stderr, func(sig syscall.Signal) error {
		if sig != 0 {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case err := <-waited:
			return err
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
			t.Fatalf("numascope live did not end: %s", stderr)
			return nil
		}
	}
}

// TestLiveControlFIFO steers numascope live as a user would, with numascope
// ctl on its --ctl FIFO: a label, then a switch to another file. After
// SIGINT both files are closed cleanly: the first holds the label, the
// second the samples since the switch.
func TestLiveControlFIFO(t *testing.T) {
	dir := t.TempDir()
	a, b, fifo := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.zst"), filepath.Join(dir, "ctl")
	stderr, wait := startLive(t, "--ctl", fifo, "-o", a)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if fi, err := os.Stat(fifo); err == nil && fi.Mode().Type() == os.ModeNamedPipe {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control FIFO at %s: %s", fifo, stderr)
		}
	}
	for _, cmd := range [][]string{{"label", "from ctl"}, {"record", b}} {
		if out, code := numascope(t, append([]string{"ctl", "--ctl", fifo}, cmd...)); code != 0 {
			t.Fatalf("ctl %v: exit %d, %s", cmd, code, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := wait(syscall.SIGINT); err != nil {
		t.Fatalf("live ended with %v: %s", err, stderr)
	}
	ra, err := recording.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if l := ra.Labels(); ra.End == nil || len(l) != 1 || l[0].Text != "from ctl" {
		t.Errorf("%s: end %+v, labels %+v; want a clean end and the label", a, ra.End, l)
	}
	rb, err := recording.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if rb.End == nil || len(rb.Samples) < 5 {
		t.Errorf("%s: end %+v, %d samples", b, rb.End, len(rb.Samples))
	}
}

// TestLiveRefusesAnUnusableCtl: a --ctl path that cannot be listened on is
// an error for live as for stat and record, not a silently missing FIFO.
func TestLiveRefusesAnUnusableCtl(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "nodir", "ctl")
	stderr, wait := startLive(t, "--ctl", fifo)
	err := wait(0)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "--ctl: ") {
		t.Errorf("live --ctl %s: %v, stderr %q; want it to stop with a --ctl error", fifo, err, stderr)
	}
}
