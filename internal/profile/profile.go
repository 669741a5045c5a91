// Package profile implements numascope profile: which code first touched
// (placed) each page, and which accesses were remote, per source line and per
// thread, without binary instrumentation and without hardware counters.
//
// The kernel does the sampling. A perf software event counts every user-space
// page fault of the program (PERF_COUNT_SW_PAGE_FAULTS, period 1), with the
// faulting IP, thread, CPU, time and address. The first fault on a base page
// is its first touch. With automatic NUMA balancing on, the kernel
// periodically unmaps the program's pages, and the next access to each takes
// a NUMA hinting fault: the same event sees it, so every later fault on a
// touched page is a sampled access, local or remote by the accessing CPU's
// node against the page's node (from move_pages(2)). docs/profile.md says
// exactly what is counted and what is not.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/sigfwd"
	"github.com/numascope/numascope/internal/topology"
)

// Profile is the JSON document numascope profile writes (docs/profile.md).
type Profile struct {
	// Host and Rank say which process of a job spanning hosts this is
	// (the host name, the MPI or Slurm rank), so that numascope report
	// can merge the ranks' profiles; each is omitted when unknown.
	Host       string   `json:"host,omitempty"`
	Rank       string   `json:"rank,omitempty"`
	Command    []string `json:"command"`
	ExitStatus int      `json:"exit_status"`
	// Signal names the signal that killed the program, if one did.
	Signal   string  `json:"signal,omitempty"`
	Duration float64 `json:"duration_s"`
	// Nodes are the machine's NUMA nodes (all, CPU-less ones included).
	Nodes []int `json:"nodes"`
	// NUMABalancing is kernel.numa_balancing at the start; without it (or
	// with one node) there are no sampled accesses, only first touches.
	NUMABalancing bool     `json:"numa_balancing"`
	Notes         []string `json:"notes"`
	// Samples are the page faults seen; Lost the records the kernel
	// dropped because a ring buffer was full (at least the page faults its
	// count has that never arrived).
	Samples uint64 `json:"samples"`
	Lost    uint64 `json:"lost"`
	// FaultsAfterLoss are faults on pages known from before records were
	// lost, counted neither as first touches nor as accesses: the lost
	// records may have held the page's munmap.
	FaultsAfterLoss uint64 `json:"faults_after_loss"`
	// RepeatFaults are later faults on known pages where the kernel takes
	// no NUMA hinting faults (one node, balancing off): not accesses.
	RepeatFaults uint64     `json:"repeat_faults"`
	HugePages    uint64     `json:"huge_pages"`
	Totals       Metrics    `json:"totals"`
	AccessMatrix Matrix     `json:"access_matrix"`
	Locations    []Location `json:"locations"`
	Threads      []Thread   `json:"threads"`
	// Mappings say where the memory came from: heap, stack, anonymous
	// mmap, file.
	Mappings []Mapping `json:"mappings"`
	// Allocations are the allocation sites (absent when the syscall
	// tracepoints were not available; a note says why).
	Allocations []Allocation `json:"allocations,omitempty"`
	// CompDirs are the compilation directories the debug info names
	// (DW_AT_comp_dir), by the source files of locations and allocations
	// that have one: where `numascope view` looks for a source file when
	// given no --source-path (never elsewhere).
	CompDirs map[string][]string `json:"comp_dirs,omitempty"`
	// Profiler is what the profiler itself spent outside the program's
	// run and how its rings fared, so that a slow or lossy profile says
	// where the time and the records went (docs/profile.md, "What the
	// profiler costs"). Absent in merged profiles.
	Profiler *ProfilerStats `json:"profiler,omitempty"`

	// AccessesNodeUnknown are sampled accesses counted neither local nor
	// remote: handled after the program had exited (numascope short of
	// CPU), to pages a hinting fault before may have migrated, which the
	// kernel can no longer place.
	AccessesNodeUnknown uint64 `json:"accesses_node_unknown"`
}

// ProfilerStats is the profiler's own account of a run.
type ProfilerStats struct {
	// StartS: from the profile's start to the program's release
	// (perf events, rings, the syscall tracepoints, the first reads of
	// /proc). AfterExitS: from the program's exit to the profile being
	// complete (the last drain, the final move_pages queries,
	// symbolization); writing the JSON comes after.
	StartS     float64 `json:"start_s"`
	AfterExitS float64 `json:"after_exit_s"`
	// Rings, one per CPU, in CPU order.
	Rings []RingStats `json:"rings"`
}

// RingStats is one CPU's ring: its size, what went through it, what the
// kernel dropped from it because it was full, and the most a drain found
// waiting in it (at Size, the consumer fell a whole ring behind).
type RingStats struct {
	CPU       int    `json:"cpu"`
	Size      int    `json:"size_bytes"`
	Records   uint64 `json:"records"`
	Lost      uint64 `json:"lost"`
	HighWater int    `json:"high_water_bytes"`
	Drains    uint64 `json:"drains"`
}

// Matrix counts sampled accesses by the accessing thread's node (row; -1 for
// unpinned threads) and the page's node (column).
type Matrix struct {
	ThreadNodes []int      `json:"thread_nodes"`
	PageNodes   []int      `json:"page_nodes"`
	Counts      [][]uint64 `json:"counts"`
}

// Location is one source line (or, without line information, one function).
type Location struct {
	Function string  `json:"function"`
	File     string  `json:"file"`
	Line     int     `json:"line"`
	Metrics  Metrics `json:"metrics"`
}

// Thread is one thread of the program.
type Thread struct {
	TID  int    `json:"tid"`
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	// Nodes is the node set of its last CPU affinity: one node = pinned.
	Nodes      []int     `json:"nodes"`
	Metrics    Metrics   `json:"metrics"`
	BindingLog []Binding `json:"binding_log"`
}

// Binding is one affinity a thread was seen with.
type Binding struct {
	// TimeS is when it took effect (sched_setaffinity) or was seen, in
	// seconds since the profile started.
	TimeS float64 `json:"time_s"`
	CPUs  string  `json:"cpus"`
	Nodes []int   `json:"nodes"`
	// Via says how: "start" (the thread's affinity when it was first
	// seen), "sched_setaffinity" (the program's own call, at the time of
	// the call) or "poll" (a change seen by reading it again, e.g. one made
	// from outside the program).
	Via string `json:"via"`
}

// Options configure Run.
type Options struct {
	Topology *topology.Topology
	// ProcRoot is where the profiled processes' /proc is ("/proc").
	ProcRoot       string
	Stdin          *os.File
	Stdout, Stderr *os.File
	// ScanRate, if not zero, speeds up the NUMA balancing scanner for the
	// run (see SetScanRate); the previous settings are restored after.
	ScanRate time.Duration
	// Closer, if set, is a numascope executable that closes the syscall
	// tracepoint events in the background (see CloserArg): their close
	// costs a third of a second otherwise.
	Closer string
	// StackCopy is how many bytes of the user stack each page-fault
	// sample copies, to find the application's call into libc (see
	// DefaultStackCopy): 0 is DefaultStackCopy, negative none, at most
	// MaxStackCopy, a multiple of 8.
	StackCopy int
	// Capture, if set, receives every record the rings gave, drain by
	// drain (perfring's capture format): a stream the consumer can be
	// replayed on without the kernel, for its tests and benchmarks.
	Capture io.Writer
	// Consumers is how many goroutines consume the rings (see
	// readers.go): 1, the analyzer alone; N > 1, the analyzer and N-1
	// ring readers; 0, defaultConsumers for the CPUs sampled. At most
	// MaxConsumers.
	Consumers int
	// RingBytes is each CPU's ring size (0: the default share of a
	// fixed budget, see ringBudget), rounded down to a power of two pages:
	// for measuring how deep a ring a fault rate needs (docs/profile.md,
	// "Lost records"). At most MaxRingBytes.
	RingBytes int
	// Host and Rank are recorded in the profile as they are (Profile.Host,
	// Profile.Rank); "" when unknown.
	Host, Rank string
}

// pollMs is how often the rings are drained when they fill slowly: it bounds
// how stale move_pages' answer can be and how late an affinity change is seen.
const pollMs = 20

// Run runs args under the profiler and returns the profile, complete even if
// the program crashed. The error is about the profiler, never the program's
// exit status, which is in the profile.
func Run(args []string, opt Options) (*Profile, error) {
	begun := monotonicNs()
	if len(args) == 0 {
		return nil, errors.New("no command to profile")
	}
	topo := opt.Topology
	if topo == nil {
		return nil, errors.New("profile: no topology")
	}
	procRoot := opt.ProcRoot
	if procRoot == "" {
		procRoot = "/proc"
	}
	stackCopy := opt.StackCopy
	switch {
	case stackCopy == 0:
		stackCopy = DefaultStackCopy
	case stackCopy < 0:
		stackCopy = 0
	}
	if err := CheckStackCopy(stackCopy); err != nil {
		return nil, fmt.Errorf("stack copy of %w", err)
	}
	cpuNode, cpus := cpuNodes(topo)
	pageNodes, threadNodes := []int{}, []int{-1}
	for _, n := range topo.Nodes {
		pageNodes = append(pageNodes, n.ID)
		if len(n.CPUs) > 0 {
			threadNodes = append(threadNodes, n.ID)
		}
	}
	a := newAnalyzer(cpuNode, pageNodes, threadNodes)
	kern := newProcKernel(procRoot, "/sys", a.pageSize)
	defer kern.Close()
	a.setKernel(kern)
	a.thp.disable(thpDisabled("/sys"))
	p := &Profile{Host: opt.Host, Rank: opt.Rank, Command: args, Nodes: pageNodes}
	p.NUMABalancing, a.hinting, p.Notes = balancingNotes(procRoot, topo)

	path, err := exec.LookPath(args[0])
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", args[0], err)
	}
	cmd := exec.Command(path, args[1:]...)
	cmd.Args = args
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opt.Stdin, opt.Stdout, opt.Stderr

	if opt.ScanRate != 0 {
		sr, err := SetScanRate(opt.ScanRate)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := sr.Restore(); err != nil {
				fmt.Fprintf(os.Stderr, "numascope profile: %v\n", err)
			}
		}()
		p.Notes = append(p.Notes, fmt.Sprintf("the NUMA balancing scanner ran every %v for this profile (--scan-rate)", opt.ScanRate))
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	var ps *perfSession
	var capture *perfring.CaptureWriter
	err = startStopped(cmd, func(pid int) error {
		var err error
		if ps, err = openPerf(pid, cpus, stackCopy, opt.RingBytes); err != nil {
			return err
		}
		if evs, err := ps.openSyscalls(pid); err != nil {
			fix := "run as root, or set kernel.perf_event_paranoid=-1"
			if errors.Is(err, perfevent.ErrTracefsDenied) {
				fix = perfevent.TracefsFix(err) // no sysctl opens tracefs to other users
			}
			p.Notes = append(p.Notes, fmt.Sprintf("allocation sites are not tracked, thread affinities are polled every %d ms, not followed, "+
				"and memory given back and mapped again (munmap, MADV_DONTNEED) is not noticed, so touching it again counts as accesses: "+
				"the syscall tracepoints are unavailable (%v); %s", pollMs, err, fix))
		} else {
			a.useSyscalls(evs)
		}
		a.seed(pid, args[0])
		if opt.Capture != nil {
			if capture, err = startCapture(opt.Capture, a, pid); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Wait()
		}
		return nil, err
	}
	defer ps.close()
	started := monotonicNs()

	consumers := opt.Consumers
	if consumers <= 0 {
		consumers = defaultConsumers(len(cpus))
	}
	var pl *pipeline
	if consumers > 1 && capture == nil { // a capture keeps the rings' order: one consumer
		pool := newReaderPool(&a.code, min(consumers-1, len(ps.rings), MaxConsumers))
		pool.assign(ps.rings)
		defer pool.stop()
		pl = &pipeline{a: a, pool: pool}
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	var pfds []unix.PollFd
	var exited uint64
	for running := true; running; {
		select {
		case sig := <-sigs:
			_ = sigfwd.Relay(cmd.Process, sig) // the program stops; profiling ends when it exits
			continue
		case werr = <-waited:
			running = false
		default:
			wait := pollMs
			if pl != nil && pl.pending {
				wait = 0 // a round waits to be handled: no sleep before it
			}
			pfds = ps.wait(wait, pfds)
			if hungUp(pfds) {
				// Every event's task is gone (the program and all it
				// started): poll would return at once from now on.
				// Wait for its exit status instead of spinning, then
				// drain what is left.
				select {
				case sig := <-sigs:
					_ = sigfwd.Relay(cmd.Process, sig)
				case werr = <-waited:
					running = false
				}
			}
		}
		// Records after the moment this pass starts may still be coming
		// in rings read earlier: they wait for the next pass.
		horizon := monotonicNs() - horizonSlack
		if !running {
			horizon, exited = ^uint64(0), horizon+horizonSlack
		}
		switch {
		case capture != nil:
			ps.drain(func(r *perfring.Record) { capture.Record(r.Raw); a.record(r.Raw) })
			capture.Pass(horizon)
		case pl != nil:
			pl.round(pl.pool.drainFn, pl.pool.hasFn, horizon)
			continue
		default:
			ps.drain(a.ringRecord)
		}
		a.handleUntil(horizon)
	}
	if pl != nil {
		pl.flush()
	}
	if capture != nil {
		if err := capture.Close(); err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("the record capture is incomplete: %v", err))
		}
	}
	// Samples the kernel dropped without a PERF_RECORD_LOST to say so are
	// told by the events' own count.
	if n, err := ps.faults(); err == nil && n > a.samples && n-a.samples > a.lost {
		a.lost = n - a.samples
	}
	// The program is gone: no more syscall events. Their slow close
	// starts now, in the background.
	ps.closeSyscallsVia(opt.Closer)
	p.Duration = a.sinceStart(monotonicNs())
	code, sig, werr := sigfwd.ExitStatus(werr)
	if werr != nil {
		return nil, fmt.Errorf("waiting for %s: %w", args[0], werr)
	}
	p.ExitStatus = code
	if sig != 0 {
		p.Signal = unix.SignalName(sig)
	}
	if p.Signal != "" {
		p.Notes = append(p.Notes, fmt.Sprintf("%s was killed by %s; the profile covers it up to then", args[0], p.Signal))
	}
	a.fill(p)
	p.Profiler = ps.stats(started-begun, monotonicNs()-exited)
	if n := p.Profiler.lossNote(p.Lost); n != "" {
		p.Notes = append(p.Notes, n)
	}
	if p.NUMABalancing && len(topo.Nodes) > 1 && p.Totals.Accesses() == 0 {
		p.Notes = append(p.Notes, "NUMA balancing is on but took no hinting faults: the program ended before the scanner reached it (kernel.numa_balancing_scan_delay_ms, "+
			"under /sys/kernel/debug/sched/numa_balancing/ on recent kernels) or its memory was not scanned; only first touches are reported")
	}
	return p, nil
}

// horizonSlack allows for the moment between a record's time stamp and
// its write into the ring.
const horizonSlack = uint64(time.Millisecond)

// monotonicNs reads CLOCK_MONOTONIC, the clock of the samples.
func monotonicNs() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// cpuNodes maps CPU -> node and lists the online CPUs to sample on.
func cpuNodes(topo *topology.Topology) (cpuNode []int, cpus []int) {
	maxCPU := -1
	for _, c := range topo.CPUs {
		maxCPU = max(maxCPU, c.ID)
	}
	cpuNode = make([]int, maxCPU+1)
	for i := range cpuNode {
		cpuNode[i] = -1
	}
	for _, c := range topo.CPUs {
		cpuNode[c.ID] = c.Node
		if c.Online {
			cpus = append(cpus, c.ID)
		}
	}
	return cpuNode, cpus
}

// balancingNotes says whether NUMA balancing is on, and whether a page
// fault can be a NUMA hinting fault (a sampled access): with more than one
// node, and balancing on or not known to be off.
func balancingNotes(procRoot string, topo *topology.Topology) (on, hinting bool, notes []string) {
	notes = []string{}
	b, err := os.ReadFile(procRoot + "/sys/kernel/numa_balancing")
	on = err == nil && strings.TrimSpace(string(b)) != "0"
	hinting = len(topo.Nodes) > 1 && (on || err != nil)
	switch {
	case len(topo.Nodes) < 2:
		notes = append(notes, "this machine has one NUMA node: there are no NUMA hinting faults, so no sampled accesses (local/remote); first touches are reported")
	case err != nil:
		notes = append(notes, "cannot read kernel.numa_balancing ("+err.Error()+"): sampled accesses depend on it")
	case !on:
		notes = append(notes, "automatic NUMA balancing is off (kernel.numa_balancing=0): no sampled accesses (local/remote), only first touches; enable it with sysctl kernel.numa_balancing=1")
	}
	return on, hinting, notes
}

// seed records what exists before the program's first instruction: its
// executable mappings (mapped by execve, before the event existed, so no
// MMAP2 record describes them) and its main thread.
func (a *analyzer) seed(pid int, name string) {
	if maps, ok := a.kern.Maps(int32(pid)); ok {
		for line := range strings.Lines(string(maps)) {
			if m, ok := parseMapsLine(line); ok {
				a.code.addMapping(int32(pid), m)
				// Read the program's line tables now, while it is
				// stopped: the first faults ask for them, and reading a
				// large table while the program runs would let its rings
				// overflow.
				a.code.loadSymbols(m.file)
			}
		}
	}
	t := a.thread(int32(pid), int32(pid))
	if t.status == "" {
		a.th.read(t, "start", 0) // stopped: its affinity at its start
	}
	t.comm = name
	if comm, ok := a.kern.Comm(int32(pid)); ok {
		t.comm = comm
	}
}

// parseMapsLine parses an executable file mapping of /proc/PID/maps:
// "start-end perms offset dev inode path".
func parseMapsLine(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f[1]) < 3 || f[1][2] != 'x' || !strings.HasPrefix(f[5], "/") {
		return mapping{}, false
	}
	se := strings.SplitN(f[0], "-", 2)
	if len(se) != 2 {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(se[0], 16, 64)
	end, err2 := strconv.ParseUint(se[1], 16, 64)
	off, err3 := strconv.ParseUint(f[2], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || end <= start {
		return mapping{}, false
	}
	return mapping{start: start, end: end, pgoff: off, file: strings.Join(f[5:], " ")}, true
}

// captureMeta is the header of a record capture: what the analyzer knew
// before the first record, so that a replay starts where the run did.
type captureMeta struct {
	PID         int32  `json:"pid"`
	Comm        string `json:"comm"`
	Maps        string `json:"maps"`
	Affinity    string `json:"affinity"`
	CPUNode     []int  `json:"cpu_node"`
	PageNodes   []int  `json:"page_nodes"`
	ThreadNodes []int  `json:"thread_nodes"`
	Hinting     bool   `json:"hinting"`
	THPOff      bool   `json:"thp_off"`
	PageSize    uint64 `json:"page_size"`
	// Syscalls are the syscall tracepoints opened: their ids and field
	// offsets are this kernel's, and the raw records hold them.
	Syscalls []capturedSyscall `json:"syscalls"`
}

// capturedSyscall is a syscall tracepoint as opened.
type capturedSyscall struct {
	Name       string                `json:"name"`
	Tracepoint *perfevent.Tracepoint `json:"tracepoint"`
}

// startCapture writes a capture's header for the stopped process pid.
func startCapture(w io.Writer, a *analyzer, pid int) (*perfring.CaptureWriter, error) {
	m := captureMeta{PID: int32(pid), CPUNode: a.cpuNode, PageNodes: a.pageNodes, ThreadNodes: a.threadNodes,
		Hinting: a.hinting, THPOff: !a.thp.on(), PageSize: a.pageSize}
	if maps, ok := a.kern.Maps(int32(pid)); ok {
		m.Maps = string(maps)
	}
	m.Comm, _ = a.kern.Comm(int32(pid))
	m.Affinity, _ = a.kern.Affinity(int32(pid), int32(pid))
	for _, oe := range a.syscalls {
		m.Syscalls = append(m.Syscalls, capturedSyscall{Name: oe.ev.name, Tracepoint: oe.tp})
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return perfring.NewCaptureWriter(w, b), nil
}
