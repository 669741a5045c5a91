package bench

import (
	"fmt"
	"strings"
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
)

// KernelNames are the kernels' names, in --kernel syntax.
var KernelNames = []string{"load", "copy", "triad"}

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
	return 0, fmt.Errorf("--kernel %q: unknown kernel; want one of %s (nt-store is not written yet)", s, strings.Join(KernelNames, ", "))
}

// Arrays is how many arrays the kernel streams over.
func (k Kernel) Arrays() int {
	switch k {
	case Copy:
		return 2
	case Triad:
		return 4
	}
	return 1
}

// BytesPerElement is what STREAM counts for one element of the loop: 8
// bytes for each array read or written.
func (k Kernel) BytesPerElement() int { return 8 * k.Arrays() }

// block is how many elements the assembly kernels take per turn of their
// loop (four 32-byte registers); the Go code does the rest.
const block = 16

// run runs kernel k over the first n elements of the arrays (a[0] is
// written by copy and triad, the others read) and returns load's sum (0
// for the others). It allocates nothing.
func (k Kernel) run(a *[4][]float64, n int) float64 {
	m := n &^ (block - 1)
	switch k {
	case Load:
		s := 0.0
		if m > 0 {
			s = loadBlocks(a[0][:m])
		}
		return s + loadGo(a[0][m:n])
	case Copy:
		if m > 0 {
			copyBlocks(a[0][:m], a[1][:m])
		}
		copyGo(a[0][m:n], a[1][m:n])
	case Triad:
		if m > 0 {
			triadBlocks(a[0][:m], a[1][:m], a[2][:m], a[3][:m])
		}
		triadGo(a[0][m:n], a[1][m:n], a[2][m:n], a[3][m:n])
	}
	return 0
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
