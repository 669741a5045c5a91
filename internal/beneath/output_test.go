package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

const nobody = 65534

// outTree is root/{target/, mine -> target (the caller's), rel -> ./target
// (relative, the caller's), theirs -> target (nobody's), chain -> theirs
// (the caller's, to nobody's), deep/ -> ... }: the links a user could plant,
// beside the ones an administrator or the caller made. fs.protected_symlinks
// does not apply: root is not sticky nor world-writable, so the refusals are
// numascope's own.
func outTree(t *testing.T) (root, target string) {
	t.Helper()
	testutil.RequireRoot(t, "to give a symbolic link another owner (lchown to nobody)")
	root = t.TempDir()
	target = filepath.Join(root, "target")
	if err := os.MkdirAll(filepath.Join(target, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		"mine": target, "rel": "./target", "theirs": target, "chain": "theirs",
		"target/sub/up": "../..", "target/sub/theirs-up": "..",
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"theirs", "target/sub/theirs-up"} {
		if err := os.Lchown(filepath.Join(root, l), nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	return root, target
}

func TestOpenOutputDirFollowsOnlyTrustedLinks(t *testing.T) {
	root, target := outTree(t)
	for _, dir := range []string{target, filepath.Join(root, "mine"), filepath.Join(root, "rel"),
		filepath.Join(root, "mine", "sub", ".."), filepath.Join(target, "sub", "up", "target"), filepath.Join(root, "mine") + "/"} {
		d, err := OpenOutputDir(dir)
		if err != nil {
			t.Errorf("OpenOutputDir(%s): %v", dir, err)
			continue
		}
		f, err := d.Create("x.out", true, 0o644)
		if err != nil {
			t.Errorf("Create in %s: %v", dir, err)
		} else {
			f.Close()
		}
		d.Close()
		if _, err := os.Stat(filepath.Join(target, "x.out")); err != nil {
			t.Errorf("OpenOutputDir(%s) did not lead to %s: %v", dir, target, err)
		}
		os.Remove(filepath.Join(target, "x.out"))
	}
	for dir, link := range map[string]string{
		filepath.Join(root, "theirs"):                       filepath.Join(root, "theirs"),
		filepath.Join(root, "theirs", "sub"):                filepath.Join(root, "theirs"),
		filepath.Join(root, "chain"):                        filepath.Join(root, "theirs"),
		filepath.Join(target, "sub", "theirs-up"):           filepath.Join(target, "sub", "theirs-up"),
		filepath.Join(target, "sub", "theirs-up", "target"): filepath.Join(target, "sub", "theirs-up"),
	} {
		d, err := OpenOutputDir(dir)
		var se *SymlinkError
		if !errors.As(err, &se) {
			t.Errorf("OpenOutputDir(%s): %v, want a SymlinkError", dir, err)
			if d != nil {
				d.Close()
			}
			continue
		}
		msg := err.Error()
		for _, want := range []string{link + " is a symbolic link", "owned by ", "uid 65534", "numascope follows only links owned by root:", "name the real directory"} {
			if !strings.Contains(msg, want) {
				t.Errorf("OpenOutputDir(%s): %q lacks %q", dir, msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("OpenOutputDir(%s): not one line: %q", dir, msg)
		}
	}
	// A loop of the caller's own links ends.
	if err := os.Symlink("loop", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenOutputDir(filepath.Join(root, "loop")); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a symlink loop: %v, want ELOOP", err)
	}
	if _, err := OpenOutputDir(filepath.Join(root, "nope", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v, want ErrNotExist", err)
	}
}

// TestOutDirCreate: a new file, an existing one only with force, never a
// symlink in its place (even the caller's), a FIFO refused without
// blocking, a file with another hard link refused.
func TestOutDirCreate(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenOutputDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	write("old", "old contents")
	write("precious", "precious")
	if err := os.Link(filepath.Join(dir, "precious"), filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("precious", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create("old", false, 0o644); !errors.Is(err, os.ErrExist) {
		t.Errorf("existing file without force: %v", err)
	}
	f, err := d.Create("old", true, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	f.Close()
	if got := read("old"); got != "new" {
		t.Errorf("forced Create left %q", got)
	}
	if _, err := d.Create("hard", true, 0o644); !errors.Is(err, ErrHardLink) {
		t.Errorf("a file with another hard link: %v", err)
	}
	if _, err := d.Create("link", true, 0o644); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a symlink in the file's place: %v", err)
	}
	if got := read("precious"); got != "precious" {
		t.Errorf("precious became %q", got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Create("fifo", true, 0o644)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("a FIFO in the file's place: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Create blocked on a FIFO")
	}
	// The temporary file, renamed and linked into place.
	tmp, name, err := d.CreateTemp(".p.json.")
	if err != nil {
		t.Fatal(err)
	}
	tmp.WriteString("tmp")
	tmp.Close()
	if err := d.Link(name, "old"); !errors.Is(err, os.ErrExist) {
		t.Errorf("Link over an existing file: %v", err)
	}
	if err := d.Rename(name, "link"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || !fi.Mode().IsRegular() || read("link") != "tmp" {
		t.Errorf("Rename over a symlink: %v, %q (the link must be replaced)", err, read("link"))
	}
	if got := read("precious"); got != "precious" {
		t.Errorf("precious became %q", got)
	}
}
