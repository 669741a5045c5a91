package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/testutil"
)

// syscallMixEnv, set, makes the test binary the workload of
// TestPerIsTheRatioOfTheCounts: syscallMixHelper never returns.
const syscallMixEnv = "NUMASCOPE_TEST_SYSCALL_MIX"

// syscallMixHelper makes exactly three getppid calls for each getpgid, in
// that order, until it is killed: whatever the interval, the two counts
// over it are 3 to 1 within one turn of the loop.
func syscallMixHelper() {
	if os.Getenv(syscallMixEnv) == "" {
		return
	}
	for {
		unix.Getppid()
		unix.Getppid()
		unix.Getppid()
		unix.Getpgid(0)
	}
}

// TestPerIsTheRatioOfTheCounts is the fidelity check of --per (a counter
// shown per unit of another, docs/fidelity.md): a workload that makes
// exactly three getppid calls for each getpgid, both counted by the
// kernel's syscall tracepoints, must read 3 getppid per getpgid in every
// sample, summed per node and per CPU alike. The known ratio is the
// reference; the counts are the kernel's.
//
// Tolerance 1%: the workload makes some 10^5 turns of its loop in a 200 ms
// sample, so the interval's ends cut at most one turn (3 in 10^5); other
// processes call getppid rarely (a shell's $PPID), getpgid more rarely.
// Caught: the ratio inverted (0.33), either count taken per second (3 x or
// 3 / the interval), a column divided by the wrong counter.
func TestPerIsTheRatioOfTheCounts(t *testing.T) {
	const getppid, getpgid = "syscalls:sys_enter_getppid", "syscalls:sys_enter_getpgid"
	w := exec.Command(os.Args[0], "-test.run=^$")
	w.Env = append(os.Environ(), syscallMixEnv+"=1")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	for _, perCPU := range []bool{false, true} {
		args := []string{"stat", "--csv", "-i", "200ms", "-n", "6", "--perf-events", getppid, "--perf-events", getpgid,
			"-e", "perf." + getppid, "--per", "perf." + getpgid}
		if perCPU {
			args = append(args, "--perf-per-cpu")
		}
		out, errs, code := run(t, args...)
		if code != 0 {
			testutil.NotPermitted(t, "numascope %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 7 || lines[0] != "time_s,perf."+getppid+"_per_"+getpgid {
			t.Fatalf("per CPU %v: want a heading and 6 samples:\n%s", perCPU, out)
		}
		for _, l := range lines[2:] { // the first sample may begin before the workload ran
			f := strings.Split(l, ",")
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil || v < 0.99*3 || v > 1.01*3 {
				t.Errorf("per CPU %v: %q: getppid per getpgid %v, want 3 (the workload's exact mix) within 1%%", perCPU, l, f[len(f)-1])
			}
		}
		t.Logf("per CPU %v:\n%s", perCPU, out)
	}
}
