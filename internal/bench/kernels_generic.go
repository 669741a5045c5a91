//go:build !amd64

package bench

// Without assembly only the portable kernels run; the non-temporal ones
// cannot (CheckKernel).

// Supported says whether this CPU runs the kernels in isa.
func Supported(isa ISA) bool { return isa == ISAGo }

// DefaultISA is the instruction set used when --isa is left out.
func DefaultISA() ISA { return ISAGo }

func whyUnsupported(ISA) string {
	return "numascope's assembly kernels are written for amd64 only"
}

//go:norace
func blocks(_ ISA, k Kernel, a *[4][]float64, lo, hi int) float64 { return k.goRange(a, lo, hi) }
