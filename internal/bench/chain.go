package bench

import "unsafe"

// The latency chain. Each cache line of the buffer holds, in its first
// word, the address of the next line to load; following it is a chain of
// dependent loads, each of which must wait for the previous one to come
// back from memory. Hardware prefetchers guess the next address from the
// ones before: a stride inside a page, or the next line. The chain defeats
// them without MSRs by visiting the pages in a random order and, inside
// each page, its lines in a random order, so that neither the page nor the
// line that comes next can be guessed. A page's lines are visited together
// so that one TLB miss serves them all and the figure is the memory's, not
// the page walker's.
//
// The permutations come from splitmix64 with a fixed seed and the
// Fisher-Yates shuffle written out below, so that testdata/bench/chase.c,
// which does the same, builds exactly the same chain: numascope and C are
// compared over one chain.

// ChainPage is the unit whose order is shuffled: the base page, the most a
// hardware prefetcher follows a stream across.
const ChainPage = 4096

// ChainSeed seeds the chain's permutations (and chase.c's).
const ChainSeed = 0x6e756d6173636f70 // "numascop"

// rng is splitmix64 (Steele, Lea and Flood 2014): small, fast, and easy to
// write the same in C.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// shuffle fills p with 0..len(p)-1 in a random order (Fisher-Yates, from
// the end; the modulo's bias is far below what a latency figure could show).
func (r *rng) shuffle(p []uint32) {
	for i := range p {
		p[i] = uint32(i)
	}
	for i := len(p) - 1; i > 0; i-- {
		j := int(r.next() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
}

// BuildChain writes the chain into buf, whose length must be a multiple of
// ChainPage and line a power of two dividing it, and returns the address
// of its first line and its length in lines. Every line of buf is in the
// chain exactly once, and the last points back to the first: one cycle.
// buf must not move (memory from mmap, not the Go heap): it holds raw
// addresses into itself.
func BuildChain(buf []byte, line int, seed uint64) (start unsafe.Pointer, lines int) {
	pages := len(buf) / ChainPage
	perLine := ChainPage / line
	if pages == 0 || perLine == 0 || len(buf)%ChainPage != 0 || ChainPage%line != 0 {
		panic("bench: BuildChain: buffer not a whole number of pages, or line size not dividing a page")
	}
	base := uintptr(unsafe.Pointer(&buf[0]))
	words := unsafe.Slice((*uintptr)(unsafe.Pointer(&buf[0])), len(buf)/int(unsafe.Sizeof(uintptr(0))))
	r := rng{seed}
	pageOrder := make([]uint32, pages)
	r.shuffle(pageOrder)
	lineOrder := make([]uint32, perLine)
	first, prev := -1, -1 // byte offsets of the first and the last line written
	for _, pg := range pageOrder {
		r.shuffle(lineOrder)
		for _, l := range lineOrder {
			off := int(pg)*ChainPage + int(l)*line
			if prev >= 0 {
				words[prev/8] = base + uintptr(off)
			} else {
				first = off
			}
			prev = off
		}
	}
	words[prev/8] = base + uintptr(first)
	return unsafe.Pointer(&buf[first]), pages * perLine
}

// chase follows the chain from p for steps loads and returns where it
// stopped. Eight loads per turn of the loop keep the loop's own counting
// off the critical path; each load is one MOVQ (AX), AX whose address is
// the previous load's result, as in C (docs/bench.md shows the assembly).
// The loop has no call and allocates nothing.
//
//go:noinline
func chase(p unsafe.Pointer, steps int) unsafe.Pointer {
	for ; steps >= 8; steps -= 8 {
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
		p = *(*unsafe.Pointer)(p)
	}
	for ; steps > 0; steps-- {
		p = *(*unsafe.Pointer)(p)
	}
	return p
}
