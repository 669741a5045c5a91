package profile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageModel is the page table's specification: the maps it replaced, one
// entry per touched page and per region with a state.
type pageModel struct {
	pages   map[pageKey]pageState
	regions map[pageKey]regionState
}

func (m *pageModel) free(pid int32, start, end, pageSize uint64) (moved []movedPage) {
	for k, ps := range m.pages {
		if k.pid == pid && k.page >= start && k.page < end {
			moved = append(moved, movedPage{addr: k.page, ps: ps})
			delete(m.pages, k)
		}
	}
	for k := range m.regions {
		if k.pid == pid && k.page+hugeSize > start && k.page < end {
			delete(m.regions, k)
		}
	}
	return moved
}

// TestPageTableModel applies random touches, frees, huge-page marks and
// forgets to the page table and to the maps it replaced, and requires the
// same answers: every page and region, pages in and out of known ranges,
// ranges across regions, GiB and 512 GiB boundaries, at the top of the
// address space, and freed then touched again.
func TestPageTableModel(t *testing.T) {
	const ps = 4096
	tr := newPageTracker(ps)
	m := pageModel{pages: map[pageKey]pageState{}, regions: map[pageKey]regionState{}}
	rng := rand.New(rand.NewPCG(1, 2))
	bases := []uint64{0x400000, 0x7f0000000000, 1<<30 - 8*ps, 1<<39 - hugeSize, 1<<47 - 64*hugeSize, 1<<56 - 4*hugeSize}
	addr := func() uint64 {
		return bases[rng.IntN(len(bases))] + uint64(rng.IntN(8*512))*ps
	}
	pids := []int32{1, 2}
	var moved []movedPage
	for op := range 20000 {
		pid := pids[rng.IntN(len(pids))]
		a := addr()
		switch r := rng.IntN(100); {
		case r < 60: // a touch: set the page, count the region's first
			k := pageKey{pid, a}
			st := pageState{node: int16(rng.IntN(4)), site: uint32(op), epoch: uint32(op / 1000)}
			rk := regionOf(k)
			reg, i := tr.region(pid, a, true), tr.index(a)
			if _, ok := reg.get(i); !ok {
				_, isHuge, firsts := reg.untouched(true)
				ms := m.regions[rk]
				if ms.isHuge != isHuge {
					t.Fatalf("op %d: region %#x huge %v, want %v", op, rk.page, isHuge, ms.isHuge)
				}
				if !ms.isHuge {
					ms.firsts++
					m.regions[rk] = ms
				}
				if firsts != ms.firsts {
					t.Fatalf("op %d: region %#x firsts %d, want %d", op, rk.page, firsts, ms.firsts)
				}
			}
			tr.put(reg, i, st)
			m.pages[k] = st
		case r < 70: // a free of up to 3 regions' worth, at any page
			n := uint64(1 + rng.IntN(3*512))
			moved = moved[:0]
			tr.free(pid, a, a+n*ps, &moved)
			want := m.free(pid, a, a+n*ps, ps)
			sortMoved := func(x []movedPage) {
				slices.SortFunc(x, func(p, q movedPage) int { return int(p.addr>>12) - int(q.addr>>12) })
			}
			sortMoved(moved)
			sortMoved(want)
			if !slices.Equal(moved, want) {
				t.Fatalf("op %d: free [%#x, +%d pages) took %d pages, want %d", op, a, n, len(moved), len(want))
			}
		case r < 73: // a huge page found
			rk := regionOf(pageKey{pid, a})
			h := hugeState{node: int16(op % 3), epoch: uint32(op)}
			tr.setHuge(rk, h)
			ms := m.regions[rk]
			ms.isHuge, ms.huge = true, h
			m.regions[rk] = ms
		case r < 74 && op%10 == 0: // an exec
			tr.forget(pid)
			for k := range m.pages {
				if k.pid == pid {
					delete(m.pages, k)
				}
			}
			for k := range m.regions {
				if k.pid == pid {
					delete(m.regions, k)
				}
			}
		default: // lookups
			for range 4 {
				k := pageKey{pid, addr()}
				got, ok := tr.get(k)
				want, wok := m.pages[k]
				if got != want || ok != wok {
					t.Fatalf("op %d: page %#x %+v %v, want %+v %v", op, k.page, got, ok, want, wok)
				}
				rk := regionOf(k)
				h, isHuge := tr.hugeAt(rk)
				if ms := m.regions[rk]; h != ms.huge || isHuge != ms.isHuge || tr.firsts(rk) != ms.firsts {
					t.Fatalf("op %d: region %#x huge %+v %v firsts %d, want %+v", op, rk.page, h, isHuge, tr.firsts(rk), ms)
				}
			}
		}
	}
	if n := tr.count(); n != len(m.pages) {
		t.Errorf("%d pages in the table, want %d", n, len(m.pages))
	}
	for k, want := range m.pages {
		if got, ok := tr.get(k); !ok || got != want {
			t.Fatalf("page %d %#x: %+v %v, want %+v", k.pid, k.page, got, ok, want)
		}
	}
	// Freeing everything leaves no node behind.
	for _, pid := range pids {
		tr.free(pid, 0, ^uint64(0), nil)
		if p := tr.procs[pid]; p != nil && len(p.tops) != 0 {
			t.Errorf("pid %d: %d parts of the address space left after freeing all of it", pid, len(p.tops))
		}
	}
}

// TestPageTableSparse: a huge reservation (1 TiB, as PROT_NONE address
// space is reserved) with a few touched pages costs nodes for those pages
// only, and its munmap walks only the nodes that exist and gives them back
// for reuse.
func TestPageTableSparse(t *testing.T) {
	const ps, base, size = 4096, 0x7e0000000000, 1 << 40
	tr := newPageTracker(ps)
	touched := []uint64{base, base + ps, base + 1<<30, base + size/2 + 12345*ps, base + size - ps}
	for _, a := range touched {
		tr.set(pageKey{1, a}, pageState{node: 1})
	}
	tops, dirs, regions, chunks := tr.nodes(1)
	// The first two pages share a chunk; the others are 1 GiB or more apart.
	if tops != 2 || dirs != 4 || regions != 4 || chunks != 4 {
		t.Errorf("nodes: %d tops, %d dirs, %d regions, %d chunks; want 2, 4, 4, 4", tops, dirs, regions, chunks)
	}
	tr.free(1, base+ps, base+size-ps, nil) // all but the first and last pages
	if tr.count() != 2 || !tr.known(pageKey{1, base}) || tr.known(pageKey{1, base + ps}) {
		t.Errorf("after the munmap of all but the ends: %d pages, want the first and the last", tr.count())
	}
	if !tr.known(pageKey{1, base + size - ps}) {
		// The last page's region overlaps the freed range, but the
		// page itself is outside it.
		t.Error("the last page, outside the freed range, is gone")
	}
	tr.free(1, base, base+size, nil)
	if tr.count() != 0 || len(tr.procs[1].tops) != 0 {
		t.Errorf("after the munmap of the whole: %d pages, %d tops; want none", tr.count(), len(tr.procs[1].tops))
	}
	if len(tr.chunks.free) != 4 || len(tr.regions.free) != 4 || len(tr.dirs.free) != 4 || len(tr.mids.free) != 2 {
		t.Errorf("pools: %d chunks, %d regions, %d dirs, %d mids; want 4, 4, 4 and 2 given back",
			len(tr.chunks.free), len(tr.regions.free), len(tr.dirs.free), len(tr.mids.free))
	}
	// The sizes docs/profile.md gives.
	if c, r := unsafe.Sizeof(pageChunk{}), unsafe.Sizeof(regionPages{}); c != 1032 || r != 80 {
		t.Errorf("a chunk is %d bytes and a region %d, docs/profile.md says 1032 and 80", c, r)
	}
}

// nodes counts the page table's nodes of pid.
func (t *pageTracker) nodes(pid int32) (tops, dirs, regions, chunks int) {
	p := t.procs[pid]
	if p == nil {
		return
	}
	for _, top := range p.tops {
		tops++
		for _, d := range top.mid.dirs {
			if d == nil {
				continue
			}
			dirs++
			for _, r := range d.regions {
				if r == nil {
					continue
				}
				regions++
				for _, c := range r.chunks {
					if c != nil {
						chunks++
					}
				}
			}
		}
	}
	return
}

// TestPageTableNoAllocation: a storm that touches and unmaps the same
// memory over and over allocates nothing once the pools hold its nodes.
func TestPageTableNoAllocation(t *testing.T) {
	const ps, base, size = 4096, 0x7f1234500000, 16 << 20
	tr := newPageTracker(ps)
	round := func() {
		for a := uint64(base); a < base+size; a += ps {
			r, i := tr.region(7, a, true), tr.index(a)
			if _, ok := r.get(i); !ok {
				r.untouched(true)
				tr.put(r, i, pageState{node: 0})
			}
		}
		tr.free(7, base, base+size, nil)
	}
	round()
	if n := testing.AllocsPerRun(5, round); n != 0 {
		t.Errorf("%v allocations per round of touching and unmapping 16 MiB, want 0", n)
	}
}

// TestPageTableLargePages: with 64 KiB base pages (arm64, ppc64) a region
// holds 32 pages, in one chunk.
func TestPageTableLargePages(t *testing.T) {
	const ps = 64 << 10
	tr := newPageTracker(ps)
	for a := uint64(0x10000000); a < 0x10000000+2*hugeSize; a += ps {
		tr.set(pageKey{1, a}, pageState{node: 1})
	}
	if _, _, regions, chunks := tr.nodes(1); tr.count() != 64 || regions != 2 || chunks != 2 {
		t.Errorf("%d pages in %d regions and %d chunks, want 64 in 2 and 2", tr.count(), regions, chunks)
	}
	var moved []movedPage
	tr.free(1, 0x10000000+ps, 0x10000000+3*ps, &moved)
	if len(moved) != 2 || moved[0].addr != 0x10000000+ps || moved[1].addr != 0x10000000+2*ps || tr.count() != 62 {
		t.Errorf("freed %+v, %d left; want the 2 pages and 62", moved, tr.count())
	}
}

// TestMunmapDropsRange: an munmap that is not aligned to regions frees
// exactly its pages, across three regions; the pages around it stay known
// (a later fault is an access), and the region it cut no longer holds a
// huge page.
func TestMunmapDropsRange(t *testing.T) {
	sb := newSyscallRig(t)
	a, sys, fault, step := sb.a, sb.sys, sb.fault, sb.step
	pg := a.pageSize
	const base = 0x7f0000000000 + 3*4096
	n := 3 * hugeSize / pg // 1536 pages from inside one region to inside the fourth
	step(sys(evMmapEnter, n*pg, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), sys(evMmapExit, base))
	var all [][]byte
	for i := range n {
		all = append(all, fault(base+i*pg))
	}
	step(all...)
	if a.totals.FirstTouch != n {
		t.Fatalf("%d first touches, want %d", a.totals.FirstTouch, n)
	}
	// The first region was found to be a huge page (as if; the pages are
	// known already).
	a.pg.setHuge(regionOf(pageKey{rigPid, base}), hugeState{node: 0, epoch: a.lossEpoch})
	lo, hi := base+100*pg, base+(n-100)*pg
	step(sys(evMunmap, lo, hi-lo))
	step(fault(lo-pg), fault(lo), fault(hi-pg), fault(hi))
	if a.totals.FirstTouch != n+2 || a.totals.Local != 2 {
		t.Errorf("after the munmap: %+v, want %d first touches (the freed ends) and 2 accesses (the pages around them)", a.totals, n+2)
	}
	if _, huge := a.pg.hugeAt(regionOf(pageKey{rigPid, base})); huge {
		t.Error("the region the munmap cut still holds a huge page")
	}
	if got, want := a.pg.count(), int(n-(hi-lo)/pg+2); got != want {
		t.Errorf("%d pages known, want %d", got, want)
	}
}

// TestRemappedRange: memory unmapped and mapped again at the same address
// by another call is new memory: its pages are first touches again, of the
// new allocation site, though the faulting thread's last answer was the
// old site for the same addresses.
func TestRemappedRange(t *testing.T) {
	sb := newSyscallRig(t)
	a, sys, fault, step := sb.a, sb.sys, sb.fault, sb.step
	pg := a.pageSize
	const base = 0x7f0000000000
	step(sys(evMmapEnter, 8*pg, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), sys(evMmapExit, base), fault(base), fault(base+pg))
	first := a.al.at(rigPid, base, &a.code)
	// Unmapped, then mapped again by a call with the stack flag, which
	// makes another site (kind stack).
	step(sys(evMunmap, base, 8*pg),
		sys(evMmapEnter, 8*pg, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK), sys(evMmapExit, base),
		fault(base), fault(base+2*pg))
	second := a.al.at(rigPid, base, &a.code)
	if first == 0 || second == 0 || first == second {
		t.Fatalf("sites %d and %d, want two sites", first, second)
	}
	if a.totals.FirstTouch != 4 || a.totals.Accesses() != 0 {
		t.Errorf("totals %+v, want 4 first touches and no access", a.totals)
	}
	if f1, f2 := a.al.sites[first].metrics.FirstTouch, a.al.sites[second].metrics.FirstTouch; f1 != 2 || f2 != 2 {
		t.Errorf("first touches by site: %d and %d, want 2 and 2", f1, f2)
	}
	// mremap moves the pages with their state: a fault at the new place is
	// an access to a known page.
	const to = 0x7f0040000000
	step(sys(evMremapEnter, base, 8*pg, 8*pg), sys(evMremapExit, to), fault(to), fault(base))
	if a.totals.Local != 1 || a.totals.FirstTouch != 5 {
		t.Errorf("after mremap: %+v, want 1 access (the moved page) and 5 first touches (the old place)", a.totals)
	}
}

// TestPagesOutsideKnownRanges: a fault at an address no mmap and no
// /proc/PID/maps line covers is a first touch of no site in the unknown
// mapping, and a later one an access; once the maps show the range (read
// again next round), the next first touch there is in it, though the same
// thread's last answer for those addresses was the unknown mapping.
func TestPagesOutsideKnownRanges(t *testing.T) {
	sb := newSyscallRig(t)
	a, fault, step := sb.a, sb.fault, sb.step
	pg := a.pageSize
	const base = 0x7f0000000000
	step(fault(base), fault(base+pg), fault(base))
	if a.totals.FirstTouch != 2 || a.totals.Local != 1 {
		t.Fatalf("totals %+v, want 2 first touches and 1 access", a.totals)
	}
	if m := a.mp.list[regionUnknown].Metrics; m.FirstTouch != 2 || a.al.sites[0].metrics.FirstTouch != 2 {
		t.Errorf("unknown mapping %+v, no site %+v; want both 2 first touches", m, a.al.sites[0].metrics)
	}
	fakeOf(t, a).maps[rigPid] = fmt.Sprintf("%x-%x rw-p 00000000 00:00 0 \n", base, base+16*pg)
	step(fault(base + 2*pg))
	var anon uint64
	for _, m := range a.mp.list {
		if m.Kind == "anon" {
			anon += m.Metrics.FirstTouch
		}
	}
	if anon != 1 {
		t.Errorf("%d first touches in anonymous memory, want the one after the maps showed it", anon)
	}
}

// TestHugeRegionAfterLoss: a base page of a region found to be a huge page
// is an access when it faults (its fault was counted with the region), but
// after a loss it is suspect like any page known from before; a page
// touched after the loss in the same chunk as pages from before is not.
func TestHugeRegionAfterLoss(t *testing.T) {
	a, pid, _ := ownPageOnTwoNodes(t, "0")
	pg := a.pageSize
	const huge, base = 0x7f0000200000, 0x7f0000400000
	tm := uint64(10)
	fault := func(addr uint64) {
		tm++
		a.batch.add(rawSample{ip: 1, addr: addr, time: tm, pid: pid, tid: pid, cpu: 0})
		a.handleBatch()
	}
	a.pg.setHuge(pageKey{pid, huge}, hugeState{node: 0, epoch: a.lossEpoch})
	fault(huge + 7*pg) // in the huge page: an access
	fault(base)        // first touches
	fault(base + pg)
	if a.totals.Local != 1 || a.totals.FirstTouch != 2 {
		t.Fatalf("before the loss: %+v, want 1 access and 2 first touches", a.totals)
	}
	body := make([]byte, 16)
	body[8] = 3
	a.record(rec(unix.PERF_RECORD_LOST, body))
	fault(huge + 9*pg) // in the huge page found before the loss: suspect
	fault(base)        // known from before: suspect
	fault(base + 2*pg) // new, in the same chunk: a first touch
	fault(base + 2*pg) // known since the loss: an access
	if want := (Metrics{FirstTouch: 3, Local: 2}); a.totals != want || a.afterLoss != 2 {
		t.Errorf("after the loss: %+v, %d after loss; want %+v and 2", a.totals, a.afterLoss, want)
	}
}

// BenchmarkPageTable measures the page table alone on a storm's pattern:
// 8 threads each touching its own 64 MiB in turn, then unmapping it.
func BenchmarkPageTable(b *testing.B) {
	const threads, size = 8, 64 << 20
	ps := uint64(os.Getpagesize())
	tr := newPageTracker(ps)
	b.ReportAllocs()
	for b.Loop() {
		for off := uint64(0); off < size; off += ps {
			for th := range uint64(threads) {
				a := 0x7f0000000000 + th*size + off
				r, i := tr.region(1, a, true), tr.index(a)
				if _, ok := r.get(i); !ok {
					r.untouched(true)
					tr.put(r, i, pageState{node: 0, epoch: 1})
				}
			}
		}
		for th := range uint64(threads) {
			tr.free(1, 0x7f0000000000+th*size, 0x7f0000000000+(th+1)*size, nil)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*threads*size/int(ps)), "ns/page")
}

// TestThreadCache: threads whose tids share a slot of the thread cache
// (256 apart) each get their own state, faulting in turns.
func TestThreadCache(t *testing.T) {
	const pid = 1 << 23
	a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
	useFakeKernel(a)
	tids := []int32{pid, pid + 256, pid + 512}
	for i := range 30 {
		tid := tids[i%len(tids)]
		a.batch.add(rawSample{ip: 1, addr: 0x7f0000000000 + uint64(i)<<12, time: uint64(10 + i), pid: pid, tid: tid})
	}
	a.handleBatch()
	for _, tid := range tids {
		if th := a.th.byTID[tid]; th == nil || th.tid != tid || th.metrics.FirstTouch != 10 {
			t.Errorf("thread %d: %+v, want its 10 first touches", tid, th)
		}
	}
}
