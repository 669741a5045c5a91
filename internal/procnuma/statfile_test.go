package procnuma

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
)

// TestStatFileFollowsItsProcess: a held stat file reads its process again
// and again (its CPU time grows), and once the process has exited and been
// reaped every read is a GoneError, never another process's stat.
func TestStatFileFollowsItsProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid

	r := NewReader(sysfs.New(""))
	defer r.Close()
	f, err := r.OpenStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.PID() != pid {
		t.Fatalf("PID %d, want %d", f.PID(), pid)
	}
	var first, s Stat
	if err := r.ReadStatFile(f, &first); err != nil {
		t.Fatal(err)
	}
	if string(first.Comm) != "sh" {
		t.Fatalf("comm %q, want sh", first.Comm)
	}
	// The busy loop accrues CPU ticks; the held file shows them.
	for i := 0; ; i++ {
		if err := r.ReadStatFile(f, &s); err != nil {
			t.Fatal(err)
		}
		if s.UTime+s.STime > first.UTime+first.STime {
			break
		}
		if i == 2000 {
			t.Fatalf("the held stat file shows no CPU time passing: %d ticks", s.UTime+s.STime)
		}
		var path Stat
		if err := r.ReadStat(pid, 0, &path); err != nil { // a path read between, as a refresh may do
			t.Fatal(err)
		}
	}
	if s.StartTime != first.StartTime {
		t.Fatalf("start time changed from %d to %d", first.StartTime, s.StartTime)
	}

	cmd.Process.Kill()
	cmd.Wait()
	err = r.ReadStatFile(f, &s)
	var g *GoneError
	if !errors.As(err, &g) || g.PID != pid {
		t.Fatalf("read after the process exited: %v, want a GoneError for %d", err, pid)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := r.ReadStatFile(f, &s); err == nil {
		t.Fatal("a read after Close succeeded")
	}
}

// TestStatFileOnCapturedTree: under --root the held file is a plain file,
// read at offset 0 each time; a missing process is a GoneError.
func TestStatFileOnCapturedTree(t *testing.T) {
	r := NewReader(sysfs.New("testdata/vm4-compute"))
	defer r.Close()
	f, err := r.OpenStat(vm4PID)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var a, b Stat
	if err := r.ReadStatFile(f, &a); err != nil {
		t.Fatal(err)
	}
	if err := r.ReadStatFile(f, &b); err != nil {
		t.Fatal(err)
	}
	if string(a.Comm) != string(b.Comm) || a.StartTime != b.StartTime || a.StartTime == 0 {
		t.Fatalf("two reads differ: %+v, %+v", a, b)
	}
	if _, err := r.OpenStat(4242); !errors.Is(err, ErrGone) {
		t.Fatalf("a missing process: %v, want a GoneError", err)
	}
}
