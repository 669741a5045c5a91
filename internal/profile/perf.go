package profile

// This file holds the perf sampling session: one PERF_COUNT_SW_PAGE_FAULTS
// event per CPU on the profiled process (inherited by its threads and
// children), each with its own mmap'd ring buffer, and a reader that decodes
// the records in place.

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sampleType is what every sample carries. Its order in a record is fixed by
// the kernel: IP, TID (pid, tid), TIME, ADDR, CPU (cpu, reserved),
// CALLCHAIN (nr, ips).
const sampleType = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME |
	unix.PERF_SAMPLE_ADDR | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_CALLCHAIN

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

// CheckStackCopy says whether n bytes is a stack copy numascope asks the
// kernel for: a multiple of 8 from 0 (none) to MaxStackCopy.
func CheckStackCopy(n int) error {
	if n < 0 || n > MaxStackCopy || n%8 != 0 {
		return fmt.Errorf("%d bytes: give a multiple of 8 from 0 (none) to %d", n, MaxStackCopy)
	}
	return nil
}

// sampleIDSize is the size of the sample_id trailer of non-sample records
// (sample_id_all): pid, tid, time, cpu, reserved.
const sampleIDSize = 24

// ringPages is the size of each CPU's data area in pages (a power of two).
// At 160 bytes a page-fault sample (with the default stack copy), 4 MiB
// hold some 26,000 page faults: a 100 MiB first touch between two drains.
const ringPages = 1024

// minRingPages is the smallest ring tried when the locked-memory limit
// refuses ringPages.
const minRingPages = 8

// Offsets in struct perf_event_mmap_page (include/uapi/linux/perf_event.h).
const (
	offDataHead = 1024
	offDataTail = 1032
)

// contextMax: call-chain entries at or above it are context markers
// (PERF_CONTEXT_USER and friends), not addresses.
const contextMax = ^uint64(4095)

// ring is one CPU's event and its mapped buffer.
type ring struct {
	fd   int
	cpu  int
	mem  []byte // metadata page + data
	data []byte
	// scratch holds a record that wraps around the end of data.
	scratch []byte
}

func (r *ring) head() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.mem[offDataHead])))
}

func (r *ring) tail() uint64 {
	return *(*uint64)(unsafe.Pointer(&r.mem[offDataTail]))
}

func (r *ring) setTail(v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&r.mem[offDataTail])), v)
}

// perfSession is the set of rings of one profiled process.
type perfSession struct {
	rings []*ring
	// extra are the syscall tracepoints that write into the rings.
	extra []int
}

// openPerf opens the page-fault sampling event on pid, one per CPU in cpus.
// The event is inherited by the threads and processes pid creates after this
// call, so pid must not have started yet (see startStopped).
func openPerf(pid int, cpus []int, stackCopy int) (*perfSession, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      unix.PERF_COUNT_SW_PAGE_FAULTS,
		Sample:      1, // sample_period: every fault
		Sample_type: sampleType,
		Bits: unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitInherit |
			unix.PerfBitMmap | unix.PerfBitComm | unix.PerfBitTask | unix.PerfBitSampleIDAll |
			unix.PerfBitMmap2 | unix.PerfBitExcludeCallchainKernel | unix.PerfBitWatermark | unix.PerfBitUseClockID,
		Wakeup:           ringPages * uint32(os.Getpagesize()) / 4, // wakeup_watermark, in bytes (the kernel caps it at a smaller ring's size)
		Sample_max_stack: faultStack,
		// CLOCK_MONOTONIC: sample times compare with numascope's own clock
		// (binding log times); events that share a ring must agree on it.
		Clockid: unix.CLOCK_MONOTONIC,
	}
	if stackCopy > 0 {
		attr.Sample_type |= unix.PERF_SAMPLE_STACK_USER
		attr.Sample_stack_user = uint32(stackCopy)
	}
	ps := &perfSession{}
	pg := os.Getpagesize()
	for _, cpu := range cpus {
		fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			ps.close()
			return nil, fmt.Errorf("perf_event_open(page-faults, pid %d, cpu %d): %w (needs root or kernel.perf_event_paranoid <= 1)", pid, cpu, err)
		}
		// Without CAP_IPC_LOCK the kernel caps the locked ring memory
		// (kernel.perf_event_mlock_kb per CPU): halve until it fits.
		var mem []byte
		for n := ringPages; n >= minRingPages; n /= 2 {
			if mem, err = unix.Mmap(fd, 0, (1+n)*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil ||
				(err != unix.EPERM && err != unix.ENOMEM) {
				break
			}
		}
		if err != nil {
			unix.Close(fd)
			ps.close()
			return nil, fmt.Errorf("mmap of the perf ring buffer of cpu %d: %w (raise the locked-memory limit or kernel.perf_event_mlock_kb)", cpu, err)
		}
		ps.rings = append(ps.rings, &ring{fd: fd, cpu: cpu, mem: mem, data: mem[pg:], scratch: make([]byte, 0, 1024)})
	}
	return ps, nil
}

func (ps *perfSession) close() {
	ps.closeSyscalls()
	for _, r := range ps.rings {
		unix.Munmap(r.mem)
		unix.Close(r.fd)
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
		if k, err := unix.Read(r.fd, b[:]); err != nil || k != len(b) {
			return 0, fmt.Errorf("reading the page-fault count of cpu %d: %d bytes, %v", r.cpu, k, err)
		}
		n += binary.LittleEndian.Uint64(b[:])
	}
	return n, nil
}

// wait blocks until a ring passes its watermark or timeoutMs pass.
func (ps *perfSession) wait(timeoutMs int, pfds []unix.PollFd) []unix.PollFd {
	pfds = pfds[:0]
	for _, r := range ps.rings {
		pfds = append(pfds, unix.PollFd{Fd: int32(r.fd), Events: unix.POLLIN})
	}
	_, _ = unix.Poll(pfds, timeoutMs)
	return pfds
}

// drain hands every complete record of every ring to fn, then releases the
// space. The record slice is only valid during the call.
func (ps *perfSession) drain(fn func(rec []byte)) {
	for _, r := range ps.rings {
		r.drain(fn)
	}
}

func (r *ring) drain(fn func(rec []byte)) {
	head, tail := r.head(), r.tail()
	size := uint64(len(r.data))
	for tail+8 <= head {
		off := tail % size
		var hdr [8]byte
		for i := uint64(0); i < 8; i++ {
			hdr[i] = r.data[(off+i)%size]
		}
		n := uint64(binary.LittleEndian.Uint16(hdr[6:8]))
		if n < 8 || tail+n > head {
			break
		}
		if off+n <= size {
			fn(r.data[off : off+n])
		} else {
			first := size - off
			r.scratch = append(r.scratch[:0], r.data[off:]...)
			r.scratch = append(r.scratch, r.data[:n-first]...)
			fn(r.scratch)
		}
		tail += n
	}
	r.setTail(tail)
}

// sample is the decoded part of a PERF_RECORD_SAMPLE the profiler keeps.
type sample struct {
	ip, addr, time uint64
	pid, tid       int32
	cpu            int32
	// chain is the user call chain, leaf first, context markers included;
	// it aliases the record and is only valid while it is being handled.
	chain []byte
	// raw is a tracepoint's record (PERF_SAMPLE_RAW), nil for a page
	// fault; rest is what follows it (REGS_USER and STACK_USER, for the
	// events that ask for them: see userStack). stack is a page fault's
	// copy of the user stack from SP (STACK_USER). All alias the record.
	raw, rest, stack []byte
	// stackCut: the kernel copied less of the stack than asked (it copies
	// without faulting, and stopped at a page that was not mapped).
	stackCut bool
}

func le64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// decodeSample decodes a PERF_RECORD_SAMPLE of sampleType in place.
func decodeSample(rec []byte, s *sample) bool {
	const fixed = 8 + 8 + 8 + 8 + 8 + 8 + 8 // header ip tid time addr cpu nr
	if len(rec) < fixed {
		return false
	}
	s.ip = le64(rec, 8)
	s.pid = int32(le32(rec, 16))
	s.tid = int32(le32(rec, 20))
	s.time = le64(rec, 24)
	s.addr = le64(rec, 32)
	s.cpu = int32(le32(rec, 40))
	nr := le64(rec, 48)
	if nr > uint64(len(rec)-fixed)/8 {
		return false
	}
	s.chain = rec[fixed : fixed+int(nr)*8]
	s.raw, s.rest, s.stack, s.stackCut = nil, nil, nil, false
	rest := rec[fixed+int(nr)*8:]
	if len(rest) < 4 {
		return true
	}
	// What follows tells the two kinds of sample apart. A tracepoint's
	// goes on with RAW: a u32 size, then the data, padded so that the
	// record stays 8-byte aligned, which makes the size 4 more than a
	// multiple of 8 (the kernel's perf_prepare_sample rounds size+4 up to
	// 8). A page fault's goes on with STACK_USER: a u64 size that is a
	// multiple of 8.
	n := uint64(le32(rest, 0))
	if n%8 != 4 {
		_, stack, ok := userStack(rest, 0)
		s.stack, s.stackCut = stack, uint64(len(stack)) < n
		return ok
	}
	if n > uint64(len(rest)-4) {
		return false
	}
	s.raw, s.rest = rest[4:4+n], rest[4+n:]
	return true
}

// userStack decodes what follows RAW in a sample that asked for
// PERF_SAMPLE_REGS_USER with nregs registers (0: not asked) and
// PERF_SAMPLE_STACK_USER: the registers (nil when the kernel had no user
// registers) and the copied stack (the part it could copy).
func userStack(rest []byte, nregs int) (regs, stack []byte, ok bool) {
	if nregs > 0 {
		if len(rest) < 8 {
			return nil, nil, false
		}
		abi := le64(rest, 0)
		rest = rest[8:]
		if abi != 0 {
			if len(rest) < 8*nregs {
				return nil, nil, false
			}
			regs, rest = rest[:8*nregs], rest[8*nregs:]
		}
	}
	if len(rest) < 8 {
		return regs, nil, false
	}
	n := le64(rest, 0)
	if n > uint64(len(rest)-8) {
		return regs, nil, false
	}
	stack = rest[8 : 8+n]
	if len(rest) >= 16+int(n) {
		if dyn := le64(rest, 8+int(n)); dyn < n {
			stack = stack[:dyn]
		}
	}
	return regs, stack, true
}

// chainLen and chainAt read a sample's call chain.
func chainLen(c []byte) int            { return len(c) / 8 }
func chainAt(c []byte, i int) uint64   { return le64(c, i*8) }
func isContext(ip uint64) bool         { return ip >= contextMax }
func recordType(rec []byte) uint32     { return le32(rec, 0) }
func recordTime(rec []byte) (t uint64) { return le64(rec, len(rec)-sampleIDSize+8) }

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
