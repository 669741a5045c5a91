package main

// End-to-end tests of the real binary on the live machine: they build
// numascope once and run it as a user would.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/testutil"
)

var binary string

func TestMain(m *testing.M) {
	rankTouchHelper()  // exits when this binary is TestMPIProfileRanks' workload
	syscallMixHelper() // never returns when this binary is TestPerIsTheRatioOfTheCounts' workload
	dir, err := os.MkdirTemp("", "numascope-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "numascope")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building numascope:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs numascope with a private control FIFO path and returns stdout,
// stderr and the exit status.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	return testutil.Run(t, cmd)
}

func TestTopologyJSON(t *testing.T) {
	out, errs, code := run(t, "topology", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var topo struct {
		Nodes []struct {
			ID        int            `json:"id"`
			CPUs      []int          `json:"cpus"`
			MemTotal  uint64         `json:"memory_total_bytes"`
			Distances map[string]int `json:"distances"`
		} `json:"nodes"`
		CPUs []struct {
			ID     int  `json:"id"`
			Online bool `json:"online"`
		} `json:"cpus"`
	}
	if err := json.Unmarshal([]byte(out), &topo); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if len(topo.Nodes) == 0 || topo.Nodes[0].MemTotal == 0 || len(topo.CPUs) == 0 {
		t.Fatalf("implausible topology: %+v", topo)
	}
	if d := topo.Nodes[0].Distances[strconv.Itoa(topo.Nodes[0].ID)]; d != 10 {
		t.Errorf("local distance of node %d = %d, want 10", topo.Nodes[0].ID, d)
	}
}

func TestStatPipedIsRawAndCounts(t *testing.T) {
	out, errs, code := run(t, "stat", "-i", "100ms", "-n", "3", "-e", "vmstat.pgfault,node.MemFree,cpu.idle")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want heading + 3 lines, got:\n%s", out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "time pgfault MemFree idle" {
		t.Errorf("heading = %q", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		free, err := strconv.ParseFloat(f[2], 64)
		if err != nil || free < 1<<20 {
			t.Errorf("MemFree not a raw byte count: %q", l)
		}
		// /proc/stat counts idle time in USER_HZ ticks (10 ms), each CPU
		// at its own tick: over a 100 ms interval a CPU's count can be one
		// tick off, 10% of its share, so an idle machine can read up to
		// 110% (101.45% was seen in CI), never more, and never below 0.
		idle, err := strconv.ParseFloat(f[3], 64)
		if err != nil || idle < 0 || idle > 110 {
			t.Errorf("idle %% out of range: %q", l)
		}
	}
}

func TestStatCSVDiscrete(t *testing.T) {
	out, errs, code := run(t, "stat", "--csv", "--discrete", "-i", "100ms", "-n", "2", "-e", "numa_hit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][0] != "time_s" {
		t.Fatalf("csv: %v\n%s", err, out)
	}
}

func TestBadInputGivesOneLineErrors(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "exists.jsonl")
	if err := os.WriteFile(existing, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"stat", "-e", "numa_hitt"}, "did you mean"},
		{[]string{"stat", "-i", "0"}, "positive"},
		{[]string{"stat", "-i", "-5s"}, "positive"},
		{[]string{"stat", "-i", "fast"}, "bad interval"},
		{[]string{"record", "-o", existing, "-n", "1"}, "--force"},
		{[]string{"record", "-o", filepath.Join(existing, "sub.jsonl"), "-n", "1"}, existing},
		{[]string{"convert", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"topology", "--root", filepath.Join(dir, "nope")}, "nope"},
		{[]string{"ctl", "--ctl", filepath.Join(dir, "fifo"), "label", "x"}, "fifo"},
		{[]string{"ctl", "frobnicate"}, "frobnicate"},
		{[]string{"exporter", "--listen", "127.0.0.1:0", "-e", "perf.page-fautls"}, "did you mean"},
		{[]string{"exporter", "--listen", "127.0.0.1:0", "-e", "vmstat.numa_hit"}, "perf and uncore events only"},
		{[]string{"exporter", "--listen", "127.0.0.1:0", "--web.config.file", filepath.Join(dir, "web.yml")}, "web.yml"},
		{[]string{"exporter", "--listen", "127.0.0.1:99999"}, "--listen"},
	}
	for _, c := range cases {
		_, errs, code := run(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code == 0 || !strings.Contains(errs, c.want) || len(lines) != 1 {
			t.Errorf("numascope %v: exit %d, stderr %q; want one line mentioning %q", c.args, code, errs, c.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "precious\n" {
		t.Errorf("existing file was modified: %q", b)
	}
}

// TestEmptyEventListRefused: -e "" or -e ",,," (an empty shell variable,
// say) is an error naming -e, not a silent switch to the default events;
// record creates no file. Each run is bounded, since before the fix live
// would serve until killed.
func TestEmptyEventListRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range [][]string{
		{"stat", "-n", "1", "-i", "10ms", "-e", ""},
		{"stat", "-n", "1", "-i", "10ms", "-e", ",,,"},
		{"stat", "-n", "1", "-i", "10ms", "-e", " , ", "-e", ""},
		{"record", "-n", "1", "-i", "10ms", "-o", filepath.Join(dir, "r.jsonl"), "-e", ""},
		{"record", "-n", "1", "-i", "10ms", "-o", filepath.Join(dir, "r.jsonl"), "-e=,,,", "--", "true"},
		{"live", "--listen", "127.0.0.1:0", "-e", ",,,"},
	} {
		errs, timedOut, err := runBounded(t, c...)
		if err == nil || timedOut || !strings.Contains(errs, "-e: no event given") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("numascope %q: %v, stderr %q; want a one-line error \"-e: no event given\"", c, err, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.jsonl")); err == nil {
		t.Error("record with an empty -e created its file")
	}
	// Leaving -e out still means the defaults.
	if _, errs, code := run(t, "stat", "-n", "1", "-i", "10ms"); code != 0 {
		t.Errorf("stat without -e: exit %d: %s", code, errs)
	}
}

// runBounded runs numascope with args for at most 10 s, with a FIFO
// directory of its own, and returns its stderr, whether it ran out of time
// (a command that should have refused to start serves until killed) and
// its error.
func runBounded(t *testing.T, args ...string) (stderr string, timedOut bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	return errb.String(), ctx.Err() != nil, err
}

// TestLiveRefusesSamplingFlagsItCannotHonour: live shares the sampling
// flags of stat and record, and builds its session the same way; -n and
// --per, which its endless, per-second stream cannot honour, are one-line
// errors before anything is served, never silently ignored.
func TestLiveRefusesSamplingFlagsItCannotHonour(t *testing.T) {
	for flag, want := range map[string][]string{
		"-n":    {"-n", "1"},
		"--per": {"--per", "cpu.user"},
	} {
		args := append([]string{"live", "--listen", "127.0.0.1:0"}, want...)
		errs, timedOut, err := runBounded(t, args...)
		errs = strings.TrimSpace(errs)
		if err == nil || timedOut || !strings.Contains(errs, flag) || !strings.Contains(errs, "does not apply") || strings.Contains(errs, "\n") {
			t.Errorf("numascope %q: %v, stderr %q; want a one-line error saying %s does not apply", args, err, errs, flag)
		}
	}
}

// TestExperimentDryRunChecks: experiment --dry-run refuses a spec whose
// size is beyond a limit at once, in bounded memory (the run is limited to
// 2 GB of address space: before the limits, replications = 1000000000 grew
// to 4.4 GB in 15 s), and checks the responses against the events the runs
// record, as the real run does; a good spec prints its plan.
func TestExperimentDryRunChecks(t *testing.T) {
	dir := t.TempDir()
	spec := func(name, head string) string {
		path := filepath.Join(dir, name+".toml")
		body := head + "\ninterval = \"50ms\"\nevents = [\"vmstat.pgfault\", \"node.numa_hit\", \"node.MemFree\"]\n" +
			"[[factor]]\nname = \"n\"\nlevels = [1, 2]\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dryRun := func(path string) (string, string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `ulimit -v 2000000 && exec "$0" experiment --dry-run "$1"`, binary, path)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Errorf("experiment --dry-run %s: still running after 20 s", path)
		}
		return out.String(), errb.String(), err
	}
	for _, c := range []struct{ name, head, want string }{
		{"huge", "command = \"true {n}\"\nreplications = 1000000000",
			"huge.toml:2: replications = 1000000000: more than the limit of 10000 replications"},
		{"typo", "command = \"true {n}\"\nreplications = 2\nresponses = [\"wall_time\", \"rate:vmstat.pgfualt\"]",
			"response rate:vmstat.pgfualt: the runs do not record vmstat.pgfualt"},
		{"node", "command = \"true {n}\"\nreplications = 2\nresponses = [\"total:node.99.numa_hit\"]",
			"response total:node.99.numa_hit: the runs do not record node.99.numa_hit"},
		{"gauge", "command = \"true {n}\"\nreplications = 2\nresponses = [\"wall_time\", \"rate:node.MemFree\"]",
			"response rate:node.MemFree: node.MemFree is a gauge (a level, in bytes), so its rate per second means nothing; use total:node.MemFree for its mean level over the run"},
		{"gauge-node", "command = \"true {n}\"\nreplications = 2\nresponses = [\"rate:vmstat.pgfault-node.0.MemFree\"]",
			"node.0.MemFree is a gauge"},
		{"minus", "command = \"true {n}\"\nreplications = 2\nresponses = [\"total:vmstat.pgfault-vmstat.nope\"]",
			"the runs do not record vmstat.nope"},
	} {
		out, errs, err := dryRun(spec(c.name, c.head))
		if err == nil || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || out != "" {
			t.Errorf("%s: %v, stdout %.200q, stderr %q; want one line containing %q", c.name, err, out, errs, c.want)
		}
	}
	out, errs, err := dryRun(spec("good", "command = \"true {n}\"\nreplications = 3\nwarmup = 1\nresponses = [\"wall_time\", \"total:node.numa_hit\", \"rate:vmstat.pgfault\"]"))
	if err != nil || strings.Count(out, "\nrun ") != 6 || !strings.Contains(out, "\n7 runs; results to ") {
		t.Errorf("good spec: %v, stderr %q, plan:\n%s", err, errs, out)
	}
}

// TestReportCleansCraftedProfile: numascope report on a profile whose
// function, file and command names hold ESC[2J, an OSC title sequence, BEL
// and U+202E prints them without any of those on the terminal.
func TestReportCleansCraftedProfile(t *testing.T) {
	b, err := os.ReadFile("../../testdata/profiles/serial-init-4node.json")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"function": "compute"`, `"function": "comp\u001b[2Jute\u0007\u202e"`, 1)
	s = strings.ReplaceAll(s, `"/data/profnuma.c"`, `"/data/\u001b]0;owned\u0007prof\u009bnuma.c"`)
	s = strings.Replace(s, `"profnuma-g"`, `"profnuma\u001b[31m-g"`, 1)
	if s == string(b) {
		t.Fatal("the fixture changed: nothing to replace")
	}
	path := filepath.Join(t.TempDir(), "crafted.json")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "report", path)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	if i := strings.IndexAny(out, "\x1b\x07\u202e\u009b"); i >= 0 || !utf8.ValidString(out) {
		t.Errorf("report output holds a control character at %d:\n%q", i, out)
	}
	for _, want := range []string{"comp[2Jute", "/data/]0;ownedprofnuma.c", "profnuma[31m-g"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks the cleaned name %q:\n%s", want, out)
		}
	}
}

func TestRecordCommandExitStatusAndConvert(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.jsonl.zst")
	_, errs, code := run(t, "record", "-o", rec, "-i", "50ms", "-e", "vmstat.pgfault,node.*.MemFree",
		"--", "sh", "-c", "sleep 0.6; exit 7")
	if code != 7 {
		t.Fatalf("exit %d, want the command's 7: %s", code, errs)
	}
	out, errs, code := run(t, "convert", rec)
	if code != 0 {
		t.Fatalf("convert exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0][:2], ","); got != "time_s,vmstat.pgfault" || !strings.HasPrefix(rows[0][2], "node.") {
		t.Errorf("csv heading = %v", rows[0])
	}
	// 0.6 s at 50 ms is about 12 samples; allow for a slow machine.
	if n := len(rows) - 1; n < 5 || n > 14 {
		t.Errorf("%d samples for a 0.6 s command at 50 ms", n)
	}
	prev := -1.0
	for _, r := range rows[1:] {
		ts, err := strconv.ParseFloat(r[0], 64)
		if err != nil || ts <= prev {
			t.Errorf("time_s not increasing: %v after %v", r[0], prev)
		}
		prev = ts
	}

	_, errs, code = run(t, "record", "-o", filepath.Join(dir, "x.jsonl"), "--", "/nonexistent/prog")
	if code == 0 || !strings.Contains(errs, "/nonexistent/prog") {
		t.Errorf("missing command: exit %d, %q", code, errs)
	}
}

// TestRecordSurvivesKill9 checks that a recording cut off by kill -9 loads
// with everything written before the cut.
func TestRecordSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "killed.jsonl")
	cmd := exec.Command(binary, "record", "-o", rec, "-i", "20ms", "-e", "vmstat.pgfault")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	out, errs, code := run(t, "convert", rec)
	if code != 0 {
		t.Fatalf("convert after kill -9: exit %d: %s", code, errs)
	}
	if n := strings.Count(out, "\n") - 1; n < 5 {
		t.Errorf("only %d samples survived 0.6 s at 20 ms", n)
	}
}

// TestControlFIFO drives a running record through numascope ctl: label,
// pause/resume, interval and a switch to a second file.
func TestControlFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ctl")
	first, second := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	cmd := exec.Command(binary, "record", "-o", first, "-i", "20ms", "-e", "vmstat.pgfault", "--ctl", fifo)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, func() bool { st, err := os.Stat(fifo); return err == nil && st.Mode()&os.ModeNamedPipe != 0 })
	if st, _ := os.Stat(fifo); st.Mode().Perm() != 0o600 {
		t.Errorf("FIFO mode %v, want 0600", st.Mode().Perm())
	}
	ctl := func(args ...string) {
		t.Helper()
		if _, errs, code := run(t, append([]string{"ctl", "--ctl", fifo}, args...)...); code != 0 {
			t.Fatalf("ctl %v: %s", args, errs)
		}
		time.Sleep(150 * time.Millisecond)
	}
	ctl("label", "phase", "two")
	ctl("label", "x\x1b[2J\u200fy\u061c  \u202ez\x07\xff")
	ctl("pause")
	ctl("resume")
	ctl("interval", "40ms")
	ctl("record", second)
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record exited with %v: %s", err, errb.String())
	}
	if _, err := os.Stat(fifo); !os.IsNotExist(err) {
		t.Errorf("FIFO left behind: %v", err)
	}
	a := readLines(t, first)
	for _, want := range []string{`"type":"label"`, `"phase two"`, `"type":"pause"`, `"type":"resume"`, `"type":"interval"`, `"type":"end"`} {
		if !strings.Contains(a, want) {
			t.Errorf("first file lacks %s:\n%s", want, a)
		}
	}
	rec, err := recording.Load(first)
	if err != nil {
		t.Fatal(err)
	}
	if l := rec.Labels(); len(l) != 2 || l[1].Text != "x[2Jy z\uFFFD" {
		t.Errorf("labels %+v, want the second one cleaned to %q", l, "x[2Jy z\uFFFD")
	}
	b := readLines(t, second)
	if !strings.HasPrefix(b, `{"type":"header"`) || !strings.Contains(b, `"type":"end"`) || strings.Count(b, "\n[") < 3 {
		t.Errorf("second file incomplete:\n%s", b)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("timed out")
}

func readLines(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestRecordCrashingCommand: a target that dies of a signal gives the shell's
// 128+N status, a clear message, and a complete recording.
func TestRecordCrashingCommand(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "crash.jsonl")
	_, errs, code := run(t, "record", "-o", rec, "-i", "20ms", "-e", "vmstat.pgfault",
		"--", "sh", "-c", "sleep 0.3; kill -SEGV $$")
	if code != 128+int(syscall.SIGSEGV) || !strings.Contains(errs, "killed by signal") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := readLines(t, rec)
	if !strings.Contains(lines, `"type":"end"`) || strings.Count(lines, "\n[") < 5 {
		t.Errorf("recording of a crashed command incomplete:\n%s", lines)
	}
}

// TestConvertLegacyAndTruncated: convert reads the original NUMAscope format,
// and a recording cut mid-line converts with what came before, saying so.
func TestConvertLegacyAndTruncated(t *testing.T) {
	legacy, _ := filepath.Glob("../../internal/recording/testdata/*legacy*")
	if len(legacy) == 0 {
		t.Fatal("no legacy fixture in internal/recording/testdata")
	}
	out, errs, code := run(t, "convert", legacy[0])
	if code != 0 || !strings.HasPrefix(out, "time_s,") || strings.Count(out, "\n") < 3 {
		t.Errorf("legacy convert: exit %d, %q, stderr %q", code, out, errs)
	}

	dir := t.TempDir()
	rec := filepath.Join(dir, "full.jsonl")
	if _, errs, code := run(t, "record", "-o", rec, "-i", "10ms", "-n", "20", "-e", "vmstat.pgfault"); code != 0 {
		t.Fatal(errs)
	}
	b, _ := os.ReadFile(rec)
	cut := filepath.Join(dir, "cut.jsonl")
	end := bytes.LastIndex(b, []byte("\n["))
	if err := os.WriteFile(cut, b[:end+8], 0o644); err != nil { // mid-way into the last sample
		t.Fatal(err)
	}
	out, errs, code = run(t, "convert", cut)
	if code != 0 || strings.Count(out, "\n") != 20 || !strings.Contains(errs, "cut off") {
		t.Errorf("truncated convert: exit %d, %d lines, stderr %q", code, strings.Count(out, "\n"), errs)
	}
}

// TestConvertUpgradesLegacyToJSONL: convert -o OUT.jsonl.zst writes the
// current format (compressed), which the numascope reader loads with the
// same columns, samples and labels as the legacy original; .jsonl is plain,
// .csv is CSV, another suffix is refused with one line, and an existing
// output is kept unless --force.
func TestConvertUpgradesLegacyToJSONL(t *testing.T) {
	legacy := "../../internal/recording/testdata/legacy-numaconnect2.json"
	orig, err := recording.Load(legacy)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"up.jsonl.zst", "up.jsonl"} {
		out := filepath.Join(dir, name)
		if stdout, errs, code := run(t, "convert", legacy, "-o", out); code != 0 || stdout != "" {
			t.Fatalf("convert -o %s: exit %d, stdout %q, stderr %q", name, code, stdout, errs)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		zst := bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd})
		if zst != strings.HasSuffix(name, ".zst") || (!zst && !bytes.HasPrefix(raw, []byte(`{"type":"header"`))) {
			t.Fatalf("%s: not the current format (compressed: %v): %.60q", name, zst, raw)
		}
		back, err := recording.Load(out)
		if err != nil {
			t.Fatalf("reading back %s: %v", name, err)
		}
		if back.Legacy || back.Header.Version != recording.Version || len(back.Skipped) != 0 || back.End == nil ||
			back.End.Samples != uint64(len(orig.Samples)) {
			t.Errorf("%s: legacy %v, version %d, skipped %q, end %+v", name, back.Legacy, back.Header.Version, back.Skipped, back.End)
		}
		if fmt.Sprint(back.Columns) != fmt.Sprint(orig.Columns) {
			t.Errorf("%s: columns\n%+v\nwant\n%+v", name, back.Columns, orig.Columns)
		}
		if fmt.Sprint(back.Labels()) != fmt.Sprint(orig.Labels()) || len(orig.Labels()) == 0 {
			t.Errorf("%s: labels %+v, want %+v", name, back.Labels(), orig.Labels())
		}
		if len(back.Samples) != len(orig.Samples) || len(orig.Samples) == 0 {
			t.Fatalf("%s: %d samples, want %d", name, len(back.Samples), len(orig.Samples))
		}
		for i, s := range orig.Samples {
			if b := back.Samples[i]; b.T != s.T || fmt.Sprint(b.V) != fmt.Sprint(s.V) {
				t.Errorf("%s: sample %d = %v, want %v", name, i, b, s)
			}
		}
	}

	csvOut := filepath.Join(dir, "up.csv")
	if _, errs, code := run(t, "convert", legacy, "-o", csvOut); code != 0 {
		t.Fatalf("convert -o up.csv: exit %d: %s", code, errs)
	}
	stdout, _, _ := run(t, "convert", legacy)
	if b, _ := os.ReadFile(csvOut); string(b) != stdout || !strings.HasPrefix(stdout, "time_s,") {
		t.Errorf("-o up.csv wrote %q, stdout is %q", b, stdout)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", filepath.Join(dir, "up.json")}, "unknown output suffix"},
		{[]string{"-o", filepath.Join(dir, "up.zst")}, "unknown output suffix"},
		{[]string{"-o", filepath.Join(dir, "up.jsonl.zst")}, "already exists"},
		{[]string{"--labels", "-o", filepath.Join(dir, "new.jsonl")}, "--labels is for CSV"},
	} {
		_, errs, code := run(t, append([]string{"convert", legacy}, c.args...)...)
		if lines := strings.Split(strings.TrimSpace(errs), "\n"); code == 0 || len(lines) != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("convert %v: exit %d, stderr %q; want one line with %q", c.args, code, errs, c.want)
		}
	}
	for _, name := range []string{"up.json", "up.zst", "new.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("refused convert left %s behind", name)
		}
	}
	if _, errs, code := run(t, "convert", legacy, "--force", "-o", filepath.Join(dir, "up.jsonl.zst")); code != 0 {
		t.Errorf("convert --force over an existing output: exit %d: %s", code, errs)
	}
}

// TestConvertCleansCraftedFile: a crafted recording whose column name and
// labels hold ESC[2J, BEL, bidi controls and invalid UTF-8 converts to CSV
// (--labels) and to JSON Lines without any of them reaching the output.
func TestConvertCleansCraftedFile(t *testing.T) {
	crafted := "../../internal/recording/testdata/hostile-names.jsonl"
	out, errs, code := run(t, "convert", "--labels", crafted)
	if code != 0 {
		t.Fatalf("convert --labels: exit %d: %s", code, errs)
	}
	hostile := func(what, s string) {
		t.Helper()
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8: %q", what, s)
		}
		for _, r := range s {
			if r == 0x1b || r == 0x07 || r == 0x202e || r == 0x200f || r == 0x061c || r == 0x9b {
				t.Errorf("%s holds %U: %q", what, r, s)
				return
			}
		}
	}
	hostile("CSV", out)
	if !strings.Contains(out, "a[2Jbcd\uFFFDef g") || !strings.Contains(out, "evil[2J.x") || !strings.Contains(out, "\n1e+300,1e+300,3,") {
		t.Errorf("CSV lacks the cleaned label, name or compact time:\n%s", out)
	}
	up := filepath.Join(t.TempDir(), "up.jsonl")
	if _, errs, code := run(t, "convert", crafted, "-o", up); code != 0 {
		t.Fatalf("convert -o up.jsonl: exit %d: %s", code, errs)
	}
	rec, err := recording.Load(up)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range rec.Labels() {
		hostile("upgraded label", l.Text)
	}
}

// TestRootFromEnvironment: NUMASCOPE_ROOT makes every reader use a captured
// tree, exactly like --root.
func TestRootFromEnvironment(t *testing.T) {
	tree, err := filepath.Abs("../../internal/topology/testdata/two-node-cxl")
	if err != nil {
		t.Fatal(err)
	}
	viaFlag, errs, code := run(t, "topology", "--format", "json", "--root", tree)
	if code != 0 {
		t.Fatalf("--root: exit %d: %s", code, errs)
	}
	cmd := exec.Command(binary, "topology", "--format", "json")
	cmd.Env = append(os.Environ(), "NUMASCOPE_ROOT="+tree)
	viaEnv, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(viaEnv) != viaFlag {
		t.Errorf("NUMASCOPE_ROOT and --root disagree:\n%s\n%s", viaEnv, viaFlag)
	}
	var topo struct {
		Nodes []struct {
			CPULess bool `json:"cpuless"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(viaEnv, &topo); err != nil || len(topo.Nodes) < 2 {
		t.Fatalf("captured tree not read: %v %s", err, viaEnv)
	}
	cpuless := 0
	for _, n := range topo.Nodes {
		if n.CPULess {
			cpuless++
		}
	}
	if cpuless == 0 {
		t.Errorf("the tree's CPU-less node is not reported: %s", viaEnv)
	}
}

// TestStatOnATerminal runs stat under a real pseudo-terminal (script(1)):
// human units, and the headings again after 25 lines.
func TestStatOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script(1) not installed (Debian's essential package bsdutils, util-linux elsewhere)")
	}
	cmdline := binary + " stat -i 20ms -n 30 -e vmstat.pgfault,node.MemFree,cpu.idle"
	cmd := exec.Command(scriptBin, "-qfec", cmdline, "/dev/null")
	// Without CI in the environment, as on a user's terminal: terminal
	// libraries keep quiet where CI is set, and bubbletea v1 (top's TUI)
	// queried every terminal for its background colour from its init,
	// whatever the command, and waited 5 s for an answer this pty never
	// gives.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CI=") }),
		"XDG_RUNTIME_DIR="+t.TempDir(), "TERM=xterm-256color")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if i := strings.IndexAny(string(out), "\x1b\x07"); i >= 0 {
		t.Fatalf("stat wrote a control sequence to the terminal at byte %d: %q", i, out[i:min(i+20, len(out))])
	}
	var lines []string // stdout's lines: the pty also carries stderr's "numascope: ..." notes
	for _, l := range strings.Split(strings.TrimSpace(strings.ReplaceAll(string(out), "\r", "")), "\n") {
		if !strings.HasPrefix(l, "numascope: ") {
			lines = append(lines, l)
		}
	}
	var headings []int
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "time" {
			headings = append(headings, i)
		}
	}
	// Each heading is two lines, the names and their units (issue 31).
	if len(lines) != 34 || len(headings) != 2 || headings[0] != 0 || headings[1] != 27 || strings.Fields(lines[1])[0] != "s" {
		t.Fatalf("want headings with units at lines 0 and 27 of 34, got %v in:\n%s", headings, out)
	}
	// MemFree in bytes on a terminal: a K/M/G suffix, never a raw byte count.
	f := strings.Fields(lines[2])
	if last := f[2][len(f[2])-1]; last != 'K' && last != 'M' && last != 'G' && last != 'T' {
		t.Errorf("MemFree not in human units on a terminal: %q", lines[1])
	}
}

// TestPerCycle shows counters per TSC tick instead of per second, on the
// real msr/tsc counter: CPU-clock nanoseconds per TSC tick are about
// 1 / (TSC frequency in GHz), whatever the number of CPUs. x86 kernels
// always have it (the msr PMU), so there only a lack of permission
// (testutil.NotPermitted) may keep the test from running.
func TestPerCycle(t *testing.T) {
	out, errs, code := run(t, "events", "perf.tsc", "--format", "json")
	if code != 0 || !strings.Contains(out, `"tsc"`) || strings.Contains(out, `"unavailable"`) {
		if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
			t.Skipf("msr/tsc is an x86 counter; %s has none: %s %s", runtime.GOARCH, out, errs)
		}
		testutil.NotPermitted(t, "msr/tsc cannot be counted: %s %s", out, errs)
	}
	out, errs, code = run(t, "stat", "-i", "200ms", "-n", "3", "-e", "perf.cpu-clock,perf.page-faults", "--per", "perf.tsc")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if h := strings.Fields(lines[0]); len(h) != 3 || h[1] != "cpu-clock_per_tsc" || h[2] != "page-faults_per_tsc" {
		t.Fatalf("headings %q", lines[0])
	}
	for _, l := range lines[1:] {
		v, err := strconv.ParseFloat(strings.Fields(l)[1], 64)
		if err != nil || v < 0.05 || v > 2 { // TSCs run at 0.5 to 20 GHz
			t.Errorf("cpu-clock ns per TSC tick = %q, want about 1/GHz", l)
		}
	}
	_, errs, code = run(t, "stat", "-n", "1", "-e", "perf.page-faults", "--per", "node.MemFree")
	if code == 0 || !strings.Contains(errs, "gauge") {
		t.Errorf("--per a gauge: exit %d, %q", code, errs)
	}
}

// TestProfileHandsOffTracepointClose: numascope profile leaves the slow
// close of its syscall tracepoint events to a background copy of itself
// (docs/profile.md, "Ending"); that copy holds only perf events and goes
// away on its own, leaving no perf event open.
func TestProfileHandsOffTracepointClose(t *testing.T) {
	testutil.RequireRoot(t, "for the syscall tracepoints")
	out := filepath.Join(t.TempDir(), "p.json")
	if _, errs, code := run(t, "profile", "-o", out, "--", "true"); code != 0 {
		t.Fatalf("numascope profile -- true: status %d: %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "allocation sites are not tracked") {
		t.Fatalf("as root the syscall tracepoints should open: %s", b)
	}
	closers := func() []string {
		var found []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.HasPrefix(string(cl), binary+"\x00__numascope-close-perf-events") {
				found = append(found, e.Name())
			}
		}
		return found
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(closers()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the background closer is still running after 30 s: pids %v", closers())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBench runs numascope bench on this machine with small buffers: the
// JSON keys the issue spells, one row per node with CPUs and one column
// per node with memory, and one-line errors for what cannot be measured.
func TestBench(t *testing.T) {
	out, errs, code := run(t, "bench", "--format", "json", "--size", "4M", "--repeat", "2", "--kernel", "triad")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"latency_ns", "bandwidth_mbs", "peak_injection_mbs", "loaded", "placement", "rated", "conditions", "skipped", "notes", "topology"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no %q key", k)
		}
	}
	var m struct {
		Lat struct {
			Initiators []int        `json:"initiators"`
			Targets    []int        `json:"targets"`
			Matrix     [][]*float64 `json:"matrix"`
		} `json:"latency_ns"`
		BW struct {
			Kernel string `json:"kernel"`
		} `json:"bandwidth_mbs"`
		Placement struct {
			Min *float64 `json:"min_fraction_on_target"`
		} `json:"placement"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Lat.Matrix) != len(m.Lat.Initiators) || len(m.Lat.Matrix[0]) != len(m.Lat.Targets) || m.BW.Kernel != "triad" {
		t.Errorf("latency %v x %v matrix %v, kernel %q", m.Lat.Initiators, m.Lat.Targets, m.Lat.Matrix, m.BW.Kernel)
	}
	if m.Placement.Min == nil || *m.Placement.Min < 0.99 {
		t.Errorf("min_fraction_on_target %v", m.Placement.Min)
	}
	text, errs, code := run(t, "bench", "--kind", "latency", "--size", "2M", "--repeat", "1")
	if code != 0 || !strings.Contains(text, "from\\to") {
		t.Errorf("text: exit %d, %s\n%s", code, errs, text)
	}
	outFile := filepath.Join(t.TempDir(), "b.json")
	if _, errs, code := run(t, "bench", "--kind", "latency", "--size", "2M", "--repeat", "1", "--format", "json", "-o", outFile); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, errs)
	}
	for args, want := range map[string]string{
		"--to 99":                     "node 99 does not exist",
		"--mix 3-1":                   "want reads:writes",
		"--mix 1:1 --kernel copy":     "give one of them",
		"--size 12X":                  "not a size",
		"--kernel nt_store":           "unknown kernel",
		"--kernel nt-store --isa go":  "use --kernel store",
		"--isa avx1024":               "unknown instruction set",
		"--size 1T":                   "free; --size needs",
		"--format json -o " + outFile: "already exists; use --force",
	} {
		_, errs, code := run(t, append([]string{"bench"}, strings.Fields(args)...)...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code == 0 || len(lines) != 1 || !strings.Contains(errs, want) {
			t.Errorf("bench %s: exit %d, stderr %q; want one line saying %q", args, code, errs, want)
		}
	}
}

// TestRecordOntoAFullDisk records onto a real full disk: record says once
// what went wrong and what to do, goes on sampling, continues in another
// file on `ctl record`, ends with status 1, and its summary counts the
// samples the two files hold, which convert reads back.
func TestRecordOntoAFullDisk(t *testing.T) {
	full := filepath.Join(testutil.SmallFS(t, 8000), "r.jsonl")
	tmp := t.TempDir()
	more, fifo := filepath.Join(tmp, "more.jsonl"), filepath.Join(tmp, "ctl")
	cmd := exec.Command(binary, "record", "-o", full, "--ctl", fifo, "-i", "1ms", "-n", "100000", "-e", "vmstat.pgfault")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var said []string
	next := func(what string) {
		t.Helper()
		for timeout := time.After(30 * time.Second); ; {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("record ended before %q:\n%s", what, strings.Join(said, "\n"))
				}
				said = append(said, l)
				if strings.Contains(l, what) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q in 30 s:\n%s", what, strings.Join(said, "\n"))
			}
		}
	}
	next("sampling goes on without a file: `numascope ctl --ctl " + fifo + " record FILE`")
	if _, errs, code := run(t, "ctl", "--ctl", fifo, "record", more); code != 0 {
		t.Fatalf("ctl record: exit %d: %s", code, errs)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(more); strings.Count(string(b), "\n[") >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not fill after ctl record", more)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		said = append(said, l)
	}
	err = cmd.Wait()
	errs := strings.Join(said, "\n")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v after a recording stopped on a full disk, want status 1", err)
	}
	if n := strings.Count(errs, "no space left on device"); n != 1 || !strings.Contains(errs, "free space on its file system, or record elsewhere") {
		t.Errorf("want the full disk said once, with what to do; got:\n%s", errs)
	}
	m := regexp.MustCompile(`recorded (\d+) samples to ` + regexp.QuoteMeta(full+", "+more)).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no summary naming both files in:\n%s", errs)
	}
	rows := 0
	for _, f := range []string{full, more} {
		csv := filepath.Join(tmp, filepath.Base(f)+".csv")
		if _, cerrs, code := run(t, "convert", f, "-o", csv); code != 0 {
			t.Fatalf("convert %s: exit %d: %s", f, code, cerrs)
		}
		b, err := os.ReadFile(csv)
		if err != nil {
			t.Fatal(err)
		}
		rows += strings.Count(string(b), "\n") - 1 // less the heading
	}
	if strconv.Itoa(rows) != m[1] {
		t.Errorf("the summary says %s samples, the files hold %d", m[1], rows)
	}
}

// TestStatIntoAFileKeepsOrder: stat with stdout on a local file at 60 ms,
// where the sampling goroutine itself prints each sample (sampler.Direct)
// and the terminal's goroutine prints the marks, writes every sample once,
// in time order, with each label between the samples it fell between; and
// a `ctl record` from stat, whose recorder was passed over until then (a
// quiet sink), begins a file at the last sample before it that holds
// every sample after it.
func TestStatIntoAFileKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	fifo, outPath, rec := filepath.Join(dir, "ctl"), filepath.Join(dir, "stat.out"), filepath.Join(dir, "r.jsonl")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// 60 samples (3.6 s): room for the three ctl commands, each a process
	// started on a machine that may be busy.
	const samples = 60
	cmd := exec.Command(binary, "stat", "-i", "60ms", "-n", strconv.Itoa(samples), "-e", "vmstat.pgfault", "--ctl", fifo)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, func() bool { st, err := os.Stat(fifo); return err == nil && st.Mode()&os.ModeNamedPipe != 0 })
	for _, args := range [][]string{{"label", "one"}, {"label", "two"}, {"record", rec}} {
		time.Sleep(250 * time.Millisecond)
		if _, errs, code := run(t, append([]string{"ctl", "--ctl", fifo}, args...)...); code != 0 {
			t.Fatalf("ctl %v: %s", args, errs)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stat: %v: %s", err, errb.String())
	}
	var times []float64
	var labels []string
	last := 0.0
	for i, l := range strings.Split(strings.TrimSuffix(readLines(t, outPath), "\n"), "\n") {
		f := strings.Fields(l)
		if i == 0 {
			if strings.Join(f, " ") != "time pgfault" {
				t.Fatalf("heading %q", l)
			}
			continue
		}
		var ts float64
		var err error
		switch {
		case len(f) == 4 && f[0] == "#" && f[2] == "label:":
			labels = append(labels, f[3])
			ts, err = strconv.ParseFloat(f[1], 64)
		case len(f) == 2:
			ts, err = strconv.ParseFloat(f[0], 64)
			times = append(times, ts)
		default:
			t.Fatalf("line %d %q: neither a sample nor a label", i, l)
		}
		if err != nil || ts < last {
			t.Fatalf("line %d %q: time %v after %v", i, l, ts, last)
		}
		last = ts
	}
	if len(times) != samples || strings.Join(labels, " ") != "one two" {
		t.Fatalf("%d samples, labels %q; want %d samples and the labels one and two:\n%s", len(times), labels, samples, readLines(t, outPath))
	}
	r, err := recording.Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	n := len(r.Samples)
	if n == 0 || r.End == nil || r.End.Samples != uint64(n) {
		t.Fatalf("%s: %d samples, end %+v", rec, n, r.End)
	}
	// Its samples are stat's last n, and its t=0 the sample before them.
	for i, s := range r.Samples {
		t0 := times[len(times)-n-1]
		if want := times[len(times)-n+i] - t0; s.T < want-0.002 || s.T > want+0.002 {
			t.Errorf("recorded sample %d at t=%.3f, want %.3f (stat's at %.3f, less the last before the switch at %.3f)", i, s.T, want, times[len(times)-n+i], t0)
		}
	}
}
