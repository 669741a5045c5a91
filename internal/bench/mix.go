package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// Mix is a read:write mix (--mix R:W), as Intel MLC offers them: of every
// R+W blocks of 128 bytes a thread streams over, it reads the first R and
// writes the next W, in one sequential pass over a single array. Every
// element is referenced exactly once per pass, so STREAM's count is 8
// bytes per element whatever the mix; the share of reads among them is
// R/(R+W). Reads and writes are the program's own: a store to a line not in
// the cache also makes the cache read it first (write-allocate), which
// STREAM's rules do not count, so the bus carries more reads than R:W says.
type Mix struct {
	Reads, Writes int
}

// maxMix bounds R and W: beyond 16 blocks of one kind in a row the mix is
// a stream of one kind with an occasional other.
const maxMix = 16

// ParseMix parses --mix: R:W with small whole numbers, reduced to lowest
// terms (2:2 is 1:1).
func ParseMix(s string) (Mix, error) {
	bad := func(why string) (Mix, error) {
		return Mix{}, fmt.Errorf("--mix %q: %s; want reads:writes as whole numbers from 0 to %d, like 1:0 (all reads), 3:1, 2:1, 1:1 or 0:1 (all writes)", s, why, maxMix)
	}
	r, w, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return bad("no colon")
	}
	rd, err1 := strconv.Atoi(strings.TrimSpace(r))
	wr, err2 := strconv.Atoi(strings.TrimSpace(w))
	switch {
	case err1 != nil || err2 != nil:
		return bad("not two whole numbers")
	case rd < 0 || wr < 0 || rd > maxMix || wr > maxMix:
		return bad("out of range")
	case rd == 0 && wr == 0:
		return bad("neither reads nor writes")
	}
	g := gcd(rd, wr)
	return Mix{rd / g, wr / g}, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (m Mix) String() string { return strconv.Itoa(m.Reads) + ":" + strconv.Itoa(m.Writes) }

// group is the elements of one turn of the mix: R+W blocks.
func (m Mix) group() int { return (m.Reads + m.Writes) * block }

// run streams the mix over the first n elements of a, n a multiple of
// group, and returns the sum of what it read (kept by the caller, so the
// loads are not dead code). Written elements get partial sums.
func (m Mix) run(a []float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return mixBlocks(a[:n], m.Reads, m.Writes)
}

// mixGo is the portable mix: per group, R blocks summed, then W blocks
// written with the sum so far.
func mixGo(a []float64, reads, writes int) float64 {
	s := 0.0
	for g := 0; g+(reads+writes)*block <= len(a); g += (reads + writes) * block {
		s += loadGo(a[g : g+reads*block])
		w := a[g+reads*block : g+(reads+writes)*block]
		for i := range w {
			w[i] = s
		}
	}
	return s
}

// stream is what the bandwidth threads and the injectors of loaded latency
// run: a kernel, or a read:write mix when Mix is set.
type stream struct {
	kernel Kernel
	mix    *Mix
	// isa is the kernel's instruction set (ISAAuto: the default); a mix
	// picks its own (AVX2, else SSE2).
	isa ISA
}

// Name is the kernel's name, "mix" for a read:write mix.
func (s stream) Name() string {
	if s.mix != nil {
		return "mix"
	}
	return s.kernel.String()
}

// MixName is the mix (R:W), "" for a kernel.
func (s stream) MixName() string {
	if s.mix != nil {
		return s.mix.String()
	}
	return ""
}

// arrays is how many arrays it streams over; a mix reads and writes one.
func (s stream) arrays() int {
	if s.mix != nil {
		return 1
	}
	return s.kernel.Arrays()
}

// bytesPerElement is STREAM's count for one element of the loop.
func (s stream) bytesPerElement() int { return 8 * s.arrays() }

// granule is what each thread's part of an array is a multiple of: the
// assembly's block, or a whole group of the mix.
func (s stream) granule() int {
	if s.mix != nil {
		return s.mix.group()
	}
	return block
}

// initial is the value array a starts with (see bandwidth's initial).
func (s stream) initial(a int) float64 {
	if s.mix != nil || s.kernel == Load {
		return 1
	}
	return initial[a]
}

// run runs over the first n elements (a multiple of granule) of the arrays.
//
//go:norace
func (s stream) run(a *[4][]float64, n int) float64 {
	if s.mix != nil {
		return s.mix.run(a[0], n)
	}
	if s.isa == ISAAuto {
		return s.kernel.run(a, n)
	}
	return s.kernel.runISA(s.isa, a, n)
}
