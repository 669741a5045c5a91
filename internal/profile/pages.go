package profile

// pageKey is a base page (or a 2 MiB region) of a process: its address.
type pageKey struct {
	pid  int32
	page uint64
}

// pageTracker owns what the profiler knows of the touched memory of each
// process: the state of each touched base page, the 2 MiB regions found
// backed by a transparent huge page, and the first touches seen per region.
//
// It keeps one set of maps per process, keyed by address: a fault's lookup
// hashes one machine word (the maps' fast path; a struct key costs a
// general hash, the consumer's largest cost in a fault storm), an exec
// drops a process's pages at once, and an unmap walks only that process's
// pages. The process of the last lookup is kept at hand, since faults come
// in runs from one process.
type pageTracker struct {
	procs   map[int32]*procPages
	lastPid int32
	last    *procPages
}

// procPages is the touched memory of one process.
type procPages struct {
	pages map[uint64]pageState // by base page address
	// regions are the 2 MiB regions with a first touch, by address.
	regions map[uint64]regionState
}

// regionState is what is known of a 2 MiB region: the first touches seen
// in it, and whether it was found to be one transparent huge page.
type regionState struct {
	firsts uint16
	isHuge bool
	huge   hugeState
}

func newPageTracker() pageTracker { return pageTracker{procs: map[int32]*procPages{}} }

// of returns pid's memory, nil if none is known and create is false.
func (t *pageTracker) of(pid int32, create bool) *procPages {
	if t.last != nil && t.lastPid == pid {
		return t.last
	}
	p := t.procs[pid]
	if p == nil {
		if !create {
			return nil
		}
		p = &procPages{pages: map[uint64]pageState{}, regions: map[uint64]regionState{}}
		t.procs[pid] = p
	}
	t.lastPid, t.last = pid, p
	return p
}

// get returns a touched page's state.
func (t *pageTracker) get(k pageKey) (pageState, bool) {
	if p := t.of(k.pid, false); p != nil {
		ps, ok := p.pages[k.page]
		return ps, ok
	}
	return pageState{}, false
}

// known says whether a page is touched.
func (t *pageTracker) known(k pageKey) bool {
	_, ok := t.get(k)
	return ok
}

// set records a touched page's state.
func (t *pageTracker) set(k pageKey, ps pageState) { t.of(k.pid, true).pages[k.page] = ps }

// forget drops what is known of a process's memory (it exec'd).
func (t *pageTracker) forget(pid int32) {
	delete(t.procs, pid)
	if t.lastPid == pid {
		t.last = nil
	}
}

// free drops the pages of pid in [start, end) and the regions that
// overlap it, walking whichever is smaller: the range or the process's
// touched pages (a program may unmap a reservation of terabytes). It
// returns the pages that were known, by address, when moved asks for them.
func (t *pageTracker) free(pid int32, start, end, pageSize uint64, moved map[uint64]pageState) {
	p := t.of(pid, false)
	if p == nil || end <= start {
		return
	}
	if (end-start)/pageSize <= uint64(len(p.pages)) {
		for a := start; a < end; a += pageSize {
			if ps, ok := p.pages[a]; ok {
				if moved != nil {
					moved[a] = ps
				}
				delete(p.pages, a)
			}
		}
	} else {
		for a, ps := range p.pages {
			if a >= start && a < end {
				if moved != nil {
					moved[a] = ps
				}
				delete(p.pages, a)
			}
		}
	}
	first := start &^ (hugeSize - 1)
	if n := (end - first + hugeSize - 1) / hugeSize; n <= uint64(len(p.regions)) {
		for r := first; r < end; r += hugeSize {
			delete(p.regions, r)
		}
		return
	}
	for r := range p.regions {
		if r+hugeSize > start && r < end {
			delete(p.regions, r)
		}
	}
}

// hugeAt returns the huge page found at region rk, if any.
func (t *pageTracker) hugeAt(rk pageKey) (hugeState, bool) {
	if p := t.of(rk.pid, false); p != nil {
		r := p.regions[rk.page]
		return r.huge, r.isHuge
	}
	return hugeState{}, false
}

// setHuge records that region rk holds a huge page.
func (t *pageTracker) setHuge(rk pageKey, h hugeState) {
	p := t.of(rk.pid, true)
	r := p.regions[rk.page]
	r.isHuge, r.huge = true, h
	p.regions[rk.page] = r
}

// firsts is the number of first touches seen in region rk.
func (t *pageTracker) firsts(rk pageKey) uint16 {
	if p := t.of(rk.pid, false); p != nil {
		return p.regions[rk.page].firsts
	}
	return 0
}

// untouched is a fault on a page not known: unless its region was found
// to be a huge page (returned, with true), it is a first touch, counted in
// the region when count says so; firsts is then the region's count.
func (t *pageTracker) untouched(rk pageKey, count bool) (h hugeState, isHuge bool, firsts uint16) {
	p := t.of(rk.pid, true)
	r := p.regions[rk.page]
	if r.isHuge {
		return r.huge, true, r.firsts
	}
	if count && r.firsts < ^uint16(0) {
		r.firsts++
		p.regions[rk.page] = r
	}
	return hugeState{}, false, r.firsts
}

// count is the number of touched pages known, over all processes.
func (t *pageTracker) count() (n int) {
	for _, p := range t.procs {
		n += len(p.pages)
	}
	return n
}
