package benchtest

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchRSSRefusesSettleNotBelowSeconds: scripts/bench-rss counts RSS
// towards the steady state only after --settle, so with --settle at or
// above --seconds no reading counted, the largest was 0 and --max-mib
// passed whatever the RSS. It must refuse those arguments before it
// builds or runs anything (the binary named here does not exist).
func TestBenchRSSRefusesSettleNotBelowSeconds(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found: scripts/bench-rss needs it (scripts/install-test-deps)")
	}
	script := filepath.Join("..", "..", "scripts", "bench-rss")
	for _, args := range [][]string{{"--seconds", "5", "--settle", "10"}, {"--seconds", "10", "--settle", "10"}, {"--seconds", "0", "--settle", "-1"}} {
		cmd := exec.Command(python, append([]string{script, "--max-mib", "1", "--binary", "/nonexistent/numascope"}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "must be below --seconds") {
			t.Errorf("bench-rss %s: %v, output:\n%s\nwant exit status 2 and the refusal of --settle", strings.Join(args, " "), err, out)
		}
	}
}
