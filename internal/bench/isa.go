package bench

import (
	"fmt"
	"runtime"
	"strings"
)

// ISA is an instruction set the bandwidth kernels are written in. Which
// of them the CPU and the kernel support is asked of CPUID at run time
// (Supported); DefaultISA is the one used unless --isa picks another, to
// compare them on one machine.
type ISA int

// The instruction sets, from the portable Go loops up. ISAAuto, the zero
// value, stands for DefaultISA.
const (
	ISAAuto ISA = iota
	// ISAGo is the portable Go loops: every architecture, no
	// non-temporal stores.
	ISAGo
	// ISASSE2 is 16-byte XMM registers and MOVNTPD, which every amd64
	// CPU has.
	ISASSE2
	// ISAAVX2 is 32-byte YMM registers (AVX2 CPUs whose kernel saves
	// them).
	ISAAVX2
	// ISAAVX512 is 64-byte ZMM registers (AVX-512F CPUs whose kernel
	// saves them).
	ISAAVX512
)

// ISANames are the --isa values, ISA by ISA.
var ISANames = []string{"auto", "go", "sse2", "avx2", "avx512"}

func (i ISA) String() string {
	if int(i) >= 0 && int(i) < len(ISANames) {
		return ISANames[i]
	}
	return fmt.Sprintf("isa(%d)", int(i))
}

// ParseISA parses --isa ("" is auto); whether this CPU has it is
// Supported's question.
func ParseISA(s string) (ISA, error) {
	if s == "" {
		return ISAAuto, nil
	}
	for i, n := range ISANames {
		if s == n {
			return ISA(i), nil
		}
	}
	return 0, fmt.Errorf("--isa %q: unknown instruction set; want one of %s", s, strings.Join(ISANames, ", "))
}

// KernelISA names the instructions the bandwidth kernels use by default.
func KernelISA() string { return DefaultISA().String() }

// ResolveISA turns ISAAuto into DefaultISA and refuses an instruction set
// this CPU (or this build) lacks, naming what to use instead.
func ResolveISA(i ISA) (ISA, error) {
	if i == ISAAuto {
		return DefaultISA(), nil
	}
	if !Supported(i) {
		var has []string
		for _, x := range SupportedISAs() {
			has = append(has, x.String())
		}
		return 0, fmt.Errorf("--isa %s: %s; use --isa %s (this machine runs %s) or leave --isa out (%s)", i, whyUnsupported(i), has[len(has)-1], strings.Join(has, ", "), DefaultISA())
	}
	return i, nil
}

// CheckKernel says whether kernel k can run in isa (resolved), and what
// to use instead when it cannot: the non-temporal kernels need streaming
// stores, which only the assembly has.
func CheckKernel(k Kernel, isa ISA) error {
	if !k.NonTemporal() || isa != ISAGo {
		return nil
	}
	if Supported(ISASSE2) {
		return fmt.Errorf("--kernel %s needs non-temporal stores, which the portable go kernels lack: leave --isa out (%s here) or use --kernel %s", k, DefaultISA(), k.Temporal())
	}
	return fmt.Errorf("--kernel %s needs non-temporal stores, which numascope writes in amd64 assembly only (this is %s): use --kernel %s", k, runtime.GOARCH, k.Temporal())
}

// SupportedISAs lists the instruction sets this machine can run, the
// portable Go first.
func SupportedISAs() []ISA {
	var out []ISA
	for i := ISAGo; i <= ISAAVX512; i++ {
		if Supported(i) {
			out = append(out, i)
		}
	}
	return out
}
