package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeScanner points SetScanRate at a directory of knob files with the given
// values (scan_delay_ms, scan_period_min_ms, scan_period_max_ms).
func fakeScanner(t *testing.T, vals ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, k := range scanKnobs {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(vals[i]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved := scanDirs
	scanDirs = []struct{ dir, suffix string }{{dir, ""}}
	t.Cleanup(func() { scanDirs = saved })
	return dir
}

func knobs(t *testing.T, dir string) string {
	t.Helper()
	var v []string
	for _, k := range scanKnobs {
		b, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil {
			t.Fatal(err)
		}
		v = append(v, strings.TrimSpace(string(b)))
	}
	return strings.Join(v, " ")
}

func TestScanRateRestore(t *testing.T) {
	dir := fakeScanner(t, "1000", "1000", "60000")
	s, err := SetScanRate(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got := knobs(t, dir); got != "50 50 500" {
		t.Errorf("during the run: %s, want 50 50 500", got)
	}
	if err := s.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := knobs(t, dir); got != "1000 1000 60000" {
		t.Errorf("after Restore: %s, want the old 1000 1000 60000", got)
	}
}

// The guard that restores after SIGKILL is knob's, tested there
// (TestGuardRestoresAfterKill) and in the VM (TestProfile's kill -9).

func TestScanRateErrors(t *testing.T) {
	fakeScanner(t, "1", "1", "1")
	if _, err := SetScanRate(0); err == nil {
		t.Error("--scan-rate 0: no error")
	}
	scanDirs = []struct{ dir, suffix string }{{filepath.Join(t.TempDir(), "none"), ""}}
	if _, err := SetScanRate(time.Second); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("no scanner settings: error %v, want one saying they are not found", err)
	}
}
