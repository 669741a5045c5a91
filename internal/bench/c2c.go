package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/topology"
)

// Core-to-core latency (--kind c2c): what a written cache line costs to
// move from one core to another, the price of locks, queues, false sharing
// and reference counts, as Intel MLC's --c2c_latency and the open-source
// core-to-core-latency tools measure it.
//
// Two threads, each pinned to one CPU of the pair, take turns to
// compare-and-swap one 64-bit word: the first turns 2k into 2k+1, the
// second 2k+1 into 2k+2, each spinning on its CAS until the other's write
// arrives. Every turn therefore moves the line, in the exclusive state, to
// the other core and back: a round trip. The first thread times a window
// of round trips after some uncounted ones, and half a round trip, in ns,
// is the figure. The word sits alone on its line (the buffer is a page),
// in memory bound with mbind to the node --line-node names, or to the node
// of the pair's first CPU; where the page really is is checked with
// move_pages, as for the memory kinds.
//
// Each pair is measured --repeat times after one uncounted calibration
// window, and the figure is the median with its min-max spread. A window
// is as many round trips as take about c2cWindow at the pair's calibrated
// speed (c2cMinTrips to c2cMaxTrips), so a pair costs some milliseconds
// whatever the machine: 300 CPUs' 44850 pairs take minutes, a sample of
// them (--pairs sample N) seconds.

// C2C classes, from the nearest to the farthest pair.
const (
	ClassSMT       = "smt-siblings" // two hardware threads of one core
	ClassLLC       = "same-llc"     // two cores sharing the last-level cache
	ClassNode      = "same-node"    // two cores of one node, not sharing it
	ClassCrossNode = "cross-node"   // two nodes
)

// c2cClasses are the classes in order, nearest first.
var c2cClasses = []string{ClassSMT, ClassLLC, ClassNode, ClassCrossNode}

// The window of one repeat, and its bounds in round trips.
const (
	c2cWindow   = time.Millisecond
	c2cMinTrips = 64
	c2cMaxTrips = 1 << 16
	// c2cWarmTrips are the uncounted round trips before each window: the
	// second thread may still be waking when the first starts.
	c2cWarmTrips = 32
	// c2cCalibrateTrips is the calibration window's.
	c2cCalibrateTrips = 256
)

// DefaultC2CSample is the pairs --pairs sample measures when it names no
// count.
const DefaultC2CSample = 2000

// C2CPairs is --pairs: every pair of CPUs (Sample 0) or a sample of
// Sample pairs, spread over the classes and node pairs.
type C2CPairs struct {
	Sample int
}

// ParseC2CPairs parses --pairs: "all", "sample", "sample N" (or
// sample:N, sample=N).
func ParseC2CPairs(s string) (C2CPairs, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "all" {
		return C2CPairs{}, nil
	}
	rest, ok := strings.CutPrefix(t, "sample")
	if !ok {
		return C2CPairs{}, fmt.Errorf("--pairs %q: want all, or sample N (N pairs, e.g. sample 2000)", s)
	}
	rest = strings.TrimLeft(rest, " :=")
	if rest == "" {
		return C2CPairs{Sample: DefaultC2CSample}, nil
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return C2CPairs{}, fmt.Errorf("--pairs %q: the sample is a count of pairs, at least 1, e.g. sample 2000", s)
	}
	return C2CPairs{Sample: n}, nil
}

// C2C is the core-to-core latency (JSON "c2c_ns"). Keys are only ever
// added.
type C2C struct {
	// CPUs are the CPUs measured, sorted by node, then last-level cache,
	// then core, so that the matrix shows the machine's blocks.
	CPUs []int `json:"cpus"`
	// Nodes, LLCs and Cores are each CPU's node, last-level cache
	// instance (an index, -1 unknown) and package:core, in CPUs' order.
	Nodes []int    `json:"nodes"`
	LLCs  []int    `json:"llcs"`
	Cores []string `json:"cores"`
	// Matrix is half the round trip, ns, median over the repeats, between
	// CPUs[r] and CPUs[c]; symmetric (one measurement per pair); null on
	// the diagonal and for a pair not measured.
	Matrix [][]*float64 `json:"matrix"`
	// Classes sum the measured pairs up per class, nearest first; a class
	// the machine has no pair of is left out.
	Classes []C2CClass `json:"classes"`
	// Pairs are every pair measured, with its spread over the repeats.
	Pairs []C2CPair `json:"pairs"`
	// LineNode is the node the contended line's page was bound to; null
	// when each pair's line was on its first CPU's node (no --line-node).
	LineNode *int `json:"line_node"`
	// Sample is the pairs --pairs sample asked for (0: all).
	Sample     int    `json:"sample"`
	PairsTotal int    `json:"pairs_total"`
	Repeat     int    `json:"repeat"`
	Method     string `json:"method"`
}

// C2CClass is one class's pairs: the median of their medians, and the
// least and greatest of them.
type C2CClass struct {
	Class    string  `json:"class"`
	Pairs    int     `json:"pairs"`
	MedianNS float64 `json:"median_ns"`
	MinNS    float64 `json:"min_ns"`
	MaxNS    float64 `json:"max_ns"`
}

// C2CPair is one pair's measurement.
type C2CPair struct {
	A     int    `json:"a"`
	B     int    `json:"b"`
	Class string `json:"class"`
	// LineNode is where the line's page was.
	LineNode int `json:"line_node"`
	// MedianNS, MinNS and MaxNS are over the repeats; Samples each one.
	MedianNS float64   `json:"median_ns"`
	MinNS    float64   `json:"min_ns"`
	MaxNS    float64   `json:"max_ns"`
	Samples  []float64 `json:"samples"`
	// RoundTrips is the round trips per repeat.
	RoundTrips int `json:"round_trips"`
}

// C2CNodeMatrix is the node × node roll-up (JSON "c2c_node_ns"), beside
// the memory latency matrix: the median of the measured pairs' medians
// between the two nodes; on the diagonal, of the pairs of distinct cores
// of the node (SMT siblings, which share every cache, left out).
type C2CNodeMatrix struct {
	Initiators []int        `json:"initiators"`
	Targets    []int        `json:"targets"`
	Matrix     [][]*float64 `json:"matrix"`
	// Pairs is how many pairs each cell is the median of.
	Pairs [][]int `json:"pairs"`
	// LineNode is as C2C's.
	LineNode *int `json:"line_node"`
}

const c2cMethod = "half the round trip of one cache line between two pinned threads taking turns to compare-and-swap one 64-bit word alone on its line; " +
	"per pair the median of the repeats, each a window of about 1 ms of round trips after an uncounted calibration window"

// c2cCPU is one CPU's place, for the sort and the classes.
type c2cCPU struct {
	id, node, llc, pkg, core int
	siblings                 []int
}

// c2cPlan is the resolved c2c part of a run.
type c2cPlan struct {
	cpus     []c2cCPU
	lineNode *int
	pairs    [][2]int // indices into cpus
	total    int      // every pair
}

// planC2C resolves the CPUs (those of --from's nodes), the line's node and
// the pairs.
func (p *plan) planC2C() error {
	topo := p.opt.Topology
	pairs, err := ParseC2CPairs(p.opt.Pairs)
	if err != nil {
		return err
	}
	if p.opt.C2CTrips < 0 {
		return fmt.Errorf("%d round trips per c2c repeat: want a positive count", p.opt.C2CTrips)
	}
	c := &c2cPlan{}
	if s := strings.TrimSpace(p.opt.LineNode); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("--line-node %q: want one node number, e.g. 1", s)
		}
		if err := placement.CheckMemoryNodes([]int{n}, topo); err != nil {
			return fmt.Errorf("--line-node %d: %w", n, err)
		}
		if node := topo.Node(n); node != nil && !node.Allowed {
			return fmt.Errorf("--line-node %d: node %d is outside this process's cpuset (mems); name an allowed node", n, n)
		}
		c.lineNode = &n
	}
	c.cpus = c2cCPUs(topo, p.initiators)
	if len(c.cpus) < 2 {
		return fmt.Errorf("--kind c2c needs two CPUs this process may use; it has %d (%s): widen --from or the cpuset", len(c.cpus), formatInts(cpuIDs(c.cpus)))
	}
	c.pairs, c.total = c2cPairs(c.cpus, pairs.Sample)
	p.c2c = c
	return nil
}

func cpuIDs(cpus []c2cCPU) []int {
	out := make([]int, len(cpus))
	for i, c := range cpus {
		out[i] = c.id
	}
	return out
}

// c2cCPUs returns the usable CPUs of nodes, sorted by node, last-level
// cache, package and core, then id.
func c2cCPUs(topo *topology.Topology, nodes []int) []c2cCPU {
	top := 0
	for _, c := range topo.Caches {
		if c.Type != "Instruction" {
			top = max(top, c.Level)
		}
	}
	llcOf := map[int]int{}
	idx := 0
	for _, c := range topo.Caches {
		if c.Level != top || c.Type == "Instruction" {
			continue
		}
		for _, cpu := range c.CPUs {
			llcOf[cpu] = idx
		}
		idx++
	}
	usable := usableCPUs(topo)
	var out []c2cCPU
	for _, c := range topo.CPUs {
		if !slices.Contains(nodes, c.Node) || !slices.Contains(usable[c.Node], c.ID) {
			continue
		}
		l, ok := llcOf[c.ID]
		if !ok {
			l = -1
		}
		out = append(out, c2cCPU{id: c.ID, node: c.Node, llc: l, pkg: c.Package, core: c.Core, siblings: c.Siblings})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		for _, d := range [][2]int{{a.node, b.node}, {a.llc, b.llc}, {a.pkg, b.pkg}, {a.core, b.core}, {a.id, b.id}} {
			if d[0] != d[1] {
				return d[0] < d[1]
			}
		}
		return false
	})
	return out
}

// c2cClass names the class of a pair.
func c2cClass(a, b c2cCPU) string {
	switch {
	case (a.pkg == b.pkg && a.core == b.core) || slices.Contains(a.siblings, b.id):
		return ClassSMT
	case a.llc >= 0 && a.llc == b.llc:
		return ClassLLC
	case a.node == b.node:
		return ClassNode
	}
	return ClassCrossNode
}

// c2cSeed makes the sample the same from run to run on one machine.
const c2cSeed = 0x6332632d70616972

// c2cPairs returns the pairs to measure (index pairs, i < j) and how many
// there are in all. A sample takes pairs in turn from each group (a class
// and a node pair), in a seeded random order within it, so that every
// class and every cell of the node matrix has pairs as soon as the sample
// holds at least as many pairs as there are groups (a smaller one covers
// that many groups, one pair each); the result is in matrix order.
func c2cPairs(cpus []c2cCPU, sample int) ([][2]int, int) {
	var all [][2]int
	for i := range cpus {
		for j := i + 1; j < len(cpus); j++ {
			all = append(all, [2]int{i, j})
		}
	}
	if sample <= 0 || sample >= len(all) {
		return all, len(all)
	}
	type key struct {
		class  string
		na, nb int
	}
	groups := map[key][][2]int{}
	var keys []key
	for _, pr := range all {
		a, b := cpus[pr[0]], cpus[pr[1]]
		k := key{c2cClass(a, b), a.node, b.node}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pr)
	}
	rng := rand.New(rand.NewPCG(c2cSeed, uint64(len(cpus))))
	for _, k := range keys {
		g := groups[k]
		rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
	}
	var out [][2]int
	for round := 0; len(out) < sample; round++ {
		for _, k := range keys {
			if g := groups[k]; round < len(g) && len(out) < sample {
				out = append(out, g[round])
			}
		}
	}
	slices.SortFunc(out, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	return out, len(all)
}

// c2cLine is the contended word, alone on a 128-byte block (two 64-byte
// lines, so that an adjacent-line prefetcher pulls in nothing else). It is
// placed at the start of a page bound to the line's node.
type c2cLine struct {
	word atomic.Uint64
	_    [120]byte
}

// c2cSpinLimit is how many failed compare-and-swaps c2cSpan tries before
// it returns to Go: a millisecond or so, far beyond a round trip, so that
// a window is not cut by it, yet often enough that the pair's deadline is
// checked and a stop of the world (which would wait for an assembly loop
// whose partner it has stopped) is not held up for long.
const c2cSpinLimit = 1 << 16

// c2cPairBudget bounds the time one pair may take. A pair takes some
// milliseconds; on a host so busy that its two threads are seldom on their
// CPUs at once, each round trip waits for the scheduler, and a pair could
// take minutes. Past the budget the pair keeps the windows it finished, or
// is skipped with the reason, so that 300 CPUs finish in minutes whatever
// the load.
const c2cPairBudget = 250 * time.Millisecond

// c2cBudget is the time one pair may take: --pair-budget, or
// c2cPairBudget.
func (p *plan) c2cBudget() time.Duration {
	if p.opt.C2CPairBudget > 0 {
		return p.opt.C2CPairBudget
	}
	return c2cPairBudget
}

// c2cDeadlineTurns is how many turns c2cTurns takes between two looks at
// the deadline when the partner keeps pace. Without it a pair whose
// threads never wait 2^16 spins was never cut: on a host whose vCPUs run
// in parallel, TestC2CPairBudget's microsecond budget let 65 536-trip
// windows finish. 4 096 turns are 0.3 ms at 70 ns a turn: the clock read
// between them costs under 0.1% of a window.
const c2cDeadlineTurns = 4096

// c2cTurns is the hot loop: n turns of the ping-pong, each a
// compare-and-swap of mine into mine+1 retried until the other thread's
// write arrives. It returns the next value this thread waits for, the time
// from just before the first turn to just after the last, and false when
// the deadline passed first. The compare-and-swap is c2cSpan's (assembly
// on amd64, sync/atomic elsewhere). The time is read right around the
// turns, with nothing between, as the C reference reads it: with
// time.Now before the call and time.Since after it, the calls' own cost
// (a few hundred nanoseconds under the race detector) was in every window,
// 3-7% of 200 round trips of 11-28 ns.
func c2cTurns(w *atomic.Uint64, mine uint64, n int, deadline time.Time) (uint64, time.Duration, bool) {
	p := (*uint64)(unsafe.Pointer(w))
	t0 := nanotime()
	for n > 0 {
		var k int
		mine, k = c2cSpan(p, mine, min(n, c2cDeadlineTurns), c2cSpinLimit)
		if n -= k; n > 0 && time.Now().After(deadline) {
			return mine, time.Duration(nanotime() - t0), false
		}
	}
	return mine, time.Duration(nanotime() - t0), true
}

// c2cOrder tells the second thread how many turns to take next; 0 ends it.
type c2cOrder struct{ turns int }

// measureC2C measures one pair: the CPUs a and b, the line's page on
// node. It returns the half round trips of the repeats, the round trips
// per repeat and where the page was.
func (p *plan) measureC2C(a, b, node int) (samples []float64, trips int, pl Pair, err error) {
	buf, err := newBuffer(os.Getpagesize(), node, false)
	if err != nil {
		return nil, 0, pl, err
	}
	defer buf.free()
	line := (*c2cLine)(unsafe.Pointer(&buf.b[0]))
	orders := make(chan c2cOrder)
	done := make(chan error, 1)
	budget := p.c2cBudget()
	deadline := time.Now().Add(budget)
	go func() {
		err := onCPU([]int{b}, func() error {
			mine, ok := uint64(1), true
			done <- nil
			for o := range orders {
				if ok {
					mine, _, ok = c2cTurns(&line.word, mine, o.turns, deadline)
				}
				done <- nil
			}
			return nil
		})
		if err != nil {
			done <- err
			for range orders {
			}
		}
	}()
	defer close(orders)
	if err := <-done; err != nil {
		return nil, 0, pl, err
	}
	err = onCPU([]int{a}, func() error {
		// The first thread touches the page first: with the page bound,
		// where that fault puts it is the binding's choice, not a's.
		line.word.Store(0)
		mine, ok := uint64(0), true
		// window times turns round trips after the uncounted ones; false:
		// the deadline passed first.
		window := func(turns int) (time.Duration, bool) {
			orders <- c2cOrder{c2cWarmTrips + turns}
			defer func() { <-done }()
			if mine, _, ok = c2cTurns(&line.word, mine, c2cWarmTrips, deadline); !ok {
				return 0, false
			}
			var took time.Duration
			mine, took, ok = c2cTurns(&line.word, mine, turns, deadline)
			return took, ok
		}
		d, ok := window(c2cCalibrateTrips)
		if !ok {
			return fmt.Errorf("not one round trip window in %s: the two CPUs were seldom running the pair's threads at once (a busy host?)", budget)
		}
		trips = c2cMaxTrips
		if d > 0 {
			trips = int(int64(c2cWindow) * c2cCalibrateTrips / int64(d))
		}
		trips = min(max(trips, c2cMinTrips), c2cMaxTrips)
		if p.opt.C2CTrips > 0 {
			trips = p.opt.C2CTrips
		}
		for range p.opt.Repeat {
			d, ok := window(trips)
			if !ok {
				break
			}
			samples = append(samples, float64(d.Nanoseconds())/float64(trips)/2)
		}
		if len(samples) == 0 {
			return fmt.Errorf("no counted window of %d round trips in %s: the two CPUs were seldom running the pair's threads at once (a busy host?)", trips, budget)
		}
		return nil
	})
	if err != nil {
		return nil, 0, pl, err
	}
	frac, n, err := buf.placed()
	if err != nil {
		return nil, 0, pl, err
	}
	return samples, trips, Pair{Kind: "c2c", Initiator: a, Target: node, FractionOnTarget: frac, PagesChecked: n}, nil
}

// runC2C measures every planned pair and fills res.C2C and res.C2CNode.
// progress is called before each pair; placed records where a pair's line
// was.
func (p *plan) runC2C(res *Result, progress func(what string), placed func(Pair)) {
	c := p.c2c
	out := &C2C{LineNode: c.lineNode, Repeat: p.opt.Repeat, Method: c2cMethod, PairsTotal: c.total, Pairs: []C2CPair{}, Classes: []C2CClass{}}
	if len(c.pairs) < c.total {
		out.Sample = len(c.pairs)
	}
	for _, x := range c.cpus {
		out.CPUs = append(out.CPUs, x.id)
		out.Nodes = append(out.Nodes, x.node)
		out.LLCs = append(out.LLCs, x.llc)
		out.Cores = append(out.Cores, strconv.Itoa(x.pkg)+":"+strconv.Itoa(x.core))
	}
	out.Matrix = make([][]*float64, len(c.cpus))
	for i := range out.Matrix {
		out.Matrix[i] = make([]*float64, len(c.cpus))
	}
	short := &pairNote{kind: "c2c", what: fmt.Sprintf("fewer than %d windows within the pair's %s", p.opt.Repeat, p.c2cBudget()),
		why: "the two CPUs were seldom running the pair's threads at once (a busy host?); each pair's windows are its samples"}
	off := &pairNote{kind: "c2c", what: "the line's page off its node", why: "their figures are partly another node's"}
	for _, pr := range c.pairs {
		a, b := c.cpus[pr[0]], c.cpus[pr[1]]
		class := c2cClass(a, b)
		node := a.node
		if c.lineNode != nil {
			node = *c.lineNode
		}
		progress(fmt.Sprintf("c2c CPU %d <-> CPU %d (%s, line on node %d)", a.id, b.id, class, node))
		samples, trips, pl, err := p.measureC2C(a.id, b.id, node)
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{"c2c", a.id, b.id, err.Error()})
			continue
		}
		name := fmt.Sprintf("CPU %d <-> CPU %d", a.id, b.id)
		if len(samples) < p.opt.Repeat {
			short.add(name, fmt.Sprintf("%d of %d", len(samples), p.opt.Repeat))
		}
		placed(pl)
		if pl.FractionOnTarget < minPlaced {
			off.add(name, fmt.Sprintf("%.0f%% on node %d", 100*pl.FractionOnTarget, node))
		}
		s := slices.Clone(samples)
		sort.Float64s(s)
		med := median(s)
		out.Matrix[pr[0]][pr[1]], out.Matrix[pr[1]][pr[0]] = &med, &med
		out.Pairs = append(out.Pairs, C2CPair{A: a.id, B: b.id, Class: class, LineNode: node, MedianNS: med, MinNS: s[0], MaxNS: s[len(s)-1], Samples: samples, RoundTrips: trips})
	}
	for _, n := range []*pairNote{short, off} {
		// Of the pairs measured: a skipped pair is in res.Skipped, not here.
		if note, ok := n.note(len(out.Pairs)); ok {
			res.Notes = append(res.Notes, note)
		}
	}
	out.Classes = c2cClassesOf(out.Pairs)
	if res.Conditions.Virtual {
		res.Notes = append(res.Notes, "core-to-core latency in a virtual machine is between the host CPUs its vCPUs ran on, which the guest's topology need not name; "+
			"under an emulator (QEMU TCG) the classes exist but every figure is the emulator's, not a cache's")
	}
	res.C2C = out
	res.C2CNode = c2cNodeMatrix(out)
}

// c2cClassesOf sums the pairs up per class, nearest first.
func c2cClassesOf(pairs []C2CPair) []C2CClass {
	out := []C2CClass{}
	for _, class := range c2cClasses {
		var v []float64
		for _, pr := range pairs {
			if pr.Class == class {
				v = append(v, pr.MedianNS)
			}
		}
		if len(v) == 0 {
			continue
		}
		sort.Float64s(v)
		out = append(out, C2CClass{Class: class, Pairs: len(v), MedianNS: median(v), MinNS: v[0], MaxNS: v[len(v)-1]})
	}
	return out
}

// c2cNodeMatrix rolls the pairs up node by node.
func c2cNodeMatrix(m *C2C) *C2CNodeMatrix {
	var nodes []int
	for _, n := range m.Nodes {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	at := func(n int) int { return slices.Index(nodes, n) }
	vals := make([][][]float64, len(nodes))
	for i := range vals {
		vals[i] = make([][]float64, len(nodes))
	}
	nodeOf := map[int]int{}
	for i, id := range m.CPUs {
		nodeOf[id] = m.Nodes[i]
	}
	for _, pr := range m.Pairs {
		if pr.Class == ClassSMT {
			continue
		}
		r, c := at(nodeOf[pr.A]), at(nodeOf[pr.B])
		vals[r][c] = append(vals[r][c], pr.MedianNS)
		if r != c {
			vals[c][r] = append(vals[c][r], pr.MedianNS)
		}
	}
	out := &C2CNodeMatrix{Initiators: nodes, Targets: nodes, LineNode: m.LineNode}
	for r := range nodes {
		row := make([]*float64, len(nodes))
		counts := make([]int, len(nodes))
		for c := range nodes {
			if v := vals[r][c]; len(v) > 0 {
				sort.Float64s(v)
				med := median(v)
				row[c], counts[c] = &med, len(v)
			}
		}
		out.Matrix = append(out.Matrix, row)
		out.Pairs = append(out.Pairs, counts)
	}
	return out
}
