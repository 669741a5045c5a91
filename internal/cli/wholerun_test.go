package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/testutil"
)

// getppidEnv makes TestGetppidHelper make that many getppid calls and exit:
// a workload whose count the kernel's syscall tracepoint knows exactly.
const getppidEnv = "NUMASCOPE_TEST_GETPPID"

func TestGetppidHelper(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(getppidEnv))
	if n == 0 {
		t.Skip("helper process for TestRecordCountsKnownWorkToTheEnd")
	}
	for range n {
		unix.Getppid()
	}
	os.Exit(0)
}

// TestRecordCountsKnownWorkToTheEnd is the fidelity check of `record --
// CMD`'s coverage of the run (docs/fidelity.md): the command makes exactly
// n getppid calls, counted by the kernel's tracepoint
// syscalls:sys_enter_getppid, and the recording (rate x sample length,
// summed) must hold n of them: at 1 h every call falls in the final
// partial sample, which ends when the command does; at 1 s in it and a
// whole sample or none; at 20 ms over some tens of samples. TestRecord-
// CountsTheWholeRun holds the same with page faults, from below only
// (other processes fault too); getppid bounds it from above as well.
//
// Tolerance: at least n, less the rounding of the recording's times to the
// µs (each sample's rate times 1 µs) and one call for the rates' digits; at
// most 1% + 100 more (other processes' getppid
// calls meanwhile, a shell's $PPID). A final sample that stopped short of
// the command's end, or took an interval's worth of time it did not cover,
// fails.
func TestRecordCountsKnownWorkToTheEnd(t *testing.T) {
	const getppid = "syscalls:sys_enter_getppid"
	const n = 300000
	for _, interval := range []string{"1h", "1s", "20ms"} {
		t.Run(interval, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "run.jsonl")
			args := []string{"record", "-o", out, "-i", interval, "--perf-events", getppid, "-e", "perf." + getppid,
				"--ctl", filepath.Join(dir, "ctl"), "--sampler-node", "none", "--", os.Args[0], "-test.run=^TestGetppidHelper$"}
			stderr, code := numascope(t, args, getppidEnv+"="+strconv.Itoa(n))
			if code != 0 {
				testutil.NotPermitted(t, "record with the %s tracepoint: exit %d: %s", getppid, code, stderr)
			}
			r, err := recording.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Samples) == 0 || r.End == nil {
				t.Fatalf("%d samples, end %+v; stderr %s", len(r.Samples), r.End, stderr)
			}
			calls, slack, prev := 0.0, 1.0, 0.0
			for i, s := range r.Samples {
				if s.V[0] != s.V[0] { // NaN: not counted
					testutil.NotPermitted(t, "sample %d has no %s count: %s", i, getppid, stderr)
				}
				calls += s.V[0] * (s.T - prev)
				slack += s.V[0] * 1e-6 // times are written to the µs
				prev = s.T
			}
			t.Logf("%s: %.1f getppid calls in %d samples over %.3f s; the command made %d", interval, calls, len(r.Samples), prev, n)
			if calls < n-slack || calls > 1.01*n+100 {
				t.Errorf("recorded %.1f getppid calls in %d samples; the command made %d (want %d to 1%% + 100 more)", calls, len(r.Samples), n, n)
			}
		})
	}
}
