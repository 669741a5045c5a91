package bench

import (
	"runtime"
	"testing"
)

// kernelImpls are the implementations to check: the portable one always,
// and on amd64 both assembly variants this CPU can run.
func kernelImpls(t *testing.T) []struct {
	name string
	set  func()
} {
	impls := []struct {
		name string
		set  func()
	}{{"dispatch", func() {}}}
	if runtime.GOARCH == "amd64" {
		saved := useAVX2Flag()
		t.Cleanup(func() { setAVX2(saved) })
		impls = append(impls, struct {
			name string
			set  func()
		}{"sse2", func() { setAVX2(false) }})
		if saved {
			impls = append(impls, struct {
				name string
				set  func()
			}{"avx2", func() { setAVX2(true) }})
		}
	}
	return impls
}

// TestKernelsCompute checks each kernel's results element by element, for
// lengths with and without a tail beyond the assembly's blocks. The
// values are small integers, so every sum and product is exact whatever
// the order of the additions.
func TestKernelsCompute(t *testing.T) {
	for _, impl := range kernelImpls(t) {
		impl.set()
		for _, n := range []int{0, 1, 15, 16, 17, 64, 1000, 4099} {
			var a [4][]float64
			for i := range a {
				a[i] = make([]float64, n+3) // room past n: it must stay untouched
			}
			for i := range n + 3 {
				a[0][i] = -1
				a[1][i] = float64(i)
				a[2][i] = float64(i % 7)
				a[3][i] = float64(i%5) - 2
			}
			want := 0.0
			for i := range n {
				want += float64(i)
			}
			a1 := a
			a1[0] = a[1] // load sums a[0]
			if got := Load.run(&a1, n); got != want {
				t.Errorf("%s: load over %d: sum %v, want %v", impl.name, n, got, want)
			}
			Copy.run(&a, n)
			for i := range n + 3 {
				w := float64(i)
				if i >= n {
					w = -1
				}
				if a[0][i] != w {
					t.Fatalf("%s: copy of %d: a[%d] = %v, want %v", impl.name, n, i, a[0][i], w)
				}
			}
			Triad.run(&a, n)
			for i := range n + 3 {
				w := float64(i) + float64(i%7)*(float64(i%5)-2)
				if i >= n {
					w = -1
				}
				if a[0][i] != w {
					t.Fatalf("%s: triad of %d: a[%d] = %v, want b+c*d = %v", impl.name, n, i, a[0][i], w)
				}
			}
		}
	}
}

// TestStreamBytes: the bytes credited per element are STREAM's, the
// explicitly referenced ones: no write-allocate traffic.
func TestStreamBytes(t *testing.T) {
	for k, want := range map[Kernel]int{Load: 8, Copy: 16, Triad: 32} {
		if got := k.BytesPerElement(); got != want {
			t.Errorf("%s: %d bytes per element, want %d", k, got, want)
		}
	}
}

func TestParseKernel(t *testing.T) {
	for i, n := range KernelNames {
		if k, err := ParseKernel(n); err != nil || k != Kernel(i) || k.String() != n {
			t.Errorf("ParseKernel(%q) = %v, %v", n, k, err)
		}
	}
	if _, err := ParseKernel("nt-store"); err == nil {
		t.Error("nt-store: no error")
	}
}

func BenchmarkKernels(b *testing.B) {
	const n = 1 << 20
	var a [4][]float64
	for i := range a {
		a[i] = make([]float64, n)
	}
	for _, k := range []Kernel{Load, Copy, Triad} {
		b.Run(k.String(), func(b *testing.B) {
			b.SetBytes(int64(n * k.BytesPerElement()))
			for b.Loop() {
				k.run(&a, n)
			}
		})
	}
}
