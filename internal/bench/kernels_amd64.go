package bench

import "golang.org/x/sys/cpu"

// The amd64 kernels are written in assembly (kernels_amd64.s), in AVX2
// where the CPU and the kernel support it and in SSE2 (which every amd64
// CPU has) otherwise: the Go compiler does not vectorise, and a scalar
// loop falls short of what the memory delivers on one core. Each takes
// n, a multiple of block, elements; the arrays need no alignment.

//go:noescape
func loadAVX2(a *float64, n int) float64

//go:noescape
func copyAVX2(dst, src *float64, n int)

//go:noescape
func triadAVX2(a, b, c, d *float64, n int)

//go:noescape
func loadSSE2(a *float64, n int) float64

//go:noescape
func copySSE2(dst, src *float64, n int)

//go:noescape
func triadSSE2(a, b, c, d *float64, n int)

// useAVX2 is chosen once, by CPUID (x/sys/cpu also checks that the
// kernel saves the YMM registers).
var useAVX2 = cpu.X86.HasAVX2

// KernelISA names the instructions the bandwidth kernels use.
func KernelISA() string {
	if useAVX2 {
		return "avx2"
	}
	return "sse2"
}

func loadBlocks(a []float64) float64 {
	if useAVX2 {
		return loadAVX2(&a[0], len(a))
	}
	return loadSSE2(&a[0], len(a))
}

func copyBlocks(dst, src []float64) {
	_ = src[len(dst)-1]
	if useAVX2 {
		copyAVX2(&dst[0], &src[0], len(dst))
		return
	}
	copySSE2(&dst[0], &src[0], len(dst))
}

func triadBlocks(a, b, c, d []float64) {
	n := len(a)
	_, _, _ = b[n-1], c[n-1], d[n-1]
	if useAVX2 {
		triadAVX2(&a[0], &b[0], &c[0], &d[0], n)
		return
	}
	triadSSE2(&a[0], &b[0], &c[0], &d[0], n)
}
