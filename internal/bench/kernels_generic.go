//go:build !amd64

package bench

// Without assembly the blocks are the portable kernels.

// KernelISA names the instructions the bandwidth kernels use.
func KernelISA() string { return "go" }

func loadBlocks(a []float64) float64   { return loadGo(a) }
func copyBlocks(dst, src []float64)    { copyGo(dst, src) }
func triadBlocks(a, b, c, d []float64) { triadGo(a, b, c, d) }
