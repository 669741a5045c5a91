package profile

// Allocation sites: which application call made the kernel hand out each
// range of memory (mmap, brk, mremap), so that pages are attributed to the
// line that allocated them as well as to the line that touched them.

import (
	"sort"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

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
		app = a.calls.isAppReturn(s.PID, ip)
		k.ip = ip
	}
	if !app {
		if ip, ok := a.calls.appReturnIn(s.PID, stack); ok {
			app, k.ip = true, ip
		}
	}
	if !app {
		k.ip = leaf
	}
	return a.al.site(k, app)
}

// allocTracker owns the allocation sites and which site each range of each
// process's memory comes from.
type allocTracker struct {
	ranges map[int32][]allocRange // by process, sorted by address
	sites  []allocSite            // [0] is "no site"
	idx    map[siteKey]uint32
	// gen counts the changes to ranges (and to the parents at says
	// where to look): an answer of at holds while it is the same.
	gen uint64
}

func newAllocTracker() allocTracker {
	return allocTracker{ranges: map[int32][]allocRange{}, sites: []allocSite{{}}, idx: map[siteKey]uint32{}}
}

// site returns the index of site k (never 0), adding it if new; app says
// whether k.ip is a return address into the application.
func (t *allocTracker) site(k siteKey, app bool) uint32 {
	if i, ok := t.idx[k]; ok {
		return i
	}
	t.sites = append(t.sites, allocSite{pid: k.pid, kind: k.kind, ip: k.ip, app: app})
	i := uint32(len(t.sites) - 1)
	t.idx[k] = i
	return i
}

// credit adds d to site's metrics.
func (t *allocTracker) credit(site uint32, d *Metrics) { t.sites[site].metrics.add(d) }

// kind is site's kind: "mmap", "stack" or "heap" ("" for none).
func (t *allocTracker) kind(site uint32) string { return t.sites[site].kind }

// generation changes whenever an answer of at may have.
func (t *allocTracker) generation() uint64 { return t.gen }

// forked says that a process forked: at may now look in its parent.
func (t *allocTracker) forked() { t.gen++ }

// used returns the sites, [0] ("no site") left out.
func (t *allocTracker) used() []allocSite { return t.sites[1:] }

// forget drops what is known of a process's memory (it exec'd).
func (t *allocTracker) forget(pid int32) {
	delete(t.ranges, pid)
	t.gen++
}

// add records that a call at site allocated [start, end) of pid.
func (t *allocTracker) add(pid int32, start, end uint64, site uint32) {
	if end <= start {
		return
	}
	st := &t.sites[site]
	st.calls++
	st.bytes += end - start
	t.place(pid, start, end, site)
}

// placeAlloc makes [start, end) of pid belong to site, replacing what was
// there.
func (t *allocTracker) place(pid int32, start, end uint64, site uint32) {
	t.cut(pid, start, end) // and gen++
	rs := t.ranges[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].start >= start })
	rs = append(rs, allocRange{})
	copy(rs[i+1:], rs[i:])
	rs[i] = allocRange{start: start, end: end, site: site}
	t.ranges[pid] = rs
}

// cutAlloc removes [start, end) from pid's allocation ranges.
func (t *allocTracker) cut(pid int32, start, end uint64) {
	t.gen++
	rs := t.ranges[pid]
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
	t.ranges[pid] = out
}

// change applies a change a syscall made to pid's memory (see memChange):
// a range unmapped loses its site, one mapped takes its call's, and one
// moved keeps the site it had.
func (t *allocTracker) change(c *memChange, code *codeIndex) {
	switch c.op {
	case memUnmap:
		t.cut(c.pid, c.start, c.end)
	case memMap:
		t.add(c.pid, c.start, c.end, c.site)
	case memRemap:
		site := t.at(c.pid, c.from, code)
		if c.start != c.from {
			t.cut(c.pid, c.from, c.fromEnd)
		}
		if c.tailEnd > c.tail {
			t.cut(c.pid, c.tail, c.tailEnd)
		}
		if site != 0 {
			t.place(c.pid, c.start, c.end, site)
		} else {
			t.cut(c.pid, c.start, c.end)
		}
	}
}

// at returns the allocation site of addr in pid (0: none known), looking in
// the parent (as code knows it) of a forked child that has not replaced the
// memory.
func (t *allocTracker) at(pid int32, addr uint64, code *codeIndex) uint32 {
	site, _, _ := t.span(pid, addr, code)
	return site
}

// span is at, with the addresses [lo, hi) around addr that have the same
// answer until gen changes.
func (t *allocTracker) span(pid int32, addr uint64, code *codeIndex) (site uint32, lo, hi uint64) {
	hi = ^uint64(0)
	for range 64 {
		rs := t.ranges[pid]
		i := sort.Search(len(rs), func(i int) bool { return rs[i].end > addr })
		if i < len(rs) && rs[i].start <= addr {
			return rs[i].site, max(lo, rs[i].start), min(hi, rs[i].end)
		}
		// In the gap between two ranges of pid.
		if i > 0 {
			lo = max(lo, rs[i-1].end)
		}
		if i < len(rs) {
			hi = min(hi, rs[i].start)
		}
		pp, ok := code.parentOf(pid)
		if !ok {
			return 0, lo, hi
		}
		pid = pp
	}
	return 0, addr, addr + 1
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
	sites := a.al.used()
	for i := range sites {
		st := &sites[i]
		if st.calls == 0 && st.metrics == (Metrics{}) {
			continue
		}
		var fr Frame
		ok := false
		if st.app {
			fr, ok = a.code.resolve(st.pid, st.ip-1)
		} else {
			fr, ok = a.code.resolve(st.pid, st.ip)
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
