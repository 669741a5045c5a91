package profile

// This file holds the perf sampling session: one PERF_COUNT_SW_PAGE_FAULTS
// event per CPU on the profiled process (inherited by its threads and
// children), each with its own mmap'd ring buffer (read and decoded by
// package perfring).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

// maxStack bounds the user call chain of a syscall sample
// (sample_max_stack), where the allocation site is looked for.
const maxStack = 16

// faultStack bounds a page fault's: the context marker, the faulting
// instruction and its caller, all that is used (the kernel walks the user
// stack for every entry, in the faulting thread, so each one costs).
const faultStack = 3

// DefaultStackCopy is how many bytes of the user stack, from the stack
// pointer up, each page-fault sample carries (PERF_SAMPLE_STACK_USER) unless
// Options.StackCopy says otherwise. When the fault is in code without line
// information (libc's memset, memcpy), the application's call into it is
// found there: a leaf routine keeps its return address at [SP], and the
// call chain cannot see it, because the frame-pointer walk starts from the
// caller's frame (and Debian's libc keeps no frame pointers). 64 bytes
// cover leaf routines that push a few registers. Reaching through libc's
// own frames takes more (calloc's first touches inside _int_malloc: 97 %
// found with 256 bytes, 4 % with 128), but every byte is copied on every
// fault and takes ring space: a sample grows from 80 bytes to 160 with 64
// bytes, 352 with 256, and a 4-node VM under a fast NUMA balancing scanner
// lost a third of its samples with 256.
const DefaultStackCopy = 64

// MaxStackCopy bounds Options.StackCopy (the kernel caps a sample at 64 KiB).
const MaxStackCopy = 8192

// Ring sizes. A ring absorbs a burst of faults while the consumer is off
// CPU: at 160 bytes a page-fault sample (with the default stack copy), 4 MiB
// hold some 26,000 faults. The rings share ringBudget, so that a machine of
// few CPUs (where the faulting threads and the consumer compete for them)
// gets deep rings, and one of hundreds does not lock gigabytes: each CPU's
// ring is ringBudget over the CPUs, a power of two from minRingBytes to
// maxRingBytes (2 CPUs: 32 MiB each; 16: 8 MiB; 64: 2 MiB; 256 and more:
// 512 KiB).
const (
	ringBudget   = 128 << 20
	maxRingBytes = 32 << 20
	minRingBytes = 512 << 10
)

// MaxRingBytes bounds Options.RingBytes.
const MaxRingBytes = 1 << 30

// ringPagesFor is the size of each CPU's data area in pages, for ncpu
// rings of pageSize pages: bytes rounded down to a power of two pages, or,
// for 0, the share of ringBudget above.
func ringPagesFor(ncpu, pageSize, bytes int) int {
	b := bytes
	if b <= 0 {
		b = min(max(ringBudget/max(ncpu, 1), minRingBytes), maxRingBytes)
	}
	n := 1
	for n*2*pageSize <= b {
		n *= 2
	}
	return n
}

// minRingPages is the smallest ring tried when the locked-memory limit
// refuses a larger one.
const minRingPages = 8

// perfSession is the set of rings of one profiled process.
type perfSession struct {
	rings []*perfring.Ring
	// extra are the syscall tracepoints that write into the rings.
	extra []int
}

// openPerf opens the page-fault sampling event on pid, one per CPU in cpus.
// The event is inherited by the threads and processes pid creates after this
// call, so pid must not have started yet (see startStopped).
func openPerf(pid int, cpus []int, stackCopy, ringBytes int) (*perfSession, error) {
	pg := os.Getpagesize()
	ringPages := max(ringPagesFor(len(cpus), pg, ringBytes), minRingPages)
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      unix.PERF_COUNT_SW_PAGE_FAULTS,
		Sample:      1, // sample_period: every fault
		Sample_type: perfring.SampleType,
		Bits: unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitInherit |
			unix.PerfBitMmap | unix.PerfBitComm | unix.PerfBitTask | unix.PerfBitSampleIDAll |
			unix.PerfBitMmap2 | unix.PerfBitExcludeCallchainKernel | unix.PerfBitWatermark | unix.PerfBitUseClockID,
		Wakeup:           uint32(ringPages * pg / 4), // wakeup_watermark, in bytes (the kernel caps it at a smaller ring's size)
		Sample_max_stack: faultStack,
		// CLOCK_MONOTONIC: sample times compare with numascope's own clock
		// (binding log times); events that share a ring must agree on it.
		Clockid: unix.CLOCK_MONOTONIC,
	}
	if stackCopy > 0 {
		attr.Sample_type |= unix.PERF_SAMPLE_STACK_USER
		attr.Sample_stack_user = uint32(stackCopy)
	}
	rings, err := perfring.Open(&attr, pid, cpus, ringPages, minRingPages)
	var oe *perfring.OpenError
	if errors.As(err, &oe) && !oe.Map {
		return nil, fmt.Errorf("perf_event_open(page-faults, pid %d, cpu %d): %w (needs root or kernel.perf_event_paranoid <= 1)", pid, oe.CPU, oe.Err)
	}
	if err != nil {
		return nil, err
	}
	ps := &perfSession{rings: rings}
	return ps, nil
}

func (ps *perfSession) close() {
	ps.closeSyscalls()
	for _, r := range ps.rings {
		r.Close()
	}
	ps.rings = nil
}

// faults reads how many page faults the events counted, the exited threads
// and processes they followed included (the kernel adds an inherited
// event's count to its parent's when the thread exits). With a sample
// period of 1, and software events never throttled on their first overflow,
// each was a sample: those that never reached numascope were dropped, even
// when no PERF_RECORD_LOST says so (the kernel writes that record only once
// there is room again, which a ring full at the program's end never has).
func (ps *perfSession) faults() (uint64, error) {
	var n uint64
	var b [8]byte
	for _, r := range ps.rings {
		if k, err := unix.Read(r.FD, b[:]); err != nil || k != len(b) {
			return 0, fmt.Errorf("reading the page-fault count of cpu %d: %d bytes, %v", r.CPU, k, err)
		}
		n += binary.LittleEndian.Uint64(b[:])
	}
	return n, nil
}

// wait blocks until a ring passes its watermark or timeoutMs pass.
func (ps *perfSession) wait(timeoutMs int, pfds []unix.PollFd) []unix.PollFd {
	pfds = pfds[:0]
	for _, r := range ps.rings {
		pfds = append(pfds, unix.PollFd{Fd: int32(r.FD), Events: unix.POLLIN})
	}
	_, _ = unix.Poll(pfds, timeoutMs)
	return pfds
}

// hungUp says whether poll reported every ring hung up: the tasks its event
// followed, the profiled program and everything it started, have exited.
func hungUp(pfds []unix.PollFd) bool {
	for _, p := range pfds {
		if p.Revents&unix.POLLHUP == 0 {
			return false
		}
	}
	return len(pfds) > 0
}

// drain hands every complete record of every ring to fn, then releases the
// space. The record is only valid during the call.
func (ps *perfSession) drain(fn func(rec *perfring.Record)) {
	for _, r := range ps.rings {
		r.Drain(fn)
	}
}

// stats is the profiler's account of a run that took startNs to start and
// afterNs after the program's exit. The rings' readers must be idle.
func (ps *perfSession) stats(startNs, afterNs uint64) *ProfilerStats {
	st := &ProfilerStats{StartS: float64(startNs) / 1e9, AfterExitS: float64(afterNs) / 1e9, Rings: make([]RingStats, 0, len(ps.rings))}
	for _, r := range ps.rings {
		s := r.Stats()
		st.Rings = append(st.Rings, RingStats{CPU: r.CPU, Size: r.Size(), Records: s.Records, Lost: s.Lost, HighWater: s.HighWater, Drains: s.Drains})
	}
	return st
}
