package profile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/cli"
	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/testutil"
)

// TestMain lets this test binary serve as numascope profile's background
// closer of perf events: cli.Main profile, run in-process below, starts
// os.Executable() (this binary) with profile.CloserArg.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == profile.CloserArg {
		os.Exit(profile.RunCloser())
	}
	os.Exit(m.Run())
}

// TestCommandLine runs numascope profile end to end: the command's exit
// status comes back, and the profile file is written with its keys even
// though the command failed.
func TestCommandLine(t *testing.T) {
	if os.Geteuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err != nil || strings.TrimSpace(string(b)) > "1" {
			testutil.NotPermitted(t, "perf sampling needs root or kernel.perf_event_paranoid <= 1")
		}
	}
	out := filepath.Join(t.TempDir(), "p.json")
	if rc := cli.Main([]string{"profile", "-o", out, "--", "sh", "-c", "exit 7"}); rc != 7 {
		t.Fatalf("numascope profile -- sh -c 'exit 7' returned %d, want 7", rc)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	for _, k := range []string{"totals", "access_matrix", "locations", "threads"} {
		if _, ok := m[k]; !ok {
			t.Errorf("profile has no key %q", k)
		}
	}
	if m["exit_status"] != 7.0 {
		t.Errorf("exit_status %v, want 7", m["exit_status"])
	}
	// Bad usage is an error before anything runs, and writes nothing.
	bad := filepath.Join(t.TempDir(), "bad.json")
	for _, args := range [][]string{
		{"profile", "-o", bad},
		{"profile", "-o", bad, "--format", "csv", "--", "true"},
		{"profile", "-o", bad, "true"},
		{"profile", "-o", bad, "--stack-copy", "12", "--", "true"},
		{"profile", "-o", bad, "--stack-copy", "-8", "--", "true"},
		{"profile", "-o", bad, "--stack-copy", "16384", "--", "true"},
		{"profile", "-o", filepath.Join(t.TempDir(), "no", "dir.json"), "--", "true"},
	} {
		if rc := cli.Main(args); rc == 0 {
			t.Errorf("numascope %v: status 0, want an error", args)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("a failed profile left %s", bad)
	}
}
