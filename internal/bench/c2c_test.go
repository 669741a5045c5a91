package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// TestParseC2CPairsAndKinds: --pairs and the comma list of --kind.
func TestParseC2CPairsAndKinds(t *testing.T) {
	for in, want := range map[string]int{"": 0, "all": 0, "sample": DefaultC2CSample, "sample 300": 300, "sample:7": 7, "sample=12": 12} {
		got, err := ParseC2CPairs(in)
		if err != nil || got.Sample != want {
			t.Errorf("ParseC2CPairs(%q) = %v, %v; want sample %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"some", "sample 0", "sample -3", "sample x"} {
		if _, err := ParseC2CPairs(bad); err == nil || !strings.Contains(err.Error(), "--pairs") {
			t.Errorf("ParseC2CPairs(%q): %v, want an error naming --pairs", bad, err)
		}
	}
	k, err := ParseKinds("latency,c2c")
	if err != nil || k != (Kinds{Latency: true, C2C: true}) {
		t.Errorf("ParseKinds(latency,c2c) = %+v, %v", k, err)
	}
	if k, err := ParseKinds("all"); err != nil || k.C2C {
		t.Errorf("all = %+v, %v: c2c is asked by name", k, err)
	}
	if _, err := ParseKinds("latency,c3c"); err == nil || !strings.Contains(err.Error(), "c2c") {
		t.Errorf("ParseKinds(latency,c3c): %v", err)
	}
}

// fixtureTopology is the captured two-socket machine: node 0 CPUs 0,1,4,5
// (SMT pairs 0,4 and 1,5, one L3), node 1 CPUs 2,3,6 (7 offline), and a
// CPU-less node.
func fixtureTopology(t *testing.T) *topology.Topology {
	topo, err := topology.Discover(sysfs.New(filepath.Join(testutil.RepoRoot(t), "internal", "topology", "testdata", "two-node-cxl")))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestC2CClassesFromTopology: the CPUs are sorted by node, LLC and core,
// and each pair gets its class from the topology package's siblings,
// caches and nodes.
func TestC2CClassesFromTopology(t *testing.T) {
	topo := fixtureTopology(t)
	cpus := c2cCPUs(topo, []int{0, 1})
	if got := fmt.Sprint(cpuIDs(cpus)); got != "[0 4 1 5 2 6 3]" {
		t.Errorf("CPU order %s, want [0 4 1 5 2 6 3] (node, LLC, core; 7 is offline)", got)
	}
	at := func(id int) c2cCPU { return cpus[slices.IndexFunc(cpus, func(c c2cCPU) bool { return c.id == id })] }
	for _, c := range []struct {
		a, b int
		want string
	}{{0, 4, ClassSMT}, {0, 1, ClassLLC}, {1, 4, ClassLLC}, {0, 2, ClassCrossNode}, {2, 6, ClassSMT}, {3, 6, ClassLLC}} {
		if got := c2cClass(at(c.a), at(c.b)); got != c.want {
			t.Errorf("CPU %d, CPU %d: class %s, want %s", c.a, c.b, got, c.want)
		}
	}
	// Two LLCs on one node (a chiplet machine): the same-node class.
	x, y := c2cCPU{id: 0, node: 0, llc: 0, core: 0}, c2cCPU{id: 8, node: 0, llc: 1, core: 8}
	if got := c2cClass(x, y); got != ClassNode {
		t.Errorf("two LLCs of one node: %s, want %s", got, ClassNode)
	}
}

// TestC2CSampleCoversEveryGroup: a sample smaller than the pairs still
// has a pair of every class and every node pair, is in matrix order, and
// is the same from run to run; --pairs all is every pair.
func TestC2CSampleCoversEveryGroup(t *testing.T) {
	// 300 CPUs: 4 nodes of 75, 3 LLCs of 25 each, SMT pairs.
	var cpus []c2cCPU
	for id := range 300 {
		n, core := id/75, id%150
		cpus = append(cpus, c2cCPU{id: id, node: n, llc: n*3 + (id%75)/25, core: core / 2, pkg: n})
	}
	all, total := c2cPairs(cpus, 0)
	if total != 300*299/2 || len(all) != total {
		t.Fatalf("all: %d of %d pairs, want %d", len(all), total, 300*299/2)
	}
	s, _ := c2cPairs(cpus, 40)
	again, _ := c2cPairs(cpus, 40)
	if len(s) != 40 || !slices.Equal(s, again) {
		t.Fatalf("sample of 40: %d pairs, repeatable %v", len(s), slices.Equal(s, again))
	}
	classes, nodes := map[string]bool{}, map[[2]int]bool{}
	for i, pr := range s {
		if pr[0] >= pr[1] || (i > 0 && (s[i-1][0] > pr[0] || (s[i-1][0] == pr[0] && s[i-1][1] >= pr[1]))) {
			t.Fatalf("pair %d %v not in matrix order", i, pr)
		}
		a, b := cpus[pr[0]], cpus[pr[1]]
		classes[c2cClass(a, b)] = true
		nodes[[2]int{a.node, b.node}] = true
	}
	if len(classes) != 4 || len(nodes) != 10 {
		t.Errorf("sample of 40 has classes %v and %d node pairs; want all 4 classes and all 10 node pairs", classes, len(nodes))
	}
}

// c2cFixture is a measured run's C2C made by hand: CPUs 0,4 (SMT) and 1
// on node 0, CPU 2 on node 1.
func c2cFixture() *Result {
	line := 1
	m := &C2C{CPUs: []int{0, 4, 1, 2}, Nodes: []int{0, 0, 0, 1}, LLCs: []int{0, 0, 0, 1}, Cores: []string{"0:0", "0:0", "0:1", "1:2"}, Repeat: 3, PairsTotal: 6, LineNode: &line}
	pairs := []C2CPair{{A: 0, B: 4, Class: ClassSMT, MedianNS: 20}, {A: 0, B: 1, Class: ClassLLC, MedianNS: 50}, {A: 4, B: 1, Class: ClassLLC, MedianNS: 60},
		{A: 0, B: 2, Class: ClassCrossNode, MedianNS: 150}, {A: 4, B: 2, Class: ClassCrossNode, MedianNS: 170}, {A: 1, B: 2, Class: ClassCrossNode, MedianNS: 160}}
	idx := func(id int) int { return slices.Index(m.CPUs, id) }
	m.Matrix = make([][]*float64, 4)
	for i := range m.Matrix {
		m.Matrix[i] = make([]*float64, 4)
	}
	for i := range pairs {
		p := &pairs[i]
		p.MinNS, p.MaxNS, p.LineNode, p.Samples = p.MedianNS-1, p.MedianNS+2, 1, []float64{p.MedianNS - 1, p.MedianNS, p.MedianNS + 2}
		m.Matrix[idx(p.A)][idx(p.B)], m.Matrix[idx(p.B)][idx(p.A)] = &p.MedianNS, &p.MedianNS
	}
	m.Pairs = pairs
	m.Classes = c2cClassesOf(pairs)
	return &Result{C2C: m, C2CNode: c2cNodeMatrix(m), Skipped: []Skip{}, Notes: []string{}}
}

// TestC2CRollUpTextAndJSON: the classes and the node matrix are the
// medians of the pairs' medians (SMT siblings out of the node matrix), the
// text prints them as MLC does, and the JSON has the public keys.
func TestC2CRollUpTextAndJSON(t *testing.T) {
	res := c2cFixture()
	m := res.C2C
	if got := fmt.Sprintf("%+v", m.Classes); got != "[{Class:smt-siblings Pairs:1 MedianNS:20 MinNS:20 MaxNS:20} {Class:same-llc Pairs:2 MedianNS:55 MinNS:50 MaxNS:60} {Class:cross-node Pairs:3 MedianNS:160 MinNS:150 MaxNS:170}]" {
		t.Errorf("classes %s", got)
	}
	n := res.C2CNode
	cell := func(r, c int) string {
		if v := n.Matrix[r][c]; v != nil {
			return strconv.FormatFloat(*v, 'f', -1, 64)
		}
		return "-"
	}
	if got := fmt.Sprintln(n.Initiators, cell(0, 0), cell(0, 1), cell(1, 0), cell(1, 1), n.Pairs); got != "[0 1] 55 160 160 - [[2 3] [3 0]]\n" {
		t.Errorf("node matrix %s, want [0 1] 55 160 160 - [[2 3] [3 0]] (SMT pair out)", got)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"Measuring core-to-core transfer latency (in ns)",
		"the line homed on node 1 (--line-node)",
		"SMT siblings (one core)      1    20.0              20.0-20.0\n",
		"cross node                   3   160.0            150.0-170.0\n",
		"\t\tNuma node\nNuma node      0      1\n0           55.0  160.0\n1          160.0      -\n",
		"\t\tCPU\nCPU      0      4      1      2\n0        -   20.0   50.0  150.0\n",
		"widest spread over the repeats: CPU 0 <-> CPU 4 19.0-22.0 ns",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		C2C *struct {
			CPUs    []int        `json:"cpus"`
			Matrix  [][]*float64 `json:"matrix"`
			Classes []C2CClass   `json:"classes"`
			Line    *int         `json:"line_node"`
			Pairs   []any        `json:"pairs"`
		} `json:"c2c_ns"`
		Node *struct {
			Initiators []int        `json:"initiators"`
			Targets    []int        `json:"targets"`
			Matrix     [][]*float64 `json:"matrix"`
			Line       *int         `json:"line_node"`
		} `json:"c2c_node_ns"`
	}
	if err := json.Unmarshal(j, &doc); err != nil || doc.C2C == nil || doc.Node == nil {
		t.Fatalf("JSON %v: %s", err, j)
	}
	if len(doc.C2C.CPUs) != 4 || len(doc.C2C.Matrix) != 4 || len(doc.C2C.Classes) != 3 || doc.C2C.Line == nil || *doc.C2C.Line != 1 ||
		len(doc.Node.Initiators) != 2 || len(doc.Node.Targets) != 2 || len(doc.Node.Matrix) != 2 || doc.Node.Line == nil {
		t.Errorf("JSON keys: %s", j)
	}
}

// TestC2CRunLive: the whole run on this machine measures every pair of
// its CPUs (one on a 2-CPU machine), each pair's line on the node asked,
// checked with move_pages; the conditions name SMT and the host load.
func TestC2CRunLive(t *testing.T) {
	topo := liveTopology(t)
	ini, err := Initiators("", topo)
	if err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for _, n := range ini {
		cpus = append(cpus, usableCPUs(topo)[n]...)
	}
	if len(cpus) < 2 {
		t.Skip("one usable CPU: no pair to measure")
	}
	pairs := "all"
	if len(cpus) > 8 {
		pairs = "sample 12"
	}
	var progress []string
	// A budget of seconds, not c2cPairBudget: on a loaded host a pair may
	// finish fewer windows in 250 ms, and this test checks the shape
	// (TestC2CPairBudget checks the bound).
	res, err := Run(Options{Topology: topo, Kinds: Kinds{C2C: true}, Repeat: 3, Pairs: pairs, LineNode: strconv.Itoa(ini[0]), C2CTrips: 100, C2CPairBudget: 20 * time.Second,
		Progress: func(done, total int, what string) {
			progress = append(progress, fmt.Sprintf("%d/%d %s", done+1, total, what))
		}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.C2C
	want := min(len(cpus)*(len(cpus)-1)/2, 12)
	if m == nil || len(m.Pairs) != want || len(m.CPUs) != len(cpus) || len(m.Classes) == 0 || res.C2CNode == nil {
		t.Fatalf("c2c %+v, want %d pairs over %d CPUs", m, want, len(cpus))
	}
	for _, p := range m.Pairs {
		if p.MedianNS <= 0 || p.MinNS > p.MedianNS || p.MedianNS > p.MaxNS || len(p.Samples) != 3 || p.RoundTrips != 100 || p.LineNode != ini[0] {
			t.Errorf("pair %+v", p)
		}
	}
	if len(res.Placement.Pairs) != want || res.Placement.MinFractionOnTarget == nil || *res.Placement.MinFractionOnTarget < 1 {
		t.Errorf("placement %+v: want every line's page on node %d", res.Placement, ini[0])
	}
	if res.Latency != nil || res.Rated != nil || res.Conditions.HostLoad == nil {
		t.Errorf("c2c alone: latency %v rated %v host load %v", res.Latency, res.Rated, res.Conditions.HostLoad)
	}
	if len(progress) != want || !strings.Contains(progress[0], "c2c CPU") || !strings.HasPrefix(progress[want-1], fmt.Sprintf("%d/%d", want, want)) {
		t.Errorf("progress %q", progress)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil || !strings.Contains(b.String(), "; SMT ") || !strings.Contains(b.String(), fmt.Sprintf("the line homed on node %d", ini[0])) {
		t.Errorf("text %v:\n%s", err, b.String())
	}
}

// TestC2CPairBudget: a pair that cannot finish a window within its time
// is skipped with the reason, so that a run on a busy host ends; here the
// budget is too short for any window.
func TestC2CPairBudget(t *testing.T) {
	topo := liveTopology(t)
	start := time.Now()
	res, err := Run(Options{Topology: topo, Kinds: Kinds{C2C: true}, Repeat: 3, Pairs: "sample 4", C2CTrips: 1 << 16, C2CPairBudget: time.Microsecond})
	if err == nil || !strings.Contains(err.Error(), "no pair could be measured") || res == nil || len(res.Skipped) == 0 ||
		!strings.Contains(res.Skipped[0].Reason, "seldom running the pair's threads at once") || res.Skipped[0].Kind != "c2c" {
		t.Fatalf("err %v, result %+v: want every pair skipped for its budget", err, res)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("%d pairs over budget took %s", len(res.Skipped), d)
	}
}

// TestC2CTurnsLookAtDeadline: the ping-pong looks at its deadline every
// c2cDeadlineTurns turns even when the partner keeps pace. It looked only
// after 2^16 failed spins, so on a host whose two CPUs ran the pair in
// parallel a window of any length finished past any budget (CI failed
// TestC2CPairBudget so: a microsecond budget, a pair measured).
func TestC2CTurnsLookAtDeadline(t *testing.T) {
	var w atomic.Uint64
	partner := make(chan struct{})
	go func() {
		defer close(partner)
		c2cTurns(&w, 1, 1<<22, time.Now().Add(200*time.Millisecond))
	}()
	mine, _, ok := c2cTurns(&w, 0, 1<<22, time.Now().Add(-time.Second))
	<-partner
	if ok || mine/2 > c2cDeadlineTurns {
		t.Errorf("past its deadline the ping-pong took %d turns (finished %v), want at most %d", mine/2, ok, c2cDeadlineTurns)
	}
}

// TestC2CBudget: the budget a pair runs under, and the one the note of a
// pair cut short names, is --pair-budget when given: the note named the
// default 250ms whatever --pair-budget said.
func TestC2CBudget(t *testing.T) {
	for _, c := range []struct {
		opt  time.Duration
		want time.Duration
	}{{0, c2cPairBudget}, {5 * time.Second, 5 * time.Second}} {
		p := &plan{opt: Options{C2CPairBudget: c.opt}}
		if got := p.c2cBudget(); got != c.want {
			t.Errorf("--pair-budget %s: budget %s, want %s", c.opt, got, c.want)
		}
	}
}

// TestC2CBadOptions: one clear error for each option that cannot be run.
func TestC2CBadOptions(t *testing.T) {
	topo := fixtureTopology(t)
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{LineNode: "x"}, "--line-node \"x\": want one node number"},
		{Options{LineNode: "9"}, "--line-node 9"},
		{Options{Pairs: "most"}, "--pairs \"most\""},
		{Options{C2CTrips: -1}, "round trips"},
	} {
		c.opt.Topology, c.opt.Kinds, c.opt.Repeat = topo, Kinds{C2C: true}, 1
		if _, err := newPlan(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opt, err, c.want)
		}
	}
}

// TestC2CMatchesReference: numascope's core-to-core latency agrees with
// testdata/bench/refc2c.c, written independently of numascope (two
// pthreads, one int, __atomic_compare_exchange_n, clock_gettime), built
// static here, within 5% for one pair of each class this machine has (on
// the 2-CPU build machine: its one pair).
//
// Both play the same ping-pong over the same windows (C2CTrips round trips
// after 32 uncounted, one uncounted window first), interleaved round after
// round on the same CPUs, and the test compares each round's best window
// of one with the same round's of the other: the median of the rounds'
// ratios. A window is short (200 round trips,
// some tens of µs), so the best of 31 is one that no other task
// interrupted: on a loaded host (scripts/test-under-load's four busy
// loops on 2 CPUs: three tasks on each CPU) a preempted partner costs a
// window milliseconds, and a median of windows measures the scheduler.
//
// Tolerance: 5% (the bound), widened, on a machine where the
// reference does not agree with itself, to the reference's own spread:
// twice its rounds' interquartile range over their median, at most 15%.
// numascope cannot be judged more finely than the reference repeats. On a
// quiet machine the spread is some percent and 5% holds; reporting the
// whole round trip instead of half of it is off by 100% and fails either
// way.
func TestC2CMatchesReference(t *testing.T) {
	topo := liveTopology(t)
	bin := buildReference(t, "refc2c.c", "-static", "-pthread")
	ini, err := Initiators("", topo)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlan(Options{Topology: topo, Kinds: Kinds{C2C: true}, Repeat: 31, C2CTrips: 200, C2CPairBudget: 20 * time.Second})
	if err != nil {
		// Only a machine without a pair is no test; any other error is
		// a failure (a skip hid a plan that stopped working).
		if strings.Contains(err.Error(), "needs two CPUs") {
			t.Skipf("c2c: %v", err)
		}
		t.Fatal(err)
	}
	// One pair of each class: the first in matrix order.
	chosen := map[string][2]int{}
	for _, pr := range p.c2c.pairs {
		a, b := p.c2c.cpus[pr[0]], p.c2c.cpus[pr[1]]
		if _, ok := chosen[c2cClass(a, b)]; !ok {
			chosen[c2cClass(a, b)] = [2]int{a.id, b.id}
		}
	}
	// Up to 20 rounds, fewer (at least 6) once a class has taken a
	// minute: with both CPUs busy with three tasks each, every round trip
	// may wait for the scheduler to run the two threads at once.
	const rounds, least, enough = 20, 6, time.Minute
	compared := 0
	defer func() {
		if compared == 0 && !t.Failed() {
			t.Errorf("no pair compared with the reference: pairs of classes %v, initiator nodes %v", chosen, ini)
		}
	}()
	for _, class := range c2cClasses {
		pr, ok := chosen[class]
		if !ok {
			continue
		}
		node := topo.CPUs[slices.IndexFunc(topo.CPUs, func(c topology.CPU) bool { return c.ID == pr[0] })].Node
		if !slices.Contains(ini, node) {
			continue
		}
		var ours, ref []float64
		numascope := func() {
			s, _, _, err := p.measureC2C(pr[0], pr[1], node)
			if err != nil {
				t.Fatal(err)
			}
			ours = append(ours, slices.Min(s))
		}
		reference := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "--a", strconv.Itoa(pr[0]), "--b", strconv.Itoa(pr[1]), "--trips", "200", "--repeat", "31", "--warm", strconv.Itoa(c2cWarmTrips)).Output()
			if err != nil {
				t.Fatalf("refc2c: %v", err)
			}
			fields := keyValues(out)
			if fields["min_ns"] <= 0 {
				t.Fatalf("refc2c printed %q", out)
			}
			ref = append(ref, fields["min_ns"])
		}
		start := time.Now()
		for r := range rounds {
			if r >= least && time.Since(start) > enough {
				break
			}
			if r%2 == 0 {
				numascope()
				reference()
			} else {
				reference()
				numascope()
			}
		}
		compared++
		// The two are compared round by round: each round runs them back to
		// back, so both most often see the same state of the host, and the
		// test takes the median of the rounds' ratios. Beside busy loops, and
		// on a quiet VM too, the host's state flips between rounds and each
		// tool's rounds fall in modes: in a loaded CI run (3b57c5a, run 3)
		// the same-LLC pair's rounds were 94-96 ns or 111-116 ns, 4 of
		// numascope's 20 high and 11 of the reference's, medians 15% apart;
		// the lower quartile that replaced the median then fell between
		// modes itself in a quiet run (fdeeba8: rounds of about 101, 120 and
		// 199 ns for both, 6 of numascope's in the lowest and 5 of the
		// reference's, 102.5 against 118.4 ns, ratio 0.87). A round whose
		// two halves saw different states gives a ratio off in either
		// direction alike, so the median of the ratios stays with the rounds
		// that saw one state (1.00 on that run's figures); an error of
		// numascope's (a trip counted twice, a wrong clock) moves every
		// round's ratio, and the median with them.
		sorted := func(v []float64) []float64 { s := slices.Clone(v); slices.Sort(s); return s }
		ratios := make([]float64, len(ours))
		for r := range ours {
			ratios[r] = ours[r] / ref[r]
		}
		c := sorted(ref)
		iqr := (c[3*len(c)/4] - c[len(c)/4]) / median(c)
		tol := min(max(0.05, 2*iqr), 0.15)
		ratio := median(sorted(ratios))
		t.Logf("%s CPU %d <-> CPU %d: best window of a round over %d rounds: numascope %.1f ns, reference %.1f ns; median of the rounds' ratios %.3f, tolerance %.0f%% (reference's IQR %.1f%%)",
			class, pr[0], pr[1], len(ours), ours, ref, ratio, 100*tol, 100*iqr)
		if math.Abs(ratio-1) > tol {
			t.Errorf("%s CPU %d <-> CPU %d: numascope's round trips are %.0f%% off the independent reference's (median of %d rounds' ratios, numascope %.1f ns and reference %.1f ns by their medians); want within %.0f%% (5%%, or the reference's own spread on a loaded host)",
				class, pr[0], pr[1], 100*(ratio-1), len(ours), median(sorted(ours)), median(c), 100*tol)
		}
	}
}

// TestOnCPULeavesProcessAffinity: after pinned measurements, the
// process's CPU set (/proc/self/status, the main thread's) is what it
// was. The runtime parks the main thread rather than end it when a
// goroutine locked to it exits, so a pinning left in place became the
// process's: a later discovery in the same process saw one CPU, and the
// c2c fidelity test found no pair to measure.
func TestOnCPULeavesProcessAffinity(t *testing.T) {
	topo := liveTopology(t)
	allowed := func() string {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Cpus_allowed_list:") {
				return strings.TrimSpace(strings.TrimPrefix(l, "Cpus_allowed_list:"))
			}
		}
		t.Fatal("no Cpus_allowed_list in /proc/self/status")
		return ""
	}
	before := allowed()
	cpu := usableCPUs(topo)[topo.CPUs[0].Node][0]
	for range 200 {
		if err := onCPU([]int{cpu}, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if after := allowed(); after != before {
		t.Errorf("the process's CPUs were %s, are %s after 200 pinned runs on CPU %d", before, after, cpu)
	}
	// Every kind pins threads of its own: the bandwidth threads, the
	// injectors and the chaser, the ping-pong's two.
	for range 5 {
		if _, err := Run(Options{Topology: topo, Kinds: Kinds{Bandwidth: true, Loaded: true, C2C: true}, Size: 4 << 20, Repeat: 1, Loads: 1 << 12, C2CTrips: 64, C2CPairBudget: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if after := allowed(); after != before {
		t.Errorf("the process's CPUs were %s, are %s after runs of every kind", before, after)
	}
}
