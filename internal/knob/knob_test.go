package knob

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func files(t *testing.T, vals ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for i, v := range vals {
		p := filepath.Join(dir, "knob"+string(rune('a'+i)))
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func read(t *testing.T, fs []string) string {
	t.Helper()
	var v []string
	for _, f := range fs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v = append(v, strings.TrimSpace(string(b)))
	}
	return strings.Join(v, " ")
}

func TestSetRestore(t *testing.T) {
	fs := files(t, "1", "1000")
	g, err := Set("test", fs, []string{"0", "50"})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, fs); got != "0 50" {
		t.Errorf("during: %s, want 0 50", got)
	}
	if g.Old(1) != "1000" {
		t.Errorf("Old(1) = %q, want 1000", g.Old(1))
	}
	if err := g.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(); err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	if got := read(t, fs); got != "1 1000" {
		t.Errorf("after Restore: %s, want 1 1000", got)
	}
}

// TestGuardRestoresAfterKill: when numascope dies without restoring
// (SIGKILL), the kernel closes its end of the guard's pipe and the guard
// restores.
func TestGuardRestoresAfterKill(t *testing.T) {
	fs := files(t, "1")
	g, err := Set("test", fs, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.abandon(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, fs); got != "1" {
		t.Errorf("after the guard: %s, want the old 1", got)
	}
}

func TestSetErrors(t *testing.T) {
	if _, err := Set("test", []string{filepath.Join(t.TempDir(), "none")}, []string{"0"}); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := Set("test", []string{"a"}, nil); err == nil {
		t.Error("mismatched lengths: no error")
	}
}
