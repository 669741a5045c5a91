package bench

import (
	"fmt"
	"strings"
	"unsafe"
)

// Kernel is a bandwidth kernel, as likwid-bench defines it, on float64
// arrays.
type Kernel int

// The kernels. Their bytes are counted by STREAM's rules: only the bytes
// the kernel explicitly references, 8 per array element read or written;
// the write-allocate reads that a cache adds for a store are not counted.
const (
	// Load reads one array: sum += A[i]. 8 bytes per element.
	Load Kernel = iota
	// Copy copies one array into another: A[i] = B[i]. 16 bytes.
	Copy
	// Triad is likwid-bench's triad: A[i] = B[i] + C[i]*D[i]. 32 bytes.
	Triad
	// Store writes one array: A[i] = s (likwid-bench's store). 8 bytes.
	Store
	// NTStore is Store with non-temporal (streaming) stores, which go to
	// memory without reading the line first (likwid-bench's store_mem).
	// 8 bytes.
	NTStore
	// CopyNT is Copy with non-temporal stores (likwid-bench's copy_mem).
	// 16 bytes.
	CopyNT
	// TriadNT is Triad with non-temporal stores (likwid-bench's
	// triad_mem). 32 bytes.
	TriadNT
)

// KernelNames are the kernels' names, in --kernel syntax: every kernel
// there is, whatever this CPU runs (CheckKernel says that).
var KernelNames = []string{"load", "copy", "triad", "store", "nt-store", "copy-nt", "triad-nt"}

// storeValue is what the store kernels write.
const storeValue = 1.0

// NonTemporal says whether the kernel writes with non-temporal stores.
func (k Kernel) NonTemporal() bool { return k == NTStore || k == CopyNT || k == TriadNT }

// Temporal is the kernel that does the same with ordinary stores.
func (k Kernel) Temporal() Kernel {
	switch k {
	case NTStore:
		return Store
	case CopyNT:
		return Copy
	case TriadNT:
		return Triad
	}
	return k
}

func (k Kernel) String() string {
	if int(k) < len(KernelNames) {
		return KernelNames[k]
	}
	return fmt.Sprintf("kernel(%d)", int(k))
}

// ParseKernel parses a --kernel value.
func ParseKernel(s string) (Kernel, error) {
	for i, n := range KernelNames {
		if s == n {
			return Kernel(i), nil
		}
	}
	return 0, fmt.Errorf("--kernel %q: unknown kernel; want one of %s", s, strings.Join(KernelNames, ", "))
}

// Arrays is how many arrays the kernel streams over.
func (k Kernel) Arrays() int {
	switch k {
	case Copy, CopyNT:
		return 2
	case Triad, TriadNT:
		return 4
	}
	return 1
}

// BytesPerElement is what STREAM counts for one element of the loop: 8
// bytes for each array read or written.
func (k Kernel) BytesPerElement() int { return 8 * k.Arrays() }

// block is how many elements the assembly kernels take per turn of their
// loop (128 bytes: two ZMM, four YMM or eight XMM registers); the Go code
// does the rest.
const block = 16

// ntAlign is the alignment of the destination of a non-temporal store:
// MOVNTPD needs 16 bytes, VMOVNTPD 32 (YMM) or 64 (ZMM). 64 serves all.
const ntAlign = 64

// run runs kernel k over the first n elements of the arrays (a[0] is
// written by the store kernels, copy and triad, the others read) in the
// best instruction set, and returns load's sum (0 for the others).
//
//go:norace
func (k Kernel) run(a *[4][]float64, n int) float64 { return k.runISA(DefaultISA(), a, n) }

// runISA is run in the instruction set isa, which must be Supported. It
// allocates nothing. The assembly takes whole blocks; the Go loops do the
// rest: the tail, and, for a non-temporal kernel, the head before the
// destination is aligned for its streaming stores (the bench's arrays are
// aligned already: only the tests' odd slices have a head).
//
// The path from an injector's piece to the assembly (this, goRange,
// blocks, ptrs, stream.run) is not instrumented by the race detector: its
// hooks at each call and access came to a fifth of a 32 KiB piece's time,
// and so of the injected bandwidth, in the tests (-race), where the
// fidelity tests measure this very code. The path touches only the calling
// thread's own arrays.
//
//go:norace
func (k Kernel) runISA(isa ISA, a *[4][]float64, n int) float64 {
	h := 0
	if k.NonTemporal() && n > 0 && isa != ISAGo {
		h = min(n, int((ntAlign-uintptr(unsafe.Pointer(&a[0][0]))%ntAlign)%ntAlign/8))
	}
	m := h + (n-h)&^(block-1)
	s := k.goRange(a, 0, h)
	if m > h {
		if isa == ISAGo {
			s += k.goRange(a, h, m)
		} else {
			s += blocks(isa, k, a, h, m)
		}
	}
	return s + k.goRange(a, m, n)
}

// goRange runs the portable kernel over elements lo to hi (ordinary
// stores for the non-temporal kernels: Go has no streaming store).
//
//go:norace
func (k Kernel) goRange(a *[4][]float64, lo, hi int) float64 {
	if hi <= lo {
		return 0
	}
	switch k {
	case Load:
		return loadGo(a[0][lo:hi])
	case Store, NTStore:
		storeGo(a[0][lo:hi], storeValue)
	case Copy, CopyNT:
		copyGo(a[0][lo:hi], a[1][lo:hi])
	case Triad, TriadNT:
		triadGo(a[0][lo:hi], a[1][lo:hi], a[2][lo:hi], a[3][lo:hi])
	}
	return 0
}

// ptrs checks that each of the kernel's arrays holds elements lo to hi
// and returns a pointer to element lo of each (nil past its arrays): the
// assembly is given only what the bounds check passed.
//
//go:norace
func (k Kernel) ptrs(a *[4][]float64, lo, hi int) (p [4]*float64) {
	for i := range k.Arrays() {
		_ = a[i][lo:hi][hi-lo-1]
		p[i] = &a[i][lo]
	}
	return p
}

// The portable kernels, for other architectures and for the tails.
// Four partial sums let the loads overlap (a single sum waits on each
// addition's latency), as the assembly does.

func loadGo(a []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i]
		s1 += a[i+1]
		s2 += a[i+2]
		s3 += a[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func storeGo(a []float64, v float64) {
	for i := range a {
		a[i] = v
	}
}

func copyGo(dst, src []float64) {
	copy(dst, src)
}

func triadGo(a, b, c, d []float64) {
	n := len(a)
	b, c, d = b[:n], c[:n], d[:n] // one bounds check here, none in the loop
	for i := range n {
		a[i] = b[i] + c[i]*d[i]
	}
}
