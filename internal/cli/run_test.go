package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

// numascopeRun runs `numascope run ARGS` in a child process.
func numascopeRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return testutil.Run(t, numascopeCmd(append([]string{"run"}, args...)))
}

func TestRunAppliesPolicyAndAffinity(t *testing.T) {
	if _, err := os.Stat("/proc/self/numa_maps"); err != nil {
		t.Skipf("no /proc/self/numa_maps (kernel without NUMA): %v", err)
	}
	out, errs, code := numascopeRun(t, "--policy", "interleave:0", "--cpus", "0", "--", "sh", "-c",
		"grep -m1 heap /proc/self/numa_maps; grep Cpus_allowed_list /proc/self/status; exit 3")
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3; stderr %s", code, errs)
	}
	if !strings.Contains(out, " interleave:0 ") || !strings.Contains(out, "Cpus_allowed_list:\t0\n") {
		t.Errorf("the child reports:\n%s", out)
	}
}

func TestRunErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "bind:63", "--", "true"}, `--policy "bind:63": node 63 does not exist; the nodes are 0`},
		{[]string{"--cpus", "4095", "--", "true"}, `--cpus "4095": CPU 4095 does not exist; usable CPUs: 0`},
		{[]string{"--policy", "spread", "--", "true"}, "unknown policy"},
		{[]string{"--", "/nonexistent/cmd"}, "cannot run /nonexistent/cmd"},
		{[]string{"true"}, "put -- before the command"},
		{nil, "no command to run"},
	} {
		_, errs, code := numascopeRun(t, c.args...)
		if code != 1 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q, want one line containing %q", c.args, code, errs, c.want)
		}
	}
	out, errs, code := numascopeRun(t, "--policy", "local", "--threads-per-node", "1", "--dry-run")
	if code != 0 || !strings.HasPrefix(out, "policy local\ncpus ") {
		t.Errorf("--dry-run: exit %d, %q %q", code, out, errs)
	}
}
