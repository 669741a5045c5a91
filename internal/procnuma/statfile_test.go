package procnuma

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
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
	// The busy loop accrues CPU ticks; the held file shows them. On a busy
	// machine the loop may wait for a CPU a long time before its first 10 ms
	// tick: the bound is time, not a count of reads (2 000 reads took 20 ms
	// and failed at load 24 on 2 CPUs).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if err := r.ReadStatFile(f, &s); err != nil {
			t.Fatal(err)
		}
		if s.UTime+s.STime > first.UTime+first.STime {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held stat file shows no CPU time passing in 30 s: %d ticks", s.UTime+s.STime)
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
	if string(a.Comm) != string(b.Comm) || a.StartTime != b.StartTime || a.StartTime == 0 || string(a.Comm) != "firsttouch" {
		t.Fatalf("two reads differ, or are not firsttouch's: %+v, %+v", a, b)
	}
	if _, err := r.OpenStat(4242); !errors.Is(err, ErrGone) {
		t.Fatalf("a missing process: %v, want a GoneError", err)
	}
}

// TestStatFileRefusesHostileFiles: what another local user could leave in
// a tree numascope reads (--root), or a kernel file gone wrong: a stat
// that is a symbolic link (to a file the attacker wants read, or one of
// their own), a stat too big to be one, a stat cut off. Each is an error,
// none is read as a process.
func TestStatFileRefusesHostileFiles(t *testing.T) {
	stat := func(root string) string { return filepath.Join(root, "proc", strconv.Itoa(vm4PID), "stat") }
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"symlink", func(t *testing.T, path string) {
			os.Remove(path)
			if err := os.Symlink("/etc/passwd", path); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"huge", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("9 "), 64<<10), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a kernel stat file"},
		{"cut off", func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data[:len(data)/3], 0o644); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := testutil.CopyTree(t, "testdata/vm4-compute")
			c.plant(t, stat(root))
			r := NewReader(sysfs.New(root))
			defer r.Close()
			s, err := readStatFile(r, vm4PID)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("read %+v, error %v; want an error saying %q", s, err, c.want)
			}
		})
	}
}

// readStatFile opens pid's stat, reads it and closes it.
func readStatFile(r *Reader, pid int) (Stat, error) {
	var s Stat
	f, err := r.OpenStat(pid)
	if err != nil {
		return s, err
	}
	defer f.Close()
	err = r.ReadStatFile(f, &s)
	return s, err
}
