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
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
	a, pr, err := setUp(opt, args)
	if err != nil {
		return nil, err
	}
	defer pr.kern.Close()
	p := pr.p

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

	err = startStopped(cmd, func(pid int) error { return pr.attach(opt, a, pid, args[0]) })
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Wait()
		}
		return nil, err
	}
	ps, capture := pr.ps, pr.capture
	defer ps.close()
	started := monotonicNs()

	consumers := opt.Consumers
	if consumers <= 0 {
		consumers = defaultConsumers(len(pr.cpus))
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
	if p.NUMABalancing && len(p.Nodes) > 1 && p.Totals.Accesses() == 0 {
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
