// Package bench measures what memory costs on this machine, node by node:
// the idle latency of a dependent load and the bandwidth of streaming
// kernels, from every node with CPUs (an initiator) to every node with
// memory (a target), CPU-less CXL, HBM and GPU-memory nodes included.
//
// Each measurement runs on threads pinned to the initiator's CPUs, over a
// buffer bound strictly to the target with mbind before it is touched;
// where its pages really landed is then asked of the kernel (move_pages)
// and reported, so a figure is never silently about the wrong node. The
// inner loops are as fast as C's: a pointer chase the compiler turns into
// one dependent MOVQ per load, and bandwidth kernels in assembly (AVX-512,
// AVX2 or SSE2 on amd64, non-temporal stores included) with a portable Go
// fallback. docs/bench.md says what is measured and how;
// docs/performance.md compares it with C.
package bench

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/knob"
	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// Options say what to measure.
type Options struct {
	Topology *topology.Topology
	Kinds    Kinds
	// From and To are --from and --to (node lists; empty: all).
	From, To string
	// Size is the buffer per measurement (latency: the chain; bandwidth:
	// the kernel's arrays together); 0 chooses 4× the last-level cache,
	// at least 64 MiB per array.
	Size uint64
	// Threads is the bandwidth threads per initiator; 0: all its CPUs.
	Threads int
	Kernel  Kernel
	// Mix, when not nil, replaces Kernel with a read:write mix (--mix).
	Mix *Mix
	// ISA is the instruction set of the bandwidth kernels (--isa);
	// ISAAuto, the zero value, is the best this CPU has.
	ISA ISA
	// Repeat is how many times each pair is measured (after one
	// uncounted warm-up); at least 1.
	Repeat int
	// NoHugePages maps the buffers with base pages only.
	NoHugePages bool
	// Chain is the latency chain's order (--chain); ChainRandom, the
	// zero value, is the DRAM latency.
	Chain Chain
	// Loads is the dependent loads per latency repeat; 0: DefaultLoads.
	// Tests make it smaller, to keep their runs short.
	Loads int
	// Pairs is --pairs (c2c): "all" or "sample N"; "": all.
	Pairs string
	// LineNode is --line-node (c2c): the node the contended line's page
	// is bound to; "": each pair's first CPU's node.
	LineNode string
	// C2CTrips is the round trips per c2c repeat; 0 calibrates them per
	// pair to a window of about a millisecond. Tests fix it, to compare
	// like with like with a reference.
	C2CTrips int
	// C2CPairBudget bounds one c2c pair's time; 0: c2cPairBudget.
	C2CPairBudget time.Duration
	// Progress, when not nil, is called before each measurement.
	Progress func(done, total int, what string)
}

// DefaultRepeat is --repeat's default.
const DefaultRepeat = 5

// MaxRepeat bounds --repeat, so that the biggest document bench writes is
// known and what reads it back (numascope view) can bound its reading by
// it: --kind c2c --pairs all keeps every repeat of every pair, about
// 120 MiB of JSON on 300 CPUs at MaxRepeat. A hundred repeats already put
// a median's error far below a host's drift from minute to minute, and
// such a run on 300 CPUs takes over an hour.
const MaxRepeat = 100

// minDefaultSize is the least default buffer per array: beyond any cache
// on machines whose caches the topology does not show.
const minDefaultSize = 64 << 20

// minPlaced is the fraction of a buffer's pages on its target below which
// a measurement is flagged: it is then partly about another node.
const minPlaced = 0.99

// Matrix is one measurement for every initiator (row) and target
// (column). Its JSON keys are numascope's public interface: only ever
// added to. A nil entry (JSON null) was not measured: Result.Skipped says
// why.
type Matrix struct {
	// Kernel is the bandwidth kernel ("" for latency; "mix" for a
	// read:write mix, Mix saying which).
	Kernel     string       `json:"kernel,omitempty"`
	Mix        string       `json:"mix,omitempty"`
	Initiators []int        `json:"initiators"`
	Targets    []int        `json:"targets"`
	Matrix     [][]*float64 `json:"matrix"`
	// Median, Min and Max are over the counted repeats (Matrix is the
	// median for latency, the best, i.e. Max, for bandwidth).
	Median [][]*float64 `json:"median"`
	Min    [][]*float64 `json:"min"`
	Max    [][]*float64 `json:"max"`
	// Samples are every counted repeat, in order.
	Samples [][][]float64 `json:"samples"`
	// CPUs are the CPUs each initiator's threads ran on.
	CPUs [][]int `json:"cpus"`
	// SizeBytes is the memory per measurement (all arrays); BytesCounted
	// what one repeat is credited with by STREAM's rules (bandwidth).
	SizeBytes    uint64 `json:"size_bytes"`
	BytesCounted uint64 `json:"bytes_counted,omitempty"`
	// Steps is the dependent loads per repeat (latency).
	Steps int `json:"steps,omitempty"`
	// Chain is the latency chain's order: "random" (every line in one
	// uniformly random cycle) or "page-local" (latency only).
	Chain string `json:"chain,omitempty"`
	// Method says in a sentence how the figure is measured, so that a
	// reader of the JSON alone can tell bandwidth from peak injection.
	Method string `json:"method,omitempty"`
	Repeat int    `json:"repeat"`
	// HugeFraction is the share of each buffer backed by transparent huge
	// pages (null: unknown).
	HugeFraction [][]*float64 `json:"huge_fraction"`
}

// Pair is where one measurement's pages were.
type Pair struct {
	Kind      string `json:"kind"`
	Initiator int    `json:"initiator"`
	Target    int    `json:"target"`
	// FractionOnTarget is the share of the checked pages on the target.
	FractionOnTarget float64 `json:"fraction_on_target"`
	PagesChecked     int     `json:"pages_checked"`
}

// Placement sums up the pairs' placement.
type Placement struct {
	// MinFractionOnTarget is the worst pair's; null when nothing was
	// measured.
	MinFractionOnTarget *float64 `json:"min_fraction_on_target"`
	Pairs               []Pair   `json:"pairs"`
}

// Skip is a pair not measured, and why.
type Skip struct {
	Kind      string `json:"kind"`
	Initiator int    `json:"initiator"`
	Target    int    `json:"target"`
	Reason    string `json:"reason"`
}

// Result is a whole run: bench --format json writes it.
type Result struct {
	Latency   *Matrix `json:"latency_ns,omitempty"`
	Bandwidth *Matrix `json:"bandwidth_mbs,omitempty"`
	// PeakInjection is every bandwidth thread of the initiator at full
	// rate, with the injectors' kernel (--kind loaded).
	PeakInjection *Matrix `json:"peak_injection_mbs,omitempty"`
	Loaded        *Loaded `json:"loaded,omitempty"`
	// C2C is the core-to-core latency, CPU by CPU, and C2CNode its node
	// × node roll-up (--kind c2c).
	C2C        *C2C           `json:"c2c_ns,omitempty"`
	C2CNode    *C2CNodeMatrix `json:"c2c_node_ns,omitempty"`
	Placement  Placement      `json:"placement"`
	Rated      *Rated         `json:"rated"`
	Conditions Conditions     `json:"conditions"`
	Skipped    []Skip         `json:"skipped"`
	// Topology is the machine's nodes, distances and tiers, to label
	// the matrices with (topology.go).
	Topology *Nodes `json:"topology,omitempty"`
	// Notes are plain sentences about the run: warnings included.
	Notes []string `json:"notes"`
}

// plan is a resolved run.
type plan struct {
	opt        Options
	initiators []int
	targets    []int
	skip       map[int]string // target -> why it is not measured
	latSize    uint64
	line       int
	bwPerArray uint64
	bwCPUs     [][]int
	// stream is what the bandwidth threads and injectors run.
	stream stream
	// turnsPerNS is the injectors' spin rate, calibrated once.
	turnsPerNS float64
	isa        ISA // resolved: never ISAAuto
	// llc is the initiators' largest last-level cache (0: unknown).
	llc uint64
	// succ is the random chain's scratch, reused from pair to pair (the
	// garbage collector is off during a run).
	succ []uint32
	// c2c is the core-to-core part (nil: not asked).
	c2c *c2cPlan
}

// newPlan resolves the options against the topology, checking everything that
// can be checked before a buffer is mapped: the nodes, the threads and
// whether each target has the free memory the buffers need.
func newPlan(opt Options) (*plan, error) {
	topo := opt.Topology
	if !opt.Kinds.memory() && !opt.Kinds.C2C {
		return nil, errors.New("nothing to measure: give --kind latency, bandwidth, loaded, c2c or all")
	}
	if opt.Repeat < 1 || opt.Repeat > MaxRepeat {
		return nil, fmt.Errorf("--repeat %d: want 1 to %d", opt.Repeat, MaxRepeat)
	}
	if opt.Threads < 0 {
		return nil, fmt.Errorf("--threads %d: want a positive count (0: every CPU of the node)", opt.Threads)
	}
	p := &plan{opt: opt, skip: map[int]string{}, stream: stream{kernel: opt.Kernel, mix: opt.Mix}}
	var err error
	if p.isa, err = ResolveISA(opt.ISA); err != nil {
		return nil, err
	}
	p.stream.isa = p.isa
	if (opt.Kinds.Bandwidth || opt.Kinds.Loaded) && opt.Mix == nil {
		if err := CheckKernel(opt.Kernel, p.isa); err != nil {
			return nil, err
		}
	}
	if p.initiators, err = Initiators(opt.From, topo); err != nil {
		return nil, err
	}
	if opt.Kinds.C2C {
		if err := p.planC2C(); err != nil {
			return nil, err
		}
	}
	if !opt.Kinds.memory() {
		return p, nil
	}
	if p.targets, err = Targets(opt.To, topo); err != nil {
		return nil, err
	}
	for _, id := range p.initiators {
		cpus, err := threadCPUs(id, opt.Threads, topo)
		if err != nil {
			return nil, err
		}
		p.bwCPUs = append(p.bwCPUs, cpus)
	}
	// One size for every pair, so that the matrix compares like with
	// like: the largest initiator's last-level cache decides.
	var llc uint64
	for _, id := range p.initiators {
		l, line := lastLevel(topo, usableCPUs(topo)[id])
		llc = max(llc, l)
		p.line = max(p.line, line)
	}
	p.llc = llc
	arrays := uint64(p.stream.arrays())
	if opt.Size == 0 {
		per := roundUp(max(4*llc, minDefaultSize), hugePage)
		p.latSize, p.bwPerArray = per, per
	} else {
		p.latSize = roundUp(opt.Size, ChainPage)
		p.bwPerArray = opt.Size / arrays / ChainPage * ChainPage
		if (opt.Kinds.Bandwidth || opt.Kinds.Loaded) && p.bwPerArray < ChainPage {
			return nil, fmt.Errorf("--size %s: the %s kernel's %d arrays need at least %s", FormatSize(opt.Size), p.stream.Name(), arrays, FormatSize(arrays*ChainPage))
		}
	}
	if opt.Loads < 0 {
		return nil, fmt.Errorf("%d loads per latency repeat: want a positive count", opt.Loads)
	}
	var need uint64
	if opt.Kinds.Latency {
		need = p.latSize
	}
	if opt.Kinds.Bandwidth {
		need = max(need, arrays*p.bwPerArray)
	}
	if opt.Kinds.Loaded {
		// The chain and the injectors' arrays at once.
		need = max(need, p.latSize+arrays*p.bwPerArray)
	}
	explicit := opt.To != ""
	for _, id := range p.targets {
		n := topo.Node(id)
		if !n.Allowed {
			p.skip[id] = fmt.Sprintf("node %d is outside this process's cpuset", id)
			continue
		}
		// A margin for the page tables and what else allocates meanwhile.
		if margin := need/32 + 16<<20; n.MemoryFree < need+margin {
			why := fmt.Sprintf("node %d has %s free; --size needs %s there", id, FormatSize(n.MemoryFree&^(1<<20-1)), FormatSize(need+margin))
			if explicit {
				return nil, fmt.Errorf("%s: give a smaller --size, or free memory on node %d", why, id)
			}
			p.skip[id] = why + " (give a smaller --size)"
		}
	}
	if len(p.skip) == len(p.targets) {
		var why []string
		for _, id := range p.targets {
			why = append(why, p.skip[id])
		}
		return nil, fmt.Errorf("no target can be measured: %s", strings.Join(why, "; "))
	}
	// After the free-memory check, which is what most too-large sizes
	// meet first and says what to do on this machine.
	if (opt.Kinds.Latency || opt.Kinds.Loaded) && p.latSize/uint64(p.line) > maxChainLines {
		return nil, fmt.Errorf("--size %s: the latency chain holds at most %d lines of %d bytes (%s); give a smaller --size", FormatSize(p.latSize), uint64(maxChainLines), p.line, FormatSize(maxChainLines*uint64(p.line)&^(1<<30-1)))
	}
	return p, nil
}

// Run measures what opt asks for. The error is for a run that could not
// start or measured nothing; a pair that failed is a null with its reason
// in Skipped.
func Run(opt Options) (*Result, error) {
	p, err := newPlan(opt)
	if err != nil {
		return nil, err
	}
	var cpus []int
	for _, id := range p.initiators {
		cpus = append(cpus, usableCPUs(opt.Topology)[id]...)
	}
	load := startLoad(opt.Topology)
	res := &Result{Conditions: readConditions(cpus), Skipped: []Skip{}, Notes: []string{}}
	res.Conditions.KernelISA = p.isa.String()
	res.Conditions.LLCBytes = p.llc
	res.Notes = append(res.Notes, p.sizeNotes()...)
	res.Topology = summarize(opt.Topology)
	res.Placement.Pairs = []Pair{}

	// NUMA balancing would unmap pages to sample accesses and may migrate
	// them: off for the run when root, back on after, even if killed.
	c := &res.Conditions
	switch {
	case c.NUMABalancing == "" || c.NUMABalancing == "0":
	case c.Root:
		g, err := knob.Set("turning NUMA balancing off", []string{conditionPaths.balancing}, []string{"0"})
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("NUMA balancing stays on (kernel.numa_balancing=%s): %v", c.NUMABalancing, err))
			break
		}
		c.NUMABalancingOff = true
		defer func() {
			if err := g.Restore(); err != nil {
				fmt.Fprintf(os.Stderr, "numascope bench: %v\n", err)
			}
		}()
	default:
		res.Notes = append(res.Notes, fmt.Sprintf("NUMA balancing is on (kernel.numa_balancing=%s) and numascope is not root, so it stays on: its hinting faults may disturb the figures; run as root to turn it off for the run", c.NUMABalancing))
	}
	if c.Virtual {
		res.Notes = append(res.Notes, "this is a virtual machine ("+orUnknown(c.Hypervisor)+"): its nodes need not be the host's, and its latencies and bandwidths are only as real as the hypervisor's placement of its memory")
	}
	if !opt.NoHugePages && c.THP == "never" {
		res.Notes = append(res.Notes, "transparent huge pages are off (never): base pages only, so the latency includes more TLB misses")
	}
	// Nothing in the measured loops allocates, but the garbage collector
	// could still wake for what Run allocates between them.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer enoughPs(p.threadsAtOnce() + 1)()

	total := 0
	if opt.Kinds.Latency {
		total += len(p.initiators) * len(p.targets)
	}
	if opt.Kinds.Bandwidth {
		total += len(p.initiators) * len(p.targets)
	}
	if opt.Kinds.Loaded {
		total += len(p.initiators) * len(p.targets)
	}
	if p.c2c != nil {
		total += len(p.c2c.pairs)
	}
	done := 0
	var current string
	progress := func(kind string, i, t int) {
		load.sample()
		current = fmt.Sprintf("%s node %d -> node %d", kind, i, t)
		if opt.Progress != nil {
			opt.Progress(done, total, current)
		}
		done++
	}
	// status tells the progress where a long measurement is.
	status := func(what string) {
		if opt.Progress != nil {
			opt.Progress(done-1, total, current+": "+what)
		}
	}
	minFrac := 2.0
	var measure measureFunc = func(kind string, m *Matrix, run func(r, t int) ([]float64, []Pair, float64, error)) {
		// The node pairs whose buffers were partly off their target: one
		// note for the kind (pairNote says why).
		off := &pairNote{kind: kind, what: "buffers partly off their target", why: "their figures are partly another node's"}
		measured := 0 // "N of M pairs": of the pairs measured, not those skipped
		defer func() {
			if n, ok := off.note(measured); ok {
				res.Notes = append(res.Notes, n)
			}
		}()
		for r, i := range p.initiators {
			for col, t := range p.targets {
				progress(kind, i, t)
				if why, ok := p.skip[t]; ok {
					res.Skipped = append(res.Skipped, Skip{kind, i, t, why})
					continue
				}
				samples, pl, huge, err := run(r, t)
				if err != nil {
					res.Skipped = append(res.Skipped, Skip{kind, i, t, err.Error()})
					continue
				}
				measured++
				m.set(r, col, samples, kind == "latency")
				if huge >= 0 {
					m.HugeFraction[r][col] = &huge
				}
				low := 2.0
				for _, x := range pl {
					res.Placement.Pairs = append(res.Placement.Pairs, x)
					minFrac = min(minFrac, x.FractionOnTarget)
					low = min(low, x.FractionOnTarget)
				}
				if low < minPlaced {
					off.add(fmt.Sprintf("node %d -> node %d", i, t), fmt.Sprintf("%.1f%% on node %d", 100*low, t))
				}
			}
		}
	}
	if opt.Kinds.Latency {
		res.Latency = p.newMatrix("")
		res.Latency.SizeBytes = p.latSize
		res.Latency.Steps = p.loads()
		res.Latency.Chain = opt.Chain.String()
		res.Latency.Method = "median ns per load of " + opt.Chain.describe() + ", followed by one CPU of the initiator, nothing else running on the node"
		for _, id := range p.initiators {
			res.Latency.CPUs = append(res.Latency.CPUs, usableCPUs(opt.Topology)[id][:1])
		}
		measure("latency", res.Latency, func(r, t int) ([]float64, []Pair, float64, error) {
			return p.latency(res.Latency.CPUs[r][0], p.initiators[r], t, res.Latency.Steps)
		})
	}
	if opt.Kinds.Bandwidth {
		res.Bandwidth = p.newMatrix(p.stream.Name())
		res.Bandwidth.CPUs = p.bwCPUs
		res.Bandwidth.SizeBytes = uint64(p.stream.arrays()) * p.bwPerArray
		res.Bandwidth.Method = bandwidthMethod
		measure("bandwidth", res.Bandwidth, func(r, t int) ([]float64, []Pair, float64, error) {
			s, counted, pl, huge, err := p.bandwidth(p.bwCPUs[r], p.initiators[r], t)
			res.Bandwidth.BytesCounted = counted
			return s, pl, huge, err
		})
	}
	if opt.Kinds.Loaded {
		p.measureLoaded(res, measure, status)
	}
	if p.c2c != nil {
		p.runC2C(res, func(what string) {
			load.sample()
			current = what
			if opt.Progress != nil {
				opt.Progress(done, total, current)
			}
			done++
		}, func(x Pair) {
			res.Placement.Pairs = append(res.Placement.Pairs, x)
			minFrac = min(minFrac, x.FractionOnTarget)
		})
	}
	load.sample()
	res.Conditions.HostLoad = load.finish()
	res.Notes = append(res.Notes, res.honestyNotes()...)
	if minFrac <= 1 {
		res.Placement.MinFractionOnTarget = &minFrac
	}
	if opt.Kinds.memory() {
		res.Rated = Rate(opt.Topology, res)
	}
	if len(res.Placement.Pairs) == 0 {
		why := "nothing"
		if len(res.Skipped) > 0 {
			why = res.Skipped[0].Reason
		}
		return res, fmt.Errorf("no pair could be measured: %s", why)
	}
	return res, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "hypervisor not named"
	}
	return s
}

func (p *plan) newMatrix(kernel string) *Matrix {
	m := &Matrix{Kernel: kernel, Initiators: p.initiators, Targets: p.targets, Repeat: p.opt.Repeat}
	if kernel != "" {
		m.Mix = p.stream.MixName()
	}
	grid := func() [][]*float64 {
		g := make([][]*float64, len(p.initiators))
		for i := range g {
			g[i] = make([]*float64, len(p.targets))
		}
		return g
	}
	m.Matrix, m.Median, m.Min, m.Max, m.HugeFraction = grid(), grid(), grid(), grid(), grid()
	m.Samples = make([][][]float64, len(p.initiators))
	for i := range m.Samples {
		m.Samples[i] = make([][]float64, len(p.targets))
	}
	return m
}

// set records one pair's samples: the matrix holds the median for
// latency, the best (highest) for bandwidth, STREAM's choice.
func (m *Matrix) set(r, c int, samples []float64, latency bool) {
	s := slices.Clone(samples)
	sort.Float64s(s)
	med := median(s)
	lo, hi := s[0], s[len(s)-1]
	m.Median[r][c], m.Min[r][c], m.Max[r][c] = &med, &lo, &hi
	if latency {
		m.Matrix[r][c] = &med
	} else {
		m.Matrix[r][c] = &hi
	}
	m.Samples[r][c] = samples
}

// median of sorted s.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// lockPinned locks the calling goroutine to its thread for good and pins
// the thread to cpus; the caller defers the returned restore. The thread
// exits with its goroutine, so its affinity never reaches another
// goroutine; restore puts the affinity back all the same, because the
// runtime does not end the process's main thread, on which the goroutine
// may have run, but parks it for good, and the kernel reports that
// thread's affinity as the process's (/proc/self/status), which a later
// topology discovery in the same process would take for its cpuset.
// The thread also holds the runtime's preemption signal while it measures
// (holdPreemption); restore releases it.
func lockPinned(cpus []int) (restore func(), err error) {
	runtime.LockOSThread()
	unpin := func() {}
	var was unix.CPUSet
	if unix.SchedGetaffinity(0, &was) == nil {
		unpin = func() { _ = unix.SchedSetaffinity(0, &was) }
	}
	if err := placement.SetAffinity(cpus); err != nil {
		return unpin, err
	}
	release, err := holdPreemption()
	restore = func() { release(); unpin() }
	if err != nil {
		return restore, fmt.Errorf("holding the runtime's preemption signal on the measuring thread: %w", err)
	}
	return restore, nil
}

// onCPU runs f on a thread of its own pinned to cpus (lockPinned).
func onCPU(cpus []int, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		restore, err := lockPinned(cpus)
		defer restore()
		if err != nil {
			ch <- fmt.Errorf("pinning to CPU %s: %w", sysfs.FormatCPUList(cpus), err)
			return
		}
		ch <- f()
	}()
	return <-ch
}

// DefaultLoads is the dependent loads per latency repeat: a fifth of a
// second at DRAM latencies, long enough that the timer's resolution and the
// loop's entry do not show. Every line of a random chain is as likely as
// any other, so a sample of 2^21 of them measures the whole buffer's
// latency; a pass over a big one would take seconds.
const DefaultLoads = 1 << 21

// minSteps is DefaultLoads (the least loads of a default run).
const minSteps = DefaultLoads

// loads is the dependent loads per latency repeat (and the warm-up's at
// most: a chain shorter than that is warmed by one whole pass).
func (p *plan) loads() int {
	if p.opt.Loads > 0 {
		return p.opt.Loads
	}
	return DefaultLoads
}

// buildChain writes the latency chain the options ask for into buf.
func (p *plan) buildChain(buf []byte) (unsafe.Pointer, int) {
	if p.opt.Chain == ChainPageLocal {
		return BuildPageLocalChain(buf, p.line, ChainSeed)
	}
	start, lines, succ := BuildRandomChain(buf, p.line, ChainSeed, p.succ)
	p.succ = succ
	return start, lines
}

// warm follows the chain from start once over its lines, or over the
// loads of a repeat if it is longer: the pages are faulted in already (the
// chain was written), and this brings the caches, the TLB and the clock
// to what the timed runs see.
func (p *plan) warm(start unsafe.Pointer, lines int) unsafe.Pointer {
	return chase(start, min(lines, p.loads()))
}

// chaseSink keeps the chase's result alive, so the loads are not dead code.
var chaseSink uintptr

// latency measures the idle latency from cpu (on initiator) to target: one
// warm-up pass over the whole chain, then Repeat timed runs of steps loads.
func (p *plan) latency(cpu, initiator, target, steps int) (samples []float64, pl []Pair, huge float64, err error) {
	err = onCPU([]int{cpu}, func() error {
		buf, err := newBuffer(int(p.latSize), target, !p.opt.NoHugePages)
		if err != nil {
			return err
		}
		defer buf.free()
		ptr := p.warm(p.buildChain(buf.b))
		samples = make([]float64, p.opt.Repeat)
		for r := range samples {
			t0 := time.Now()
			ptr = chase(ptr, steps)
			samples[r] = float64(time.Since(t0).Nanoseconds()) / float64(steps)
		}
		chaseSink = uintptr(ptr)
		frac, n, err := buf.placed()
		if err != nil {
			return err
		}
		pl = []Pair{{"latency", initiator, target, frac, n}}
		huge = buf.hugeFraction()
		return nil
	})
	return samples, pl, huge, err
}
