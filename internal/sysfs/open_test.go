package sysfs

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesWhatIsNotAFile: a real FIFO (with and without a
// writer), a real listening socket and a directory where a kernel file
// should be are refused, each named, without blocking; a regular file is
// read whole.
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo, sock, file := filepath.Join(dir, "vmstat"), filepath.Join(dir, "stat"), filepath.Join(dir, "meminfo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(file, []byte("MemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(path, kind string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(path)
			done <- err
		}()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Kind != kind || !strings.HasPrefix(err.Error(), path+" is a "+kind+", not a kernel file: ") {
				t.Errorf("ReadFile(%s): %v, want it refused as a %s", path, err, kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", path)
		}
	}
	check(fifo, "FIFO")
	check(sock, "socket")
	check(dir, "directory")
	// A writer holding the FIFO open changes nothing.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	check(fifo, "FIFO")
	if b, err := ReadFile(file); err != nil || string(b) != "MemFree: 1 kB\n" {
		t.Errorf("ReadFile(a regular file) = %q, %v", b, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(a missing file): %v, want ErrNotExist", err)
	}
	if f, err := Open(file); err != nil {
		t.Error(err)
	} else {
		f.Close()
	}
}
