package bench

import (
	"strings"
	"testing"
)

// TestISAWithoutAVX: on a CPU without AVX-512 (or without AVX2 either)
// the best set steps down, and asking for the missing one is one line
// naming the one to use. The CPUID flags are set as such a CPU's would be.
func TestISAWithoutAVX(t *testing.T) {
	saved2, saved512 := hasAVX2, hasAVX512
	t.Cleanup(func() { hasAVX2, hasAVX512 = saved2, saved512 })
	for _, c := range []struct {
		avx2 bool
		best ISA
	}{{true, ISAAVX2}, {false, ISASSE2}} {
		hasAVX2, hasAVX512 = c.avx2, false
		if BestISA() != c.best || KernelISA() != c.best.String() {
			t.Errorf("avx2 %v, no avx512: best %s, want %s", c.avx2, BestISA(), c.best)
		}
		_, err := ResolveISA(ISAAVX512)
		if err == nil || !strings.Contains(err.Error(), "no AVX-512F") || !strings.Contains(err.Error(), "use --isa "+c.best.String()) {
			t.Errorf("avx2 %v: --isa avx512: %v", c.avx2, err)
		}
		if got := SupportedISAs(); got[len(got)-1] != c.best {
			t.Errorf("avx2 %v: supported %v", c.avx2, got)
		}
	}
}
