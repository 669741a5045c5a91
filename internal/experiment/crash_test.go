package experiment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExitStatusOfCrashingTargets holds the exit_status response of runs
// that crash to the shell's own $? for the same command: testdata/crash.c,
// written apart from numascope, makes 1 000 getppid calls and then exits
// with 0 or 3, stores through a null pointer, aborts, or sends itself
// SIGKILL or SIGTERM; sh reports a death by signal N as 128+N, the
// convention numascope documents. Each mode runs under two regimes, so
// through `numascope run`, which must pass the child's end on rather than
// its own; and each is started both ways: `command crash ...`, where the
// shell waits for the target and reports its end (dash does not exec a
// lone command), and `exec crash ...`, where the target replaces the
// shell and dies by the signal itself, so that numascope turns the signal
// into a status. Nothing recorded is lost: the experiment goes on past the
// crashes (exit_status is a response), and every crashed run's recording
// still counts the calls made before the crash.
func TestExitStatusOfCrashingTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	const event = "perf.syscalls:sys_enter_getppid"
	const calls = 1000
	requireSyscallTracepoints(t)
	dir := t.TempDir()
	crash := buildTestC(t, dir, "crash")
	modes := []string{"exit0", "exit3", "segv", "abort", "kill", "term"}
	// The reference: the shell's $? for each mode.
	want := map[string]int{}
	for _, m := range modes {
		out, _ := exec.Command("/bin/sh", "-c", fmt.Sprintf("%s %s %d; echo $?", crash, m, calls)).Output()
		f := strings.Fields(string(out))
		if len(f) == 0 {
			t.Fatalf("sh printed nothing for %s", m)
		}
		n, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			t.Fatalf("sh's $? for %s: %q", m, out)
		}
		want[m] = n
	}
	if want["exit3"] != 3 || want["segv"] <= 128 || want["kill"] != 137 {
		t.Fatalf("the shell's statuses %v: not the convention (exit 3 is 3, SIGKILL 137)", want)
	}

	quoted := make([]string, len(modes))
	for i, m := range modes {
		quoted[i] = strconv.Quote(m)
	}
	spec := fmt.Sprintf(`name = "crash"
command = "{launch} %s {mode} %d"
replications = 1
seed = 5
interval = "50ms"
events = [%q]
responses = ["exit_status", "total:%s"]

[[factor]]
name = "mode"
levels = [%s]

[[factor]]
name = "launch"
levels = ["command", "exec"]

[[regime]]
name = "first-touch"
policy = "first-touch"

[[regime]]
name = "interleave"
policy = "interleave"
`, crash, calls, event, event, strings.Join(quoted, ", "))
	path := filepath.Join(dir, "crash.toml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := buildNumascope(t)
	cmd := exec.Command(bin, "experiment", "--perf-events", strings.TrimPrefix(event, "perf."), "--format", "json", path)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("numascope experiment: %v\n%s", err, out)
	}
	_, results, err := LoadResults(filepath.Join(dir, "crash.results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4*len(modes) {
		t.Fatalf("%d results, want %d: the experiment stopped at a crash", len(results), 4*len(modes))
	}
	for _, r := range results {
		m := r.Levels["mode"]
		st := r.Responses["exit_status"]
		if r.ExitStatus != want[m] || st == nil || *st != float64(want[m]) {
			t.Errorf("run %d (%v): exit_status %d (response %s), the shell's $? for the same command %d",
				r.Run, r.Levels, r.ExitStatus, value(st), want[m])
		}
		tot := r.Responses["total:"+event]
		if tot == nil || *tot < calls || *tot > calls+otherCalls(calls) {
			t.Errorf("run %d (%v): total %s getppid calls recorded, the target made %d before it ended (bound +%v for other processes)", r.Run, r.Levels, value(tot), calls, otherCalls(calls))
		}
	}
	t.Logf("the shell's statuses %v; %d runs compared", want, len(results))
}
