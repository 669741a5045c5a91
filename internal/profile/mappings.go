package profile

import (
	"sort"
	"strconv"
	"strings"
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

// mappingOf returns the Mapping index of addr in pid, reading
// /proc/PID/maps again (at most once per round) when addr is in no known
// range: a new mmap or a heap that grew.
func (a *analyzer) mappingOf(pid int32, addr uint64) uint32 {
	if idx, ok := findRegion(a.regions[pid], addr); ok {
		return idx
	}
	if a.mapsRead[pid] == a.stamp {
		return regionUnknown
	}
	a.mapsRead[pid] = a.stamp
	a.readRegions(pid)
	idx, _ := findRegion(a.regions[pid], addr)
	return idx
}

// hugeCandidate says whether a fault at page could have placed a
// transparent huge page: only anonymous memory (heap or anonymous mmap)
// whose mapping covers the page's whole 2 MiB region. File pages (the page
// cache maps several pages per fault, "fault-around") never count.
func (a *analyzer) hugeCandidate(pid int32, page uint64) bool {
	idx := a.mappingOf(pid, page)
	if k := a.mappings[idx].Kind; k != "anon" && k != "heap" {
		return false
	}
	region := page &^ (hugeSize - 1)
	rs := a.regions[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > page })
	return i < len(rs) && rs[i].start <= region && region+hugeSize <= rs[i].end
}

// mappingFor is mappingOf for a page whose allocation site is site: pages
// of a thread's stack (an mmap with MAP_STACK) are in the stack mapping,
// which /proc/PID/maps cannot tell from other anonymous memory.
func (a *analyzer) mappingFor(pid int32, page uint64, site uint32) uint32 {
	idx := a.mappingOf(pid, page)
	if site != 0 && a.sites[site].kind == "stack" && a.mappings[idx].Kind == "anon" {
		return a.mappingIndex(mapKey{kind: "stack"})
	}
	return idx
}

func findRegion(rs []region, addr uint64) (uint32, bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > addr })
	if i < len(rs) && rs[i].start <= addr {
		return rs[i].idx, true
	}
	return regionUnknown, false
}

// readRegions replaces pid's ranges with /proc/PID/maps; a process that is
// gone keeps the ranges it had.
func (a *analyzer) readRegions(pid int32) {
	maps, ok := a.kern.Maps(pid)
	if !ok {
		return
	}
	var rs []region
	for line := range strings.Lines(string(maps)) {
		start, end, name, ok := parseRange(line)
		if !ok {
			continue
		}
		var k mapKey
		switch {
		case name == "[heap]":
			k.kind = "heap"
		case name == "[stack]":
			k.kind = "stack"
		case name == "":
			k.kind = "anon"
		case strings.HasPrefix(name, "/"):
			k = mapKey{"file", name}
		default:
			k.kind = "other"
		}
		rs = append(rs, region{start: start, end: end, idx: a.mappingIndex(k)})
	}
	if len(rs) > 0 {
		a.regions[pid] = rs
	}
}

func (a *analyzer) mappingIndex(k mapKey) uint32 {
	if i, ok := a.mapIdx[k]; ok {
		return i
	}
	a.mappings = append(a.mappings, Mapping{Kind: k.kind, File: k.file})
	i := uint32(len(a.mappings) - 1)
	a.mapIdx[k] = i
	return i
}

// parseRange parses "start-end perms offset dev inode [name]" of /proc/PID/maps.
func parseRange(line string) (start, end uint64, name string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return 0, 0, "", false
	}
	se := strings.SplitN(f[0], "-", 2)
	if len(se) != 2 {
		return 0, 0, "", false
	}
	s, err1 := strconv.ParseUint(se[0], 16, 64)
	e, err2 := strconv.ParseUint(se[1], 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, "", false
	}
	if len(f) > 5 {
		name = strings.Join(f[5:], " ")
	}
	return s, e, name, true
}
