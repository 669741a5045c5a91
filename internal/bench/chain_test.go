package bench

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapped returns size bytes of anonymous memory outside the Go heap.
func mapped(t testing.TB, size int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

// TestChainIsOneCycle follows the chain: every line exactly once, back to
// the start after the last, each page's lines together, the pages and the
// lines inside them out of order.
func TestChainIsOneCycle(t *testing.T) {
	for _, c := range []struct{ size, line int }{{ChainPage, 64}, {64 * ChainPage, 64}, {37 * ChainPage, 128}} {
		buf := mapped(t, c.size)
		start, lines := BuildPageLocalChain(buf, c.line, ChainSeed)
		if lines != c.size/c.line {
			t.Fatalf("size %d line %d: %d lines, want %d", c.size, c.line, lines, c.size/c.line)
		}
		base := uintptr(unsafe.Pointer(&buf[0]))
		seen := make([]bool, lines)
		perPage := ChainPage / c.line
		p := start
		inOrder, pagesInOrder := 0, 0
		prevOff := -1
		for i := 0; i < lines; i++ {
			off := int(uintptr(p) - base)
			if off < 0 || off >= c.size || off%c.line != 0 {
				t.Fatalf("step %d: address %p is not a line of the buffer", i, p)
			}
			if seen[off/c.line] {
				t.Fatalf("step %d: line %d visited twice (%d lines)", i, off/c.line, lines)
			}
			seen[off/c.line] = true
			if i%perPage != 0 && off/ChainPage != prevOff/ChainPage {
				t.Fatalf("step %d: left page %d before visiting all its lines", i, prevOff/ChainPage)
			}
			if prevOff >= 0 && off == prevOff+c.line {
				inOrder++
			}
			if i%perPage == 0 && prevOff >= 0 && off/ChainPage == prevOff/ChainPage+1 {
				pagesInOrder++
			}
			prevOff = off
			p = *(*unsafe.Pointer)(p)
		}
		if p != start {
			t.Fatalf("size %d: after %d steps the chain is at %p, not back at the start %p", c.size, lines, p, start)
		}
		// A random order has about one step in perPage to the next line.
		if inOrder > 3*lines/perPage+4 {
			t.Errorf("size %d: %d of %d steps go to the next line: not shuffled", c.size, inOrder, lines)
		}
		if pages := c.size / ChainPage; pages > 8 && pagesInOrder > pages/4 {
			t.Errorf("size %d: %d of %d pages follow their predecessor: not shuffled", c.size, pagesInOrder, pages)
		}
	}
}

// TestChaseFollowsChain: chase ends where following the chain by hand
// does, for step counts around its unrolled loop.
func TestChaseFollowsChain(t *testing.T) {
	buf := mapped(t, 8*ChainPage)
	start, _ := BuildPageLocalChain(buf, 64, 42)
	for _, steps := range []int{0, 1, 7, 8, 9, 100, 513} {
		want := start
		for range steps {
			want = *(*unsafe.Pointer)(want)
		}
		if got := chase(start, steps); got != want {
			t.Errorf("chase %d steps: %p, want %p", steps, got, want)
		}
	}
}

// BenchmarkChase is the pointer chase over a chain beyond the caches, in
// ns per load: compare with testdata/bench/chase.c (scripts/bench-numa).
func BenchmarkChase(b *testing.B) {
	buf := mapped(b, 256<<20)
	_ = unix.Madvise(buf, unix.MADV_HUGEPAGE)
	start, lines := BuildPageLocalChain(buf, 64, ChainSeed)
	p := chase(start, lines)
	b.ResetTimer()
	p = chase(p, b.N)
	chaseSink = uintptr(p)
}
