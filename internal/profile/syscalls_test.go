package profile

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/testutil"
)

// fakeSyscalls gives a the syscall events as if opened, with made-up ids
// (1000 + index in syscallEvents) and each event's fields at offsets 16, 24
// and 32, the layout of Linux's syscall tracepoints.
func fakeSyscalls(a *analyzer) {
	var evs []openedEvent
	for i := range syscallEvents {
		ev := &syscallEvents[i]
		tp := &perfevent.Tracepoint{ID: uint64(1000 + i), Fields: map[string]perfevent.TraceField{}}
		for j, f := range ev.fields {
			if f != "" {
				tp.Fields[f] = perfevent.TraceField{Offset: 16 + 8*j, Size: 8}
			}
		}
		evs = append(evs, openedEvent{id: uint16(tp.ID), ev: ev, tp: tp})
	}
	a.useSyscalls(evs)
}

// syscallRecord builds a PERF_RECORD_SAMPLE of syscall event kind with the
// given arguments, and, for events that copy the stack, sp and stack.
func syscallRecord(kind evKind, pid int32, time uint64, args [3]uint64, sp uint64, stack []byte) []byte {
	idx := -1
	for i := range syscallEvents {
		if syscallEvents[i].kind == kind {
			idx = i
		}
	}
	if idx < 0 {
		panic("no syscall event of this kind")
	}
	ev := &syscallEvents[idx]
	b := make([]byte, 8, 256)
	le := binary.LittleEndian
	b = le.AppendUint64(b, 0x401000)        // ip
	b = le.AppendUint32(b, uint32(pid))     // pid
	b = le.AppendUint32(b, uint32(pid))     // tid
	b = le.AppendUint64(b, time)            // time
	b = le.AppendUint64(b, 0)               // addr
	b = le.AppendUint64(b, 0)               // cpu, reserved
	b = le.AppendUint64(b, 2)               // chain: nr
	b = le.AppendUint64(b, ^uint64(511))    // PERF_CONTEXT_USER
	b = le.AppendUint64(b, 0x401000)        // leaf
	raw := make([]byte, 44)                 // common fields, nr, 3 arguments; 4+44 keeps the record 8-byte aligned
	le.PutUint16(raw[0:], uint16(1000+idx)) // common_type
	for j, v := range args {
		le.PutUint64(raw[16+8*j:], v)
	}
	b = le.AppendUint32(b, uint32(len(raw)))
	b = append(b, raw...)
	if ev.sp {
		b = le.AppendUint64(b, 2) // PERF_SAMPLE_REGS_ABI_64
		b = le.AppendUint64(b, sp)
	}
	if ev.stack {
		b = le.AppendUint64(b, uint64(len(stack)))
		b = append(b, stack...)
		b = le.AppendUint64(b, uint64(len(stack)))
	}
	le.PutUint32(b[0:], unix.PERF_RECORD_SAMPLE)
	le.PutUint16(b[6:], uint16(len(b)))
	return b
}

// faultRecord builds a page-fault sample with no call chain and no stack
// copy (--stack-copy 0).
func faultRecord(pid int32, time, addr uint64, cpu uint32) []byte {
	return faultRecordStack(pid, time, addr, cpu, nil, 0)
}

// faultRecordStack builds a page-fault sample whose stack copy
// (PERF_SAMPLE_STACK_USER) of asked bytes (0: none) is stack, laid out as
// the kernel does: the size asked for, that many bytes, then the size
// copied.
func faultRecordStack(pid int32, time, addr uint64, cpu uint32, stack []byte, asked int) []byte {
	le := binary.LittleEndian
	b := make([]byte, 8, 96+asked)
	b = le.AppendUint64(b, 0x401000)
	b = le.AppendUint32(b, uint32(pid))
	b = le.AppendUint32(b, uint32(pid))
	b = le.AppendUint64(b, time)
	b = le.AppendUint64(b, addr)
	b = le.AppendUint64(b, uint64(cpu))
	b = le.AppendUint64(b, 0) // no chain
	if asked > 0 {
		b = le.AppendUint64(b, uint64(asked))
		b = append(b, stack...)
		b = append(b, make([]byte, asked-len(stack))...)
		b = le.AppendUint64(b, uint64(len(stack)))
	}
	le.PutUint32(b[0:], unix.PERF_RECORD_SAMPLE)
	le.PutUint16(b[6:], uint16(len(b)))
	return b
}

// TestFaultCaller: a fault in code without lines goes to the first return
// address into code with lines in its stack copy; when the kernel could not
// copy the stack (the NUMA balancing scanner had unmapped its page), to the
// call the same thread's last fault in the same routine had; otherwise to
// nothing (no call chain here).
func TestFaultCaller(t *testing.T) {
	const pid, memset, ret = 1 << 23, 0x7f0000001000, 0x401005
	a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
	useFakeKernel(a)
	// What symbolization would say: libc's memset has no line, the word
	// ret is a return address into the application.
	a.calls.appRet[pageKey{pid, ret}] = true
	for _, ip := range []uint64{memset, memset + 64, memset + 1<<20} {
		a.calls.lineAt[pageKey{pid, ip}] = false
	}
	fault := func(tid int32, ip uint64, stack []byte) uint64 {
		r := faultRecordStack(pid, 1, 0x1000, 0, stack, DefaultStackCopy)
		binary.LittleEndian.PutUint64(r[8:], ip)
		binary.LittleEndian.PutUint32(r[20:], uint32(tid))
		a.batch.recs = a.batch.recs[:0]
		a.record(r)
		if len(a.batch.recs) != 1 {
			t.Fatalf("%d samples kept, want 1", len(a.batch.recs))
		}
		return a.batch.recs[0].caller
	}
	le := binary.LittleEndian
	words := make([]byte, DefaultStackCopy) // a whole copy: a saved register, then the return address
	le.PutUint64(words, 0x1234)
	le.PutUint64(words[8:], ret)
	for _, c := range []struct {
		what       string
		tid        int32
		ip         uint64
		stack      []byte
		wantCaller uint64
	}{
		{"return address in the stack copy", pid, memset, words, ret - 1},
		{"nothing copied, same routine", pid, memset + 64, nil, ret - 1},
		{"copy cut short, same routine", pid, memset, words[:8], ret - 1},
		{"nothing copied, another routine", pid, memset + 1<<20, nil, 0},
		{"nothing copied, another thread", pid + 1, memset, nil, 0},
	} {
		if got := fault(c.tid, c.ip, c.stack); got != c.wantCaller {
			t.Errorf("%s: caller %#x, want %#x", c.what, got, c.wantCaller)
		}
	}
}

// TestDecodeSampleKinds: a page fault's sample and a tracepoint's share a
// ring and a layout up to the call chain; what follows tells them apart
// (a STACK_USER size, a multiple of 8, or a RAW size, 4 more than one).
func TestDecodeSampleKinds(t *testing.T) {
	stack := binary.LittleEndian.AppendUint64(nil, 0x401234)
	var s perfring.Sample
	if !perfring.DecodeSample(faultRecordStack(7, 1, 0x1000, 0, stack, DefaultStackCopy), &s) {
		t.Fatal("fault sample not decoded")
	}
	if s.Raw != nil || len(s.Stack) != 8 || binary.LittleEndian.Uint64(s.Stack) != 0x401234 {
		t.Errorf("fault sample: raw %v, stack %x; want no raw and the 8 bytes copied", s.Raw, s.Stack)
	}
	if !perfring.DecodeSample(faultRecordStack(7, 1, 0x1000, 0, nil, DefaultStackCopy), &s) || s.Raw != nil || len(s.Stack) != 0 || !s.StackCut {
		t.Errorf("fault sample with nothing copied: raw %v, stack %x, cut %v", s.Raw, s.Stack, s.StackCut)
	}
	full := make([]byte, DefaultStackCopy)
	if !perfring.DecodeSample(faultRecordStack(7, 1, 0x1000, 0, full, DefaultStackCopy), &s) || len(s.Stack) != len(full) || s.StackCut {
		t.Errorf("fault sample with a whole copy: stack of %d bytes, cut %v", len(s.Stack), s.StackCut)
	}
	if !perfring.DecodeSample(faultRecord(7, 1, 0x1000, 0), &s) || s.Raw != nil || s.Stack != nil || s.StackCut {
		t.Errorf("fault sample without a stack copy (--stack-copy 0): raw %v, stack %x, cut %v", s.Raw, s.Stack, s.StackCut)
	}
	if !perfring.DecodeSample(syscallRecord(evMmapEnter, 7, 1, [3]uint64{0, 4096, 0}, 0x7f00, make([]byte, 64)), &s) {
		t.Fatal("tracepoint sample not decoded")
	}
	if len(s.Raw) != 44 || s.Stack != nil {
		t.Errorf("tracepoint sample: raw of %d bytes, stack %x; want 44 bytes and no fault stack", len(s.Raw), s.Stack)
	}
	// A record cut inside its stack copy is refused, not read past.
	r := faultRecordStack(7, 1, 0x1000, 0, stack, DefaultStackCopy)
	if perfring.DecodeSample(r[:len(r)-DefaultStackCopy], &s) {
		t.Error("a truncated stack copy was decoded")
	}
}

// syscallRig is a one-node analyzer with the syscall events as if opened,
// for process pid (made up), and records for it in time order.
type syscallRig struct {
	a   *analyzer
	now uint64
}

const rigPid = 1 << 23

func newSyscallRig(t *testing.T) *syscallRig {
	a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
	// As if this node were one of a machine with NUMA balancing on: a
	// later fault on a known page is a sampled access.
	a.hinting = true
	useFakeKernel(a)
	fakeOf(t, a).setAffinity(rigPid, rigPid, "0")
	fakeSyscalls(a)
	return &syscallRig{a: a}
}

// sys is a sample of a syscall event with the given arguments.
func (sb *syscallRig) sys(kind evKind, args ...uint64) []byte {
	sb.now++
	var v [3]uint64
	copy(v[:], args)
	return syscallRecord(kind, rigPid, sb.now, v, 0, nil)
}

// fault is a page fault at addr.
func (sb *syscallRig) fault(addr uint64) []byte {
	sb.now++
	return faultRecord(rigPid, sb.now, addr, 0)
}

// step handles recs as one round.
func (sb *syscallRig) step(recs ...[]byte) {
	for _, r := range recs {
		sb.a.record(r)
	}
	sb.a.handleBatch()
}

// TestSyscallsFollowMemory drives the analyzer with the syscall events of a
// program that maps, touches, unmaps, grows its heap, remaps and drops
// pages, and checks what counts as a first touch and what as an access, and
// which allocation site owns the pages. The kernel is a fake that places no
// page, so the pages keep the faulting CPU's node.
func TestSyscallsFollowMemory(t *testing.T) {
	const pid = rigPid
	sb := newSyscallRig(t)
	a, sys, fault, step := sb.a, sb.sys, sb.fault, sb.step
	pg := a.pageSize
	const base = 0x7f0000000000

	// mmap 4 pages, touch them all: 4 first touches, owned by the mmap site.
	step(sys(evMmapEnter, 4*pg, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), sys(evMmapExit, base))
	step(fault(base), fault(base+pg), fault(base+2*pg), fault(base+3*pg))
	// Touch one again: an access.
	step(fault(base + pg))
	if a.totals.FirstTouch != 4 || a.totals.Local != 1 {
		t.Fatalf("after the first mmap: %+v, want 4 first touches and 1 access", a.totals)
	}
	// munmap the first two pages: touching them again is a first touch.
	step(sys(evMunmap, base, 2*pg), fault(base), fault(base+3*pg))
	if a.totals.FirstTouch != 5 || a.totals.Local != 2 {
		t.Fatalf("after munmap: %+v, want 5 first touches and 2 accesses", a.totals)
	}
	// MADV_DONTNEED on the last page: its next touch places a new page.
	step(sys(evMadvise, base+3*pg, pg, unix.MADV_DONTNEED), fault(base+3*pg))
	// MADV_FREE keeps it (the page may survive): an access.
	step(sys(evMadvise, base+3*pg, pg, unix.MADV_FREE), fault(base+3*pg))
	if a.totals.FirstTouch != 6 || a.totals.Local != 3 {
		t.Fatalf("after madvise: %+v, want 6 first touches and 3 accesses", a.totals)
	}
	// The heap: the first brk sets the break, the second grows it by 2 pages.
	heap := uint64(0x600000)
	step(sys(evBrkEnter), sys(evBrkExit, heap), sys(evBrkEnter), sys(evBrkExit, heap+2*pg), fault(heap), fault(heap+pg))
	// mremap moves the mmap'd pages 2-3 elsewhere: they keep their state, so
	// touching them at the new place is an access, and the old place is gone.
	moved := uint64(base + 1<<30)
	step(sys(evMremapEnter, base+2*pg, 2*pg, 4*pg), sys(evMremapExit, moved), fault(moved+pg), fault(base+3*pg))
	if a.totals.FirstTouch != 9 || a.totals.Local != 4 {
		t.Fatalf("after brk and mremap: %+v, want 9 first touches and 4 accesses", a.totals)
	}
	if got := a.al.at(pid, moved+3*pg, &a.code); got == 0 {
		t.Error("the grown part of the remapped range has no allocation site")
	}
	// A failed mmap adds nothing.
	step(sys(evMmapEnter, pg, 0), sys(evMmapExit, errnoRet(unix.ENOMEM)))

	var mm, hp *allocSite
	for i := 1; i < len(a.al.sites); i++ {
		switch a.al.sites[i].kind {
		case "mmap":
			mm = &a.al.sites[i]
		case "heap":
			hp = &a.al.sites[i]
		}
	}
	if mm == nil || hp == nil {
		t.Fatalf("sites %+v: want one mmap and one heap site", a.al.sites)
	}
	// The mmap site: 1 call of 4 pages; its 4 pages, then page 3 again after
	// MADV_DONTNEED. The touches of unmapped addresses (base after munmap,
	// base+3*pg after the move) are first touches without a site.
	if mm.calls != 1 || mm.bytes != 4*pg {
		t.Errorf("mmap site: %d calls, %d bytes; want 1 call of %d bytes", mm.calls, mm.bytes, 4*pg)
	}
	if mm.metrics.FirstTouch != 5 || mm.metrics.Local != 4 {
		t.Errorf("mmap site metrics %+v, want 5 first touches and 4 accesses", mm.metrics)
	}
	if hp.calls != 1 || hp.bytes != 2*pg || hp.metrics.FirstTouch != 2 {
		t.Errorf("heap site: %d calls, %d bytes, %+v; want 1 call, %d bytes, 2 first touches", hp.calls, hp.bytes, hp.metrics, 2*pg)
	}
	// Shrinking the heap frees its pages: after it grows again, the touch
	// is a first touch.
	step(sys(evBrkEnter), sys(evBrkExit, heap), sys(evBrkEnter), sys(evBrkExit, heap+pg), fault(heap))
	if hp = &a.al.sites[a.al.at(pid, heap, &a.code)]; hp.kind != "heap" || hp.calls != 2 || hp.metrics.FirstTouch != 3 || a.totals.Local != 4 {
		t.Errorf("after a shrink and regrowth: heap %+v, totals %+v", hp.metrics, a.totals)
	}
}

// TestAffinityFromSyscall: a sched_setaffinity whose mask is in the stack
// copy is logged with that mask and the call's time; one whose mask is not
// falls back to reading the thread's status.
func TestAffinityFromSyscall(t *testing.T) {
	const pid = 1 << 23
	a := newAnalyzer([]int{0, 0, 1, 1}, []int{0, 1}, []int{-1, 0, 1})
	useFakeKernel(a)
	fakeOf(t, a).setAffinity(pid, pid, "0-3")
	fakeSyscalls(a)
	a.th.read(a.thread(pid, pid), "start", 0)
	const sp = 0x7ffd00000000
	stack := make([]byte, 256)
	stack[64] = 0b1100 // CPUs 2 and 3: node 1
	at := a.startNs + 1.5e9
	fakeOf(t, a).setAffinity(pid, pid, "2-3") // what the kernel says after the call
	a.record(syscallRecord(evAffinityEnter, pid, at, [3]uint64{0, 8, sp + 64}, sp, stack))
	a.record(syscallRecord(evAffinityExit, pid, at+1000, [3]uint64{0}, 0, nil))
	a.handleBatch()
	th := a.th.byTID[pid]
	if th.node != 1 || len(th.log) != 2 {
		t.Fatalf("thread node %d, log %+v; want node 1 and two entries", th.node, th.log)
	}
	if b := th.log[1]; b.CPUs != "2-3" || b.Via != "sched_setaffinity" || b.TimeS < 1.49 || b.TimeS > 1.51 {
		t.Errorf("log entry %+v, want CPUs 2-3 via sched_setaffinity at 1.5 s", b)
	}
	// A mask outside the copy: the status file says.
	fakeOf(t, a).setAffinity(pid, pid, "1")
	a.record(syscallRecord(evAffinityEnter, pid, at+2e9, [3]uint64{0, 8, sp + 1<<20}, sp, stack))
	a.record(syscallRecord(evAffinityExit, pid, at+2e9+1000, [3]uint64{0}, 0, nil))
	a.handleBatch()
	if b := th.log[len(th.log)-1]; b.CPUs != "1" || b.Via != "sched_setaffinity" || th.node != 0 {
		t.Errorf("log entry %+v (node %d), want CPUs 1 via sched_setaffinity, node 0", b, th.node)
	}
	// A failed call changes nothing.
	n := len(th.log)
	stack[64] = 0b1000
	a.record(syscallRecord(evAffinityEnter, pid, at+3e9, [3]uint64{0, 8, sp + 64}, sp, stack))
	a.record(syscallRecord(evAffinityExit, pid, at+3e9+1000, [3]uint64{errnoRet(unix.EINVAL)}, 0, nil))
	a.handleBatch()
	if len(th.log) != n {
		t.Errorf("a failed sched_setaffinity was logged: %+v", th.log)
	}
	// A change from outside the program (taskset -p): polled, and applied
	// when the next round still shows it without a call explaining it.
	fakeOf(t, a).setAffinity(pid, pid, "0")
	a.record(faultRecord(pid, at+4e9, 0x7f0000000000, 0))
	a.handleBatch()
	if len(th.log) != n {
		t.Errorf("a polled change was applied before it was confirmed: %+v", th.log)
	}
	a.record(faultRecord(pid, at+5e9, 0x7f0000001000, 0))
	a.handleBatch()
	if b := th.log[len(th.log)-1]; len(th.log) != n+1 || b.CPUs != "0" || b.Via != "poll" {
		t.Errorf("binding log %+v: want CPU 0 via poll last", th.log)
	}
}

// wlAllocLine is the mmap call of wl_alloc in workload.h.
func wlAllocLine(t *testing.T) int {
	return markedLine(t, filepath.Join(filepath.Dir(workloadSrc), "workload.h"), "wl_alloc")
}

func findAllocations(p *Profile, file string, line int) (calls, bytes uint64, m Metrics, kinds []string) {
	for _, al := range p.Allocations {
		if filepath.Base(al.File) == file && al.Line == line {
			calls += al.Calls
			bytes += al.Bytes
			m.add(&al.Metrics)
			kinds = append(kinds, al.Kind)
		}
	}
	return
}

// requireSyscalls fails when the syscall tracepoints were not available,
// unless the process is not root and NUMASCOPE_TEST_NO_ROOT is set
// (testutil.NotPermitted).
func requireSyscalls(t *testing.T, p *Profile) {
	t.Helper()
	for _, n := range p.Notes {
		if strings.Contains(n, "allocation sites are not tracked") {
			testutil.NotPermitted(t, "%s", n)
		}
	}
}

// TestAllocationSites profiles the known-answer program with its buffers
// from mmap (wl_alloc), from malloc, and given back and touched again.
func TestAllocationSites(t *testing.T) {
	initLine := markedLine(t, workloadSrc, "init")
	allocLine := markedLine(t, workloadSrc, "alloc")
	mmapLine := wlAllocLine(t)
	nodes := uint64(onlineNodes(t))
	const mb = 4
	pages := uint64(mb << 20 / os.Getpagesize())
	for _, static := range []bool{true, false} {
		name := map[bool]string{true: "static", false: "pie"}[static]
		bin := buildWorkload(t, static)
		t.Run(name+"/mmap", func(t *testing.T) {
			p := runProfile(t, bin, "--serial", "--mb", "4", "--seconds", "0", "--lead", "0", "--linger", "0")
			requireSyscalls(t, p)
			// Exactly: one mmap per worker of the buffer and its two guard
			// pages, every buffer page first touched (at @init), nothing else.
			calls, bytes, m, _ := findAllocations(p, "workload.h", mmapLine)
			if calls != nodes || bytes != nodes*(pages+2)*uint64(os.Getpagesize()) || m.FirstTouch != nodes*pages {
				t.Errorf("workload.h:%d: %d calls, %d bytes, %+v; want %d calls, %d bytes, %d first touches; allocations %+v",
					mmapLine, calls, bytes, m, nodes, nodes*(pages+2)*uint64(os.Getpagesize()), nodes*pages, p.Allocations)
			}
		})
		t.Run(name+"/madvise-again", func(t *testing.T) {
			p := runProfile(t, bin, "--serial", "--again", "--mb", "4", "--seconds", "0", "--lead", "0", "--linger", "0")
			requireSyscalls(t, p)
			// MADV_DONTNEED dropped the pages: @init placed each twice.
			l, _ := findLocation(p, "profnuma.c", initLine)
			if l.Metrics.FirstTouch != 2*nodes*pages || l.Metrics.Accesses() != 0 {
				t.Errorf("profnuma.c:%d: %+v, want %d first touches and no access", initLine, l.Metrics, 2*nodes*pages)
			}
			if _, _, m, _ := findAllocations(p, "workload.h", mmapLine); m.FirstTouch != 2*nodes*pages {
				t.Errorf("workload.h:%d: %+v, want %d first touches", mmapLine, m, 2*nodes*pages)
			}
		})
		t.Run(name+"/malloc-again", func(t *testing.T) {
			p := runProfile(t, bin, "--serial", "--malloc", "--again", "--mb", "4", "--seconds", "0", "--lead", "0", "--linger", "0")
			requireSyscalls(t, p)
			// glibc serves the first malloc with mmap; free unmaps it and
			// raises its mmap threshold, so the second comes from the heap
			// (brk). Either way the site is the malloc line, found through
			// libc's frames without frame pointers. A few pages of each
			// buffer were touched by malloc itself (its chunk header) or
			// belong to heap space reserved before.
			l, _ := findLocation(p, "profnuma.c", initLine)
			slack := nodes * 64
			if l.Metrics.FirstTouch+slack < 2*nodes*pages || l.Metrics.FirstTouch > 2*nodes*pages || l.Metrics.Accesses() != 0 {
				t.Errorf("profnuma.c:%d: %+v, want about %d first touches and no access", initLine, l.Metrics, 2*nodes*pages)
			}
			calls, _, m, kinds := findAllocations(p, "profnuma.c", allocLine)
			if calls < 2*nodes || m.FirstTouch+slack < 2*nodes*pages {
				t.Errorf("profnuma.c:%d (malloc): %d calls, %+v (%v); want %d calls and about %d first touches; allocations %+v",
					allocLine, calls, m, kinds, 2*nodes, 2*nodes*pages, p.Allocations)
			}
		})
	}
}

// TestAffinityEvents: the program pins itself; the binding log has the
// call, with its CPUs, in order.
func TestAffinityEvents(t *testing.T) {
	bin := buildWorkload(t, false)
	cpus, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	last := strings.TrimSpace(string(cpus))
	if i := strings.LastIndexAny(last, "-,"); i >= 0 {
		last = last[i+1:]
	}
	p := runProfile(t, bin, "--serial", "--pin-cpu", last, "--mb", "1", "--seconds", "0", "--lead", "0", "--linger", "0")
	requireSyscalls(t, p)
	var main *Thread
	for i := range p.Threads {
		if p.Threads[i].TID == p.Threads[i].PID {
			main = &p.Threads[i]
		}
	}
	if main == nil || len(main.BindingLog) < 2 {
		t.Fatalf("main thread %+v: want a start entry and the call", main)
	}
	log := main.BindingLog
	if log[0].Via != "start" || log[1].Via != "sched_setaffinity" || log[1].CPUs != last || log[1].TimeS < log[0].TimeS {
		t.Errorf("binding log %+v: want start, then CPU %s via sched_setaffinity", log, last)
	}
}

// FuzzSyscallRecord feeds arbitrary tracepoint samples to the decoder and
// the handler: they must never panic.
func FuzzSyscallRecord(f *testing.F) {
	for i := range syscallEvents {
		f.Add(syscallRecord(syscallEvents[i].kind, 1<<23, 1, [3]uint64{0x7f0000000000, 4096, 0x7f0000001000}, 0x7f0000001000, make([]byte, 64)))
	}
	f.Add(faultRecordStack(1<<23, 1, 0x7f0000000000, 0, binary.LittleEndian.AppendUint64(nil, 0x401005), DefaultStackCopy))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
		useFakeKernel(a)
		fakeSyscalls(a)
		a.record(b)
		for i := range a.batch.recs {
			a.handle(&a.batch.recs[i])
		}
	})
}

// errnoRet is a syscall's return value for a failure with errno e.
func errnoRet(e unix.Errno) uint64 { return uint64(-int64(e)) }

// TestFaultHeavyCounts profiles profbench --faults: threads map, touch and
// unmap their buffers round after round. Each round's faults are first
// touches of new memory (the munmap forgets the old), never sampled
// accesses, and with MADV_NOHUGEPAGE no fault placed a huge page. (A race
// once made such regions look huge: their other pages present before their
// faults were read.) The small run fits in the rings, so nothing may be
// lost and the counts are exact. The heavy one may fault faster than
// numascope drains (the race detector slows numascope several times): then
// every fault is still counted, reported lost, or reported as a fault that
// is not an access (repeat_faults, faults_after_loss), and the profile says
// so.
func TestFaultHeavyCounts(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		requireGCC(t, "gcc not found: cannot build profbench")
	}
	src := filepath.Join(filepath.Dir(workloadSrc), "profbench.c")
	bin := filepath.Join(t.TempDir(), "profbench")
	if out, err := exec.Command(gcc, "-O2", "-g", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v: %s", src, err, out)
	}
	line := markedLine(t, src, "fault")
	for _, c := range []struct {
		name       string
		mb, rounds int
	}{{"small", 8, 4}, {"heavy", 32, 8}} {
		t.Run(c.name, func(t *testing.T) {
			want := uint64(c.rounds * c.mb << 20 / os.Getpagesize())
			p := runProfile(t, bin, "--faults", "--mb", fmt.Sprint(c.mb), "--rounds", fmt.Sprint(c.rounds), "--lead", "0", "--linger", "0")
			l, _ := findLocation(p, "profbench.c", line)
			t.Logf("@fault %+v; %d samples, %d lost, %d huge pages", l.Metrics, p.Samples, p.Lost, p.HugePages)
			// With or without root (exact check, or probes decided a round late).
			if p.HugePages != 0 {
				t.Errorf("%d huge pages found in MADV_NOHUGEPAGE memory", p.HugePages)
			}
			requireSyscalls(t, p) // the munmaps are seen through them
			counted := l.Metrics.FirstTouch + l.Metrics.Accesses()
			if told := p.Lost + p.RepeatFaults + p.FaultsAfterLoss; counted > want || counted+told < want {
				t.Errorf("faults at @fault: %d counted (%+v), %d lost, %d repeats, %d after a loss; want %d in all",
					counted, l.Metrics, p.Lost, p.RepeatFaults, p.FaultsAfterLoss, want)
			}
			if p.Lost > 0 {
				if !strings.Contains(strings.Join(p.Notes, "\n"), fmt.Sprintf("dropped %d records", p.Lost)) {
					t.Errorf("%d records lost, but the notes do not say so: %q", p.Lost, p.Notes)
				}
				if c.name == "heavy" {
					return // after a lost munmap the next round's touches are repeats or faults after the loss
				}
				t.Errorf("%d records lost in a run that fits in the rings", p.Lost)
			}
			if l.Metrics.FirstTouch != want || l.Metrics.Accesses() != 0 {
				t.Errorf("@fault: %+v, want %d first touches and no sampled access (every round touches fresh memory)", l.Metrics, want)
			}
		})
	}
}

// TestRunCloser: the background closer closes the perf events it
// inherited, and nothing else.
func TestRunCloser(t *testing.T) {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_DUMMY, Bits: unix.PerfBitDisabled}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, 0)
	if err != nil {
		testutil.NotPermitted(t, "perf_event_open: %v", err)
	}
	f, err := os.Open(workloadSrc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rc := RunCloser(); rc != 0 {
		t.Fatalf("RunCloser returned %d", rc)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		unix.Close(fd)
		t.Errorf("the perf event fd %d is still open (%v)", fd, err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil {
		t.Errorf("a regular file was closed too: %v", err)
	}
}

// TestThreadStacks: memory mapped with MAP_STACK (glibc's thread stacks) is
// in the stack mapping with an allocation site of kind stack, though
// /proc/PID/maps shows it as anonymous memory like the mmap beside it.
func TestThreadStacks(t *testing.T) {
	sb := newSyscallRig(t)
	a, sys, fault := sb.a, sb.sys, sb.fault
	pg := a.pageSize
	const stack, buf = 0x7f0000000000, 0x7f0000100000
	maps := fmt.Sprintf("%x-%x rw-p 00000000 00:00 0 \n%x-%x rw-p 00000000 00:00 0 \n", stack, stack+16*pg, buf, buf+16*pg)
	fakeOf(t, a).maps[rigPid] = maps
	sb.step(
		sys(evMmapEnter, 16*pg, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK), sys(evMmapExit, stack),
		sys(evMmapEnter, 16*pg, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), sys(evMmapExit, buf),
		fault(stack+15*pg), fault(stack+14*pg), fault(buf),
	)

	got := map[string]uint64{}
	for _, m := range a.mp.list {
		got[m.Kind] += m.Metrics.FirstTouch
	}
	if got["stack"] != 2 || got["anon"] != 1 {
		t.Errorf("first touches by mapping kind %v, want 2 in stack and 1 in anon", got)
	}
	kinds := map[string]uint64{}
	for _, s := range a.al.sites[1:] {
		kinds[s.kind] += s.metrics.FirstTouch
	}
	if kinds["stack"] != 2 || kinds["mmap"] != 1 {
		t.Errorf("first touches by allocation kind %v, want 2 at the stack site and 1 at the mmap site", kinds)
	}
}

// TestUnplacedPageAskedAgain: a first-touched page that move_pages does not
// find (the kernel had not placed it yet when asked; here the fake kernel
// places no page) is asked again in each of the next maxUnplacedRounds
// rounds, then given up, and one that is freed meanwhile is forgotten.
func TestUnplacedPageAskedAgain(t *testing.T) {
	const pid = 1 << 23
	a := newAnalyzer([]int{0, 1}, []int{0, 1}, []int{-1, 0, 1})
	useFakeKernel(a)
	fakeOf(t, a).setAffinity(pid, pid, "1")
	const page, freed = 0x7f0000000000, 0x7f0000100000
	a.record(faultRecord(pid, 1, page, 1))
	a.record(faultRecord(pid, 2, freed, 1))
	a.handleBatch()
	if len(a.nodes.recheck) != 2 || pageNode(a, pid, page) != 1 {
		t.Fatalf("after the first touches: recheck %v, page %+v; want both pages asked again, on the CPU's node meanwhile",
			a.nodes.recheck, pageNode(a, pid, page))
	}
	a.freeRange(pid, freed, freed+a.pageSize, true)
	for round := 2; round <= maxUnplacedRounds; round++ {
		a.handleBatch()
		if len(a.nodes.recheck) != 1 || a.nodes.recheck[0] != (pageKey{pid, page}) {
			t.Fatalf("round %d: recheck %v, want only the page still mapped", round, a.nodes.recheck)
		}
	}
	a.handleBatch()
	if len(a.nodes.recheck) != 0 || len(a.nodes.unplaced) != 0 {
		t.Errorf("after %d rounds: recheck %v, unplaced %v; want the page given up", maxUnplacedRounds+1, a.nodes.recheck, a.nodes.unplaced)
	}
}

// TestSameRoundAccessUsesRealNode: a page first-touched and then accessed
// within one round (the balancing scanner unmapped it soon after) is judged
// against the node the kernel reports, not the first toucher's CPU's node:
// CPU 1 is on node 1, but the kernel has the page on node 0, so the access
// is remote.
func TestSameRoundAccessUsesRealNode(t *testing.T) {
	a, pid, page := ownPageOnTwoNodes(t, "1")
	a.record(faultRecord(pid, 1, page, 1)) // first touch from CPU 1 (node 1)
	a.record(faultRecord(pid, 2, page, 1)) // an access, same round
	a.handleBatch()
	if a.totals.FirstTouch != 1 || a.totals.Remote != 1 || a.totals.Local != 0 {
		t.Errorf("totals %+v, want 1 first touch and 1 remote access (the page is on node 0)", a.totals)
	}
	if ps, _ := a.pg.get(pageKey{pid, page}); ps.node != 0 || ps.unsure {
		t.Errorf("page state %+v, want node 0, read from the kernel", ps)
	}
}

// TestAccessAfterRemoteAccessAsksAgain: after a remote access the page may
// have migrated toward the accessor (the hinting fault migrates it), so a
// second access in the same round (the profiler short of CPU, a round
// spanning two scans) is judged against where the page is then. Here the
// kernel has the page on node 0 but it was last known on node 1: the
// first access from node 0 is remote, the second, asked anew, local.
func TestAccessAfterRemoteAccessAsksAgain(t *testing.T) {
	a, pid, page := ownPageOnTwoNodes(t, "0")
	a.pg.set(pageKey{pid, page}, pageState{node: 1}) // as of the last round
	a.record(faultRecord(pid, 1, page, 0))
	a.record(faultRecord(pid, 2, page, 0))
	a.handleBatch()
	if a.totals.Remote != 1 || a.totals.Local != 1 {
		t.Errorf("totals %+v, want the first access remote and the second local", a.totals)
	}
}

// ownPageOnTwoNodes returns an analyzer that takes CPU 0 for node 0 and CPU
// 1 for node 1, with a fake kernel that has a page of a process on node 0
// and the process's thread's affinity cpus.
func ownPageOnTwoNodes(t *testing.T, cpus string) (*analyzer, int32, uint64) {
	t.Helper()
	const pid, page = 4321, 0x7f0000000000
	a := newAnalyzer([]int{0, 1}, []int{0, 1}, []int{-1, 0, 1})
	k := useFakeKernel(a)
	k.nodes[pageKey{pid, page}] = 0
	k.setAffinity(pid, pid, cpus)
	return a, pid, page
}

// pageNode is the node the analyzer has for a page (-1: not touched).
func pageNode(a *analyzer, pid int32, page uint64) int {
	if ps, ok := a.pg.get(pageKey{pid, page}); ok {
		return int(ps.node)
	}
	return -1
}
