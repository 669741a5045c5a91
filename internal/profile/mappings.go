package profile

import (
	"sort"
	"strings"

	"github.com/numascope/numascope/internal/procnuma"
)

// Mapping is the memory a set of pages belongs to, with their metrics: where
// the memory came from.
type Mapping struct {
	// Kind is heap (brk), stack (the main thread's, and the other threads'
	// stacks: anonymous memory mapped with MAP_STACK), anon (the rest of
	// anonymous mmap: malloc's large blocks and arenas), file (a mapped
	// file), other ([vdso] and the like) or unknown (gone before it was
	// looked up).
	Kind    string  `json:"kind"`
	File    string  `json:"file,omitempty"`
	Metrics Metrics `json:"metrics"`
}

// region is an address range of a process with the index of its Mapping.
type region struct {
	start, end uint64
	idx        uint32
}

// regionUnknown is the Mapping index of pages not (yet) found in a mapping.
const regionUnknown = 0

// mapKey identifies a Mapping.
type mapKey struct{ kind, file string }

// mappingTracker owns where each process's memory came from: its address
// ranges from /proc/PID/maps, each with the index of its Mapping, and the
// Mappings with the metrics credited to them.
type mappingTracker struct {
	regions  map[int32][]region
	mapsRead map[int32]uint64 // the round of the last /proc/PID/maps read
	list     []Mapping        // [regionUnknown] is the unknown mapping
	idx      map[mapKey]uint32
	// gen counts the changes to regions: an answer of of holds while it
	// is the same.
	gen uint64
}

// credit adds d to Mapping idx's metrics.
func (t *mappingTracker) credit(idx uint32, d *Metrics) { t.list[idx].Metrics.add(d) }

// kind is Mapping idx's kind.
func (t *mappingTracker) kind(idx uint32) string { return t.list[idx].Kind }

// generation changes whenever an answer of of may have.
func (t *mappingTracker) generation() uint64 { return t.gen }

// all returns the Mappings.
func (t *mappingTracker) all() []Mapping { return t.list }

func newMappingTracker() mappingTracker {
	return mappingTracker{
		regions:  map[int32][]region{},
		mapsRead: map[int32]uint64{},
		list:     []Mapping{{Kind: "unknown"}},
		idx:      map[mapKey]uint32{{kind: "unknown"}: regionUnknown},
	}
}

// of returns the Mapping index of addr in pid, reading /proc/PID/maps from
// k again (at most once per round) when addr is in no known range: a new
// mmap or a heap that grew. The same answer holds for the addresses
// [lo, hi) around addr until gen changes, and, when addr is in no known
// range (thisRound), until the round does.
func (t *mappingTracker) of(k kernel, round uint64, pid int32, addr uint64) (idx uint32, lo, hi uint64, thisRound bool) {
	idx, lo, hi, ok := findRegion(t.regions[pid], addr)
	if ok || t.mapsRead[pid] == round {
		return idx, lo, hi, !ok
	}
	t.mapsRead[pid] = round
	t.read(k, pid)
	idx, lo, hi, ok = findRegion(t.regions[pid], addr)
	return idx, lo, hi, !ok
}

// hugeCandidate says whether a fault at page could have placed a
// transparent huge page: only anonymous memory (heap or anonymous mmap)
// whose mapping covers the page's whole 2 MiB region. File pages (the page
// cache maps several pages per fault, "fault-around") never count.
func (t *mappingTracker) hugeCandidate(k kernel, round uint64, pid int32, page uint64) bool {
	idx, _, _, _ := t.of(k, round, pid, page)
	if kind := t.list[idx].Kind; kind != "anon" && kind != "heap" {
		return false
	}
	region := page &^ (hugeSize - 1)
	rs := t.regions[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > page })
	return i < len(rs) && rs[i].start <= region && region+hugeSize <= rs[i].end
}

// forget drops a process's ranges (it exec'd).
func (t *mappingTracker) forget(pid int32) {
	delete(t.regions, pid)
	t.gen++
}

// unmap drops a process's ranges that overlap [start, end).
func (t *mappingTracker) unmap(pid int32, start, end uint64) {
	rs := t.regions[pid][:0:0]
	for _, r := range t.regions[pid] {
		if r.end <= start || r.start >= end {
			rs = append(rs, r)
		}
	}
	t.regions[pid] = rs
	t.gen++
}

// change applies a change a syscall made to pid's memory (see memChange):
// the ranges unmapped are dropped; mapped ones are read from
// /proc/PID/maps when a fault finds them (see of).
func (t *mappingTracker) change(c *memChange) {
	switch {
	case c.op == memUnmap:
		t.unmap(c.pid, c.start, c.end)
	case c.op == memRemap && c.tailEnd > c.tail:
		t.unmap(c.pid, c.tail, c.tailEnd)
	}
}

// findRegion returns the Mapping index of the range of rs that holds addr,
// and that range [lo, hi); or regionUnknown, the gap between two ranges
// that holds addr, and false.
func findRegion(rs []region, addr uint64) (idx uint32, lo, hi uint64, ok bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > addr })
	if i < len(rs) && rs[i].start <= addr {
		return rs[i].idx, rs[i].start, rs[i].end, true
	}
	lo, hi = 0, ^uint64(0)
	if i > 0 {
		lo = rs[i-1].end
	}
	if i < len(rs) {
		hi = rs[i].start
	}
	return regionUnknown, lo, hi, false
}

// read replaces pid's ranges with its /proc/PID/maps; a process that is
// gone keeps the ranges it had.
func (t *mappingTracker) read(k kernel, pid int32) {
	maps, ok := k.Maps(pid)
	if !ok {
		return
	}
	var rs []region
	for line := range strings.Lines(string(maps)) {
		m, ok := procnuma.ParseMapsLine(line)
		if !ok {
			continue
		}
		start, end, name := m.Start, m.End, m.Path
		var mk mapKey
		switch {
		case name == "[heap]":
			mk.kind = "heap"
		case name == "[stack]":
			mk.kind = "stack"
		case name == "":
			mk.kind = "anon"
		case strings.HasPrefix(name, "/"):
			mk = mapKey{"file", name}
		default:
			mk.kind = "other"
		}
		rs = append(rs, region{start: start, end: end, idx: t.index(mk)})
	}
	if len(rs) > 0 {
		t.regions[pid] = rs
		t.gen++
	}
}

// index returns the index of the Mapping k, adding it if new.
func (t *mappingTracker) index(k mapKey) uint32 {
	if i, ok := t.idx[k]; ok {
		return i
	}
	t.list = append(t.list, Mapping{Kind: k.kind, File: k.file})
	i := uint32(len(t.list) - 1)
	t.idx[k] = i
	return i
}
