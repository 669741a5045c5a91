package experiment

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// childClock is what testdata/knownwork.c reports of itself: its own
// CLOCK_REALTIME at the start of main and just before it exits.
type childClock struct {
	start, end time.Time
	calls      float64
}

func (c childClock) elapsed() float64 { return c.end.Sub(c.start).Seconds() }

// TestExperimentFiguresOfKnownWork holds the figures `numascope experiment`
// derives from its runs to what the runs did, as measured by the runs
// themselves: testdata/knownwork.c, written apart from numascope, makes a
// known number of getppid calls (counted by the kernel's syscall
// tracepoint), sleeps a known time and writes down its own clock at its
// start and end.
//
//   - wall_time_s and start: each run's wall time must bracket the child's
//     own [start, end], and exceed its elapsed time by at most three times
//     what the same command costs over the child's own time when the test
//     runs it itself (starting `numascope run`, sh and the child and reaping
//     them), and 50 ms more.
//   - total:EVENT: at least the calls made and at most a few more (the shell
//     reads $PPID; other processes call getppid rarely).
//   - rate:EVENT: the total over the wall time.
//   - total:EVENT-EVENT: the child also makes CALLS / 2 getpgid calls; the
//     difference must be CALLS / 2, to 20 either way.
//   - speedup: the mean wall times' ratio must lie in the bracket the
//     children's own elapsed times give, widened by the largest overhead
//     measured in this run.
//   - change_percent: the regimes make 2 000 and 6 000 calls a run, +200%.
//
// Caught: a wall time 100 ms long (on a quiet machine; the bound grows with
// the load), a speedup inverted, a change computed as a ratio, a total that
// drops calls.
func TestExperimentFiguresOfKnownWork(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	const event = "perf.syscalls:sys_enter_getppid"
	const other = "perf.syscalls:sys_enter_getpgid"
	const diff = event + "-" + other
	requireSyscallTracepoints(t)
	dir := t.TempDir()
	kw := buildTestC(t, dir, "knownwork")
	bin := buildNumascope(t)
	clocks := filepath.Join(dir, "clocks")
	if err := os.Mkdir(clocks, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`name = "known"
command = "%s {calls} {ms} {extra} %s/run{run}.txt"
replications = 2
seed = 3
interval = "50ms"
events = [%q, %q]
responses = ["wall_time", "total:%s", "rate:%s", "total:%s"]

[[factor]]
name = "extra"
levels = [0, 200]

[[regime]]
name = "few"
policy = "first-touch"
vars = { calls = "2000", ms = "500" }

[[regime]]
name = "many"
policy = "first-touch"
vars = { calls = "6000", ms = "150" }
`, kw, clocks, event, other, event, event, diff)
	path := filepath.Join(dir, "known.toml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
	cmd := exec.Command(bin, "experiment", "--perf-events", strings.TrimPrefix(event, "perf."),
		"--perf-events", strings.TrimPrefix(other, "perf."), "--format", "json", path)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("numascope experiment: %v\n%s", err, stderr)
	}
	var a Analysis
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("the analysis: %v\n%s", err, out)
	}
	_, results, err := LoadResults(filepath.Join(dir, "known.results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 8 {
		t.Fatalf("%d results, want 8", len(results))
	}

	var runClocks []childClock
	for _, r := range results {
		runClocks = append(runClocks, readChildClock(t, filepath.Join(clocks, fmt.Sprintf("run%d.txt", r.Run))))
	}
	// The overhead's bound: the test runs four of the runs' commands again
	// itself (the same `numascope run`, sh and child), timed by its own
	// clock from the fork to the reaping, on this machine as loaded as it
	// is now. Three times the largest such overhead and 50 ms more.
	calibration := 0.0
	for _, r := range results[:4] {
		cmd := exec.Command(r.Command[0], r.Command[1:]...)
		cmd.Env = env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", r.Command, err, out)
		}
		w := time.Since(start).Seconds()
		c := readChildClock(t, filepath.Join(clocks, fmt.Sprintf("run%d.txt", r.Run)))
		calibration = math.Max(calibration, w-c.elapsed())
	}
	overheadBound := 3*calibration + 0.05
	maxOverhead := 0.0
	child := map[string][]childClock{}
	wall := map[string][]float64{}
	total := map[string][]float64{}
	for i, r := range results {
		c := runClocks[i]
		regime := r.Levels[RegimeFactor]
		child[regime] = append(child[regime], c)
		wall[regime] = append(wall[regime], r.WallTime)
		end := r.Start.Add(time.Duration(r.WallTime * float64(time.Second)))
		overhead := r.WallTime - c.elapsed()
		maxOverhead = math.Max(maxOverhead, overhead)
		if r.Start.After(c.start) || end.Before(c.end) || overhead > overheadBound {
			t.Errorf("run %d (%v): start %v, wall time %.4f s; the child ran from %v for %.4f s (overhead %.4f s, bound %g)",
				r.Run, r.Levels, r.Start, r.WallTime, c.start, c.elapsed(), overhead, overheadBound)
		}
		tot := r.Responses["total:"+event]
		rate := r.Responses["rate:"+event]
		if tot == nil || rate == nil {
			t.Fatalf("run %d: total %s, rate %s; its events: %v", r.Run, value(tot), value(rate), r.Events)
		}
		total[regime] = append(total[regime], *tot)
		if *tot < c.calls || *tot > c.calls+otherCalls(c.calls) {
			t.Errorf("run %d (%v): total %v getppid calls, the child made %v (bound +%v for other processes)", r.Run, r.Levels, *tot, c.calls, otherCalls(c.calls))
		}
		if want := *tot / r.WallTime; !relEq(*rate, want, 1e-12) {
			t.Errorf("run %d: rate %v, total over wall time %v", r.Run, *rate, want)
		}
		// getppid less getpgid: CALLS - CALLS/2, each count to
		// otherCalls over.
		if d, slack := r.Responses["total:"+diff], otherCalls(c.calls); d == nil || *d < c.calls/2-slack || *d > c.calls/2+slack {
			t.Errorf("run %d (%v): total:%s = %s, the child made %v getppid and %v getpgid calls", r.Run, r.Levels, diff, value(d), c.calls, c.calls/2)
		}
		if w := r.Responses["wall_time"]; w == nil || *w != r.WallTime {
			t.Errorf("run %d: the wall_time response %s, the run's %v", r.Run, value(w), r.WallTime)
		}
	}
	t.Logf("wall time over the child's own: at most %.1f ms (bound %.1f ms: the same commands run by the test took up to %.1f ms over); getppid totals %v (2 000 a run) and %v (6 000)",
		1e3*maxOverhead, 1e3*overheadBound, 1e3*calibration, total["few"], total["many"])

	if len(a.Comparisons) != 1 || a.Comparisons[0].Base != "few" || a.Comparisons[0].Other != "many" {
		t.Fatalf("comparisons %+v, want many against few", a.Comparisons)
	}
	c := a.Comparisons[0]
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	elapsed := func(cs []childClock) float64 {
		s := 0.0
		for _, x := range cs {
			s += x.elapsed()
		}
		return s / float64(len(cs))
	}
	ef, em := elapsed(child["few"]), elapsed(child["many"])
	lo, hi := ef/(em+maxOverhead), (ef+maxOverhead)/em
	if c.Speedup == nil {
		t.Fatalf("no speedup")
	}
	if *c.Speedup < lo || *c.Speedup > hi {
		t.Errorf("speedup %.4f; the children's own times give %.4f, bracket [%.4f, %.4f] with %.1f ms of overhead",
			*c.Speedup, ef/em, lo, hi, 1e3*maxOverhead)
	} else {
		t.Logf("speedup %.4f; the children's own %.4f, bracket [%.4f, %.4f]", *c.Speedup, ef/em, lo, hi)
	}
	if got := mean(wall["few"]) / mean(wall["many"]); !relEq(*c.Speedup, got, 1e-12) {
		t.Errorf("speedup %v, the mean wall times' ratio %v", *c.Speedup, got)
	}
	var row *ComparisonRow
	for i := range c.Rows {
		if c.Rows[i].Event == event {
			row = &c.Rows[i]
		}
	}
	if row == nil || row.Change == nil {
		t.Fatalf("no change for %s in %+v", event, c.Rows)
	}
	// The totals are the calls plus at most otherCalls: within 10 points
	// of +200% (a ratio, 3, or a sum would be far off).
	if math.Abs(*row.Change-200) > 10 {
		t.Errorf("change %.3f%% for %s (mean %v to %v), want +200%% (2 000 to 6 000 calls a run)", *row.Change, event, row.Base, row.Other)
	}
	if math.Abs(row.Base-mean(total["few"])) > 1e-9*row.Base || math.Abs(row.Other-mean(total["many"])) > 1e-9*row.Other {
		t.Errorf("comparison means %v and %v, the runs' totals %v and %v", row.Base, row.Other, total["few"], total["many"])
	}
}

// readChildClock reads what knownwork wrote: its start and end, in
// nanoseconds of CLOCK_REALTIME, and the calls it made.
func readChildClock(t *testing.T, path string) childClock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the child's clock: %v", err)
	}
	var start, end int64
	var c childClock
	if n, err := fmt.Sscan(string(b), &start, &end, &c.calls); n != 3 || err != nil {
		t.Fatalf("%s: %q: %v", path, b, err)
	}
	c.start, c.end = time.Unix(0, start), time.Unix(0, end)
	return c
}

// value formats a response, which is nil when a run has none.
func value(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}

// relEq reports whether a and b agree to rel relative precision.
func relEq(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// requireSyscallTracepoints skips the test (fails it where the VM tests are
// required) when the kernel's syscall tracepoints cannot be seen.
func requireSyscallTracepoints(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/tracing/events/syscalls/sys_enter_getppid"); err != nil {
		if _, err2 := os.Stat("/sys/kernel/debug/tracing/events/syscalls/sys_enter_getppid"); err2 != nil {
			testutil.SkipUnless(t, testutil.VMRequired, "the syscall tracepoints are not visible here (tracefs): %v", err)
		}
	}
}

// buildTestC builds testdata/NAME.c into dir and returns the program.
func buildTestC(t *testing.T, dir, name string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipUnless(t, testutil.VMRequired, "gcc is not installed (sudo scripts/install-test-deps installs it)")
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(gcc, "-O2", "-Wall", "-o", bin, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("building testdata/%s.c: %v\n%s", name, err, out)
	}
	return bin
}

// otherCalls bounds the getppid (or getpgid) calls of other processes
// that a machine-wide count of the child's may include: the shell's $PPID,
// and on a shared machine whatever else runs (another test counting the
// same calls added 49 to 2 000 in a suite run of 2026-12-07). A count
// taken twice, or a difference taken as a sum, still fails.
func otherCalls(calls float64) float64 { return 20 + calls/20 }
