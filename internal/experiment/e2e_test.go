package experiment

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// buildNumascope builds the real binary for the end-to-end test.
func buildNumascope(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "numascope")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/numascope").CombinedOutput()
	if err != nil {
		t.Fatalf("building numascope: %v\n%s", err, out)
	}
	return bin
}

// TestEndToEnd runs `numascope experiment` on this machine: two regimes
// through `numascope run`, a factor, numascope's own recording of every run;
// it is interrupted with SIGINT mid-way, then resumed to completion, and
// the analysis and markdown report come out.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	bin := buildNumascope(t)
	dir := t.TempDir()
	spec := `name = "e2e"
command = "sleep 0.{ms}; head -c {mb}M /dev/zero | tail -c 1 > /dev/null"
replications = 2
warmup = 1
seed = 11
interval = "20ms"
events = ["node.numa_hit", "node.local_node", "vmstat.pgfault"]
responses = ["wall_time", "exit_status", "total:node.numa_hit", "rate:vmstat.pgfault"]

[[factor]]
name = "ms"
levels = ["05", "25"]

[[factor]]
name = "mb"
levels = [1, 8]

[[regime]]
name = "first-touch"
policy = "first-touch"

[[regime]]
name = "local"
policy = "local"
`
	path := filepath.Join(dir, "e2e.toml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+dir)

	// First attempt: interrupt after the third run.
	cmd := exec.Command(bin, "experiment", path)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "[3/17]") {
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("interrupted experiment: %v, want exit status 130\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "run the same command again to resume") {
		t.Errorf("no resume hint:\n%s", log.String())
	}
	_, partial, err := LoadResults(filepath.Join(dir, "e2e.results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(partial) < 3 || len(partial) >= 17 {
		t.Fatalf("%d runs done after the interruption\n%s", len(partial), log.String())
	}

	// Resume to completion, with a markdown report.
	report := filepath.Join(dir, "report.md")
	cmd = exec.Command(bin, "experiment", path, "--report", report)
	cmd.Env = env
	var stdout, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("resumed experiment: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "resuming: ") || !strings.Contains(errb.String(), "[17/17]") {
		t.Errorf("resume progress:\n%s", errb.String())
	}
	_, results, err := LoadResults(filepath.Join(dir, "e2e.results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 17 {
		t.Fatalf("%d results, want 17", len(results))
	}
	for i, r := range results {
		if r.Run != i {
			t.Fatalf("result %d is run %d", i, r.Run)
		}
		if _, err := os.Stat(r.Recording); err != nil {
			t.Errorf("run %d: its recording: %v", i, err)
		}
		if r.ExitStatus != 0 {
			t.Errorf("run %d exited %d", i, r.ExitStatus)
		}
		// sleep 0.25 vs 0.05: the wall time shows the factor.
		min := 0.05
		if r.Levels["ms"] == "25" {
			min = 0.25
		}
		if r.WallTime < min || r.WallTime > min+5 {
			t.Errorf("run %d (%v): wall time %.3f s", i, r.Levels, r.WallTime)
		}
		// head -c 8M faults in at least 8 MiB of pages... in pipes' buffers
		// at least: some page faults must be counted.
		if v := r.Responses["total:node.numa_hit"]; v == nil || *v <= 0 {
			t.Errorf("run %d: numa_hit total %v", i, v)
		}
	}
	out := stdout.String()
	for _, want := range []string{"ANOVA of wall_time", "ms: significant at 90% confidence", "exit_status: no analysis: every run gave 0",
		"local vs first-touch: speedup", "node.numa_hit"} {
		if !strings.Contains(out, want) {
			t.Errorf("the analysis lacks %q:\n%s", want, out)
		}
	}
	md, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(md), "# Experiment e2e") {
		t.Errorf("report: %v\n%s", err, md)
	}
	// The analysis can be redone from the results alone.
	cmd = exec.Command(bin, "experiment", path, "--analyze", "--format", "json")
	cmd.Env = env
	js, err := cmd.Output()
	if err != nil || !bytes.Contains(js, []byte(`"percent_variation"`)) {
		t.Errorf("--analyze --format json: %v\n%s", err, js)
	}
}
