package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/testutil"
)

// cliHelperEnv makes TestCLIHelper run numascope with the arguments in the
// variable (a JSON array): the test binary stands in for numascope.
const cliHelperEnv = "NUMASCOPE_TEST_ARGS"

// touchEnv makes TestTouchHelper touch that many fresh pages and exit: a
// workload with a known number of page faults.
const touchEnv = "NUMASCOPE_TEST_TOUCH"

func TestCLIHelper(t *testing.T) {
	args := os.Getenv(cliHelperEnv)
	if args == "" {
		t.Skip("helper process for the CLI tests")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatal(err)
	}
	os.Exit(Main(argv))
}

func TestTouchHelper(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(touchEnv))
	if n == 0 {
		t.Skip("helper process for TestRecordCountsTheWholeRun")
	}
	testutil.TouchPages(t, n)
	os.Exit(0)
}

// numascopeCmd prepares numascope ARGS in a child process of its own session
// (no controlling terminal, its own process group), with extra environment.
func numascopeCmd(args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelper$")
	js, _ := json.Marshal(args)
	cmd.Env = append(append(os.Environ(), cliHelperEnv+"="+string(js)), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// numascope runs numascope ARGS and returns its stderr and exit status.
func numascope(t *testing.T, args []string, env ...string) (string, int) {
	t.Helper()
	_, errs, code := testutil.Run(t, numascopeCmd(args, env...))
	return errs, code
}

// recordArgs are the arguments of a quiet record into dir.
func recordArgs(dir, out, interval string) []string {
	return []string{"record", "-o", out, "-i", interval, "-e", "vmstat.pgfault",
		"--ctl", filepath.Join(dir, "ctl"), "--sampler-node", "none"}
}

// TestRecordCountsTheWholeRun records a workload that touches a known
// number of pages, at intervals longer and shorter than the run: the page
// faults recorded (rate × sample length, summed) must be at least that
// number, so the end of the run, after the last whole interval, is there.
func TestRecordCountsTheWholeRun(t *testing.T) {
	const pages = 20000
	for _, interval := range []string{"1h", "1s", "20ms"} {
		t.Run(interval, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "run.jsonl")
			args := append(recordArgs(dir, out, interval), "--", os.Args[0], "-test.run=^TestTouchHelper$")
			stderr, code := numascope(t, args, touchEnv+"="+strconv.Itoa(pages))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			r, err := recording.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Samples) == 0 || r.End == nil || r.End.Samples != uint64(len(r.Samples)) {
				t.Fatalf("%d samples, end %+v; stderr %s", len(r.Samples), r.End, stderr)
			}
			faults, prev := 0.0, 0.0
			for _, s := range r.Samples {
				faults += s.V[0] * (s.T - prev)
				prev = s.T
			}
			if faults < pages {
				t.Errorf("recorded %.0f page faults in %d samples, the workload alone made %d", faults, len(r.Samples), pages)
			}
			if want := "recorded " + strconv.Itoa(len(r.Samples)) + " samples to " + out; !strings.Contains(stderr, want) {
				t.Errorf("summary does not say %q: %s", want, stderr)
			}
		})
	}
}

// TestPassesOnSIGINT sends SIGINT to numascope alone (not to its process
// group) while it records or profiles a command that exits on SIGINT: the
// command must get it, and numascope must end cleanly with its status.
func TestPassesOnSIGINT(t *testing.T) {
	for _, mode := range []string{"record", "profile"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.json")
			ready := filepath.Join(dir, "ready")
			args := []string{"profile", "-o", out}
			if mode == "record" {
				args = recordArgs(dir, out, "1h")
			}
			args = append(args, "--", "sh", "-c", `trap 'exit 7' INT; touch "$0"; while :; do sleep 0.02; done`, ready)
			cmd := numascopeCmd(args)
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				if time.Now().After(deadline) {
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					t.Fatalf("the command never started: %s", errb.String())
				}
			}
			if err := cmd.Process.Signal(os.Interrupt); err != nil { // numascope's pid only
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-waited:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-waited
				t.Fatalf("SIGINT to numascope did not stop the command: %s", errb.String())
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 7 {
				t.Errorf("numascope ended with %v, want the command's exit status 7; stderr %s", err, errb.String())
			}
			if mode == "profile" {
				var p map[string]any
				if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &p) != nil {
					t.Errorf("no profile written: %v", err)
				}
				return
			}
			r, lerr := recording.Load(out)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if r.End == nil || len(r.Samples) != 1 {
				t.Errorf("recording: %d samples, end %+v; want the final sample and a clean end", len(r.Samples), r.End)
			}
		})
	}
}

func TestRecordOutputIsADirectory(t *testing.T) {
	dir := t.TempDir()
	stderr, code := numascope(t, append(recordArgs(dir, dir, "1s"), "--", "true"))
	if code == 0 || !strings.Contains(stderr, dir+": it is a directory; give a file name") || strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, stderr %q; want a one-line 'it is a directory'", code, stderr)
	}
}

// TestProfileChecksOutputFirst checks that profile -o refuses a directory
// and an existing file (without --force) before it runs the program.
func TestProfileChecksOutputFirst(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	existing := filepath.Join(dir, "old.json")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out, want string
	}{
		{dir, dir + ": it is a directory; give a file name"},
		{existing, "profile " + existing + " already exists; use --force to overwrite it"},
	} {
		stderr, code := numascope(t, []string{"profile", "-o", c.out, "--", "touch", ran})
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("profile -o %s: exit %d, stderr %q; want %q", c.out, code, stderr, c.want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("profile -o %s ran the program before refusing the output", c.out)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("existing profile overwritten: %q", b)
	}
	// --force overwrites it.
	stderr, code := numascope(t, []string{"profile", "--force", "-o", existing, "--", "touch", ran})
	if code != 0 {
		t.Fatalf("profile --force: exit %d: %s", code, stderr)
	}
	var p map[string]any
	if b, err := os.ReadFile(existing); err != nil || json.Unmarshal(b, &p) != nil {
		t.Errorf("profile --force did not write a profile: %v %.80q", err, b)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("profile --force did not run the program: %v", err)
	}
}

// startLive starts numascope live with args on a free port, sampling
// vmstat.pgfault every 10 ms; it is killed at the end of the test if it
// is still running. wait sends sig (unless 0) and waits at most 10 s for
// it to end.
func startLive(t *testing.T, args ...string) (stderr *strings.Builder, wait func(sig syscall.Signal) error) {
	t.Helper()
	cmd := numascopeCmd(append([]string{"live", "--listen", "127.0.0.1:0", "-i", "10ms", "-e", "vmstat.pgfault",
		"--sampler-node", "none"}, args...))
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return stderr, func(sig syscall.Signal) error {
		if sig != 0 {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case err := <-waited:
			return err
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
			t.Fatalf("numascope live did not end: %s", stderr)
			return nil
		}
	}
}

// TestLiveControlFIFO steers numascope live as a user would, with numascope
// ctl on its --ctl FIFO: a label, then a switch to another file. After
// SIGINT both files are closed cleanly: the first holds the label, the
// second the samples since the switch.
func TestLiveControlFIFO(t *testing.T) {
	dir := t.TempDir()
	a, b, fifo := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.zst"), filepath.Join(dir, "ctl")
	stderr, wait := startLive(t, "--ctl", fifo, "-o", a)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if fi, err := os.Stat(fifo); err == nil && fi.Mode().Type() == os.ModeNamedPipe {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no control FIFO at %s: %s", fifo, stderr)
		}
	}
	for _, cmd := range [][]string{{"label", "from ctl"}, {"record", b}} {
		if out, code := numascope(t, append([]string{"ctl", "--ctl", fifo}, cmd...)); code != 0 {
			t.Fatalf("ctl %v: exit %d, %s", cmd, code, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := wait(syscall.SIGINT); err != nil {
		t.Fatalf("live ended with %v: %s", err, stderr)
	}
	ra, err := recording.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if l := ra.Labels(); ra.End == nil || len(l) != 1 || l[0].Text != "from ctl" {
		t.Errorf("%s: end %+v, labels %+v; want a clean end and the label", a, ra.End, l)
	}
	rb, err := recording.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if rb.End == nil || len(rb.Samples) < 5 {
		t.Errorf("%s: end %+v, %d samples", b, rb.End, len(rb.Samples))
	}
}

// TestLiveRefusesAnUnusableCtl: a --ctl path that cannot be listened on is
// an error for live as for stat and record, not a silently missing FIFO.
func TestLiveRefusesAnUnusableCtl(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "nodir", "ctl")
	stderr, wait := startLive(t, "--ctl", fifo)
	err := wait(0)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "--ctl: ") {
		t.Errorf("live --ctl %s: %v, stderr %q; want it to stop with a --ctl error", fifo, err, stderr)
	}
}
