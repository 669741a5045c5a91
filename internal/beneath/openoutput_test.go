package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenOutputResumesOnlyRegularFiles: the resumed output (an
// experiment's results) keeps what the file holds, and, as numascope may
// run as root, refuses without blocking a FIFO planted in its place, a
// symbolic link there (never followed) and a file with another hard link.
func TestOpenOutputResumesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept")
	if err := os.WriteFile(kept, []byte("line 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenOutput(kept, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	n, _ := f.Read(b)
	f.Close()
	if string(b[:n]) != "line 1\n" {
		t.Fatalf("OpenOutput lost what the file held: %q", b[:n])
	}
	fresh := filepath.Join(dir, "fresh")
	if f, err := OpenOutput(fresh, 0o644); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}

	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(target, hard); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{fifo: ErrNotRegular, link: unix.ELOOP, hard: ErrHardLink} {
		if f, err := OpenOutput(path, 0o644); !errors.Is(err, want) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenOutput(%s): %v, want %v", filepath.Base(path), err, want)
		}
		if f, err := CreateOutput(path, true, 0o644); !errors.Is(err, want) {
			if f != nil {
				f.Close()
			}
			t.Errorf("CreateOutput(%s, force): %v, want %v", filepath.Base(path), err, want)
		}
	}
}
