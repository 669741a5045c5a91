package cli

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// reSummary reads record's summary line.
var reSummary = regexp.MustCompile(`recorded (\d+) samples to .* \((\d+) missed deadlines`)

// TestMissedDeadlinesOfAKnownStall is the fidelity check of the missed
// deadlines record reports (docs/fidelity.md): numascope recording at
// 10 ms is stopped (SIGSTOP) for a time the test measures with its own
// clock, about 600 ms, then continued: the deadlines that passed while it
// was stopped are known, and the summary and the recording's end must
// count them.
//
// Bounds, from the test's clock alone: at least the deadlines of the
// stall, its length over the interval less one (it lands anywhere within an
// interval); at most the deadlines of the whole run (from the start of the
// process to the SIGINT) that no sample served, whatever else a busy
// machine made numascope miss. A stall counted as one missed deadline, or
// its deadlines counted twice, fails.
func TestMissedDeadlinesOfAKnownStall(t *testing.T) {
	const interval = 10 * time.Millisecond
	dir := t.TempDir()
	out := filepath.Join(dir, "run.jsonl")
	cmd := numascopeCmd([]string{"record", "-o", out, "-i", "10ms", "-e", "vmstat.pgfault",
		"--ctl", filepath.Join(dir, "ctl"), "--sampler-node", "none"})
	var errb strings.Builder
	cmd.Stderr = &errb
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	ended := false
	t.Cleanup(func() {
		if !ended { // never signal a pid that may have been reused
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-waited
		}
	})
	// Recording: its file has a sample.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(out); err == nil && strings.Count(string(b), "\n[") >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("numascope wrote no samples in 10 s: %s", errb.String())
		}
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(600 * time.Millisecond)
	stalled := time.Since(t0)
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	total := time.Since(started)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		ended = true
		if err != nil {
			t.Fatalf("numascope: %v: %s", err, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("numascope did not end on SIGINT: %s", errb.String())
	}
	m := reSummary.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no summary line: %s", errb.String())
	}
	missed, _ := strconv.Atoi(m[2])
	r, err := recording.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.End == nil || r.End.MissedDeadlines != uint64(missed) {
		t.Errorf("the recording's end says %+v, the summary %d missed deadlines", r.End, missed)
	}
	// At least the stall's deadlines; at most every deadline of the run
	// that no sample served (the final sample, at the SIGINT, serves none).
	lo := math.Floor(float64(stalled)/float64(interval)) - 1
	hi := math.Ceil(float64(total)/float64(interval)) - float64(len(r.Samples)-1)
	t.Logf("stopped %.1f ms at %v, %.1f ms in all: %d missed, %d samples; want %v to %v", 1e3*stalled.Seconds(), interval,
		1e3*total.Seconds(), missed, len(r.Samples), lo, hi)
	if float64(missed) < lo || float64(missed) > hi {
		t.Errorf("%d missed deadlines and %d samples; stopped for %.1f ms at %v in %.1f ms: want %v (the stall's) to %v (every deadline no sample served)",
			missed, len(r.Samples), 1e3*stalled.Seconds(), interval, 1e3*total.Seconds(), lo, hi)
	}
}
