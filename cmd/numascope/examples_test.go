package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/numascope/numascope/internal/testutil"
)

// The docs' examples are what users copy, so TestDocExamples runs every one
// of them, as written, against the binary TestMain built. An example is a
// command line of a ```sh block (or a "$ " line of another block, whose
// following lines are its output), or a whole block of another kind: a
// JSON sketch of an output, an input file, or output. docs/testing.md
// ("The docs' examples") gives the rules for writing them.

// docRule says what TestDocExamples does with an example it does not just
// run, keyed by "FILE: TEXT" (TEXT: the command line with its comment cut
// and white space collapsed, or a block's first line). Exactly one of why,
// keysOf, feed and shape is set.
type docRule struct {
	// why it is not run here, and what runs it (or the same) instead.
	why string
	// keysOf: the block sketches the JSON output of this command, run in
	// the work directory after the doc's own lines: every key the sketch
	// names must be in that output, but those in absent, which a one-node
	// build machine without HMAT does not produce (the comment says why).
	keysOf string
	absent []string
	// feed: the block is a file the doc says to give numascope: it is
	// written to FILE in the work directory and this command must succeed.
	feed string
	// shape: the block is output; each of its lines, and each line of the
	// output of every example command that starts with of, matches shape.
	shape, of string
}

// docExampleRules is the one table of examples that are not run as
// written: the rest run. A new example that cannot run here must be added,
// with why; the test fails on an example it can neither run nor find here.
var docExampleRules = map[string]docRule{
	// README.md, beside the Quickstart (TestQuickstart runs that).
	"README.md: scripts/run":  {why: "installs Go and builds into the checkout's bin/; TestQuickstart runs its steps (make build, numascope live)"},
	"README.md: scripts/test": {why: "the whole suite, this test included (CI runs it)"},

	// docs/bench.md
	"docs/bench.md: numascope bench --kind latency --to 2 --size 256M":                {why: "needs a node 2 with memory: runs in the 4-node NUMA VM: internal/vmtest TestDocExamplesInVM"},
	"docs/bench.md: numascope bench --kind c2c --pairs \"sample 2000\" --line-node 1": {why: "needs a node 1: internal/vmtest TestBenchC2C runs --kind c2c with --line-node in a 3-node VM"},
	"docs/bench.md: MOVQ (AX), CX":                                                    {why: "Go assembly the compiler emits, not a command"},
	`docs/bench.md: "latency_ns": {"initiators": [0,1,2], "targets": [0,1,2,3], "matrix": [[..],[..],[..]],`: {keysOf: "numascope bench --kind all,c2c --mix 3:1 --format json -o bench-all.json --force",
		absent: []string{
			// tier_order and rated_order contradictions: only where the
			// measured order contradicts the tiers or HMAT (two nodes).
			"faster_tier", "faster_tier_node", "faster_tier_range", "faster_tier_value",
			"slower_tier", "slower_tier_node", "slower_tier_range", "slower_tier_value",
			"rated_better_measured", "rated_better_node", "rated_better_range", "rated_better_value",
			"rated_worse_measured", "rated_worse_node", "rated_worse_range", "rated_worse_value", "text",
			// a loaded pair without a curve: a node with one CPU.
			"reason",
			// DMI strings: absent where /sys/class/dmi is (VMs).
			"sys_vendor", "product_name",
		}},
	`docs/bench.md: "topology": {"nodes": [{"id": 2, "cpus": [], "cpuless": true, "memory_tier": 22,`: {keysOf: "numascope bench --kind latency --format json -o bench-tiers.json"},

	// docs/control.md: runs as a user (nobody, when the test is root) with
	// a stat beside each block; the reader's ./load-dataset is made here.
	`docs/control.md: sent "label phase 2" to PID 4711 (root, logged in as alice): numascope record -o run.jsonl.zst -- ./app, on /run/numascope-ctl`: {
		shape: `^sent "[^"]+" to PID \d+ \([a-z]+(, logged in as [a-z]+)?\): numascope .+, on /\S+numascope-ctl$`, of: "numascope ctl "},
	"docs/control.md: numascope: recording stopped (/data/r.jsonl holds 4935 samples): writing recording /data/r.jsonl: no space left on device (free space on its file system, or record elsewhere; the samples written so far stay readable)": {
		why: "needs a full disk: TestRecordOntoAFullDisk fills a real tmpfs and checks these two lines"},
	"docs/control.md: numascope: control FIFO /run/user/1000/numascope-ctl: ignored \"lable phase 2\": unknown command \"lable\"; valid commands: record <file>, label <text>, pause, resume, interval <duration> (e.g. 100ms, 1s, 250us; a bare number is milliseconds)": {
		why: "the error for a mistyped command: internal/ctl TestParseBad checks it for this very line"},

	// docs/experiment.md
	"docs/experiment.md: numascope: --policy \"bind:4\": node 4 does not exist; the nodes are 0-3, with memory and allowed: 0-3": {
		why: "errors on a 4-node machine: internal/placement's tests and internal/vmtest's run tests check them"},
	`docs/experiment.md: name = "regimes" # default: the file name`: {
		why: "TestExperimentDocExampleDryRuns feeds it to experiment --dry-run; a full run needs the NUMA VM's firsttouch (internal/vmtest TestExperimentRegimes)"},
	"docs/experiment.md: [7/10] run 6 regime=interleave (rep 2): 5.214s, exit 0; 3 left, ETA 16s": {
		why: "progress of a 10-run experiment: internal/experiment's execute tests check the line"},

	// docs/exporter.md
	"docs/exporter.md: # web.yml":       {why: "a template: its bcrypt hash and certificate paths are the reader's; internal/exporter's web-config tests serve a real one"},
	"docs/exporter.md: scrape_configs:": {why: "Prometheus's configuration: TestPrometheus scrapes the exporter with a real prometheus"},
	"docs/exporter.md: sum by (cgroup, numa_node) (numascope_cgroup_memory_bytes{type=~\"anon|file\"}) # memory by node": {
		why: "PromQL for Grafana: internal/vmtest TestExporterCgroups checks the series it sums"},

	// docs/live-protocol.md
	`docs/live-protocol.md: ← {"type":"hello","protocol":1,"mode":"live","host":"hpc7",...,"columns":[{"name":"node.numa_hit",...}],"state":{"interval_s":1,"paused":false,"discrete":false,"events":["node.numa_hit"],"recording":""},"batch_ms":400}`: {
		why: "a WebSocket transcript: internal/live's protocol tests exchange these messages"},

	// docs/performance.md: benchmarks of minutes to half an hour, timed on
	// a quiet machine; internal/benchtest builds and checks their C side.
	"docs/performance.md: scripts/bench":                                                           {why: "about 30 min"},
	"docs/performance.md: scripts/bench-ep":                                                        {why: "about 20 min"},
	"docs/performance.md: scripts/bench-numa":                                                      {why: "a few minutes of timing"},
	"docs/performance.md: scripts/bench-top":                                                       {why: "6 min"},
	"docs/performance.md: scripts/bench --quick; scripts/bench-ep --quick":                         {why: "1-2 min each, of timing"},
	"docs/performance.md: sudo scripts/bench-misses":                                               {why: "4 min of scheduler tracing"},
	"docs/performance.md: scripts/bench-rss":                                                       {why: "10 min of resident-memory readings, 150 s per arm"},
	"docs/performance.md: scripts/bench-scale":                                                     {why: "7 min of timing on 16 CPUs"},
	"docs/performance.md: scripts/bench-pages":                                                     {why: "9 min of timing and perf"},
	"docs/performance.md: scripts/bench-together":                                                  {why: "4 min of timing at 1 s"},
	"docs/performance.md: scripts/bench-profile --reps 11":                                         {why: "11 reps of minutes"},
	"docs/performance.md: scripts/bench-profile --reps 3 --threads 1,2,4,8":                        {why: "minutes of timing"},
	"docs/performance.md: scripts/bench-profile --reps 3 --threads 8,32 --consumers 1,2":           {why: "minutes of timing"},
	"docs/performance.md: go test -run '^$' -bench BenchmarkReplay ./internal/profile/":            {why: "a Go benchmark, run by the benchmark runs"},
	"docs/performance.md: make build":                                                              {why: "a step of the 16-CPU recipe: TestQuickstart runs it"},
	"docs/performance.md: gcc -static -O2 -g -pthread -o profbench testdata/workloads/profbench.c": {why: "a step of the 16-CPU recipe: bench-profile builds profbench this way, and internal/profile and internal/vmtest TestProfBenchChecksum build and run it"},
	"docs/performance.md: NUMASCOPE_BIN=./numascope PROFBENCH_BIN=./profbench scripts/bench-profile --reps 3 --threads 4,16,32 --storm-threads-per-cpu 4 --ring-kb 16384,32768 --consumers 1,3": {why: "the 16-CPU recipe, minutes of timing"},
	"docs/performance.md: scripts/bench-profile --reps 7 --vm --scan-rate 100ms":                                                                                                                {why: "boots the NUMA VM, minutes"},
	"docs/performance.md: scripts/bench-numa --rounds 21 --node 1":                                                                                                                              {why: "needs node 1; minutes"},
	"docs/performance.md: scripts/bench-numa --rounds 9 --isa avx512 --kernels triad,copy-nt":                                                                                                   {why: "needs AVX-512; minutes"},
	"docs/performance.md: go test -run '^$' -bench 'Chase|Kernels' ./internal/bench/":                                                                                                           {why: "a Go benchmark, run by the benchmark runs"},
	"docs/performance.md: Peak injection bandwidth (MB/s): copy kernel (avx2) at full rate, best of 5 200ms windows after one uncounted, 2 threads from the first initiator; 100% transparent huge pages": {
		why: "output of bench --kind loaded, which this test runs (docs/bench.md); internal/bench's loaded tests and internal/vmtest TestBenchLoaded check it"},

	// docs/profile.md
	"docs/profile.md: mpirun -n 4 numascope profile -o out/prof.%h.%r.json -- ./app": {why: "needs MPI: TestMPIProfileRanks runs profile under mpirun"},
	"docs/profile.md: numascope report out/prof.*.json":                              {why: "needs the ranks' profiles of the mpirun line: TestMPIProfileRanks reports on them"},
	`docs/profile.md: "host": "node1",`: {keysOf: "numascope profile -o prof.json -- ./app",
		absent: []string{
			"rank",      // under mpirun only
			"signal",    // when a signal ended the command
			"comp_dirs", // for a program with DWARF line tables (./app is a script)
		}},
	"docs/profile.md: - 100% of the remote accesses from pinned threads (nodes 1-3) went to pages on node 0; 99% of all pages": {
		why: "report's hints on a 4-node profile: internal/profile's report tests and internal/vmtest TestProfile check them"},
	"docs/profile.md: Profiles of 3 ranks of ./app: 14710 page faults sampled": {why: "report of an MPI job's ranks: internal/profile's merge tests and TestMPIProfileRanks check it"},

	// docs/recording-format.md
	`docs/recording-format.md: {"type":"header","format":"numascope","version":1,"host":"hpc7","kernel":"6.8.0-45-generic",`: {
		keysOf: "numascope record -o rec.jsonl -i 100ms -- true"},
	"docs/recording-format.md: [12.3,1520,null,0.125,64000000000]": {why: "one sample line, in the format's prose; internal/recording's reader tests"},
	`docs/recording-format.md: {"type":"label","t":12.5,"text":"phase 2"}`: {
		why: "marks made through the control FIFO: TestControlFIFO makes and reads them"},
	"docs/recording-format.md: line 1234: cut off mid-line (the recording was probably interrupted); 1 line skipped": {
		why: "the reader's warnings on damaged files: internal/recording's tests and TestConvertLegacyAndTruncated"},
	`docs/recording-format.md: [["NumaConnect2",2,200000000],`: {feed: "numascope convert FILE"},

	// docs/security.md
	"docs/security.md: sudo scripts/attack-pass":                                           {why: "the adversarial pass: minutes, as root with a second user (docs/testing.md)"},
	"docs/security.md: sudo ATTACK_CONNS=20000 scripts/attack-pass":                        {why: "the adversarial pass, 20 000 connections"},
	"docs/security.md: sudo ATTACK_BIN=/tmp/numascope-old WS_STRICT=0 scripts/attack-pass": {why: "the adversarial pass against an old build the reader has"},

	// docs/sensors.md
	"docs/sensors.md: type Sensor interface {": {why: "Go source (internal/sensor), compiled with it"},

	// docs/testing.md: the suites and the NUMA VM, which TestNumavmContract
	// and internal/vmtest boot.
	"docs/testing.md: sudo scripts/install-test-deps": {why: "installs packages (CI's set-up)"},
	"docs/testing.md: scripts/numavm [--nodes N] [--cpus-per-node C] [--cpuless K] [--mem-per-node 512M] [--distances '10,20;20,10'] [--add PATH]... [--timeout 300] [--max-timeout S] [--boot-timeout S] [--hmat] [--no-balancing] [-v] -- CMD ARGS...": {
		why: "scripts/numavm's synopsis: TestNumavmContract checks its options"},
	"docs/testing.md: scripts/numavm -- numascope topology":                                                              {why: "runs in the 4-node NUMA VM: internal/vmtest TestDocExamplesInVM"},
	"docs/testing.md: scripts/numavm --nodes 2 --distances '10,31;31,10' -- cat /sys/devices/system/node/node0/distance": {why: "boots the NUMA VM: internal/vmtest TestDistanceFlag, and TestBenchLoaded boots with --distances"},
	"docs/testing.md: scripts/numavm --add ./myprog -- numascope record -o /tmp/r.jsonl -- myprog":                       {why: "boots the NUMA VM with the reader's program"},
	`docs/testing.md: scripts/numavm -- sh -c 'numascope record -o /tmp/r.jsonl -e "node.*.numa_hit" -- interleave && numascope convert /tmp/r.jsonl'`: {
		why: "runs in the 4-node NUMA VM: internal/vmtest TestDocExamplesInVM"},
	"docs/testing.md: go test ./internal/vmtest/ -v":                     {why: "the VM suite (scripts/test runs it)"},
	"docs/testing.md: go test ./internal/vmtest/ -run TestSerialInit -v": {why: "a VM scenario (scripts/test runs it)"},
	`docs/testing.md: scripts/numavm --nodes 4 -- sh -c ' numascope record -o /tmp/r.jsonl -i 200ms -e "node.*.numa_hit,node.*.AnonPages,vmstat.numa_hint_faults,vmstat.numa_pages_migrated" -- firsttouch --serial --mb 32 --seconds 6 numascope convert /tmp/r.jsonl'`: {
		why: "runs in the 4-node NUMA VM: internal/vmtest TestDocExamplesInVM"},

	// docs/top.md
	"docs/top.md: top 08:26:47 every 1s sort: cpu 47 processes, 60 kernel threads hidden (K)": {why: "a screen scripts/top-screenshot captured: TestTopInTmux checks the screen"},
	"docs/top.md: numascope top 08:26:49 every 1s sort: cpu filter: \"20326\" 1 process":      {why: "a screen scripts/top-screenshot captured: TestTopInTmux checks the drill-down"},
	`docs/top.md: {"time":"2026-11-26T19:56:55.5Z","interval_seconds":1.0,`: {keysOf: "numascope top -b -n 2 -d 200ms --format json",
		absent: []string{
			"cgroup",         // a process in a cgroup other than the root
			"numa_misplaced", // a migration reason: NUMA balancing at work (several nodes)
		}},

	// docs/topology.md
	`docs/topology.md: "memory_tiers": [{"id": 1, "nodes": [0, 1]}, {"id": 4, "nodes": [2]}],`: {why: "HMAT attributes: internal/vmtest TestHMAT checks them in a VM with --hmat; internal/topology's fixtures"},

	// docs/web-client.md
	"docs/web-client.md: numascope experiment regimes.toml --analyze --web": {why: "runs docs/experiment.md's experiment (the NUMA VM's firsttouch) before serving: web/test/experiment.test.mjs serves a tiny one with --analyze --web; internal/vmtest TestExperimentRegimes runs this one"},
	"docs/web-client.md: scripts/install-web-deps":                          {why: "installs packages (CI's set-up)"},
	"docs/web-client.md: scripts/web-build":                                 {why: "rebuilds the committed bundle: scripts/web-check, in CI, fails when it is stale"},
	"docs/web-client.md: scripts/web-check":                                 {why: "the web suite's first stage (scripts/test)"},
	"docs/web-client.md: scripts/web-test":                                  {why: "the web suite (scripts/test)"},
	"docs/web-client.md: scripts/web-bench":                                 {why: "the browser benchmark, minutes"},
}

// synopsisRE: a usage line, not a command: numascope SUB [--flag ...].
var synopsisRE = regexp.MustCompile(`^numascope [a-z ]+.*\[-`)

// docRunner runs a doc's commands in one directory, as one user, with the
// freshly built numascope first on PATH.
type docRunner struct {
	dir  string
	env  []string
	cred *syscall.Credential
	// beside: the numascope stat a control example steers; stop ends it.
	beside *exec.Cmd
	stop   func()
	// outputs of the commands that ended, for the shape rules.
	outputs map[string]string
}

func (r *docRunner) command(line string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	return cmd
}

// TestDocExamples runs every example of README.md (but its Quickstart,
// which TestQuickstart runs) and docs/*.md against the built binary, as
// written: each command that ends must succeed, each that runs until
// stopped (live, view, top, stat) must work and is then stopped, each
// usage line must name only flags the command has, each JSON sketch of an
// output must name only keys the output has, each output the doc shows
// must have the shape of the real one. docExampleRules lists the few that
// cannot run here, with why and what runs them instead; an example that is
// neither runnable nor listed fails the test, and so does a rule that
// names no example.
//
// It needs root, for profile's perf sampling and to run docs/control.md's
// examples as nobody, tmux (top) and ports 8080 and 9000 free.
func TestDocExamples(t *testing.T) {
	testutil.RequireRoot(t, "for profile's perf sampling and to run the control examples as nobody")
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	quickstart := map[string]bool{}
	for _, l := range quickstartLines(t, string(readme)) {
		quickstart[strings.Join(strings.Fields(l), " ")] = true
	}
	used := map[string]bool{}
	rule := func(key string) (docRule, bool) {
		r, ok := docExampleRules[key]
		used[key] = used[key] || ok
		return r, ok
	}

	work := t.TempDir()
	env := append(os.Environ(), "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"), "XDG_RUNTIME_DIR="+t.TempDir())
	docOwnFiles(t, work, env)
	runners := map[string]*docRunner{}
	runnerOf := func(file string) *docRunner {
		if r := runners[file]; r != nil {
			return r
		}
		r := &docRunner{dir: work, env: env, outputs: map[string]string{}}
		if file == "docs/control.md" {
			r = docControlRunner(t)
		}
		runners[file] = r
		return r
	}
	var shapes []docRule
	flags := &docFlags{r: runnerOf("")}
	files := testutil.DocFiles(t, root)
	blocks := testutil.DocBlocks(t, root, files)
	docCheckInline(t, flags, root, files)
	for _, b := range blocks {
		r := runnerOf(b.File)
		cmds := testutil.DocCommands(b)
		if len(cmds) == 0 { // a block that is not commands: keyed by its first line but a lone { or [
			first := ""
			for _, l := range b.Body {
				if first = strings.Join(strings.Fields(l), " "); first != "{" && first != "[" {
					break
				}
			}
			key := b.File + ": " + first
			dr, ok := rule(key)
			switch {
			case !ok:
				t.Errorf("%s:%d: a %q block neither runnable nor listed in docExampleRules: make it a ```sh block of commands, or add %q with what it is", b.File, b.Line, b.Lang, key)
			case dr.why != "":
				t.Logf("%s:%d: not run: %s", b.File, b.Line, dr.why)
			case dr.keysOf != "":
				docCheckKeys(t, r, b, dr)
			case dr.feed != "":
				f := filepath.Join(r.dir, fmt.Sprintf("example-%d%s", b.Line, map[string]string{"json": ".json", "toml": ".toml"}[b.Lang]))
				if err := os.WriteFile(f, []byte(strings.Join(b.Body, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				quickstartRun(t, r.command(strings.ReplaceAll(dr.feed, "FILE", f)), fmt.Sprintf("%s:%d (%s)", b.File, b.Line, dr.feed))
			case dr.shape != "":
				re := regexp.MustCompile(dr.shape)
				for _, l := range b.Body {
					if l = strings.TrimSpace(l); l != "" && !re.MatchString(l) {
						t.Errorf("%s:%d: %q does not have the shape the test checks numascope's output against (%s): update one of them", b.File, b.Line, l, dr.shape)
					}
				}
				shapes = append(shapes, dr)
			}
			continue
		}
		for _, c := range cmds {
			key := b.File + ": " + c.Key()
			where := fmt.Sprintf("%s:%d", b.File, c.Line)
			if b.File == "README.md" && quickstart[c.Key()] {
				continue // TestQuickstart runs it
			}
			if dr, ok := rule(key); ok {
				if dr.why == "" {
					t.Errorf("%s: the rule for a command line must say why it is not run", where)
				}
				t.Logf("%s: not run: %s: %s", where, c.Key(), dr.why)
				continue
			}
			switch {
			case synopsisRE.MatchString(c.Key()):
				n := docCheckUsage(t, flags, where, c.Key())
				t.Logf("%s: usage: %s: %d flags, every one numascope has", where, c.Key(), n)
			case strings.HasPrefix(c.Text, "numascope "), b.File == "docs/control.md":
				r.run(t, where, c)
			default:
				t.Errorf("%s: %q is neither runnable here nor listed in docExampleRules: add %q with why", where, c.Text, key)
			}
		}
		if r.stop != nil && b.File == "docs/control.md" {
			r.stop() // each control block starts from a stat of its own
			r.beside, r.stop = nil, nil
		}
	}
	for _, s := range shapes {
		re, n := regexp.MustCompile(s.shape), 0
		for _, r := range runners {
			for line, out := range r.outputs {
				if !strings.HasPrefix(line, s.of) {
					continue
				}
				n++
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if !re.MatchString(l) {
						t.Errorf("%s printed %q, not the shape the doc shows (%s)", line, l, s.shape)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("no example ran a command starting %q, whose output a doc shows", s.of)
		} else {
			t.Logf("checked the output of %d examples %q... against the shape the doc shows", n, s.of)
		}
	}
	for key, dr := range docExampleRules {
		if n := len(slices.DeleteFunc([]string{dr.why, dr.keysOf, dr.feed, dr.shape}, func(s string) bool { return s == "" })); n != 1 {
			t.Errorf("docExampleRules[%q] sets %d of why, keysOf, feed and shape: set one", key, n)
		}
		if !used[key] {
			t.Errorf("docExampleRules names %q, which no doc has: remove or update it", key)
		}
	}
}

// run runs one command line of a doc: a line ending in & is the stat a
// control example steers; a line that runs until stopped is started,
// probed and stopped; any other must end successfully (and print the
// output the doc shows under it, in shape).
func (r *docRunner) run(t *testing.T, where string, c testutil.DocCommand) {
	t.Helper()
	line := c.Key()
	line = testutil.DocBounded(line)
	if bg, ok := strings.CutSuffix(line, " &"); ok {
		r.startBeside(t, bg)
		return
	}
	if strings.Contains(line, "numascope-ctl") || strings.HasPrefix(line, "numascope ctl ") {
		r.startBeside(t, "numascope stat")
	}
	label := where + ": " + line
	if how, ok := docUntilStopped(line); ok {
		if how == terminalUI {
			quickstartTerminal(t, r.dir, r.env, line)
			return
		}
		stop, printed := startUntilStopped(t, r.command(line), how, label)
		stop()
		for _, s := range c.Shows {
			if re := docShapeOf(s); !re.MatchString(printed) {
				t.Errorf("%s printed %q; the doc shows %q", label, printed, s)
			}
		}
		return
	}
	out := quickstartRun(t, r.command(line), label)
	r.outputs[line] = out
	for _, s := range c.Shows {
		if !docShapeOf(s).MatchString(out) {
			t.Errorf("%s printed %q; the doc shows %q", label, out, s)
		}
	}
}

// startBeside starts the stat a control example steers, once, and waits
// until it holds its default FIFO.
func (r *docRunner) startBeside(t *testing.T, line string) {
	t.Helper()
	if r.beside != nil {
		return
	}
	r.beside = r.command(line)
	r.stop = quickstartStart(t, r.beside, printsLines, line+" (beside the control examples)")
	quickstartHoldsDefaultFIFO(t, r.beside.Process.Pid, r.env, r.cred == nil)
}

// docUntilStopped says whether a numascope line runs until stopped, and
// how the test sees it working.
func docUntilStopped(line string) (untilStopped, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "numascope" {
		return 0, false
	}
	has := func(flags ...string) bool {
		return slices.ContainsFunc(f, func(a string) bool { return slices.Contains(flags, a) })
	}
	switch f[1] {
	case "live", "view":
		return servesURL, true
	case "exporter":
		return servesMetric, true
	case "experiment":
		return servesURL, has("--web")
	case "stat":
		return printsLines, !has("-n", "--count", "--")
	case "top":
		return terminalUI, !has("-b", "--batch", "--format")
	}
	return 0, false
}

// docShapeOf turns a line of output the doc shows into a pattern: numbers
// match any number, a word ending in ... (a token, a cut list) anything.
func docShapeOf(shown string) *regexp.Regexp {
	var b strings.Builder
	for i, w := range strings.Fields(shown) {
		if i > 0 {
			b.WriteString(`\s+`)
		}
		cut, ok := strings.CutSuffix(w, "...")
		if ok { // keep what precedes the token: "?token=3f9c..."
			w = cut[:strings.LastIndexFunc(cut, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })+1]
		}
		b.WriteString(regexp.MustCompile(`\d+`).ReplaceAllString(regexp.QuoteMeta(w), `\d+`))
		if ok {
			b.WriteString(`\S*`)
		}
	}
	return regexp.MustCompile(`(?m)` + b.String())
}

// docFlags answers whether numascope's command sub (e.g. "stats anova")
// exists and has a flag, from its --help; a flag --help does not list is
// asked of the command itself, since a hidden one (profile --capture) is
// still a flag.
type docFlags struct {
	r    *docRunner
	help map[string]map[string]bool // nil: no such command
}

func (d *docFlags) has(t *testing.T, sub, flag string) (cmdOK, flagOK bool) {
	t.Helper()
	if d.help == nil {
		d.help = map[string]map[string]bool{}
	}
	fl, ok := d.help[sub]
	if !ok {
		out, err := d.r.command("numascope " + sub + " --help").CombinedOutput()
		if err == nil {
			fl = map[string]bool{}
			for _, m := range regexp.MustCompile(`(?m)^\s+(?:(-\w), )?(--[\w.-]+)`).FindAllStringSubmatch(string(out), -1) {
				fl[m[1]], fl[m[2]] = true, true
			}
		}
		d.help[sub] = fl
	}
	if fl == nil || flag == "" || fl[flag] {
		return fl != nil, fl != nil
	}
	out, _ := d.r.command("numascope " + sub + " " + flag + "=1 --help").CombinedOutput()
	fl[flag] = !strings.Contains(string(out), "unknown flag") && !strings.Contains(string(out), "unknown shorthand flag")
	return true, fl[flag]
}

var (
	docSubRE  = regexp.MustCompile(`^[a-z]+$`)
	docFlagRE = regexp.MustCompile(`(?:^|[\s\[|])(--?[a-zA-Z][\w.-]*)`)
)

// docCheckUsage: the command a usage line (or a command in prose) names
// exists, and has every flag the line names before a -- (after it come
// the flags of the command run).
func docCheckUsage(t *testing.T, d *docFlags, where, line string) (flags int) {
	t.Helper()
	line, _, _ = strings.Cut(line, " -- ")
	var sub []string
	for _, w := range strings.Fields(line)[1:] {
		if !docSubRE.MatchString(w) || len(sub) == 2 {
			break
		}
		if ok, _ := d.has(t, strings.Join(append(sub, w), " "), ""); !ok {
			break
		}
		sub = append(sub, w)
	}
	if len(sub) == 0 {
		t.Errorf("%s: %q names no numascope command", where, line)
		return 0
	}
	cmd := strings.Join(sub, " ")
	for _, m := range docFlagRE.FindAllStringSubmatch(line, -1) {
		flags++
		if _, ok := d.has(t, cmd, m[1]); !ok {
			t.Errorf("%s: %q names %s, which numascope %s does not have", where, line, m[1], cmd)
		}
	}
	return flags
}

// docInlineRE: a command in a doc's prose, `numascope SUB ...`.
var docInlineRE = regexp.MustCompile("`(numascope [a-z][^`]*)`")

// docCheckInline checks the commands a doc names in its prose, outside its
// blocks, as usage lines: they are not run (they are fragments), but a
// stale command or flag name there misleads as much.
func docCheckInline(t *testing.T, d *docFlags, root string, files []string) {
	t.Helper()
	n := 0
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		in := false
		for i := 0; i < len(lines); i++ {
			if testutil.DocFenceRE.MatchString(lines[i]) {
				in = !in
				continue
			}
			// a span may wrap onto the next line
			if l := lines[i]; !in {
				if i+1 < len(lines) && strings.Count(l, "`")%2 == 1 {
					l += " " + lines[i+1]
				}
				for _, m := range docInlineRE.FindAllStringSubmatch(l, -1) {
					docCheckUsage(t, d, fmt.Sprintf("%s:%d", f, i+1), m[1])
					n++
				}
			}
		}
	}
	t.Logf("checked the %d commands the docs name in their prose", n)
}

var jsonKeyRE = regexp.MustCompile(`"([A-Za-z_]\w*)"\s*:`)

// docCheckKeys: every key a JSON sketch names is in the output of the
// command it sketches (one JSON document, a file it writes with -o, or
// JSON lines), but those the rule says this machine does not produce.
func docCheckKeys(t *testing.T, r *docRunner, b testutil.DocBlock, dr docRule) {
	t.Helper()
	line := dr.keysOf
	line = testutil.DocBounded(line)
	where := fmt.Sprintf("%s:%d", b.File, b.Line)
	out := quickstartRun(t, r.command(line), where+" (sketches "+line+")")
	if f := strings.Fields(line); slices.Contains(f, "-o") {
		written, err := os.ReadFile(filepath.Join(r.dir, f[slices.Index(f, "-o")+1]))
		if err != nil {
			t.Errorf("%s: %s wrote nothing: %v", where, line, err)
			return
		}
		out = string(written)
	}
	have := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				have[k] = true
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		walk(v)
	}
	if len(have) == 0 {
		t.Errorf("%s: %s printed no JSON:\n%s", where, line, tail([]byte(out)))
		return
	}
	var missing []string
	for _, m := range jsonKeyRE.FindAllStringSubmatch(strings.Join(b.Body, "\n"), -1) {
		if k := m[1]; !have[k] && !slices.Contains(dr.absent, k) && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s: the doc's sketch names %q, which %s does not write: fix the doc (or, if only another machine writes them, the rule's absent list)", where, missing, line)
	} else {
		t.Logf("%s: %s writes every key the sketch names", where, line)
	}
}

// docOwnFiles are the reader's own files the docs name (./app, a
// recording run.jsonl.zst, a captured tree DIR): the test puts small ones
// in the work directory. Everything else an example reads, an earlier one
// made.
func docOwnFiles(t *testing.T, dir string, env []string) {
	t.Helper()
	quickstartOwnFiles(t, dir)
	tree, err := filepath.Abs("../../internal/topology/testdata/two-node-cxl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tree, filepath.Join(dir, "DIR")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "record", "-o", "run.jsonl.zst", "-i", "100ms", "-n", "3")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("recording run.jsonl.zst: %v\n%s", err, out)
	}
}

// docControlRunner runs docs/control.md's examples as nobody, whose FIFO
// is $XDG_RUNTIME_DIR/numascope-ctl as the examples write (root's is
// /run/numascope-ctl), with a copy of the binary nobody can run.
func docControlRunner(t *testing.T) *docRunner {
	t.Helper()
	bin, home := nobodyBinary(t)
	if err := os.WriteFile(filepath.Join(home, "load-dataset"), []byte("#!/bin/sh\n# the reader's set-up step\nhead -c 16M /dev/zero > /dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "XDG_RUNTIME_DIR="+home, "HOME="+home)
	return &docRunner{dir: home, env: env, cred: &syscall.Credential{Uid: nobody, Gid: nobody}, outputs: map[string]string{}}
}
