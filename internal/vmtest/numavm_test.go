package vmtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// numavm runs scripts/numavm with args and extra environment and returns its
// stdout, stderr and exit status.
func numavm(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(numavmPath(t), args...)
	cmd.Env = append(os.Environ(), env...)
	return testutil.Run(t, cmd)
}

// numavmBooted is numavm for a run that must boot: a guest that hung while
// booting or locked up (123, the TCG testbed problem scripts/numavm's header
// describes) is run again, up to three times in all, as runVM does.
func numavmBooted(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	for try := 1; ; try++ {
		out, errs, code := numavm(t, env, args...)
		if code != numavmLockedUp || try == 3 {
			return out, errs, code
		}
		t.Logf("numavm %v: the guest locked up, crashed or hung (try %d); running the VM again\n%s", args, try, tail(errs, 2000))
	}
}

// TestNumavmContract checks the interface scripts/numavm promises: CMD's
// output streams back on the right descriptors, its exit status becomes
// numavm's, --add files appear in /data, and a timeout, bad options or a
// kernel that does not boot or locks up give a non-zero status and a clear
// message.
func TestNumavmContract(t *testing.T) {
	requireVM(t)
	small := []string{"--nodes", "2", "--cpus-per-node", "1", "--mem-per-node", "256M"}
	noBin := []string{"NUMASCOPE_BIN=none"}

	extra := filepath.Join(t.TempDir(), "payload.txt")
	if err := os.WriteFile(extra, []byte("payload 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, small...), "--add", extra, "--timeout", "120", "--",
		"sh", "-c", "cat /data/payload.txt; echo scale=$NUMAVM_TIMEOUT_SCALE; gtimeout 5 sh -c \"echo gtimeout-ran\"; echo to-stderr >&2; exit 3")
	t0 := time.Now()
	out, errs, code := numavmBooted(t, noBin, args...)
	// What a boot takes on this host now (with the calibration, a trivial
	// command and the power-off): the limits below are set from it.
	booted := int(time.Since(t0).Seconds())
	limit, scaled := max(25, 2*booted+10), max(30, booted+20) // below: why
	t.Logf("the first run took %d s: the timeout case's limit is %d s, the scaled limit's %d s", booted, limit, scaled)
	if code != 3 || !strings.Contains(out, "payload 42") || strings.Contains(out, "to-stderr") || !strings.Contains(errs, "to-stderr") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 3, the payload on stdout, to-stderr on stderr", code, out, tail(errs, 500))
	}
	// The command sees the factor numavm scales the limit by (percent, 100
	// to NUMAVM_TIMEOUT_SCALE_MAX x 100), for its own in-guest limits
	// (gtimeout, which scripts/numavm-init installs; checked below).
	if _, v, ok := strings.Cut(out, "scale="); !ok {
		t.Errorf("stdout %q: no scale= line", out)
	} else if f, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(v, "\n", 2)[0])); err != nil || f < 100 || f > 800 {
		t.Errorf("NUMAVM_TIMEOUT_SCALE in the guest is %q, want a percentage from 100 to 800", strings.SplitN(v, "\n", 2)[0])
	}
	if !strings.Contains(out, "gtimeout-ran") {
		t.Errorf("stdout %q: gtimeout did not run its command in the guest", out)
	}

	// A command that outlives --timeout (not scaled past --max-timeout):
	// 124 and a message saying so, with how far the command got: the
	// guest kept sending heartbeats, idle (the command sleeps), so it is
	// not a hang, and its last output. --timeout counts the boot too, and
	// the guest must have settled to idle before it: beside four busy host
	// loops 15 s left one heartbeat, the CPUs 55% busy, and a 10 s limit
	// expired before the boot had ended (7475fd4's loaded run); on a slower
	// host 25 s did too (2026-11-29's loaded run), so the limit is twice
	// the first run's time plus 10 s, at least 25 s.
	args = append(append([]string{}, small...), "--timeout", strconv.Itoa(limit), "--max-timeout", strconv.Itoa(limit), "--",
		"sh", "-c", "echo started the long part; sleep 600")
	_, errs, code = numavmBooted(t, noBin, args...)
	if code != 124 || !strings.Contains(strings.ToLower(errs), "time") || !strings.Contains(errs, "heartbeats, the last") ||
		!strings.Contains(errs, "alive but mostly idle") || !strings.Contains(errs, "> started the long part") {
		t.Errorf("timeout: exit %d, stderr %q; want 124, a message and the guest's progress", code, tail(errs, 1500))
	}
	// The limit follows the guest's measured speed: against a reference of
	// 1 ms every guest is slow, so --timeout 30 becomes 30 x 3
	// (NUMAVM_TIMEOUT_SCALE_MAX) and a command of 35 s finishes. With a
	// fixed limit it was killed at 30 s. On a host where a boot takes
	// longer, both grow with it (limit T at least the boot plus 20 s, the
	// command T + 5 s: the boot and the command fit in 3T).
	args = append(append([]string{}, small...), "--timeout", strconv.Itoa(scaled), "--",
		"sh", "-c", fmt.Sprintf("sleep %d; echo finished", scaled+5))
	out, errs, code = numavmBooted(t, append(noBin, "NUMAVM_SPEED_REF_MS=1", "NUMAVM_TIMEOUT_SCALE_MAX=3"), args...)
	if code != 0 || !strings.Contains(out, "finished") {
		t.Errorf("scaled limit: exit %d, stdout %q, stderr %q; want 0 and the command finished", code, out, tail(errs, 1500))
	}

	// The command's exit status survives a lost status line (a starved
	// guest can power off before its tty sent it): numavm reads the copy
	// the guest wrote to the kernel's log.
	args = append(append([]string{}, small...), "--timeout", "120", "--", "sh", "-c", "exit 7")
	_, errs, code = numavmBooted(t, append(noBin, "NUMAVM_APPEND=numavm.lose_status"), args...)
	if code != 7 {
		t.Errorf("status line lost: exit %d, stderr %q; want the command's 7 from the kernel log", code, tail(errs, 1500))
	}

	// A guest that sends no heartbeat for NUMAVM_SILENT_S while the command
	// runs has hung after its boot (one sent none for 764 s beside four busy
	// loops, until --timeout): it is stopped, 123, with the reason.
	// numavm.no_heartbeat makes the guest send none.
	args = append(append([]string{}, small...), "--timeout", "300", "--", "sh", "-c", "echo started; sleep 600")
	for try := 1; try <= 3; try++ {
		out, errs, code = numavm(t, append(noBin, "NUMAVM_APPEND=numavm.no_heartbeat", "NUMAVM_SILENT_S=10"), args...)
		if code != numavmLockedUp || strings.Contains(errs, "stopped sending heartbeats") {
			break // not another hang's 123 (a lockup while booting), which is run again
		}
	}
	if code != numavmLockedUp || !strings.Contains(errs, "stopped sending heartbeats: none for 10 s") || !strings.Contains(out, "started") {
		t.Errorf("silent guest: exit %d, stdout %q, stderr %q; want 123 and a message that the heartbeats stopped", code, out, tail(errs, 1500))
	}

	// A guest kernel that reports a soft lockup is stopped at once: 123,
	// which runVM answers by running the VM again. (The report is
	// simulated through /dev/kmsg; a real one comes from the kernel's
	// watchdog.)
	errs = simulatedReport(t, small, "soft lockup", "locked up",
		"<0>watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [simulated:1]", "simulated:1")
	// Kernel addresses are named from the kernel's own /proc/kallsyms.
	if !regexp.MustCompile(`(?m)^  vCPU [0-9]+: RIP=ffffffff[0-9a-f]{8} CPL=0 HLT=[01] [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+$`).MatchString(errs) {
		t.Errorf("soft lockup: no vCPU in the kernel has its address named by a symbol:\n%s", tail(errs, 1500))
	}
	// A guest kernel that crashed (an Oops) is stopped at once too, with
	// the report from its first line.
	simulatedReport(t, small, "Oops", "crashed",
		"<1>BUG: kernel NULL pointer dereference, address: 0000000000000000 [simulated:2]", "simulated:2")
	// A vCPU stalled for good: the kernel's third RCU stall report stops
	// the VM (seen in a loaded CI run: a stall from guest uptime 31 s on,
	// the command waiting until its 652 s limit).
	stall := "<3>rcu: INFO: rcu_preempt detected stalls on CPUs/tasks: [simulated:3]"
	simulatedReport(t, small, "RCU stall", "stalled for good", stall+"\n"+stall+"\n"+stall, "simulated:3")

	// A guest that has not reached the command within --boot-timeout has
	// hung while booting: 123 too. QEMU's -S holds the vCPUs at reset, a
	// boot that never starts.
	args = append(append([]string{}, small...), "--timeout", "120", "--boot-timeout", "3", "--", "true")
	_, errs, code = numavm(t, append(noBin, "NUMAVM_QEMU_ARGS=-S"), args...)
	if code != numavmLockedUp || !strings.Contains(errs, "hung while booting") {
		t.Errorf("boot hang: exit %d, stderr %q; want %d and a message", code, tail(errs, 500), numavmLockedUp)
	}
	checkVCPUReport(t, "boot hang", errs, 2)

	// Bad options are refused before anything boots.
	_, errs, code = numavm(t, noBin, "--nodes", "2", "--distances", "10,20;20", "--", "true")
	if code != 125 || !strings.Contains(errs, "distances") {
		t.Errorf("bad --distances: exit %d, stderr %q; want 125 naming the option", code, tail(errs, 500))
	}

	// A kernel that cannot boot.
	bogus := filepath.Join(t.TempDir(), "not-a-kernel")
	if err := os.WriteFile(bogus, bytes.Repeat([]byte("garbage!"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(append([]string{}, small...), "--timeout", "60", "--", "true")
	_, errs, code = numavm(t, append(noBin, "NUMAVM_KERNEL="+bogus), args...)
	if code == 0 || len(strings.TrimSpace(errs)) == 0 {
		t.Errorf("bogus kernel: exit %d, stderr %q; want a failure with a message", code, tail(errs, 500))
	}
}

// simulatedReport writes line to the guest's kernel log and checks that
// numavm stops the VM at once with 123, a message containing says, the
// report (marked by marker) and every vCPU's place; it returns numavm's
// stderr. A real lockup or boot hang before the simulated report is the
// testbed's problem, not this check's answer: the VM runs again.
func simulatedReport(t *testing.T, opts []string, what, says, line, marker string) string {
	t.Helper()
	// Each line of line is one record of the kernel log.
	var echo strings.Builder
	for _, l := range strings.Split(line, "\n") {
		echo.WriteString("echo '" + l + "' >/dev/kmsg; ")
	}
	args := append(append([]string{}, opts...), "--timeout", "120", "--", "sh", "-c", echo.String()+"sleep 600")
	var errs string
	var code int
	for try := 1; ; try++ {
		_, errs, code = numavm(t, []string{"NUMASCOPE_BIN=none"}, args...)
		if code != numavmLockedUp || strings.Contains(errs, marker) || try == 3 {
			break
		}
		t.Logf("%s: a real lockup or hang came first (try %d); running the VM again\n%s", what, try, tail(errs, 2000))
	}
	if code != numavmLockedUp || !strings.Contains(errs, says) || !strings.Contains(errs, marker) {
		t.Errorf("%s: exit %d, stderr %q; want %d, a message and the kernel's report", what, code, tail(errs, 500), numavmLockedUp)
	}
	checkVCPUReport(t, what, errs, 2)
	return errs
}

// checkVCPUReport checks that a stopped VM's report names where each of its
// cpus vCPUs was, from QEMU's monitor.
func checkVCPUReport(t *testing.T, what, stderr string, cpus int) {
	t.Helper()
	for i := 0; i < cpus; i++ {
		if !regexp.MustCompile(`(?m)^  vCPU ` + strconv.Itoa(i) + `: [ER]IP=[0-9a-f]+ CPL=[0-3] HLT=[01]( \S+)?$`).MatchString(stderr) {
			t.Errorf("%s: no registers of vCPU %d in the report:\n%s", what, i, tail(stderr, 1500))
		}
	}
}
