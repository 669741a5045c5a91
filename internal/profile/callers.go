package profile

// Code locations of faults and allocations: whether an instruction has line
// information, and, for a fault in code without (libc's memset, memcpy),
// the application's call that led to it, found in the sample's copy of the
// user stack or its call chain. Answers are cached per address, so a
// sample costs a lookup, not a symbolisation.

import (
	"encoding/binary"
	"sync"

	"github.com/numascope/numascope/internal/perfring"
)

// codeIndex is what the profile knows of the programs' code: each process's
// executable mappings (found at its start and in MMAP2 records), which
// process forked which (a child runs its parent's code until it execs), and
// the symbolizer over the mapped files. The ring readers consult it at the
// same time while the analyzer waits for them; only the analyzer changes
// maps and parent, and never while they read. The symbolizer fills its
// caches as it is asked, so it is used under mu.
type codeIndex struct {
	maps   map[int32][]mapping
	parent map[int32]int32 // process -> the process that forked it
	mu     sync.Mutex
	sym    *symbolizer
}

func newCodeIndex() codeIndex {
	return codeIndex{maps: map[int32][]mapping{}, parent: map[int32]int32{}, sym: newSymbolizer()}
}

// addMapping records an executable mapping of pid.
func (c *codeIndex) addMapping(pid int32, m mapping) { c.maps[pid] = append(c.maps[pid], m) }

// setParent records that pid was forked by ppid.
func (c *codeIndex) setParent(pid, ppid int32) { c.parent[pid] = ppid }

// parentOf returns the process that forked pid, if known.
func (c *codeIndex) parentOf(pid int32) (int32, bool) {
	pp, ok := c.parent[pid]
	return pp, ok
}

// loadSymbols reads the line tables of the binary at path now.
func (c *codeIndex) loadSymbols(path string) { c.sym.load(path) }

// compDirs returns the compilation directories the debug info names for
// file.
func (c *codeIndex) compDirs(file string) []string { return c.sym.compDirs(file) }

// closeSymbols closes the binaries read.
func (c *codeIndex) closeSymbols() { c.sym.close() }

// resolve looks ip up in the process's mappings, then in its parent's (a
// forked child that has not exec'd runs its parent's code).
func (c *codeIndex) resolve(pid int32, ip uint64) (Frame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range 64 { // bounds a cycle from pid reuse
		if fr, ok := c.sym.resolve(c.maps[pid], ip); ok {
			return fr, true
		}
		pp, ok := c.parent[pid]
		if !ok {
			break
		}
		pid = pp
	}
	return Frame{}, false
}

// readCode reads code bytes at a run-time address from the mapped file.
func (c *codeIndex) readCode(pid int32, addr uint64, b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range 64 {
		for _, m := range c.maps[pid] {
			if addr >= m.start && addr+uint64(len(b)) <= m.end {
				return c.sym.readAt(m.file, b, addr-m.start+m.pgoff)
			}
		}
		pp, ok := c.parent[pid]
		if !ok {
			return false
		}
		pid = pp
	}
	return false
}

// callerCache answers, for one reader of the rings, whether an instruction
// has a line and which call led to a fault, caching each answer by address.
// Each reader has its own, so that a cached answer takes no lock.
type callerCache struct {
	code     *codeIndex
	appRet   map[pageKey]bool // isAppReturn's answers
	lineAt   map[pageKey]bool // hasLine's answers
	lastLine lineAnswer
	// lastCall is, by thread, the last call into code without lines whose
	// caller faultCaller found in the stack copy.
	lastCall map[int32]routineCall
}

func newCallerCache(code *codeIndex) callerCache {
	return callerCache{code: code, appRet: map[pageKey]bool{}, lineAt: map[pageKey]bool{}, lastCall: map[int32]routineCall{}}
}

// maxCachedAnswers bounds each of a callerCache's maps.
const maxCachedAnswers = 1 << 16

// fault builds the batch entry of a page-fault sample: where it happened,
// and, when the instruction has no line, the call that led there.
func (cc *callerCache) fault(s *perfring.Sample) rawSample {
	r := rawSample{ip: s.IP, addr: s.Addr, time: s.Time, pid: s.PID, tid: s.TID, cpu: s.CPU}
	if !cc.hasLine(s.PID, s.IP) {
		r.caller = cc.faultCaller(s)
	}
	return r
}

// hasLine says whether a faulting instruction has line information, so that
// it is its own location. Answers are cached per address; an address not
// yet in a known mapping is asked again next time.
func (cc *callerCache) hasLine(pid int32, ip uint64) bool {
	key := pageKey{pid, ip}
	if c := &cc.lastLine; c.valid && c.key == key {
		return c.line // faults come in runs from one instruction
	}
	v, ok := cc.lineAt[key]
	if !ok {
		fr, found := cc.code.resolve(pid, ip)
		if !found {
			return false
		}
		v = fr.Line > 0
		if len(cc.lineAt) < maxCachedAnswers {
			cc.lineAt[key] = v
		}
	}
	cc.lastLine = lineAnswer{key: key, line: v, valid: true}
	return v
}

// lineAnswer is hasLine's last answer.
type lineAnswer struct {
	key         pageKey
	line, valid bool
}

// routineCall is a fault in code without lines and the call that led to it.
type routineCall struct{ leaf, caller uint64 }

// routineSpan bounds how far apart two faulting instructions may be to be
// taken as the same routine (libc's string routines are a few hundred bytes
// to a few KiB).
const routineSpan = 1024

// faultCaller finds the application's call that led to a fault in code
// without line information (libc's memset, memcpy): the first word of the
// fault's stack copy that is a return address into code with lines, else
// the call chain's caller. The stack comes first because the chain's
// frame-pointer walk misses the innermost caller of a routine that sets up
// no frame, reporting its caller's caller. The result points inside the
// call instruction (0: none).
func (cc *callerCache) faultCaller(s *perfring.Sample) uint64 {
	if ip, ok := cc.appReturnIn(s.PID, s.Stack); ok {
		if c := (routineCall{s.IP, ip - 1}); cc.lastCall[s.TID] != c {
			cc.lastCall[s.TID] = c
		}
		return ip - 1
	}
	if s.StackCut {
		// The kernel's copy stopped short: it copies without faulting, and
		// a stack page was not mapped. The call into the routine wrote its
		// return address there, so the page was unmapped since, by the
		// NUMA balancing scanner, while the thread stayed in the routine:
		// the thread's last fault in the same routine (|leaf - ip| <
		// routineSpan) had the caller. (With several readers, its last
		// fault read by this one: a thread's faults mostly stay on one
		// CPU's ring.)
		if c, ok := cc.lastCall[s.TID]; ok && c.leaf-s.IP+routineSpan < 2*routineSpan {
			return c.caller
		}
	}
	// The chain starts with PERF_CONTEXT_USER and the leaf IP; the next
	// address is the caller's return address.
	seenLeaf := false
	for i := 0; i < s.Chain.Len(); i++ {
		ip := s.Chain.At(i)
		if perfring.IsContext(ip) {
			continue
		}
		if !seenLeaf {
			seenLeaf = true
			continue
		}
		return ip - 1
	}
	return 0
}

// exited forgets a thread's last call: its number may be reused.
func (cc *callerCache) exited(tid int32) { delete(cc.lastCall, tid) }

// appReturnIn returns the first word of a copy of the user stack that is a
// return address into code with line information (see isAppReturn): the
// application's call that led to a syscall or a fault inside libc.
func (cc *callerCache) appReturnIn(pid int32, stack []byte) (uint64, bool) {
	for off := 0; off+8 <= len(stack); off += 8 {
		if ip := binary.LittleEndian.Uint64(stack[off:]); cc.isAppReturn(pid, ip) {
			return ip, true
		}
	}
	return 0, false
}

// isAppReturn says whether ip is a return address into code with line
// information: it lies in an executable mapping, right after a call
// instruction, and the call's line is known. Answers are cached per address.
func (cc *callerCache) isAppReturn(pid int32, ip uint64) bool {
	if ip < 4096 || perfring.IsContext(ip) {
		return false
	}
	key := pageKey{pid, ip}
	if v, ok := cc.appRet[key]; ok {
		return v
	}
	v := false
	if fr, ok := cc.code.resolve(pid, ip-1); ok && fr.Line > 0 {
		v = cc.afterCall(pid, ip)
	}
	if len(cc.appRet) < maxCachedAnswers {
		cc.appRet[key] = v
	}
	return v
}

// afterCall checks the bytes before ip for an x86-64 call instruction:
// call rel32 (E8), call [rip+disp32] (FF 15), call through a register, with
// or without a REX prefix (FF D0+r), or through memory with a displacement
// (FF 50+r disp8, FF 90+r disp32). A stack word that passes is very likely a
// saved return address, not data that happens to point into code.
func (cc *callerCache) afterCall(pid int32, ip uint64) bool {
	var b [7]byte
	if !cc.code.readCode(pid, ip-uint64(len(b)), b[:]) {
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

// symbolize resolves a location: the faulting instruction's line, or, when
// it has none (a libc routine without debug information), its caller's line,
// keeping the instruction's function name if the caller has none either.
func (c *codeIndex) symbolize(k locKey) Frame {
	fr, ok := c.resolve(k.pid, k.ip)
	if ok && fr.Line > 0 {
		return fr
	}
	if k.caller != 0 {
		if cf, ok := c.resolve(k.pid, k.caller); ok && cf.Line > 0 {
			return cf
		}
	}
	if !ok || fr.Function == "" {
		return Frame{Function: "[unknown]"}
	}
	return fr
}
