package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "internal", "testutil", "testutil.go")); err != nil {
		t.Errorf("RepoRoot = %s, which does not hold this package: %v", root, err)
	}
}

func TestMarkedLine(t *testing.T) {
	lines := []string{"a", "b /* @init */", "c /* @compute */"}
	if got := MarkedLine(t, lines, "compute"); got != 3 {
		t.Errorf("MarkedLine(compute) = %d, want 3", got)
	}
	path := filepath.Join(t.TempDir(), "w.c")
	if err := os.WriteFile(path, []byte("x\n/* @init */ y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := MarkedLineIn(t, path, "init"); got != 2 {
		t.Errorf("MarkedLineIn(init) = %d, want 2", got)
	}
}

func TestRun(t *testing.T) {
	out, errs, code := Run(t, exec.Command("sh", "-c", "echo out; echo err >&2; exit 3"))
	if out != "out\n" || errs != "err\n" || code != 3 {
		t.Errorf("Run = %q, %q, %d; want out, err, 3", out, errs, code)
	}
}
