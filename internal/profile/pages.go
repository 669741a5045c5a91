package profile

import "math/bits"

// pageKey is a base page (or a 2 MiB region) of a process: its address.
type pageKey struct {
	pid  int32
	page uint64
}

// The page table: what the profiler knows of the touched memory of each
// process, laid out as the hardware's own page table is, without a hash.
// A process's address space is a tree indexed by address:
//
//	address bits  63..39    38..30       29..21          20..12 (4 KiB pages)
//	              top       midDir       regionDir       regionPages: chunk, page
//	              (512 GiB) (512 x 1 GiB) (512 x 2 MiB)  (8 x 64 pages)
//
// A regionPages is one 2 MiB region: what is known of the region as a
// whole (the first touches seen in it, whether it was found to be one
// transparent huge page) and its touched base pages, in chunks of 64 pages
// (256 KiB) with a bit each saying which are known. Nodes exist only where
// pages were touched: untouched address space costs nothing, however large
// the mapping (a 1 TiB PROT_NONE reservation costs what its touched pages
// do), and an munmap walks only the nodes that exist, dropping whole
// regions and chunks. A fault's lookup is a few array indexations (the
// tops of a process, typically two or three, are scanned); freed nodes are
// kept for reuse (up to a bound), so that a storm that maps and unmaps
// memory allocates nothing in the steady state.
//
// Memory: a chunk is 1032 bytes (64 pages of 16 bytes and the bits; Go
// allocates 1152) and a region 80, so densely touched memory costs about
// 18 bytes per 4 KiB page (the Go maps this replaced cost 29 to 57 bytes a
// page, and did not shrink either), and a page alone in its 256 KiB costs
// a chunk and a region, some 1.2 KiB; a regionDir (4 KiB) is added per GiB
// of address space with touched pages, a midDir (4 KiB) per 512 GiB. So
// memory grows with the touched pages, and with their spread, never with
// the size of a mapping.
const (
	hugeShift    = 21 // log2(hugeSize)
	chunkPages   = 64 // base pages per chunk: one bit each in present
	regionChunks = hugeSize / 4096 / chunkPages
	dirBits      = 9 // regions per regionDir: 1 GiB
	midBits      = 9 // regionDirs per midDir: 512 GiB
	topShift     = hugeShift + dirBits + midBits

	// The pools of freed nodes kept for reuse: up to 16 Ki chunks (18 MiB),
	// as many as 4 GiB of densely touched pages use.
	maxFreeChunks  = 1 << 14
	maxFreeRegions = 1 << 12
	maxFreeDirs    = 1 << 6
	maxFreeMids    = 1 << 2
)

// pageChunk is 64 consecutive base pages of a region.
type pageChunk struct {
	present uint64 // bit i: pages[i] is known
	pages   [chunkPages]pageState
}

// regionPages is a 2 MiB region of a process: its regionState and its
// touched base pages.
type regionPages struct {
	regionState
	n      uint16 // pages known
	chunks [regionChunks]*pageChunk
}

// regionState is what is known of a 2 MiB region: the first touches seen
// in it, and whether it was found to be one transparent huge page.
type regionState struct {
	firsts uint16
	isHuge bool
	huge   hugeState
}

// regionDir is 1 GiB of address space: 512 regions.
type regionDir struct {
	n       int // regions not nil
	regions [1 << dirBits]*regionPages
}

// midDir is 512 GiB of address space: 512 regionDirs.
type midDir struct {
	n    int // dirs not nil
	dirs [1 << midBits]*regionDir
}

// procPages is the touched memory of one process.
type procPages struct {
	tops []topEntry
}

// topEntry is a 512 GiB part of a process's address space with touched
// pages.
type topEntry struct {
	key uint64 // address >> topShift
	mid *midDir
}

// pageTracker owns what the profiler knows of the touched memory of each
// process: the state of each touched base page, the 2 MiB regions found
// backed by a transparent huge page, and the first touches seen per region.
// The process of the last lookup is kept at hand, since faults come in
// runs from one process.
type pageTracker struct {
	procs   map[int32]*procPages
	lastPid int32
	last    *procPages
	// pageShift is log2 of the base page size (4 KiB to 2 MiB).
	pageShift uint
	// moved is change's buffer for the pages an mremap moves.
	moved []movedPage
	// The pools of freed nodes.
	chunks  pool[pageChunk]
	regions pool[regionPages]
	dirs    pool[regionDir]
	mids    pool[midDir]
}

func newPageTracker(pageSize uint64) pageTracker {
	if pageSize < 4096 || pageSize > hugeSize || pageSize&(pageSize-1) != 0 {
		panic("profile: page size not a power of two from 4 KiB to 2 MiB")
	}
	return pageTracker{
		procs:     map[int32]*procPages{},
		pageShift: uint(bits.TrailingZeros64(pageSize)),
		chunks:    pool[pageChunk]{max: maxFreeChunks},
		regions:   pool[regionPages]{max: maxFreeRegions},
		dirs:      pool[regionDir]{max: maxFreeDirs},
		mids:      pool[midDir]{max: maxFreeMids},
	}
}

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
		p = &procPages{}
		t.procs[pid] = p
	}
	t.lastPid, t.last = pid, p
	return p
}

// mid returns the midDir of address addr in p, nil if none and create is
// false.
func (t *pageTracker) mid(p *procPages, addr uint64, create bool) *midDir {
	key := addr >> topShift
	for i := range p.tops {
		if p.tops[i].key == key {
			return p.tops[i].mid
		}
	}
	if !create {
		return nil
	}
	m := t.mids.get()
	p.tops = append(p.tops, topEntry{key: key, mid: m})
	return m
}

// region returns the 2 MiB region of pid at addr, nil if none is known
// and create is false.
func (t *pageTracker) region(pid int32, addr uint64, create bool) *regionPages {
	p := t.of(pid, create)
	if p == nil {
		return nil
	}
	m := t.mid(p, addr, create)
	if m == nil {
		return nil
	}
	di := addr >> (hugeShift + dirBits) & (1<<midBits - 1)
	d := m.dirs[di]
	if d == nil {
		if !create {
			return nil
		}
		d = t.dirs.get()
		m.dirs[di] = d
		m.n++
	}
	ri := addr >> hugeShift & (1<<dirBits - 1)
	r := d.regions[ri]
	if r == nil && create {
		r = t.regions.get()
		d.regions[ri] = r
		d.n++
	}
	return r
}

// index is the index of the base page at addr in its region.
func (t *pageTracker) index(addr uint64) uint {
	return uint(addr&(hugeSize-1)) >> t.pageShift
}

// get returns the state of page i of region r.
func (r *regionPages) get(i uint) (pageState, bool) {
	c := r.chunks[i/chunkPages]
	if c == nil || c.present&(1<<(i%chunkPages)) == 0 {
		return pageState{}, false
	}
	return c.pages[i%chunkPages], true
}

// put records the state of page i of region r, touched now or known.
func (t *pageTracker) put(r *regionPages, i uint, ps pageState) {
	c := r.chunks[i/chunkPages]
	if c == nil {
		c = t.chunks.get()
		r.chunks[i/chunkPages] = c
	}
	if bit := uint64(1) << (i % chunkPages); c.present&bit == 0 {
		c.present |= bit
		r.n++
	}
	c.pages[i%chunkPages] = ps
}

// untouched is a fault on page i of region r, not known: unless the region
// was found to be a huge page (returned, with true), it is a first touch,
// counted in the region when count says so; firsts is then the region's
// count.
func (r *regionPages) untouched(count bool) (h hugeState, isHuge bool, firsts uint16) {
	if r.isHuge {
		return r.huge, true, r.firsts
	}
	if count && r.firsts < ^uint16(0) {
		r.firsts++
	}
	return hugeState{}, false, r.firsts
}

// get returns a touched page's state.
func (t *pageTracker) get(k pageKey) (pageState, bool) {
	if r := t.region(k.pid, k.page, false); r != nil {
		return r.get(t.index(k.page))
	}
	return pageState{}, false
}

// known says whether a page is touched.
func (t *pageTracker) known(k pageKey) bool {
	_, ok := t.get(k)
	return ok
}

// set records a touched page's state.
func (t *pageTracker) set(k pageKey, ps pageState) {
	t.put(t.region(k.pid, k.page, true), t.index(k.page), ps)
}

// forget drops what is known of a process's memory (it exec'd).
func (t *pageTracker) forget(pid int32) {
	delete(t.procs, pid)
	if t.lastPid == pid {
		t.last = nil
	}
}

// change applies a change a syscall made to pid's memory (see memChange):
// pages given back or unmapped are forgotten, so that their next fault is
// a first touch; pages moved keep what is known of them at their new
// address (they were moved, not touched).
func (t *pageTracker) change(c *memChange) {
	switch c.op {
	case memFree, memUnmap:
		t.free(c.pid, c.start, c.end, nil)
	case memRemap:
		if c.start != c.from {
			t.moved = t.moved[:0]
			t.free(c.pid, c.from&^(1<<t.pageShift-1), c.fromEnd, &t.moved)
			for _, m := range t.moved {
				t.set(pageKey{c.pid, m.addr - c.from + c.start}, m.ps)
			}
		}
		if c.tailEnd > c.tail {
			t.free(c.pid, c.tail, c.tailEnd, nil)
		}
	}
}

// movedPage is a page taken out of the table by free, and its state.
type movedPage struct {
	addr uint64
	ps   pageState
}

// free drops the pages of pid in [start, end) (start page-aligned) and what
// is known of the regions that overlap it, walking only the nodes that
// exist: regions wholly inside go whole, with their chunks. It appends the
// pages that were known to *moved, when moved is not nil.
func (t *pageTracker) free(pid int32, start, end uint64, moved *[]movedPage) {
	p := t.of(pid, false)
	if p == nil || end <= start {
		return
	}
	for ti := 0; ti < len(p.tops); ti++ {
		top := p.tops[ti]
		base := top.key << topShift
		if next := base + 1<<topShift; base >= end || next != 0 && next <= start {
			continue
		}
		m := top.mid
		lo, hi := span(start, end, base, hugeShift+dirBits, midBits)
		for di := lo; di <= hi && m.n > 0; di++ {
			d := m.dirs[di]
			if d == nil {
				continue
			}
			dbase := base + uint64(di)<<(hugeShift+dirBits)
			rlo, rhi := span(start, end, dbase, hugeShift, dirBits)
			for ri := rlo; ri <= rhi && d.n > 0; ri++ {
				r := d.regions[ri]
				if r == nil {
					continue
				}
				t.freeIn(r, dbase+uint64(ri)<<hugeShift, start, end, moved)
				if r.n == 0 {
					d.regions[ri] = nil
					d.n--
					t.dropRegion(r)
				}
			}
			if d.n == 0 {
				m.dirs[di] = nil
				m.n--
				t.dirs.put(d)
			}
		}
		if m.n == 0 {
			p.tops = append(p.tops[:ti], p.tops[ti+1:]...)
			ti--
			t.mids.put(m)
		}
	}
}

// span is the range of indexes [lo, hi] of the nodes of size 1<<shift
// under a node at base with 1<<n of them that overlap [start, end).
func span(start, end, base uint64, shift, n uint) (lo, hi uint) {
	top := base + uint64(1)<<(shift+n) // 0 at the top of the address space
	if start > base {
		lo = uint((start - base) >> shift)
	}
	hi = 1<<n - 1
	if top == 0 || end < top {
		hi = uint((end - 1 - base) >> shift)
	}
	return lo, hi
}

// freeIn drops the pages of region r (at base) in [start, end) and its
// regionState (the range overlaps it), appending them to *moved when moved
// is not nil.
func (t *pageTracker) freeIn(r *regionPages, base, start, end uint64, moved *[]movedPage) {
	r.regionState = regionState{}
	if r.n == 0 {
		return
	}
	lo, hi := uint(0), uint(hugeSize)>>t.pageShift // pages [lo, hi)
	if start > base {
		lo = uint(start-base+1<<t.pageShift-1) >> t.pageShift
	}
	if end < base+hugeSize {
		hi = uint(end-base+1<<t.pageShift-1) >> t.pageShift
	}
	for ci := lo / chunkPages; ci*chunkPages < hi; ci++ {
		c := r.chunks[ci]
		if c == nil {
			continue
		}
		mask := ^uint64(0)
		if first := ci * chunkPages; lo > first {
			mask <<= lo - first
		}
		if last := (ci + 1) * chunkPages; hi < last {
			mask &= 1<<(hi-ci*chunkPages) - 1
		}
		gone := c.present & mask
		if gone == 0 {
			continue
		}
		if moved != nil {
			for b := gone; b != 0; b &= b - 1 {
				j := uint(bits.TrailingZeros64(b))
				*moved = append(*moved, movedPage{addr: base + uint64(ci*chunkPages+j)<<t.pageShift, ps: c.pages[j]})
			}
		}
		c.present &^= gone
		r.n -= uint16(bits.OnesCount64(gone))
		if c.present == 0 {
			r.chunks[ci] = nil
			t.chunks.put(c)
		}
	}
}

// pool keeps freed nodes for reuse, up to max of them. A node is put back
// empty: a chunk with no page present, the rest all zero.
type pool[T any] struct {
	free []*T
	max  int
}

// get takes a node from the pool, or allocates one.
func (p *pool[T]) get() *T {
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		p.free = p.free[:n-1]
		return x
	}
	return new(T)
}

// put gives back an empty node.
func (p *pool[T]) put(x *T) {
	if len(p.free) < p.max {
		p.free = append(p.free, x)
	}
}

// dropRegion gives back a region and its chunks.
func (t *pageTracker) dropRegion(r *regionPages) {
	for _, c := range r.chunks {
		if c != nil {
			c.present = 0
			t.chunks.put(c)
		}
	}
	*r = regionPages{}
	t.regions.put(r)
}

// hugeAt returns the huge page found at region rk, if any.
func (t *pageTracker) hugeAt(rk pageKey) (hugeState, bool) {
	if r := t.region(rk.pid, rk.page, false); r != nil {
		return r.huge, r.isHuge
	}
	return hugeState{}, false
}

// setHuge records that region rk holds a huge page.
func (t *pageTracker) setHuge(rk pageKey, h hugeState) {
	r := t.region(rk.pid, rk.page, true)
	r.isHuge, r.huge = true, h
}

// firsts is the number of first touches seen in region rk.
func (t *pageTracker) firsts(rk pageKey) uint16 {
	if r := t.region(rk.pid, rk.page, false); r != nil {
		return r.firsts
	}
	return 0
}

// count is the number of touched pages known, over all processes.
func (t *pageTracker) count() (n int) {
	for _, p := range t.procs {
		for _, top := range p.tops {
			for _, d := range top.mid.dirs {
				if d == nil {
					continue
				}
				for _, r := range d.regions {
					if r != nil {
						n += int(r.n)
					}
				}
			}
		}
	}
	return n
}
