package vmtest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/testutil"
)

// profMetrics and profDoc are the parts of numascope profile's JSON
// (docs/profile.md) these tests check; decoded here independently of
// internal/profile, as any consumer of the format would.
type profMetrics struct {
	FirstTouch         int64 `json:"first_touch"`
	UnpinnedFirstTouch int64 `json:"unpinned_first_touch"`
	Local              int64 `json:"local"`
	Remote             int64 `json:"remote"`
	UnpinnedPage       int64 `json:"unpinned_page"`
	UnpinnedThread     int64 `json:"unpinned_thread"`
	UnpinnedBoth       int64 `json:"unpinned_both"`
}

type profDoc struct {
	ExitStatus    int         `json:"exit_status"`
	Signal        string      `json:"signal"`
	NUMABalancing bool        `json:"numa_balancing"`
	Notes         []string    `json:"notes"`
	Lost          int64       `json:"lost"`
	HugePages     int64       `json:"huge_pages"`
	Totals        profMetrics `json:"totals"`
	AccessMatrix  struct {
		ThreadNodes []int     `json:"thread_nodes"`
		PageNodes   []int     `json:"page_nodes"`
		Counts      [][]int64 `json:"counts"`
	} `json:"access_matrix"`
	Locations []struct {
		Function string      `json:"function"`
		File     string      `json:"file"`
		Line     int         `json:"line"`
		Metrics  profMetrics `json:"metrics"`
	} `json:"locations"`
	Mappings []struct {
		Kind    string      `json:"kind"`
		Metrics profMetrics `json:"metrics"`
	} `json:"mappings"`
	Allocations []struct {
		Function string      `json:"function"`
		File     string      `json:"file"`
		Line     int         `json:"line"`
		Kind     string      `json:"kind"`
		Calls    int64       `json:"calls"`
		Bytes    int64       `json:"bytes"`
		Metrics  profMetrics `json:"metrics"`
	} `json:"allocations"`
	Threads []struct {
		TID        int         `json:"tid"`
		PID        int         `json:"pid"`
		Nodes      []int       `json:"nodes"`
		Metrics    profMetrics `json:"metrics"`
		BindingLog []struct {
			TimeS float64 `json:"time_s"`
			CPUs  string  `json:"cpus"`
			Nodes []int   `json:"nodes"`
			Via   string  `json:"via"`
		} `json:"binding_log"`
	} `json:"threads"`
	// AccessesUnknown are sampled accesses counted neither local nor
	// remote (handled after the program exited, their pages' nodes
	// unsure).
	AccessesUnknown int64 `json:"accesses_node_unknown"`
	// Samples are the page faults seen; FaultsAfterLoss those on pages
	// known from before a loss, counted as neither.
	Samples         int64 `json:"samples"`
	FaultsAfterLoss int64 `json:"faults_after_loss"`
	Profiler        *struct {
		AfterExitS float64 `json:"after_exit_s"`
		Rings      []struct {
			CPU       int   `json:"cpu"`
			Records   int64 `json:"records"`
			Lost      int64 `json:"lost"`
			HighWater int64 `json:"high_water_bytes"`
			Size      int64 `json:"size_bytes"`
		} `json:"rings"`
	} `json:"profiler"`
}

// profnumaSummary is profnuma's summary line (testdata/workloads/profnuma.c).
type profnumaSummary struct {
	Workers        int     `json:"workers"`
	PagesPerWorker int64   `json:"pages_per_worker"`
	Passes         int64   `json:"passes"`
	Faults         []int64 `json:"faults"`
}

// profnumaSummaryIn finds profnuma's summary line in out.
func profnumaSummaryIn(t *testing.T, out string) profnumaSummary {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		j, ok := strings.CutPrefix(strings.TrimSpace(line), "@wl ")
		if !ok || !strings.Contains(j, `"type":"summary"`) {
			continue
		}
		var s profnumaSummary
		if err := json.Unmarshal([]byte(j), &s); err != nil {
			t.Fatalf("profnuma's summary %q: %v", j, err)
		}
		return s
	}
	t.Fatalf("no profnuma summary line in:\n%s", tail(out, 1500))
	return profnumaSummary{}
}

// allocAt sums the allocation sites at file:line (base name).
func (p *profDoc) allocAt(file string, line int) (calls int64, m profMetrics) {
	for _, al := range p.Allocations {
		if filepath.Base(al.File) == file && al.Line == line {
			calls += al.Calls
			m.FirstTouch += al.Metrics.FirstTouch
			m.Local += al.Metrics.Local
			m.Remote += al.Metrics.Remote
		}
	}
	return calls, m
}

// at returns the metrics of profnuma.c:line (zero if absent).
func (p *profDoc) at(line int) profMetrics {
	for _, l := range p.Locations {
		if filepath.Base(l.File) == "profnuma.c" && l.Line == line {
			return l.Metrics
		}
	}
	return profMetrics{}
}

// cell returns the sampled accesses from threads of node row to pages of node col.
func (p *profDoc) cell(t *testing.T, row, col int) int64 {
	t.Helper()
	ri, ci := -1, -1
	for i, n := range p.AccessMatrix.ThreadNodes {
		if n == row {
			ri = i
		}
	}
	for i, n := range p.AccessMatrix.PageNodes {
		if n == col {
			ci = i
		}
	}
	if ri < 0 || ci < 0 || ri >= len(p.AccessMatrix.Counts) || ci >= len(p.AccessMatrix.Counts[ri]) {
		t.Fatalf("access matrix has no cell (%d, %d): %+v", row, col, p.AccessMatrix)
	}
	return p.AccessMatrix.Counts[ri][ci]
}

// profLine is the line of profnuma.c marked /* @mark */.
func profLine(t *testing.T, mark string) int {
	t.Helper()
	return markedLine(t, "profnuma.c", mark)
}

// markedLine is the line of testdata/workloads/FILE marked /* @mark */.
func markedLine(t *testing.T, file, mark string) int {
	t.Helper()
	return testutil.MarkedLineIn(t, filepath.Join("..", "..", "testdata", "workloads", file), mark)
}

// buildProfnumaG builds profnuma static with debug information (numavm
// builds the workloads without it), for --add.
func buildProfnumaG(t *testing.T) string {
	t.Helper()
	return buildStaticC(t, filepath.Join("testdata", "workloads", "profnuma.c"), "profnuma-g", "-g", "-O1", "-Wall", "-pthread")
}

// buildStaticC builds the C program src (a path from the repository's
// root) static with gcc and flags, as name, for --add: the VM has no C
// library.
func buildStaticC(t *testing.T, src, name string, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to build %s for the VM (scripts/install-test-deps)", src)
	}
	bin := filepath.Join(t.TempDir(), name)
	src = filepath.Join("..", "..", src)
	args := append(append([]string{"-static"}, flags...), "-o", bin, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return bin
}

// TestProfile runs profnuma (built here with -g, since numavm builds the
// workloads without debug information) under numascope profile in a 4-node
// VM, in one boot: serial init then pinned compute, parallel init (with
// libc's memset, so that the pages must go to the line that calls it),
// unpinned threads, and a crash after the first touch.
func TestProfile(t *testing.T) {
	requireVM(t)
	bin := buildProfnumaG(t)
	const nodes, mb = 4, 8
	pages := int64(mb << 20 / pageSize)
	initLine, computeLine := profLine(t, "init"), profLine(t, "compute")

	var script strings.Builder
	runs := map[string]string{
		"serial":   "--serial",
		"parallel": "--parallel --memset",
		"unpinned": "--parallel --unpinned",
		"crash":    "--serial --crash",
		// The serial run again through the pipelined consumer (two ring
		// readers beside the analyzer), which by default only machines
		// of 16 CPUs or more use, with a CPU hog beside it (below).
		"consumers": "--serial",
	}
	for _, name := range []string{"serial", "parallel", "unpinned", "crash", "consumers"} {
		if name == "consumers" {
			// A CPU hog beside the workload: a busy loop on every vCPU,
			// numascope's and each worker's, as on a shared machine.
			// Each gets half its CPU or less, and numascope falls seconds
			// behind the program (issue 30: the profile must still
			// agree with the kernel). The hogs' memory is bound to node
			// 0, which the balancing scanner skips: they take no
			// hinting faults, and the kernel's counters stay the
			// workload's.
			fmt.Fprintf(&script, "HOGS=\nfor c in $(seq 0 %d); do taskset -c $c numascope run --policy bind:0 -- sh -c 'while :; do :; done' & HOGS=\"$HOGS $!\"; done\n", nodes-1)
		}
		fmt.Fprintf(&script, "sec prof.%s.vmstat0 grep ^numa_hint_faults /proc/vmstat\n", name)
		// In the pinned runs numascope runs on CPU 0 (node 0), so that its
		// own memory's hinting faults are local and the kernel's remote
		// count is the workload's alone; profnuma pins its threads itself.
		taskset := "taskset -c 0 "
		if name == "unpinned" {
			taskset = ""
		}
		// The serial run compares its remote accesses with the kernel's:
		// its scanner passes at most every 400 ms, so that a numascope
		// round stretched by the VM's starved vCPUs (CI runs other tests
		// beside this one) rarely spans two scans of a page, which would
		// classify the access after a migration against the old node.
		scan := ""
		switch name {
		case "serial":
			scan = "--scan-rate 400ms "
		case "consumers":
			scan = "--scan-rate 400ms --consumers 3 "
		}
		// The workers compute for 3 s and, with --until-sampled, until
		// each has taken a fault per page of its buffer while computing:
		// on a busy host the scanner and the workers are slow, and 3 s
		// alone left a worker's buffer sampled 85 times for 2 048 pages
		// (issue 29). A hung profile is caught by numavm's time limit,
		// with the section that was running named.
		until := ""
		if name != "crash" {
			until = "--until-sampled "
		}
		// numascope's own memory is bound to node 0 (numascope run
		// --policy bind:0; profnuma resets its inherited policy), which
		// the balancing scanner skips: numascope takes no hinting faults
		// of its own, and the kernel's counters are the workload's. On a
		// busy host numascope's own were 12 % of them (issue 29).
		fmt.Fprintf(&script, "sec prof.%s %snumascope run --policy bind:0 -- numascope profile %s-o /tmp/%s.json -- profnuma-g %s --mb %d --seconds 3 %s--lead 0 --linger 0\n",
			name, taskset, scan, name, runs[name], mb, until)
		fmt.Fprintf(&script, "sec prof.%s.vmstat1 grep ^numa_hint_faults /proc/vmstat\n", name)
		if name == "consumers" {
			fmt.Fprintf(&script, "kill $HOGS; wait $HOGS\n")
		}
		fmt.Fprintf(&script, "sec prof.%s.json cat /tmp/%s.json\n", name, name)
	}
	// --scan-rate: the scanner's settings during the run, and after
	// numascope is killed with SIGKILL in the middle of one.
	const knobs = "/sys/kernel/debug/sched/numa_balancing"
	fmt.Fprintf(&script, "sec prof.scan.before cat %s/scan_delay_ms %s/scan_period_min_ms %s/scan_period_max_ms\n", knobs, knobs, knobs)
	fmt.Fprintf(&script, "sec prof.scan.during numascope profile -o /tmp/sr.json --scan-rate 30ms -- cat %s/scan_delay_ms %s/scan_period_min_ms %s/scan_period_max_ms\n", knobs, knobs, knobs)
	fmt.Fprintf(&script, "sec prof.scan.after cat %s/scan_delay_ms %s/scan_period_min_ms %s/scan_period_max_ms\n", knobs, knobs, knobs)
	// "While the profile runs" is when the profiled command has started
	// (numascope profile sets the scanner before it starts the command):
	// the command signals it by creating /tmp/k.running, and the setting
	// is read then. A fixed "sleep 1" read the old value on a busy host
	// (issue 29). After the SIGKILL, the guard process (internal/knob)
	// restores the settings: wait for it to have exited (its script is
	// unique), not for a delay.
	fmt.Fprintf(&script, "numascope profile -o /tmp/k.json --scan-rate 40ms -- sh -c 'touch /tmp/k.running; exec sleep 600' &\n"+
		"K=$!\nwhile [ ! -e /tmp/k.running ] && kill -0 $K 2>/dev/null; do sleep 0.05; done\n"+
		"sec prof.scan.killing cat %s/scan_period_min_ms\n"+
		"kill -9 $K; wait $K; pkill -f '^sleep 600$'\n"+
		// [c]: the pattern must not match this script's own command line.
		"while pgrep -f '[c]at >/dev/null; while' >/dev/null; do sleep 0.05; done\n"+
		"sec prof.scan.killed cat %s/scan_delay_ms %s/scan_period_min_ms %s/scan_period_max_ms\n", knobs, knobs, knobs, knobs)
	r := runVM(t, []string{"--nodes", fmt.Sprint(nodes), "--add", bin}, script.String())
	load := func(name string) *profDoc {
		t.Helper()
		var p profDoc
		if err := json.Unmarshal([]byte(r.section(t, "prof."+name+".json")), &p); err != nil {
			t.Fatalf("%s: the profile is not valid JSON: %v", name, err)
		}
		if !p.NUMABalancing {
			t.Fatalf("%s: the profile says NUMA balancing is off", name)
		}
		if p.Lost != 0 {
			t.Errorf("%s: %d records lost", name, p.Lost)
		}
		return &p
	}

	t.Run("serial", func(t *testing.T) {
		r.section(t, "prof.serial")
		p := load("serial")
		in, comp := p.at(initLine), p.at(computeLine)
		t.Logf("serial: init %+v compute %+v totals %+v matrix %v", in, comp, p.Totals, p.AccessMatrix.Counts)
		// Every page of the buffers was first touched at the init line, by
		// the main thread pinned to node 0.
		if in.FirstTouch != nodes*pages || in.UnpinnedFirstTouch != 0 {
			t.Errorf("init line: first_touch %d unpinned %d, want %d and 0", in.FirstTouch, in.UnpinnedFirstTouch, nodes*pages)
		}
		if comp.FirstTouch != 0 {
			t.Errorf("compute line: first_touch %d, want 0", comp.FirstTouch)
		}
		// Workers 1-3 compute on node 0's pages: every page is sampled remote,
		// in node 0's column, until it migrates. The kernel migrates a page
		// on its second hinting fault from the same node (its two-stage
		// filter), sometimes later, so a page is sampled remote once to a few
		// times; counting every access, or local ones as remote, would be far
		// more (each worker's row has about 5 samples per page).
		for k := 1; k < nodes; k++ {
			within(t, fmt.Sprintf("serial: accesses by node %d's worker to node 0's pages", k),
				float64(p.cell(t, k, 0)), 0.9*float64(pages), 3*float64(pages)+50)
			for c := 1; c < nodes; c++ {
				if c != k && p.cell(t, k, c) > 10 {
					t.Errorf("serial: %d accesses from node %d to node %d's pages, want none", p.cell(t, k, c), k, c)
				}
			}
		}
		within(t, "serial: remote accesses at the compute line", float64(comp.Remote),
			0.9*float64((nodes-1)*pages), 3*float64((nodes-1)*pages)+50)
		// The kernel counts the same thing (agreesWithKernel).
		agreesWithKernel(t, r, "serial", p)
		within(t, "serial: share of all remote accesses at the compute line", float64(comp.Remote),
			0.98*float64(p.Totals.Remote), float64(p.Totals.Remote))
		// The buffers are anonymous mmaps: their remote accesses are there.
		var anonRemote int64
		for _, m := range p.Mappings {
			if m.Kind == "anon" {
				anonRemote += m.Metrics.Remote
			}
		}
		within(t, "serial: remote accesses to anonymous mappings vs at the compute line", float64(anonRemote),
			float64(comp.Remote), float64(p.Totals.Remote))
		if comp.UnpinnedPage+comp.UnpinnedThread+comp.UnpinnedBoth != 0 {
			t.Errorf("serial: compute line has unpinned accesses %+v, want none (every thread pinned)", comp)
		}
		// The buffers' allocation site is wl_alloc's mmap: one call per
		// worker, every first touch, and the remote accesses.
		allocLine := markedLine(t, "workload.h", "wl_alloc")
		calls, am := p.allocAt("workload.h", allocLine)
		if calls != nodes || am.FirstTouch != nodes*pages {
			t.Errorf("serial: allocation site workload.h:%d: %d calls, %+v; want %d calls and %d first touches; allocations %+v",
				allocLine, calls, am, nodes, nodes*pages, p.Allocations)
		}
		within(t, "serial: remote accesses to memory allocated at wl_alloc vs at the compute line", float64(am.Remote),
			float64(comp.Remote), float64(p.Totals.Remote))
		// Every thread pinned itself with sched_setaffinity (wl_pin): the
		// binding logs have those calls, each to one node, in time order.
		// (Under taskset -c 0 the pins to node 0 change nothing; the
		// workers start on CPU 0, their creator's, and move.)
		pinned := map[int]bool{}
		for _, th := range p.Threads {
			for i, b := range th.BindingLog {
				if i > 0 && b.TimeS < th.BindingLog[i-1].TimeS {
					t.Errorf("serial: thread %d binding log out of order: %+v", th.TID, th.BindingLog)
				}
				if b.Via == "sched_setaffinity" && len(b.Nodes) == 1 {
					pinned[b.Nodes[0]] = true
				}
			}
		}
		for k := 1; k < nodes; k++ {
			if !pinned[k] {
				t.Errorf("serial: no sched_setaffinity entry pins a thread to node %d; threads %+v", k, p.Threads)
			}
		}

		// numascope report's hints must connect the remote accesses to the
		// node that holds the pages and to the line that placed them.
		var full profile.Profile
		if err := json.Unmarshal([]byte(r.section(t, "prof.serial.json")), &full); err != nil {
			t.Fatal(err)
		}
		hints := strings.Join(full.Hints(), "\n")
		for _, want := range []string{
			"went to pages on node 0",
			"first-touched at ", fmt.Sprintf("profnuma.c:%d (init_buffer) (the most by thread", initLine),
			"on node 0)", // the serial initialiser is pinned to node 0
			"the line with the most remote accesses is ", fmt.Sprintf("profnuma.c:%d (compute)", computeLine),
			fmt.Sprintf("of the remote accesses went to memory allocated at ../../testdata/workloads/workload.h:%d (", markedLine(t, "workload.h", "wl_alloc")),
			fmt.Sprintf(") [mmap] (%d calls, 32.0 MiB)", nodes),
		} {
			if !strings.Contains(hints, want) {
				t.Errorf("serial: report hints lack %q:\n%s", want, hints)
			}
		}
	})

	t.Run("consumers", func(t *testing.T) {
		r.section(t, "prof.consumers")
		p := load("consumers")
		in, comp := p.at(initLine), p.at(computeLine)
		t.Logf("consumers: init %+v compute %+v totals %+v matrix %v", in, comp, p.Totals, p.AccessMatrix.Counts)
		// As "serial": the pipelined consumer counts what one does.
		if in.FirstTouch != nodes*pages || in.UnpinnedFirstTouch != 0 || comp.FirstTouch != 0 {
			t.Errorf("consumers: init line first_touch %d unpinned %d, compute line first_touch %d; want %d, 0, 0",
				in.FirstTouch, in.UnpinnedFirstTouch, comp.FirstTouch, nodes*pages)
		}
		for k := 1; k < nodes; k++ {
			within(t, fmt.Sprintf("consumers: accesses by node %d's worker to node 0's pages", k),
				float64(p.cell(t, k, 0)), 0.9*float64(pages), 3*float64(pages)+50)
		}
		// With a CPU hog on every vCPU: when TestProfile/consumers failed
		// this (CI run 1 of issue 29, 7 997 against the kernel's 6 156)
		// the profile really over-counted, and with the hog it counted
		// 1.6 to 1.76 times the kernel's remote hinting faults: accesses
		// handled after the program had exited judged against a node from
		// before a migration (TestAccessAfterExitNotStale), and before
		// that an end-of-round query that came before a migration
		// (TestAccessAfterMigrationNotStale).
		agreesWithKernel(t, r, "consumers", p)
		within(t, "consumers: share of all remote accesses at the compute line", float64(comp.Remote),
			0.98*float64(p.Totals.Remote), float64(p.Totals.Remote))
	})

	t.Run("parallel", func(t *testing.T) {
		r.section(t, "prof.parallel")
		p := load("parallel")
		// Each worker's memset first-touched its buffer: the faults are in
		// libc, the pages go to the line that called it.
		memsetLine := profLine(t, "memset")
		in, comp := p.at(memsetLine), p.at(computeLine)
		t.Logf("parallel: memset %+v compute %+v matrix %v", in, comp, p.AccessMatrix.Counts)
		if in.FirstTouch != nodes*pages {
			t.Errorf("memset line profnuma.c:%d: first_touch %d, want %d; locations %+v", memsetLine, in.FirstTouch, nodes*pages, p.Locations)
		}
		// Each worker touched its own buffer: one buffer per thread.
		spread := 0
		for _, th := range p.Threads {
			if th.Metrics.FirstTouch >= pages {
				spread++
				if th.Metrics.FirstTouch > pages+100 {
					t.Errorf("thread %d first-touched %d pages, want its own %d (transparent huge pages in the run: %d)",
						th.TID, th.Metrics.FirstTouch, pages, p.HugePages)
				}
			}
		}
		if spread != nodes {
			t.Errorf("%d threads first-touched a buffer, want %d", spread, nodes)
		}
		// The matrix is diagonal: every worker's accesses are local.
		var diag, off int64
		for k := 0; k < nodes; k++ {
			for c := 0; c < nodes; c++ {
				if k == c {
					diag += p.cell(t, k, c)
				} else {
					off += p.cell(t, k, c)
				}
			}
		}
		// Accesses numascope handled after the program exited have no
		// node (accesses_node_unknown) and are in no cell: on a starved
		// host they were 13 800 of 31 055 (issue 29, where this test
		// left them out of its sum and failed on a profile that had lost
		// nothing). Every worker took a fault per page while computing
		// (--until-sampled), so the diagonal and those hold them all.
		unk := p.AccessesUnknown
		t.Logf("parallel: local %d, remote %d, neither (node unknown) %d", p.Totals.Local, p.Totals.Remote, unk)
		within(t, "parallel: local accesses on the diagonal and those of unknown node", float64(diag+unk), float64(nodes*pages), 1e12)
		within(t, "parallel: accesses off the diagonal", float64(off), 0, 0.01*float64(diag)+20)
		within(t, "parallel: remote accesses at the compute line", float64(comp.Remote), 0, 0.01*float64(comp.Local)+20)
		hint, _ := hintDeltas(t, r, "parallel")
		within(t, "parallel: sampled accesses (local, remote and of unknown node) vs the kernel's numa_hint_faults",
			float64(p.Totals.Local+p.Totals.Remote+unk), 0.9*float64(hint)-20, 1.02*float64(hint)+200)
	})

	t.Run("unpinned", func(t *testing.T) {
		r.section(t, "prof.unpinned")
		p := load("unpinned")
		in, comp := p.at(initLine), p.at(computeLine)
		t.Logf("unpinned: init %+v compute %+v matrix %v", in, comp, p.AccessMatrix.Counts)
		// Unpinned threads placed every page and made every access.
		if in.FirstTouch != nodes*pages || in.UnpinnedFirstTouch != in.FirstTouch {
			t.Errorf("init line: first_touch %d unpinned %d, want both %d", in.FirstTouch, in.UnpinnedFirstTouch, nodes*pages)
		}
		if comp.UnpinnedBoth == 0 || comp.UnpinnedBoth != comp.Local+comp.Remote ||
			comp.UnpinnedPage != 0 || comp.UnpinnedThread != 0 {
			t.Errorf("compute line %+v: want every sampled access unpinned_both, none unpinned_page/thread", comp)
		}
		for c := 0; c < nodes; c++ {
			for k := 0; k < nodes; k++ {
				if p.cell(t, k, c) != 0 {
					t.Errorf("unpinned: %d accesses in the row of pinned node %d", p.cell(t, k, c), k)
				}
			}
		}
	})

	t.Run("scan-rate", func(t *testing.T) {
		before := fields(r.section(t, "prof.scan.before"))
		if before == "30 30 300" {
			t.Fatalf("the scanner already runs at the rate the test sets: %s", before)
		}
		if got := fields(r.section(t, "prof.scan.during")); got != "30 30 300" {
			t.Errorf("scanner settings during numascope profile --scan-rate 30ms: %q, want 30 30 300", got)
		}
		if got := fields(r.section(t, "prof.scan.after")); got != before {
			t.Errorf("scanner settings after the run: %q, want the previous %q", got, before)
		}
		if got := fields(r.section(t, "prof.scan.killing")); got != "40" {
			t.Errorf("scan_period_min_ms while the profile runs: %q, want 40", got)
		}
		if got := fields(r.section(t, "prof.scan.killed")); got != before {
			t.Errorf("scanner settings after numascope was killed with SIGKILL: %q, want the previous %q", got, before)
		}
	})

	t.Run("crash", func(t *testing.T) {
		if s := r.Sections["prof.crash"]; s.RC != 139 {
			t.Errorf("numascope profile of a crashing program exited %d, want 139 (SIGSEGV)\n%s", s.RC, s.Body)
		}
		p := load("crash")
		if p.ExitStatus != 139 || p.Signal != "SIGSEGV" {
			t.Errorf("exit_status %d signal %q, want 139 SIGSEGV", p.ExitStatus, p.Signal)
		}
		if in := p.at(initLine); in.FirstTouch != nodes*pages {
			t.Errorf("crash: init line first_touch %d, want %d", in.FirstTouch, nodes*pages)
		}
	})
}

// agreesWithKernel compares a pinned run's local and remote accesses with
// the kernel's hinting-fault counters over it (docs/fidelity.md).
//
// They count the same events. numascope samples the page-fault event,
// written once as each fault begins; the kernel counts numa_hint_faults
// once per NUMA hinting fault, and numa_hint_faults_local when the page
// was on the faulting CPU's node before the fault's own migration, which
// is the node numascope judges an access against (the last answer before
// it). Every later fault on a touched page is a hinting fault here
// (profnuma writes what it maps, so no zero-page or copy-on-write faults),
// and no record is lost (load checks that). So the tolerance is not a
// margin for noise but a list of what differs:
//   - accesses_node_unknown, counted neither local nor remote (handled
//     after the program exited, their pages' nodes unsure): the kernel's
//     remote count lies between remote and remote + unknown;
//   - the hinting faults of the VM's other processes: numascope's memory
//     and the hogs' are bound to node 0 (numascope run --policy bind:0),
//     which the scanner skips, so only the script's short shells and
//     greps take any: 20 in absolute terms (the kernel counted 2 to 7 more
//     remote faults than numascope in four runs with the hog);
//   - migrations the kernel deferred or that failed (a page busy, the
//     two-stage filter): the access that then migrates the page may be
//     asked after its migration and judged local where the kernel counted
//     remote; and hinting faults the kernel abandoned (the PTE changed
//     under it), sampled but not counted: 3 % either way, measured within
//     0.12 % (6 155 against 6 157 and 6 148 against 6 151, with the hog,
//     on a host at load average 14; 6 150 against 6 151 with 4 319
//     accesses of unknown node, without it, at load average 19).
//
// Remote accesses were allowed 8 % over until the two over-counts named in
// the consumers run were found: a bound that failed was a real over-count.
func agreesWithKernel(t *testing.T, r *vmResult, name string, p *profDoc) {
	t.Helper()
	hint, hintLocal := hintDeltas(t, r, name)
	kr := float64(hint - hintLocal)
	rem, unk := float64(p.Totals.Remote), float64(p.AccessesUnknown)
	t.Logf("%s: remote %d, local %d, neither (node unknown) %d; kernel remote %d", name, p.Totals.Remote, p.Totals.Local, p.AccessesUnknown, hint-hintLocal)
	within(t, name+": remote accesses vs the kernel's numa_hint_faults - numa_hint_faults_local", rem, -1e12, 1.03*kr+20)
	within(t, name+": remote accesses and those of unknown node vs the kernel's numa_hint_faults - numa_hint_faults_local", rem+unk, 0.97*kr-20, 1e12)
	// Accesses of unknown node are not bounded here: how many there are
	// depends on how far numascope fell behind (none to a quarter of all,
	// measured), never on what it counted. Its remote accesses are held
	// from below by the callers' bounds on the matrix cells.
	// Every access, local and remote: the kernel's total also has the
	// VM's other processes' few hinting faults.
	within(t, name+": sampled accesses vs the kernel's numa_hint_faults",
		float64(p.Totals.Local)+rem+unk, 0.9*float64(hint)-20, 1.02*float64(hint)+200)
}

// fields splits a section into its whitespace-separated values.
func fields(s string) string { return strings.Join(strings.Fields(s), " ") }

// hintDeltas returns how much /proc/vmstat's numa_hint_faults and
// numa_hint_faults_local grew over the named run.
func hintDeltas(t *testing.T, r *vmResult, name string) (hint, local int64) {
	t.Helper()
	read := func(sec string) (int64, int64) {
		var h, l int64
		for _, line := range strings.Split(r.section(t, sec), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", sec, line, err)
			}
			switch f[0] {
			case "numa_hint_faults":
				h = v
			case "numa_hint_faults_local":
				l = v
			}
		}
		return h, l
	}
	h0, l0 := read("prof." + name + ".vmstat0")
	h1, l1 := read("prof." + name + ".vmstat1")
	t.Logf("%s: kernel numa_hint_faults +%d, numa_hint_faults_local +%d", name, h1-h0, l1-l0)
	return h1 - h0, l1 - l0
}

// TestProfileCPULess profiles in a VM whose node 2 has memory but no CPUs
// (like CXL or HBM memory): profnuma binds all its memory there, so the
// CPU-less node is a column of its own (not a row: no thread runs on it)
// that receives every first touch and every sampled access, all remote.
func TestProfileCPULess(t *testing.T) {
	requireVM(t)
	bin := buildProfnumaG(t)
	const mb = 8
	pages := int64(mb << 20 / pageSize)
	initLine, computeLine := profLine(t, "init"), profLine(t, "compute")
	// The workers compute until each has taken a fault per page of its
	// buffer (--until-sampled), as in TestProfile: 3 s alone left node 0's
	// worker, which shares vCPU 0 with numascope, 193 sampled accesses for
	// 2 048 pages once in the suite on a slow host (2026-11-29, the AMD
	// build machine; 3 448-6 145 in three runs alone, beside three busy
	// loops or not). The faults then happen; whether numascope records them
	// all, in column 2, is what the bounds below check, against each
	// worker's own count of them (profnuma's summary). profnuma lingers
	// half a second after its workers stop, so that numascope, short of
	// CPU beside node 0's worker, can still ask where the last pages
	// accessed are (those it cannot are of unknown node, and the bounds
	// allow for them).
	script := fmt.Sprintf("sec topo numascope topology --format json\n"+
		"sec prof gtimeout 60 taskset -c 0 numascope profile -o /tmp/c.json --scan-rate 200ms -- profnuma-g --parallel --membind 2 --mb %d --seconds 3 --until-sampled --lead 0 --linger 0.5\n"+
		"sec prof.json cat /tmp/c.json\n"+
		"sec report numascope report /tmp/c.json\n"+
		// Balancing off: said plainly, first touches still reported.
		"echo 0 > /proc/sys/kernel/numa_balancing\n"+
		"sec off sh -c 'gtimeout 60 numascope profile -o /tmp/off.json -- profnuma-g --serial --mb %d --seconds 1 --lead 0 --linger 0 2>&1 >/dev/null'\n"+
		"sec off.json cat /tmp/off.json\n"+
		// And a fault storm, four threads per CPU mapping, touching and
		// unmapping the same addresses: no hinting fault, so not one
		// sampled access, lost records or not.
		"sec storm sh -c 'gtimeout 120 numascope profile -o /tmp/storm.json -- profbench --faults --threads 8 --mb 32 --rounds 6 --lead 0 --linger 0 2>&1 >/dev/null'\n"+
		"sec storm.json cat /tmp/storm.json\n", mb, mb)
	r := runVM(t, []string{"--nodes", "3", "--cpuless", "1", "--add", bin}, script)

	var topo struct {
		Nodes []struct {
			ID      int  `json:"id"`
			CPULess bool `json:"cpuless"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(r.section(t, "topo")), &topo); err != nil {
		t.Fatalf("topology JSON: %v", err)
	}
	if len(topo.Nodes) != 3 || !topo.Nodes[2].CPULess || topo.Nodes[0].CPULess || topo.Nodes[1].CPULess {
		t.Fatalf("topology: %+v, want nodes 0 and 1 with CPUs and node 2 CPU-less", topo.Nodes)
	}

	profiled := r.section(t, "prof")
	var p profDoc
	if err := json.Unmarshal([]byte(r.section(t, "prof.json")), &p); err != nil {
		t.Fatalf("the profile is not valid JSON: %v", err)
	}
	m := p.AccessMatrix
	if fmt.Sprint(m.ThreadNodes) != "[-1 0 1]" || fmt.Sprint(m.PageNodes) != "[0 1 2]" {
		t.Fatalf("access matrix rows %v columns %v, want rows [-1 0 1] (CPU nodes) and columns [0 1 2] (every node)", m.ThreadNodes, m.PageNodes)
	}
	in, comp := p.at(initLine), p.at(computeLine)
	// The lost records and the workload's own lines (its faults per worker
	// with --until-sampled) say, should a worker's count fall short, whether
	// the profiler lost records or the faults were not hinting faults.
	sum := profnumaSummaryIn(t, profiled)
	var rings string
	if p.Profiler != nil {
		for _, r := range p.Profiler.Rings {
			rings += fmt.Sprintf(" cpu%d %d records %d lost high water %d/%d;", r.CPU, r.Records, r.Lost, r.HighWater, r.Size)
		}
		rings += fmt.Sprintf(" %.2f s after exit", p.Profiler.AfterExitS)
	}
	t.Logf("cpuless: init %+v compute %+v matrix %v; the workers' faults while computing %v; %d samples, %d records lost, %d faults after a loss, %d accesses of unknown node;%s",
		in, comp, m.Counts, sum.Faults, p.Samples, p.Lost, p.FaultsAfterLoss, p.AccessesUnknown, rings)
	if in.FirstTouch != 2*pages {
		t.Errorf("init line: first_touch %d, want %d", in.FirstTouch, 2*pages)
	}
	// Both workers read their buffers on node 2: each row's accesses are in
	// column 2, remote; nothing lands on nodes 0 and 1. Each row holds its
	// worker's faults while computing (the kernel's count, getrusage), but
	// for those numascope handled after the program had exited, which it
	// counts apart, of unknown node: every access here is remote, so its
	// page may have been migrated by it, and a late one cannot be asked
	// (numascope shares node 0's CPU with node 0's worker; 1 400 of its
	// 2 050 accesses were late once in the suite on a slow host, 434 of
	// 5 688 beside it, 2026-11-29, before profnuma lingered).
	if len(sum.Faults) != 2 {
		t.Fatalf("profnuma reported faults %v, want one count per worker (two)", sum.Faults)
	}
	const slack = 20 // the worker's faults outside its loop (its stack, its exit)
	var missing int64
	for k := 0; k < 2; k++ {
		f := sum.Faults[k]
		if f < pages {
			t.Fatalf("node %d's worker took %d faults while computing, fewer than its %d pages: profnuma --until-sampled did not do its job", k, f, pages)
		}
		row := p.cell(t, k, 0) + p.cell(t, k, 1) + p.cell(t, k, 2)
		within(t, fmt.Sprintf("cpuless: accesses by node %d's worker (its %d faults, less the %d of unknown node)", k, f, p.AccessesUnknown),
			float64(row), float64(f-p.AccessesUnknown-slack), float64(f+slack))
		// At least a quarter of the pages, so that the column is shown,
		// not merely not contradicted.
		within(t, fmt.Sprintf("cpuless: accesses by node %d's worker to node 2's pages", k), float64(p.cell(t, k, 2)), max(float64(row-slack), float64(pages/4)), float64(row))
		for c := 0; c < 2; c++ {
			if n := p.cell(t, k, c); n > slack {
				t.Errorf("cpuless: %d accesses from node %d to node %d's pages, want (almost) none: the memory is bound to node 2", n, k, c)
			}
		}
		missing += f - row
	}
	// What the rows miss is what numascope said it could not place: no
	// access lost untold.
	within(t, "cpuless: the workers' faults not in the matrix, against the accesses of unknown node", float64(missing), float64(p.AccessesUnknown-2*slack), float64(p.AccessesUnknown+2*slack))
	within(t, "cpuless: remote share of the compute line's accesses", float64(comp.Remote), 0.99*float64(comp.Local+comp.Remote), float64(comp.Local+comp.Remote))
	if rep := r.section(t, "report"); !strings.Contains(rep, "went to pages on node 2") {
		t.Errorf("report: no hint about node 2:\n%s", rep)
	}

	t.Run("balancing-off", func(t *testing.T) {
		if s := r.section(t, "off"); !strings.Contains(s, "automatic NUMA balancing is off") {
			t.Errorf("numascope profile with kernel.numa_balancing=0 did not say so on stderr:\n%s", s)
		}
		var off profDoc
		if err := json.Unmarshal([]byte(r.section(t, "off.json")), &off); err != nil {
			t.Fatalf("the profile is not valid JSON: %v", err)
		}
		if off.NUMABalancing || !strings.Contains(strings.Join(off.Notes, "\n"), "automatic NUMA balancing is off") {
			t.Errorf("profile with kernel.numa_balancing=0: numa_balancing %v, notes %q", off.NUMABalancing, off.Notes)
		}
		// Two workers (nodes 0 and 1), each buffer first-touched at @init.
		if in := off.at(initLine); in.FirstTouch != 2*pages || in.Local+in.Remote != 0 {
			t.Errorf("init line with balancing off: %+v, want %d first touches and no sampled access", in, 2*pages)
		}
		if off.Totals.Local+off.Totals.Remote != 0 {
			t.Errorf("balancing off: totals %+v, want no sampled access anywhere", off.Totals)
		}
		r.section(t, "storm")
		var storm profDoc
		if err := json.Unmarshal([]byte(r.section(t, "storm.json")), &storm); err != nil {
			t.Fatalf("the storm's profile is not valid JSON: %v", err)
		}
		t.Logf("storm with balancing off: %d lost, totals %+v", storm.Lost, storm.Totals)
		if storm.Totals.Local+storm.Totals.Remote != 0 || storm.Totals.FirstTouch < 8192 {
			t.Errorf("fault storm with balancing off: totals %+v, want no sampled access and at least one round's 8192 first touches", storm.Totals)
		}
	})
}
