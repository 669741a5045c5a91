package bench

import (
	"strings"
	"testing"
)

// TestDefaultISA: AVX2 is the default where the CPU has it, AVX-512 or
// not (docs/performance.md says why); without AVX2, SSE2. Asking for a set
// the CPU lacks is one line naming the one to use. The CPUID flags are set
// as such CPUs' would be.
func TestDefaultISA(t *testing.T) {
	saved2, saved512 := hasAVX2, hasAVX512
	t.Cleanup(func() { hasAVX2, hasAVX512 = saved2, saved512 })
	for _, c := range []struct {
		avx2, avx512 bool
		def, widest  ISA
	}{{true, true, ISAAVX2, ISAAVX512}, {true, false, ISAAVX2, ISAAVX2}, {false, false, ISASSE2, ISASSE2}} {
		hasAVX2, hasAVX512 = c.avx2, c.avx512
		if DefaultISA() != c.def || KernelISA() != c.def.String() {
			t.Errorf("avx2 %v, avx512 %v: default %s, want %s", c.avx2, c.avx512, DefaultISA(), c.def)
		}
		if got := SupportedISAs(); got[len(got)-1] != c.widest {
			t.Errorf("avx2 %v, avx512 %v: supported %v, want up to %s", c.avx2, c.avx512, got, c.widest)
		}
		if c.avx512 {
			continue
		}
		_, err := ResolveISA(ISAAVX512)
		if err == nil || !strings.Contains(err.Error(), "no AVX-512F") || !strings.Contains(err.Error(), "use --isa "+c.widest.String()) || strings.Contains(err.Error(), "\n") {
			t.Errorf("avx2 %v: --isa avx512: %v", c.avx2, err)
		}
	}
}
