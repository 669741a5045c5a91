package profile

// This file follows the system calls that decide where memory comes from and
// where threads may run, through syscall tracepoints opened on the profiled
// process next to the page-fault event (inherited the same way, and writing
// into the same per-CPU rings, so that everything is handled in one time
// order):
//
//   - mmap, brk and mremap give each range of memory its allocation site: the
//     application's call that made malloc (or the program itself) ask the
//     kernel for it, found in the call chain or, when libc's missing frame
//     pointers break the chain, by scanning a copy of the user stack for the
//     innermost return address into code with line information;
//   - munmap, madvise(MADV_DONTNEED) and brk shrinking free pages, so the next
//     fault there is a new first touch, not an access;
//   - sched_setaffinity records pinning changes at the moment they happen.
//
// They need root (or kernel.perf_event_paranoid -1: raw tracepoint data) and
// tracefs; without them the profile still has everything else, polls
// affinities and says that allocation sites were not tracked.

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/sysfs"
)

// evKind says what a rawSample is. Syscall entries and exits are paired per
// thread, in time order, when the batch is handled.
type evKind uint8

const (
	evFault evKind = iota
	evExec
	evFork          // a0 the parent thread
	evMmapEnter     // a0 len, a1 flags; site
	evMmapExit      // a0 ret
	evMunmap        // a0 addr, a1 len
	evBrkEnter      // site
	evBrkExit       // a0 ret (the new break)
	evMremapEnter   // a0 addr, a1 old_len, a2 new_len
	evMremapExit    // a0 ret
	evMadvise       // a0 start, a1 len_in, a2 behavior
	evAffinityEnter // a0 pid (0: the caller); mask
	evAffinityExit  // a0 ret
)

// syscallEvent is one tracepoint the profiler opens and the fields it reads.
type syscallEvent struct {
	name   string // under syscalls/
	kind   evKind
	fields [3]string
	// stack: copy the user stack, to find the allocation site (or the
	// CPU mask passed, for sched_setaffinity).
	stack bool
	// sp: also the user stack pointer, to locate an argument in the copy.
	sp bool
}

var syscallEvents = []syscallEvent{
	{name: "sys_enter_mmap", kind: evMmapEnter, fields: [3]string{"len", "flags"}, stack: true},
	{name: "sys_exit_mmap", kind: evMmapExit, fields: [3]string{"ret"}},
	{name: "sys_enter_munmap", kind: evMunmap, fields: [3]string{"addr", "len"}},
	{name: "sys_enter_brk", kind: evBrkEnter, stack: true},
	{name: "sys_exit_brk", kind: evBrkExit, fields: [3]string{"ret"}},
	{name: "sys_enter_mremap", kind: evMremapEnter, fields: [3]string{"addr", "old_len", "new_len"}},
	{name: "sys_exit_mremap", kind: evMremapExit, fields: [3]string{"ret"}},
	{name: "sys_enter_madvise", kind: evMadvise, fields: [3]string{"start", "len_in", "behavior"}},
	{name: "sys_enter_sched_setaffinity", kind: evAffinityEnter, fields: [3]string{"pid", "len", "user_mask_ptr"}, stack: true, sp: true},
	{name: "sys_exit_sched_setaffinity", kind: evAffinityExit, fields: [3]string{"ret"}},
}

// stackCopy is how much user stack an allocating syscall's sample copies:
// enough for malloc's own frames (malloc, _int_malloc, sysmalloc) and the
// application frame above them, or for the cpu_set_t a program passes to
// sched_setaffinity from a local variable.
const stackCopy = 4096

// perfRegX86SP is PERF_REG_X86_SP (arch/x86/include/uapi/asm/perf_regs.h).
const perfRegX86SP = 7

// openedEvent maps a tracepoint id (the common_type of its raw records) to
// what it means.
type openedEvent struct {
	id uint16
	ev *syscallEvent
	tp *perfevent.Tracepoint
}

// openSyscalls opens the syscall tracepoints on pid, one per CPU ring,
// writing into that ring. It returns what it opened, or an error saying why
// none could be (the profile goes on without them).
func (ps *perfSession) openSyscalls(pid int) ([]openedEvent, error) {
	fs := sysfs.New("")
	if _, err := perfevent.MountTracefs(fs); err != nil {
		return nil, err
	}
	var opened []openedEvent
	for i := range syscallEvents {
		ev := &syscallEvents[i]
		tp, err := perfevent.ReadTracepoint(fs, "syscalls", ev.name)
		if err != nil {
			ps.closeSyscalls()
			return nil, err
		}
		for _, f := range ev.fields {
			if _, ok := tp.Fields[f]; f != "" && !ok {
				ps.closeSyscalls()
				return nil, fmt.Errorf("tracepoint syscalls:%s has no field %q", ev.name, f)
			}
		}
		attr := unix.PerfEventAttr{
			Type:        unix.PERF_TYPE_TRACEPOINT,
			Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Config:      tp.ID,
			Sample:      1,
			Sample_type: perfring.SampleType | unix.PERF_SAMPLE_RAW,
			// Not exclude_kernel: a tracepoint fires in the kernel, and
			// that would drop it. The call chain is the user one.
			Bits: unix.PerfBitExcludeHv | unix.PerfBitInherit | unix.PerfBitSampleIDAll |
				unix.PerfBitExcludeCallchainKernel | unix.PerfBitUseClockID,
			Clockid:          unix.CLOCK_MONOTONIC,
			Sample_max_stack: maxStack,
		}
		if ev.stack {
			attr.Sample_type |= unix.PERF_SAMPLE_STACK_USER
			attr.Sample_stack_user = stackCopy
		}
		if ev.sp {
			attr.Sample_type |= unix.PERF_SAMPLE_REGS_USER
			attr.Sample_regs_user = 1 << perfRegX86SP
		}
		for _, r := range ps.rings {
			fd, err := unix.PerfEventOpen(&attr, pid, r.CPU, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				ps.closeSyscalls()
				return nil, fmt.Errorf("perf_event_open(syscalls:%s): %w", ev.name, err)
			}
			ps.extra = append(ps.extra, fd)
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.FD); err != nil {
				ps.closeSyscalls()
				return nil, fmt.Errorf("redirecting syscalls:%s into the page-fault ring: %w", ev.name, err)
			}
		}
		opened = append(opened, openedEvent{id: uint16(tp.ID), ev: ev, tp: tp})
	}
	return opened, nil
}

func (ps *perfSession) closeSyscalls() {
	for _, fd := range ps.extra {
		unix.Close(fd)
	}
	ps.extra = nil
}

// syscallSample turns a tracepoint sample into a rawSample for the batch.
func (a *analyzer) syscallSample(s *perfring.Sample) {
	if len(s.Raw) < 2 {
		return
	}
	id := uint16(s.Raw[0]) | uint16(s.Raw[1])<<8
	var oe *openedEvent
	for i := range a.syscalls {
		if a.syscalls[i].id == id {
			oe = &a.syscalls[i]
			break
		}
	}
	if oe == nil {
		return
	}
	r := rawSample{kind: oe.ev.kind, time: s.Time, pid: s.PID, tid: s.TID, cpu: s.CPU}
	args := [3]*uint64{&r.a0, &r.a1, &r.a2}
	for i, f := range oe.ev.fields {
		if f != "" {
			*args[i], _ = oe.tp.Uint(s.Raw, f)
		}
	}
	var regs, stack []byte
	if oe.ev.stack {
		nregs := 0
		if oe.ev.sp {
			nregs = 1
		}
		regs, stack, _ = perfring.UserStack(s.Rest, nregs)
	}
	switch oe.ev.kind {
	case evMmapEnter, evBrkEnter:
		r.site = a.siteOf(s, stack, oe.ev.kind, r.a1)
	case evAffinityEnter:
		// The mask as it was at the call, when it lies in the stack copy
		// (a local cpu_set_t): reading it later could see a newer one.
		if len(regs) == 8 && r.a1 > 0 && r.a1 <= 1024 {
			sp := binary.LittleEndian.Uint64(regs)
			if r.a2 >= sp && r.a2-sp+r.a1 <= uint64(len(stack)) {
				r.mask = a.batch.addMask(stack[r.a2-sp : r.a2-sp+r.a1])
			}
		}
	}
	a.batch.add(r)
}

// sysPending is a syscall entry waiting for its exit.
type sysPending struct {
	kind       evKind
	a0, a1, a2 uint64
	site       uint32
	mask       []byte
}

// syscallTracker pairs each thread's syscall entry with its exit and keeps
// each process's program break, and so tells what each syscall did once it
// returned: the changes it made to the process's memory (memChange), which
// the analyzer hands to every tracker of memory, or the affinity it set (a
// threadChange, for the thread tracker). It calls no other part of the
// profiler.
type syscallTracker struct {
	pend map[int32]sysPending // by thread: an entry waiting for its exit
	brk  map[int32]uint64     // each process's program break, once seen
	// pageMask is the base page size less one.
	pageMask uint64
}

func newSyscallTracker(pageSize uint64) syscallTracker {
	return syscallTracker{pend: map[int32]sysPending{}, brk: map[int32]uint64{}, pageMask: pageSize - 1}
}

// memOp is what a memChange does.
type memOp uint8

const (
	// memFree: the pages of [start, end) were given back (madvise
	// MADV_DONTNEED or MADV_REMOVE): their next fault is a first touch.
	memFree memOp = iota + 1
	// memUnmap: the range [start, end) is gone (munmap, brk shrinking,
	// MAP_FIXED over it): its pages, allocation site and mapping too.
	memUnmap
	// memMap: the range [start, end) was mapped by a call at site (mmap,
	// brk growing).
	memMap
	// memRemap: mremap moved the range [from, fromEnd) to [start, end),
	// its pages with what is known of them, its allocation site with it;
	// when it shrank in place, [tail, tailEnd) was unmapped.
	memRemap
)

// memChange is a change a system call made to a process's memory. Each
// tracker of memory (pages, allocation sites, mappings) applies it to
// itself; none depends on another's answer.
type memChange struct {
	op         memOp
	pid        int32
	site       uint32
	start, end uint64
	// from, fromEnd and tail, tailEnd are memRemap's (see there); the tail
	// is empty unless the range shrank in place.
	from, fromEnd uint64
	tail, tailEnd uint64
}

// sysEffect is what a syscall event did: nothing (an entry, or a call that
// failed), up to two changes of memory, in order, or an affinity set.
type sysEffect struct {
	mem [2]memChange
	n   int // changes in mem
	// thread is the affinity set (op threadAffinity), if one was.
	thread threadChange
}

// addMem appends a change; one that frees nothing is dropped.
func (e *sysEffect) addMem(c memChange, ok bool) {
	if ok {
		e.mem[e.n] = c
		e.n++
	}
}

// event takes one syscall event, in time order with the faults, and says
// what the call did. mask is the CPU mask the event carries, if any.
func (st *syscallTracker) event(s *rawSample, mask []byte) (e sysEffect) {
	switch s.kind {
	case evMmapEnter, evBrkEnter, evMremapEnter, evAffinityEnter:
		st.pend[s.tid] = sysPending{kind: s.kind, a0: s.a0, a1: s.a1, a2: s.a2, site: s.site, mask: mask}
		return e
	case evMunmap:
		e.addMem(st.freeing(memUnmap, s.pid, s.a0, s.a0+s.a1))
		return e
	case evMadvise:
		// MADV_DONTNEED and MADV_REMOVE drop the pages at once: the next
		// touch faults in a new page. (MADV_FREE pages may survive.)
		if s.a2 == unix.MADV_DONTNEED || s.a2 == unix.MADV_REMOVE {
			e.addMem(st.freeing(memFree, s.pid, s.a0, s.a0+s.a1))
		}
		return e
	}
	p, ok := st.pend[s.tid]
	delete(st.pend, s.tid)
	failed := int64(s.a0) < 0 && int64(s.a0) > -4096
	switch s.kind {
	case evMmapExit:
		if !ok || p.kind != evMmapEnter || failed || p.a0 == 0 {
			return e
		}
		if p.a1&unix.MAP_FIXED != 0 {
			e.addMem(st.freeing(memUnmap, s.pid, s.a0, s.a0+p.a0))
		}
		e.addMem(memChange{op: memMap, pid: s.pid, start: s.a0, end: s.a0 + p.a0, site: p.site}, true)
	case evBrkExit:
		if !ok || p.kind != evBrkEnter {
			return e
		}
		old, known := st.brk[s.pid]
		st.brk[s.pid] = s.a0
		switch {
		case !known || s.a0 == old:
		case s.a0 > old:
			e.addMem(memChange{op: memMap, pid: s.pid, start: old, end: s.a0, site: p.site}, true)
		default:
			e.addMem(st.freeing(memUnmap, s.pid, s.a0, old))
		}
	case evMremapExit:
		if !ok || p.kind != evMremapEnter || failed {
			return e
		}
		old, oldLen, addr, newLen := p.a0, p.a1, s.a0, p.a2
		c := memChange{op: memRemap, pid: s.pid, from: old, fromEnd: old + oldLen, start: addr, end: addr + newLen}
		if addr == old && newLen < oldLen {
			if t, ok := st.freeing(memUnmap, s.pid, old+newLen, old+oldLen); ok {
				c.tail, c.tailEnd = t.start, t.end
			}
		}
		e.addMem(c, true)
	case evAffinityExit:
		if !ok || p.kind != evAffinityEnter || s.a0 != 0 {
			return e
		}
		e.thread = threadChange{op: threadAffinity, tid: int32(p.a0), mask: p.mask, at: s.time}
		if e.thread.tid == 0 {
			e.thread.tid = s.tid
		}
	}
	return e
}

// freeing is the change that gives back the pages of [start, end) of pid
// (op memFree or memUnmap): whole pages, from the one start is in. ok is
// false when that leaves nothing.
func (st *syscallTracker) freeing(op memOp, pid int32, start, end uint64) (c memChange, ok bool) {
	start &^= st.pageMask
	return memChange{op: op, pid: pid, start: start, end: end}, end > start
}

// forget drops what is known of a process's break (it exec'd).
func (st *syscallTracker) forget(pid int32) { delete(st.brk, pid) }
