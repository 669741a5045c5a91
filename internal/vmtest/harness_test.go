package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// vmTimeout bounds one VM run, boot included, on a quiet host. A scenario
// takes 10-40 s on an idle 2-core machine. numavm scales the limit by the
// guest's measured speed (scripts/numavm, "Time limits"): on a busy host
// every step of a TCG guest is slower, and a fixed limit killed VMs that
// were still working (TestNUMATrace at 240 s, issue 29).
const vmTimeout = 240 * time.Second

// vmTimeoutScaleMax is the most numavm may scale vmTimeout by (its
// NUMAVM_TIMEOUT_SCALE_MAX default); the test's own deadline caps it too.
const vmTimeoutScaleMax = 8

// numavmPath is scripts/numavm of this repository.
func numavmPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "scripts", "numavm"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	checkOnce sync.Once
	checkErr  error
)

// requireVM skips the test when the VM cannot run here (no QEMU, no kernel,
// -short), unless NUMASCOPE_VM_REQUIRED is set: then it fails.
func requireVM(t *testing.T) {
	t.Helper()
	required := testutil.IsRequired(testutil.VMRequired)
	if testing.Short() && !required {
		t.Skip("VM integration test skipped in -short mode")
	}
	checkOnce.Do(func() {
		trackInputs(t)
		out, err := exec.Command(numavmPath(t), "--check").CombinedOutput()
		if err != nil {
			checkErr = fmt.Errorf("scripts/numavm --check: %v: %s", err, strings.TrimSpace(string(out)))
		}
	})
	if checkErr == nil {
		return
	}
	testutil.SkipUnless(t, testutil.VMRequired, "the NUMA VM cannot run: %v (install with scripts/install-test-deps)", checkErr)
}

// trackInputs opens every file that the VM runs depend on but that this test
// binary does not import: numascope's sources (numavm builds the binary from
// them), the C sources the tests build, the scripts, the workloads and the
// bench references; and reads numavm's environment
// variables. go test records the files a test opens and the variables it
// reads in its cache key, so a cached pass is reused only while none of them
// changed, instead of hiding a numascope that no longer works.
func trackInputs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"NUMASCOPE_BIN", "NUMAVM_KERNEL", "NUMAVM_CACHE", "NUMAVM_ACCEL", "NUMAVM_THP",
		"NUMAVM_APPEND", "NUMAVM_QEMU_ARGS", "XDG_CACHE_HOME", "HOME", "PATH"} {
		os.Getenv(v)
	}
	if bin := os.Getenv("NUMASCOPE_BIN"); bin != "" && bin != "none" {
		touch(bin)
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		touch(filepath.Join(root, f))
	}
	for _, dir := range []string{"cmd", "internal", "scripts", filepath.Join("testdata", "workloads"), filepath.Join("testdata", "bench")} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			// Go sources of the binary, and C sources the tests build
			// (internal/top/testdata/memmix.c); every file of the
			// scripts, the workloads and the bench references.
			c := strings.HasSuffix(p, ".c") || strings.HasSuffix(p, ".h")
			if strings.HasSuffix(p, ".go") || (dir == "internal" && c) || (dir != "cmd" && dir != "internal") {
				touch(p)
			}
			return nil
		})
	}
}

func touch(path string) {
	if f, err := os.Open(path); err == nil {
		f.Close()
	}
}

// vmResult is what one VM run printed, split into sections.
type vmResult struct {
	Stdout, Stderr string
	// Sections maps a section name (see sectionPrelude) to its output.
	Sections map[string]section
	Elapsed  time.Duration
}

type section struct {
	Body string
	RC   int
}

// sectionPrelude defines sec NAME CMD...: run CMD and frame its stdout with
// markers, so one boot can produce several outputs that parseSections splits.
// "@@at NAME begin|end UPTIME" lines, outside the frames, time each section
// on the guest's clock, for sectionProgress. A section's own time limit is
// `gtimeout SECONDS CMD...` (scripts/numavm-init): timeout(1) with SECONDS
// scaled as numavm scales the whole run's limit, by the guest's speed.
const sectionPrelude = `up() { read -r u _ </proc/uptime; echo "@@at $1 $2 $u"; }
sec() { n=$1; shift; up "$n" begin; echo "@@begin $n"; "$@"; r=$?; echo; echo "@@end $n $r"; up "$n" end; }
`

// sectionProgress says how far a VM script got, from its "@@at" lines: the
// sections done, with how long each took, and the one that was running. A
// run cut off by its time limit is so told apart from a hang: a slow
// machine shows every section taking longer, a hang one section that never
// ended.
func sectionProgress(stdout string) string {
	var done []string
	running, began := "", 0.0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "@@at" {
			continue
		}
		at, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			continue
		}
		switch f[2] {
		case "begin":
			running, began = f[1], at
		case "end":
			done = append(done, fmt.Sprintf("%s %.1fs", f[1], at-began))
			running = ""
		}
	}
	s := fmt.Sprintf("%d sections done (%s)", len(done), strings.Join(done, ", "))
	if running != "" {
		s += fmt.Sprintf("; section %q running since guest uptime %.1fs", running, began)
	} else {
		s += "; none running (between sections, or before the first)"
	}
	return s
}

// runVM boots a VM with the given numavm options and runs the shell script
// in it (after sectionPrelude). It fails the test when numavm fails.
func runVM(t *testing.T, opts []string, script string) *vmResult {
	t.Helper()
	for attempt := 1; ; attempt++ {
		res, err := runVMOnce(t, opts, script)
		var ee *exec.ExitError
		if err != nil && errors.As(err, &ee) && ee.ExitCode() == numavmLockedUp && attempt < 3 {
			// The guest kernel locked up, crashed or hung while
			// booting, a testbed problem numavm recognises
			// (scripts/numavm's header): run the VM again, twice at
			// most (the kprobe tests crash about one VM in five).
			t.Logf("numavm %s: the guest locked up, crashed or hung; running the VM again\n%s", strings.Join(opts, " "), res.Stderr)
			continue
		}
		if err != nil {
			t.Fatalf("numavm %s failed: %v\n--- progress: %s\n--- stderr:\n%s\n--- stdout:\n%s", strings.Join(opts, " "), err,
				sectionProgress(res.Stdout), res.Stderr, tail(res.Stdout, 4000))
		}
		res.Sections = parseSections(res.Stdout)
		return res
	}
}

// numavmLockedUp is numavm's exit status when the guest kernel locked up,
// crashed or hung while booting.
const numavmLockedUp = 123

// runVMOnce runs script in one VM.
func runVMOnce(t *testing.T, opts []string, script string) (*vmResult, error) {
	t.Helper()
	timeout, maxTimeout := vmTimeout, vmTimeoutScaleMax*vmTimeout
	if dl, ok := t.Deadline(); ok {
		left := time.Until(dl) - 15*time.Second
		timeout, maxTimeout = min(timeout, left), min(maxTimeout, left)
	}
	if timeout < 30*time.Second {
		t.Fatalf("not enough time left for a VM run (%v); raise go test -timeout", timeout)
	}
	args := append([]string{"--timeout", strconv.Itoa(int(timeout.Seconds())),
		"--max-timeout", strconv.Itoa(int(maxTimeout.Seconds()))}, opts...)
	args = append(args, "--", "sh", "-c", sectionPrelude+script)
	// numavm enforces its own (scaled) limit; the context is the backstop.
	ctx, cancel := context.WithTimeout(context.Background(), maxTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, numavmPath(t), args...)
	// Own process group, so that a kill reaches QEMU too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := &vmResult{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	t.Logf("numavm %s: %.1fs", strings.Join(opts, " "), res.Elapsed.Seconds())
	return res, err
}

// vmPID is the process ID a VM script printed in its "@@pid PID" line.
func vmPID(t *testing.T, r *vmResult) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^@@pid (\d+)\r?$`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("the VM printed no @@pid line:\n%s", tail(r.Stdout, 4000))
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[...]" + s[len(s)-n:]
}

// parseSections splits output framed by sectionPrelude's markers.
func parseSections(out string) map[string]section {
	secs := map[string]section{}
	var name string
	var body strings.Builder
	in := false
	for _, line := range strings.SplitAfter(out, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case !in && strings.HasPrefix(trimmed, "@@begin "):
			name, in = strings.TrimPrefix(trimmed, "@@begin "), true
			body.Reset()
		case in && strings.HasPrefix(trimmed, "@@end "+name+" "):
			rc, err := strconv.Atoi(strings.TrimPrefix(trimmed, "@@end "+name+" "))
			if err != nil {
				rc = -1
			}
			// The prelude adds a newline after the body: drop it.
			b := strings.TrimSuffix(body.String(), "\n")
			secs[name] = section{Body: b, RC: rc}
			in = false
		case in:
			body.WriteString(line)
		}
	}
	return secs
}

// section returns the named section, failing the test if it is missing or
// its command failed.
func (r *vmResult) section(t *testing.T, name string) string {
	t.Helper()
	s, ok := r.Sections[name]
	if !ok {
		t.Fatalf("the VM run printed no section %q\n--- stderr:\n%s\n--- stdout:\n%s", name, r.Stderr, tail(r.Stdout, 4000))
	}
	if s.RC != 0 {
		t.Fatalf("section %q: command exited with status %d\n--- its output:\n%s\n--- stderr:\n%s", name, s.RC,
			tail(s.Body, 4000), r.Stderr)
	}
	return s.Body
}

// ---- numascope's CSV ---------------------------------------------------------

// series is a `numascope convert` CSV: time_s, then one column per event.
// Counter columns hold rates per second, gauge columns levels; empty cells
// are NaN.
type series struct {
	T    []float64
	Cols map[string][]float64
}

func parseCSV(text string) (*series, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("CSV: %w", err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("CSV has %d rows, want a header and samples", len(rows))
	}
	head := rows[0]
	if len(head) == 0 || head[0] != "time_s" {
		return nil, fmt.Errorf("CSV header starts with %q, want time_s", head)
	}
	s := &series{Cols: map[string][]float64{}}
	for _, row := range rows[1:] {
		if len(row) != len(head) {
			return nil, fmt.Errorf("CSV row %d has %d cells, header %d", len(s.T)+2, len(row), len(head))
		}
		tv, err := strconv.ParseFloat(row[0], 64)
		if err != nil {
			return nil, fmt.Errorf("CSV row %d: time_s %q: %v", len(s.T)+2, row[0], err)
		}
		s.T = append(s.T, tv)
		for i := 1; i < len(head); i++ {
			v := math.NaN()
			if c := strings.TrimSpace(row[i]); c != "" {
				if v, err = strconv.ParseFloat(c, 64); err != nil {
					return nil, fmt.Errorf("CSV row %d column %s: %q: %v", len(s.T)+1, head[i], c, err)
				}
			}
			s.Cols[head[i]] = append(s.Cols[head[i]], v)
		}
	}
	return s, nil
}

// col returns a column, failing the test with the list of columns if absent.
func (s *series) col(t *testing.T, name string) []float64 {
	t.Helper()
	c, ok := s.Cols[name]
	if !ok {
		names := make([]string, 0, len(s.Cols))
		for n := range s.Cols {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("numascope's CSV has no column %q; it has %v", name, names)
	}
	return c
}

// total integrates a rate column over the recording: the sum of rate x
// interval, which is the counter's delta from the sampler's priming read to
// the last sample. Each row's rate covers the interval that ends at it. The
// recording's clock starts at the first sample (T[0] = 0), so the first
// interval's length is not in the CSV: the sampler's intervals are regular,
// and the next one stands in for it.
func (s *series) total(t *testing.T, name string) float64 {
	t.Helper()
	return s.totalUntil(t, name, len(s.T)-1)
}

// totalUntil is total up to and including row last.
func (s *series) totalUntil(t *testing.T, name string, last int) float64 {
	t.Helper()
	c := s.col(t, name)
	sum := 0.0
	for i := 0; i <= last && i < len(c); i++ {
		var dt float64
		switch {
		case i > 0:
			dt = s.T[i] - s.T[i-1]
		case s.T[0] > 0:
			dt = s.T[0]
		case len(s.T) > 1:
			dt = s.T[1] - s.T[0]
		}
		if !math.IsNaN(c[i]) {
			sum += c[i] * dt
		}
	}
	return sum
}

// firstValue returns the first non-NaN value of a gauge column.
func (s *series) firstValue(t *testing.T, name string) float64 {
	t.Helper()
	for _, v := range s.col(t, name) {
		if !math.IsNaN(v) {
			return v
		}
	}
	t.Fatalf("column %s has no values", name)
	return 0
}

// lastValue returns the last non-NaN value of a gauge column.
func (s *series) lastValue(t *testing.T, name string) float64 {
	t.Helper()
	c := s.col(t, name)
	for i := len(c) - 1; i >= 0; i-- {
		if !math.IsNaN(c[i]) {
			return c[i]
		}
	}
	t.Fatalf("column %s has no values", name)
	return 0
}

// argmax returns the row where f is largest.
func (s *series) argmax(f func(i int) float64) int {
	best, bi := math.Inf(-1), 0
	for i := range s.T {
		if v := f(i); v > best {
			best, bi = v, i
		}
	}
	return bi
}

// ---- workload ground truth ---------------------------------------------------

// wlLine is one result line of a workload (see testdata/workloads/workload.h).
type wlLine struct {
	Type  string  `json:"type"`
	Label string  `json:"label"`
	Name  string  `json:"name"`
	T     float64 `json:"t"`

	// placement
	Buffer    int     `json:"buffer"`
	OwnerNode int     `json:"owner_node"`
	Pages     int64   `json:"pages"`
	PerNode   []int64 `json:"per_node"`
	Unknown   int64   `json:"unknown"`

	// counters (deltas)
	NumaHit        []int64 `json:"numa_hit"`
	InterleaveHit  []int64 `json:"interleave_hit"`
	NumaMiss       []int64 `json:"numa_miss"`
	LocalNode      []int64 `json:"local_node"`
	HintFaults     int64   `json:"numa_hint_faults"`
	HintFaultsLoc  int64   `json:"numa_hint_faults_local"`
	PagesMigrated  int64   `json:"numa_pages_migrated"`
	PTEUpdates     int64   `json:"numa_pte_updates"`
	PagesPerWorker int64   `json:"pages_per_worker"`
	Workers        int     `json:"workers"`
	Passes         []int64 `json:"passes"`
}

type wlResults []wlLine

func parseWorkload(t *testing.T, text string) wlResults {
	t.Helper()
	var res wlResults
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l wlLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("workload result line %q: %v", line, err)
		}
		res = append(res, l)
	}
	if len(res) == 0 {
		t.Fatalf("the workload wrote no results")
	}
	return res
}

// placements returns the placement lines with the given label, by buffer.
func (w wlResults) placements(t *testing.T, label string) []wlLine {
	t.Helper()
	var out []wlLine
	for _, l := range w {
		if l.Type == "placement" && l.Label == label {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the workload reported no placement %q", label)
	}
	return out
}

// counters returns the counter deltas with the given label.
func (w wlResults) counters(t *testing.T, label string) wlLine {
	t.Helper()
	for _, l := range w {
		if l.Type == "counters" && l.Label == label {
			return l
		}
	}
	t.Fatalf("the workload reported no counters %q", label)
	return wlLine{}
}

// ---- assertions --------------------------------------------------------------

// within fails the test unless lo <= got <= hi.
func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi || math.IsNaN(got) {
		t.Errorf("%s = %.0f, want between %.0f and %.0f", what, got, lo, hi)
	} else {
		t.Logf("%s = %.0f (want %.0f..%.0f)", what, got, lo, hi)
	}
}

// agreeBothWays fails for each key whose value numascope (got) and the
// reference (ref, named refName) give differently, or that only one gives.
func agreeBothWays[V comparable](t *testing.T, refName string, ref, got map[string]V) {
	t.Helper()
	for k, v := range ref {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %s %v, numascope %v (present: %v)", k, refName, v, g, ok)
		}
	}
	for k, v := range got {
		if _, ok := ref[k]; !ok {
			t.Errorf("%s: numascope reports %v, %s nothing", k, v, refName)
		}
	}
}

// agrees checks numascope's count of something against the workload's own
// delta of the same kernel counter. numascope's recording spans the workload
// and a little more (its lead and linger, numascope's own allocations), so it
// may see a bit more, never noticeably less; and never so much more that a
// count taken twice would pass.
func agrees(t *testing.T, what string, numascope, truth float64) {
	t.Helper()
	within(t, what+" (numascope vs the workload's own delta "+strconv.FormatFloat(truth, 'f', 0, 64)+")",
		numascope, 0.97*truth-64, 1.05*truth+500)
}

// agreesSum is agrees for a column summed over n sources against the sum
// of the workload's per-source deltas: each source may differ by what
// agrees allows one, so the slack is n times as large.
func agreesSum(t *testing.T, what string, numascope, truth float64, n int) {
	t.Helper()
	within(t, what+" (numascope vs the workload's own deltas summed, "+strconv.FormatFloat(truth, 'f', 0, 64)+")",
		numascope, 0.97*truth-64*float64(n), 1.05*truth+500*float64(n))
}

// sum adds the workload's per-node deltas.
func sum(v []int64) float64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return float64(s)
}
