package bench

import "golang.org/x/sys/cpu"

// The amd64 kernels are written in assembly (kernels_amd64.s): AVX-512
// and AVX2 where the CPU and the kernel support them, SSE2 (which every
// amd64 CPU has) otherwise: the Go compiler does not vectorise, and a
// scalar loop falls short of what the memory delivers on one core; nor
// can Go emit a non-temporal store. Each takes n, a multiple of block,
// elements; the arrays need no alignment, except the destination of a
// non-temporal store (ntAlign).

//go:noescape
func loadSSE2(a *float64, n int) float64

//go:noescape
func storeSSE2(a *float64, n int, v float64)

//go:noescape
func copySSE2(dst, src *float64, n int)

//go:noescape
func triadSSE2(a, b, c, d *float64, n int)

//go:noescape
func ntstoreSSE2(a *float64, n int, v float64)

//go:noescape
func copyntSSE2(dst, src *float64, n int)

//go:noescape
func triadntSSE2(a, b, c, d *float64, n int)

//go:noescape
func loadAVX2(a *float64, n int) float64

//go:noescape
func storeAVX2(a *float64, n int, v float64)

//go:noescape
func copyAVX2(dst, src *float64, n int)

//go:noescape
func triadAVX2(a, b, c, d *float64, n int)

//go:noescape
func ntstoreAVX2(a *float64, n int, v float64)

//go:noescape
func copyntAVX2(dst, src *float64, n int)

//go:noescape
func triadntAVX2(a, b, c, d *float64, n int)

//go:noescape
func loadAVX512(a *float64, n int) float64

//go:noescape
func storeAVX512(a *float64, n int, v float64)

//go:noescape
func copyAVX512(dst, src *float64, n int)

//go:noescape
func triadAVX512(a, b, c, d *float64, n int)

//go:noescape
func ntstoreAVX512(a *float64, n int, v float64)

//go:noescape
func copyntAVX512(dst, src *float64, n int)

//go:noescape
func triadntAVX512(a, b, c, d *float64, n int)

// kernelSet is one instruction set's kernels, in Kernel order.
type kernelSet struct {
	load           func(a *float64, n int) float64
	store, ntstore func(a *float64, n int, v float64)
	copy, copynt   func(dst, src *float64, n int)
	triad, triadnt func(a, b, c, d *float64, n int)
}

// kernelSets are indexed by ISA (an array: a map's lookup, on every piece
// an injector streams, costs more).
var kernelSets = [...]*kernelSet{
	ISASSE2:   {loadSSE2, storeSSE2, ntstoreSSE2, copySSE2, copyntSSE2, triadSSE2, triadntSSE2},
	ISAAVX2:   {loadAVX2, storeAVX2, ntstoreAVX2, copyAVX2, copyntAVX2, triadAVX2, triadntAVX2},
	ISAAVX512: {loadAVX512, storeAVX512, ntstoreAVX512, copyAVX512, copyntAVX512, triadAVX512, triadntAVX512},
}

// hasAVX2 and hasAVX512 come from CPUID, once; x/sys/cpu also checks (in
// XCR0) that the kernel saves the YMM, and the ZMM and mask, registers.
var (
	hasAVX2   = cpu.X86.HasAVX2
	hasAVX512 = cpu.X86.HasAVX512F
)

// Supported says whether this CPU runs the kernels in isa.
func Supported(isa ISA) bool {
	switch isa {
	case ISAGo, ISASSE2:
		return true
	case ISAAVX2:
		return hasAVX2
	case ISAAVX512:
		return hasAVX512
	}
	return false
}

// DefaultISA is the instruction set used when --isa is left out: AVX2
// where the CPU has it, SSE2 otherwise. Not AVX-512, even where the CPU
// has it: on the machine measured (docs/performance.md) the 512-bit
// kernels streamed 4 to 20% less than the 256-bit ones, and the AVX2
// kernels matched C, so 512 bits are for --isa avx512 to compare, as
// compilers prefer 256-bit vectors by default on most x86 targets.
func DefaultISA() ISA {
	if hasAVX2 {
		return ISAAVX2
	}
	return ISASSE2
}

func whyUnsupported(isa ISA) string {
	switch isa {
	case ISAAVX2:
		return "this CPU has no AVX2, or the kernel does not save the YMM registers"
	case ISAAVX512:
		return "this CPU has no AVX-512F, or the kernel does not save the ZMM registers"
	}
	return "not an instruction set of the kernels"
}

// blocks runs kernel k in isa's assembly over elements lo to hi, a
// multiple of block apart. Not instrumented by the race detector (see
// Kernel.runISA).
//
//go:norace
func blocks(isa ISA, k Kernel, a *[4][]float64, lo, hi int) float64 {
	ks, n, p := kernelSets[isa], hi-lo, k.ptrs(a, lo, hi)
	switch k {
	case Load:
		return ks.load(p[0], n)
	case Store:
		ks.store(p[0], n, storeValue)
	case NTStore:
		ks.ntstore(p[0], n, storeValue)
	case Copy:
		ks.copy(p[0], p[1], n)
	case CopyNT:
		ks.copynt(p[0], p[1], n)
	case Triad:
		ks.triad(p[0], p[1], p[2], p[3], n)
	case TriadNT:
		ks.triadnt(p[0], p[1], p[2], p[3], n)
	}
	return 0
}
