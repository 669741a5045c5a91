package beneath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// both runs f with openat2 and with the fallback walk.
func both(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("walk", func(t *testing.T) {
		useOpenat2 = false
		t.Cleanup(func() { useOpenat2 = true })
		f(t)
	})
}

// tree is dir/{ok.c, sub/ok.h, evil.c -> secret, link -> outside dir,
// sub/up -> .., sub/evil.h -> ../ok.c}, with secret outside dir.
func tree(t *testing.T) (dir, outside string) {
	root := t.TempDir()
	dir, outside = filepath.Join(root, "src"), filepath.Join(root, "outside")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "ok.c"), "int ok;\n")
	write(filepath.Join(dir, "sub", "ok.h"), "int h;\n")
	write(filepath.Join(outside, "secret"), "root:x:0:0\n")
	for link, target := range map[string]string{
		"evil.c":     filepath.Join(outside, "secret"),
		"link":       outside,
		"sub/up":     "..",
		"sub/evil.h": "../ok.c",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside
}

func TestOpenReadsOnlyBeneathWithoutSymlinks(t *testing.T) {
	both(t, func(t *testing.T) {
		dir, _ := tree(t)
		for name, want := range map[string]string{"ok.c": "int ok;\n", "sub/ok.h": "int h;\n", "./sub/../ok.c": ""} {
			f, err := Open(dir, name, 0)
			if want == "" {
				if !errors.Is(err, ErrOutside) {
					t.Errorf("Open %q: %v, want ErrOutside", name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("Open %q: %v", name, err)
			}
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != want {
				t.Errorf("Open %q read %q", name, b)
			}
		}
		for _, name := range []string{"evil.c", "link/secret", "sub/up/ok.c", "sub/evil.h"} {
			f, err := Open(dir, name, 0)
			if err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				t.Errorf("Open %q read %q through a symlink", name, b)
				continue
			}
			if !errors.Is(err, ErrSymlink) {
				t.Errorf("Open %q: %v, want ErrSymlink", name, err)
			}
		}
		for _, name := range []string{"../outside/secret", "/etc/passwd", "", "sub/../../outside/secret"} {
			if f, err := Open(dir, name, 0); err == nil {
				f.Close()
				t.Errorf("Open %q succeeded", name)
			} else if !errors.Is(err, ErrOutside) {
				t.Errorf("Open %q: %v, want ErrOutside", name, err)
			}
		}
		if _, err := Open(dir, "nothere.c", 0); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open of a missing file: %v, want not exist", err)
		}
	})
}

func TestCreateIsExclusiveAndNeverThroughASymlink(t *testing.T) {
	both(t, func(t *testing.T) {
		dir, outside := tree(t)
		f, err := Create(dir, "sub/new.jsonl", 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if st, err := os.Lstat(filepath.Join(dir, "sub", "new.jsonl")); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
			t.Fatalf("created file: %v %v", st, err)
		}
		if _, err := Create(dir, "sub/new.jsonl", 0o600); !errors.Is(err, fs.ErrExist) {
			t.Errorf("second Create: %v, want exists", err)
		}
		for _, name := range []string{"link/planted.jsonl", "evil.c", "sub/up/x.jsonl"} {
			if f, err := Create(dir, name, 0o600); err == nil {
				f.Close()
				t.Errorf("Create %q succeeded", name)
			}
		}
		if _, err := Create(dir, "../outside/x.jsonl", 0o600); !errors.Is(err, ErrOutside) {
			t.Errorf("Create ..: %v", err)
		}
		entries, _ := os.ReadDir(outside)
		if len(entries) != 1 {
			t.Errorf("something was written outside: %v", entries)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "root:x:0:0\n" {
			t.Errorf("the secret was changed: %q", b)
		}
	})
}

func TestRemoveStaysBeneath(t *testing.T) {
	both(t, func(t *testing.T) {
		dir, outside := tree(t)
		f, err := Create(dir, "sub/x.jsonl", 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := Remove(dir, "sub/x.jsonl"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "sub", "x.jsonl")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("not removed: %v", err)
		}
		if err := Remove(dir, "link/secret"); err == nil {
			t.Error("removed through a symlinked directory")
		}
		if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
			t.Errorf("the file outside is gone: %v", err)
		}
		f, err = Create(dir, "top.jsonl", 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := Remove(dir, "top.jsonl"); err != nil {
			t.Fatal(err)
		}
	})
}
