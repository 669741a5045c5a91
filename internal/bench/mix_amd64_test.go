package bench

import "testing"

// checkMixAsm checks both assembly variants this CPU can run.
func checkMixAsm(t *testing.T) {
	sse := func(a []float64, r, w int) float64 { return mixSSE2(&a[0], len(a)/((r+w)*block), r, w) }
	checkMix(t, "sse2", sse)
	if mixAVX2OK {
		avx := func(a []float64, r, w int) float64 { return mixAVX2(&a[0], len(a)/((r+w)*block), r, w) }
		checkMix(t, "avx2", avx)
	}
}
