package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"unsafe"
)

// The latency chains. Each cache line of the buffer holds, in its first
// word, the address of the next line to load; following it is a chain of
// dependent loads, each of which must wait for the previous one to come
// back from memory.
//
// The default chain (ChainRandom, BuildRandomChain) is one uniformly
// random cycle over every line of the buffer (Sattolo's algorithm): each
// load goes to any line with the same chance, so no prefetcher can guess
// it, no DRAM row is left open for it, and it pays the TLB miss a random
// access pays. This is what Intel MLC (prefetchers off) and lmbench's
// lat_mem_rd with a random pattern measure as the idle latency, and what
// testdata/bench/refchase.c, written independently, measures
// (TestIdleLatencyMatchesReference).
//
// The page-local chain (ChainPageLocal, BuildPageLocalChain) visits the
// pages in a random order and, inside each page, all its lines together in
// a random order. It measures something else: a load whose DRAM row is
// usually still open and whose neighbours the adjacent-line and streamer
// prefetchers partly fetched, with one TLB miss per 64 loads. It is a
// fraction of the DRAM latency (a third on the Xeon of issue 30), so it is
// an option (--chain page-local), never the default.
//
// The page-local permutations come from splitmix64 with a fixed seed and
// the Fisher-Yates shuffle written out below, so that
// testdata/bench/chase.c, which does the same, builds exactly the same
// chain (TestChainMatchesC).

// Chain is the order of a latency chain (--chain).
type Chain int

const (
	// ChainRandom is one uniformly random cycle over every line.
	ChainRandom Chain = iota
	// ChainPageLocal visits each page's lines together.
	ChainPageLocal
)

// ChainNames are --chain's values, ChainRandom's first.
var ChainNames = []string{"random", "page-local"}

func (c Chain) String() string {
	if c == ChainPageLocal {
		return "page-local"
	}
	return "random"
}

// ParseChain parses --chain.
func ParseChain(s string) (Chain, error) {
	switch s {
	case "random", "":
		return ChainRandom, nil
	case "page-local":
		return ChainPageLocal, nil
	}
	return 0, fmt.Errorf("--chain %q: want random (every line in one uniformly random cycle: the DRAM latency) or page-local (each page's lines together: open rows and prefetchers help)", s)
}

// describe says in a phrase what the chain measures, for the output.
func (c Chain) describe() string {
	if c == ChainPageLocal {
		return "page-local chain (each 4 KiB page's lines together, pages in random order: open DRAM rows and prefetchers help, so this is not the DRAM latency)"
	}
	return "random chain (every line in one uniformly random cycle, Sattolo's)"
}

// maxChainLines bounds the lines of a random chain: its successors are
// numbered with uint32 while it is built (256 GiB of 64-byte lines).
const maxChainLines = math.MaxUint32

// BuildRandomChain writes into buf, whose length must be a multiple of
// line (a power of two of at least 8 bytes), one cycle through all its
// lines in a uniformly random order, and returns its first line and its
// length in lines. It runs Sattolo's algorithm on succ, the successor of
// each line, which it resizes and returns for the next call to reuse (a
// buffer of 16 GiB needs 1 GiB of it); the random numbers come from
// math/rand/v2's PCG seeded with seed, so a chain is reproducible. buf
// must not move (memory from mmap): it holds raw addresses into itself.
func BuildRandomChain(buf []byte, line int, seed uint64, succ []uint32) (start unsafe.Pointer, lines int, scratch []uint32) {
	n := len(buf) / line
	if n < 2 || len(buf)%line != 0 || line < 8 || line&(line-1) != 0 || uint64(n) > maxChainLines {
		panic("bench: BuildRandomChain: buffer not a whole number of lines, or too big")
	}
	succ = slices.Grow(succ[:0], n)[:n]
	for i := range succ {
		succ[i] = uint32(i)
	}
	r := rand.New(rand.NewPCG(seed, ^seed))
	for i := n - 1; i > 0; i-- {
		j := r.Uint32N(uint32(i)) // j < i: Sattolo, one cycle
		succ[i], succ[j] = succ[j], succ[i]
	}
	base := uintptr(unsafe.Pointer(&buf[0]))
	stride := line / int(unsafe.Sizeof(uintptr(0)))
	words := unsafe.Slice((*uintptr)(unsafe.Pointer(&buf[0])), len(buf)/int(unsafe.Sizeof(uintptr(0))))
	for i, s := range succ {
		words[i*stride] = base + uintptr(s)*uintptr(line)
	}
	return unsafe.Pointer(&buf[0]), n, succ
}

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

// BuildPageLocalChain writes the page-local chain into buf, whose length must be a multiple of
// ChainPage and line a power of two dividing it, and returns the address
// of its first line and its length in lines. Every line of buf is in the
// chain exactly once, and the last points back to the first: one cycle.
// buf must not move (memory from mmap, not the Go heap): it holds raw
// addresses into itself.
func BuildPageLocalChain(buf []byte, line int, seed uint64) (start unsafe.Pointer, lines int) {
	pages := len(buf) / ChainPage
	perLine := ChainPage / line
	if pages == 0 || perLine == 0 || len(buf)%ChainPage != 0 || ChainPage%line != 0 {
		panic("bench: BuildPageLocalChain: buffer not a whole number of pages, or line size not dividing a page")
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
// Nor in a -race build: there the compiler would put two calls before each
// load, the race detector's read hook and checkptr's alignment check (-race
// turns checkptr on), and the chase would time them too. On an AMD EPYC
// build machine that read 5-12% above the C reference (TestIdleLatency-
// MatchesReference, 138-143 against 131-135 ns), where a build without
// -race read 0-1% from it. The buffer is private to the chasing thread and
// the chain's pointers are built aligned, so neither check has anything to
// find here.
//
//go:noinline
//go:norace
//go:nocheckptr
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
