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
	"os"
	"os/exec"
	"sort"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/profile/perfring"
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
				a.masks = append(a.masks, append([]byte(nil), stack[r.a2-sp:r.a2-sp+r.a1]...))
				r.mask = uint32(len(a.masks) - 1)
			}
		}
	}
	a.batch = append(a.batch, r)
}

// sysPending is a syscall entry waiting for its exit.
type sysPending struct {
	kind       evKind
	a0, a1, a2 uint64
	site       uint32
	mask       []byte
}

// allocRange is a range of a process's memory and its allocation site.
type allocRange struct {
	start, end uint64
	site       uint32
}

// allocSite is where memory was asked for, before symbolization.
type allocSite struct {
	pid  int32
	kind string // "mmap", "stack" (mmap with MAP_STACK) or "heap"
	// ip is the return address into the application's code (app true), or
	// the syscall's own address when no application frame was found.
	ip           uint64
	app          bool
	calls, bytes uint64
	metrics      Metrics
}

type siteKey struct {
	pid  int32
	kind string
	ip   uint64
}

// siteOf finds the allocation site of an allocating syscall: the first
// address of its call chain, then of its stack copy, that is a return
// address into code with line information (the application's, since libc
// has none). flags are mmap's: MAP_STACK marks a thread's stack (glibc's
// pthread_create maps each one so). The result is an index into a.sites
// (never 0).
func (a *analyzer) siteOf(s *perfring.Sample, stack []byte, kind evKind, flags uint64) uint32 {
	k := siteKey{pid: s.PID, kind: "mmap"}
	switch {
	case kind == evBrkEnter:
		k.kind = "heap"
	case flags&unix.MAP_STACK != 0:
		k.kind = "stack"
	}
	leaf := uint64(0)
	app := false
	for i := 0; i < s.Chain.Len() && !app; i++ {
		ip := s.Chain.At(i)
		if perfring.IsContext(ip) {
			continue
		}
		if leaf == 0 {
			leaf = ip
			continue
		}
		app = a.isAppReturn(s.PID, ip)
		k.ip = ip
	}
	if !app {
		if ip, ok := a.appReturnIn(s.PID, stack); ok {
			app, k.ip = true, ip
		}
	}
	if !app {
		k.ip = leaf
	}
	if i, ok := a.siteIdx[k]; ok {
		return i
	}
	a.sites = append(a.sites, allocSite{pid: k.pid, kind: k.kind, ip: k.ip, app: app})
	i := uint32(len(a.sites) - 1)
	a.siteIdx[k] = i
	return i
}

// appReturnIn returns the first word of a copy of the user stack that is a
// return address into code with line information (see isAppReturn): the
// application's call that led to a syscall or a fault inside libc.
func (a *analyzer) appReturnIn(pid int32, stack []byte) (uint64, bool) {
	for off := 0; off+8 <= len(stack); off += 8 {
		if ip := binary.LittleEndian.Uint64(stack[off:]); a.isAppReturn(pid, ip) {
			return ip, true
		}
	}
	return 0, false
}

// isAppReturn says whether ip is a return address into code with line
// information: it lies in an executable mapping, right after a call
// instruction, and the call's line is known. Answers are cached per address.
func (a *analyzer) isAppReturn(pid int32, ip uint64) bool {
	if ip < 4096 || perfring.IsContext(ip) {
		return false
	}
	key := pageKey{pid, ip}
	if v, ok := a.appRet[key]; ok {
		return v
	}
	v := false
	if fr, ok := a.resolve(a.sym, pid, ip-1); ok && fr.Line > 0 {
		v = a.afterCall(pid, ip)
	}
	if len(a.appRet) < 1<<16 {
		a.appRet[key] = v
	}
	return v
}

// afterCall checks the bytes before ip for an x86-64 call instruction:
// call rel32 (E8), call [rip+disp32] (FF 15), call through a register, with
// or without a REX prefix (FF D0+r), or through memory with a displacement
// (FF 50+r disp8, FF 90+r disp32). A stack word that passes is very likely a
// saved return address, not data that happens to point into code.
func (a *analyzer) afterCall(pid int32, ip uint64) bool {
	var b [7]byte
	if !a.readCode(pid, ip-uint64(len(b)), b[:]) {
		return false
	}
	at := func(back int) byte { return b[len(b)-back] }
	switch {
	case at(5) == 0xe8:
	case at(6) == 0xff && at(5) == 0x15:
	case at(2) == 0xff && at(1)&0xf8 == 0xd0:
	case at(3) == 0xff && at(2)&0xf8 == 0x50:
	case at(6) == 0xff && at(5)&0xf8 == 0x90:
	case at(3) == 0xff && at(2) == 0x14 && at(1) == 0x24: // call [rsp]
	default:
		return false
	}
	return true
}

// readCode reads code bytes at a run-time address from the mapped file.
func (a *analyzer) readCode(pid int32, addr uint64, b []byte) bool {
	for range 64 {
		for _, m := range a.maps[pid] {
			if addr >= m.start && addr+uint64(len(b)) <= m.end {
				return a.sym.readAt(m.file, b, addr-m.start+m.pgoff)
			}
		}
		pp, ok := a.parent[pid]
		if !ok {
			return false
		}
		pid = pp
	}
	return false
}

// handleSyscall applies one syscall event, in time order with the faults.
func (a *analyzer) handleSyscall(s *rawSample) {
	switch s.kind {
	case evMmapEnter, evBrkEnter, evMremapEnter, evAffinityEnter:
		a.sysPend[s.tid] = sysPending{kind: s.kind, a0: s.a0, a1: s.a1, a2: s.a2, site: s.site, mask: a.masks[s.mask]}
		return
	case evMunmap:
		a.freeRange(s.pid, s.a0, s.a0+s.a1, true)
		return
	case evMadvise:
		// MADV_DONTNEED and MADV_REMOVE drop the pages at once: the next
		// touch faults in a new page. (MADV_FREE pages may survive.)
		if s.a2 == unix.MADV_DONTNEED || s.a2 == unix.MADV_REMOVE {
			a.freeRange(s.pid, s.a0, s.a0+s.a1, false)
		}
		return
	}
	p, ok := a.sysPend[s.tid]
	delete(a.sysPend, s.tid)
	failed := int64(s.a0) < 0 && int64(s.a0) > -4096
	switch s.kind {
	case evMmapExit:
		if !ok || p.kind != evMmapEnter || failed || p.a0 == 0 {
			return
		}
		if p.a1&unix.MAP_FIXED != 0 {
			a.freeRange(s.pid, s.a0, s.a0+p.a0, true)
		}
		a.addAlloc(s.pid, s.a0, s.a0+p.a0, p.site)
	case evBrkExit:
		if !ok || p.kind != evBrkEnter {
			return
		}
		old, known := a.brk[s.pid]
		a.brk[s.pid] = s.a0
		switch {
		case !known || s.a0 == old:
		case s.a0 > old:
			a.addAlloc(s.pid, old, s.a0, p.site)
		default:
			a.freeRange(s.pid, s.a0, old, true)
		}
	case evMremapExit:
		if !ok || p.kind != evMremapEnter || failed {
			return
		}
		a.remap(s.pid, p.a0, p.a1, s.a0, p.a2)
	case evAffinityExit:
		if !ok || p.kind != evAffinityEnter || s.a0 != 0 {
			return
		}
		target := int32(p.a0)
		if target == 0 {
			target = s.tid
		}
		t, ok := a.threads[target]
		if !ok {
			return
		}
		if p.mask == nil {
			a.readAffinity(t, "sched_setaffinity", s.time)
			return
		}
		// The kernel keeps only the online CPUs of the mask (and those of
		// the thread's cpuset, which a later poll would show).
		var cpus []int
		for c := range len(p.mask) * 8 {
			if p.mask[c/8]&(1<<(c%8)) != 0 && c < len(a.cpuNode) && a.cpuNode[c] >= 0 {
				cpus = append(cpus, c)
			}
		}
		if len(cpus) > 0 {
			a.setAffinity(t, sysfs.FormatCPUList(cpus), cpus, "sched_setaffinity", s.time)
		}
	}
}

// addAlloc records that [start, end) of pid comes from site.
func (a *analyzer) addAlloc(pid int32, start, end uint64, site uint32) {
	if end <= start {
		return
	}
	st := &a.sites[site]
	st.calls++
	st.bytes += end - start
	a.placeAlloc(pid, start, end, site)
}

// placeAlloc makes [start, end) of pid belong to site, replacing what was
// there.
func (a *analyzer) placeAlloc(pid int32, start, end uint64, site uint32) {
	a.cutAlloc(pid, start, end)
	rs := a.allocs[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].start >= start })
	rs = append(rs, allocRange{})
	copy(rs[i+1:], rs[i:])
	rs[i] = allocRange{start: start, end: end, site: site}
	a.allocs[pid] = rs
}

// cutAlloc removes [start, end) from pid's allocation ranges.
func (a *analyzer) cutAlloc(pid int32, start, end uint64) {
	rs := a.allocs[pid]
	out := rs[:0:0]
	for _, r := range rs {
		if r.end <= start || r.start >= end {
			out = append(out, r)
			continue
		}
		if r.start < start {
			out = append(out, allocRange{start: r.start, end: start, site: r.site})
		}
		if r.end > end {
			out = append(out, allocRange{start: end, end: r.end, site: r.site})
		}
	}
	a.allocs[pid] = out
}

// siteAt returns the allocation site of addr in pid (0: none known), looking
// in the parent of a forked child that has not replaced the memory.
func (a *analyzer) siteAt(pid int32, addr uint64) uint32 {
	for range 64 {
		rs := a.allocs[pid]
		i := sort.Search(len(rs), func(i int) bool { return rs[i].end > addr })
		if i < len(rs) && rs[i].start <= addr {
			return rs[i].site
		}
		pp, ok := a.parent[pid]
		if !ok {
			return 0
		}
		pid = pp
	}
	return 0
}

// freeRange forgets what is known of the pages of [start, end): they were
// given back to the kernel, so their next fault is a first touch again.
// unmapped also drops the range's allocation site and mapping.
func (a *analyzer) freeRange(pid int32, start, end uint64, unmapped bool) {
	start &^= a.pageSize - 1
	if end <= start {
		return
	}
	a.pg.free(pid, start, end, a.pageSize, nil)
	if unmapped {
		a.cutAlloc(pid, start, end)
		rs := a.regions[pid][:0:0]
		for _, r := range a.regions[pid] {
			if r.end <= start || r.start >= end {
				rs = append(rs, r)
			}
		}
		a.regions[pid] = rs
	}
}

// remap follows mremap: the pages of [old, old+oldLen) now live at
// [addr, addr+newLen) with the same allocation site, and keep what is known
// of them (they were moved, not touched).
func (a *analyzer) remap(pid int32, old, oldLen, addr, newLen uint64) {
	site := a.siteAt(pid, old)
	if addr != old {
		moved := map[uint64]pageState{}
		a.pg.free(pid, old&^(a.pageSize-1), old+oldLen, a.pageSize, moved)
		a.cutAlloc(pid, old, old+oldLen)
		for p, ps := range moved {
			a.pg.set(pageKey{pid, p - old + addr}, ps)
		}
	} else if newLen < oldLen {
		a.freeRange(pid, old+newLen, old+oldLen, true)
	}
	if site != 0 {
		a.placeAlloc(pid, addr, addr+newLen, site)
	} else {
		a.cutAlloc(pid, addr, addr+newLen)
	}
}

// Allocation is an allocation site: the application line whose call made
// the kernel hand out memory (mmap, or heap growth through brk), with the
// metrics of the pages it handed out.
type Allocation struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	// Kind is "mmap" (anonymous or file mmap: malloc's large blocks,
	// explicit mmaps), "stack" (an mmap with MAP_STACK: a thread's stack,
	// at the pthread_create) or "heap" (brk growth: malloc's main arena).
	Kind string `json:"kind"`
	// Calls and Bytes count the system calls and the memory they mapped.
	Calls   uint64  `json:"calls"`
	Bytes   uint64  `json:"bytes"`
	Metrics Metrics `json:"metrics"`
}

// allocations symbolizes the sites and merges those on the same line.
func (a *analyzer) allocations() []Allocation {
	type key struct {
		Frame
		kind string
	}
	agg := map[key]*Allocation{}
	var order []key
	for i := 1; i < len(a.sites); i++ {
		st := &a.sites[i]
		if st.calls == 0 && st.metrics == (Metrics{}) {
			continue
		}
		var fr Frame
		ok := false
		if st.app {
			fr, ok = a.resolve(a.sym, st.pid, st.ip-1)
		} else {
			fr, ok = a.resolve(a.sym, st.pid, st.ip)
		}
		if !ok || (fr.Function == "" && fr.Line == 0) {
			fr = Frame{Function: "[unknown]"}
		}
		k := key{fr, st.kind}
		al := agg[k]
		if al == nil {
			al = &Allocation{Function: fr.Function, File: fr.File, Line: fr.Line, Kind: st.kind}
			agg[k] = al
			order = append(order, k)
		}
		al.Calls += st.calls
		al.Bytes += st.bytes
		al.Metrics.add(&st.metrics)
	}
	out := make([]Allocation, 0, len(order))
	for _, k := range order {
		out = append(out, *agg[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		x, y := &out[i], &out[j]
		if kx, ky := x.Metrics.FirstTouch+x.Metrics.Accesses(), y.Metrics.FirstTouch+y.Metrics.Accesses(); kx != ky {
			return kx > ky
		}
		return x.Bytes > y.Bytes
	})
	return out
}

// readAt reads code bytes from a mapped file, keeping the file open.
func (s *symbolizer) readAt(path string, b []byte, off uint64) bool {
	f, ok := s.files[path]
	if !ok {
		var err error
		if f, err = os.Open(path); err != nil {
			f = nil
		}
		s.files[path] = f
	}
	if f == nil {
		return false
	}
	n, err := f.ReadAt(b, int64(off))
	return err == nil && n == len(b)
}

func (s *symbolizer) close() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	s.files = map[string]*os.File{}
}

// CloserArg, as a program's only argument, makes numascope close the
// inherited file descriptors from 3 on and exit (see RunCloser).
const CloserArg = "__numascope-close-perf-events"

// closeSyscallsVia closes the syscall tracepoint events through a
// background process when closer (a numascope executable) is given:
// closing the last reference to a tracepoint's event unregisters the probe
// and waits for an RCU grace period, some 30 ms per tracepoint, a third of a
// second in all, paid by whoever closes last. A process started for that
// alone (in its own session, without our stdio) pays it after numascope has
// exited; numascope only drops its own references, which is quick. Without
// closer, or if it cannot start, they are closed here.
func (ps *perfSession) closeSyscallsVia(closer string) {
	if closer == "" || len(ps.extra) == 0 {
		ps.closeSyscalls()
		return
	}
	files := make([]*os.File, len(ps.extra))
	for i, fd := range ps.extra {
		files[i] = os.NewFile(uintptr(fd), "perf-tracepoint")
	}
	cmd := exec.Command(closer, CloserArg)
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err := cmd.Start()
	for _, f := range files {
		f.Close() // ours: the last reference is the closer's, or this one if it did not start
	}
	ps.extra = nil
	if err == nil {
		go func() { _ = cmd.Wait() }() // reaped if numascope is still running
	}
}

// RunCloser is the background closer's whole life: close the perf events
// it inherited from numascope profile, then exit.
func RunCloser() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 1
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == "anon_inode:[perf_event]" {
			unix.Close(fd)
		}
	}
	return 0
}
