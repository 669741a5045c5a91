package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestKernelsCompute checks each kernel's results element by element, in
// every instruction set this CPU runs (the portable Go included), against
// the Go reference: for lengths with and without a tail beyond the
// assembly's blocks, and at every 8-byte offset from a 64-byte boundary,
// so that the non-temporal kernels' aligned head is exercised too. The
// values are small integers, so every sum and product is exact whatever
// the order of the additions.
func TestKernelsCompute(t *testing.T) {
	isas := SupportedISAs()
	if runtime.GOARCH == "amd64" && len(isas) < 2 {
		t.Fatalf("amd64 runs %v, want the sse2 assembly at least", isas)
	}
	for _, isa := range isas {
		for _, n := range []int{0, 1, 7, 15, 16, 17, 64, 100, 1000, 4099} {
			for off := range 8 {
				checkKernels(t, isa, n, off)
			}
		}
	}
}

// checkKernels runs every kernel in isa over n elements starting off
// float64s past a 64-byte boundary, with sentinels around them.
func checkKernels(t *testing.T, isa ISA, n, off int) {
	t.Helper()
	var a [4][]float64
	for i := range a {
		b := aligned64(n + off + 11)
		a[i] = b[off : off+n+3] // room past n: it must stay untouched
	}
	reset := func() {
		for i := range n + 3 {
			a[0][i] = -1
			a[1][i] = float64(i)
			a[2][i] = float64(i % 7)
			a[3][i] = float64(i%5) - 2
		}
	}
	check := func(k Kernel, want func(i int) float64) {
		t.Helper()
		for i := range n + 3 {
			w := want(i)
			if i >= n {
				w = -1
			}
			if a[0][i] != w {
				t.Fatalf("%s %s of %d at offset %d: a[%d] = %v, want %v", isa, k, n, off, i, a[0][i], w)
			}
		}
	}
	reset()
	want := 0.0
	for i := range n {
		want += float64(i)
	}
	a1 := a
	a1[0] = a[1] // load sums a[0]
	if got := Load.runISA(isa, &a1, n); got != want {
		t.Errorf("%s load over %d at offset %d: sum %v, want %v", isa, n, off, got, want)
	}
	for _, k := range []Kernel{Copy, CopyNT} {
		if CheckKernel(k, isa) != nil {
			continue
		}
		reset()
		k.runISA(isa, &a, n)
		check(k, func(i int) float64 { return float64(i) })
	}
	for _, k := range []Kernel{Triad, TriadNT} {
		if CheckKernel(k, isa) != nil {
			continue
		}
		reset()
		k.runISA(isa, &a, n)
		check(k, func(i int) float64 { return float64(i) + float64(i%7)*(float64(i%5)-2) })
	}
	for _, k := range []Kernel{Store, NTStore} {
		if CheckKernel(k, isa) != nil {
			continue
		}
		reset()
		k.runISA(isa, &a, n)
		check(k, func(int) float64 { return storeValue })
	}
}

// aligned64 returns n float64s starting on a 64-byte boundary.
func aligned64(n int) []float64 {
	b := make([]float64, n+8)
	skip := int((64 - uintptr(unsafe.Pointer(&b[0]))%64) % 64 / 8)
	return b[skip : skip+n]
}

// TestCheckKernel: the non-temporal kernels need the assembly; on amd64
// every instruction set but the portable Go has them, elsewhere none
// does, and the error says what to use instead.
func TestCheckKernel(t *testing.T) {
	for _, k := range []Kernel{NTStore, CopyNT, TriadNT} {
		err := CheckKernel(k, ISAGo)
		if err == nil || !strings.Contains(err.Error(), "--kernel "+k.Temporal().String()) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s in go: %v, want a line naming --kernel %s", k, err, k.Temporal())
		}
		for _, isa := range SupportedISAs() {
			if isa != ISAGo {
				if err := CheckKernel(k, isa); err != nil {
					t.Errorf("%s in %s: %v", k, isa, err)
				}
			}
		}
	}
	for _, k := range []Kernel{Load, Copy, Triad, Store} {
		if err := CheckKernel(k, ISAGo); err != nil {
			t.Errorf("%s in go: %v", k, err)
		}
	}
}

// TestResolveISA: auto is the best this CPU has; one it lacks is refused
// with the one to use; the CPU's own flags decide (/proc/cpuinfo agrees
// with CPUID on Linux).
func TestResolveISA(t *testing.T) {
	if isa, err := ResolveISA(ISAAuto); err != nil || isa != DefaultISA() || !Supported(isa) {
		t.Errorf("auto: %v, %v (best %v)", isa, err, DefaultISA())
	}
	for i := ISAGo; i <= ISAAVX512; i++ {
		got, err := ResolveISA(i)
		if Supported(i) != (err == nil) || (err == nil && got != i) {
			t.Errorf("%s: %v, %v (supported %v)", i, got, err, Supported(i))
		}
		has := SupportedISAs()
		if err != nil && !strings.Contains(err.Error(), "use --isa "+has[len(has)-1].String()) {
			t.Errorf("%s: %v, want it to name --isa %s", i, err, has[len(has)-1])
		}
	}
	if runtime.GOARCH != "amd64" {
		if DefaultISA() != ISAGo {
			t.Errorf("%s: best %s, want go", runtime.GOARCH, DefaultISA())
		}
		return
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo to compare CPUID with")
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	if Supported(ISAAVX2) != flags["avx2"] || Supported(ISAAVX512) != flags["avx512f"] {
		t.Errorf("avx2 %v, avx512 %v; /proc/cpuinfo has avx2 %v, avx512f %v", Supported(ISAAVX2), Supported(ISAAVX512), flags["avx2"], flags["avx512f"])
	}
	if _, err := ParseISA("avx1024"); err == nil {
		t.Error("avx1024 parsed")
	}
}

// TestStreamBytes: the bytes credited per element are STREAM's, the
// explicitly referenced ones: no write-allocate traffic.
func TestStreamBytes(t *testing.T) {
	for k, want := range map[Kernel]int{Load: 8, Copy: 16, Triad: 32, Store: 8, NTStore: 8, CopyNT: 16, TriadNT: 32} {
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
	if len(KernelNames) != int(TriadNT)+1 {
		t.Errorf("%d kernel names for %d kernels", len(KernelNames), TriadNT+1)
	}
	if _, err := ParseKernel("nt_store"); err == nil || !strings.Contains(err.Error(), strings.Join(KernelNames, ", ")) {
		t.Errorf("nt_store: %v, want the list of kernels", err)
	}
}

func BenchmarkKernels(b *testing.B) {
	const n = 1 << 20
	var a [4][]float64
	for i := range a {
		a[i] = aligned64(n)
	}
	for _, isa := range SupportedISAs() {
		for k := range Kernel(len(KernelNames)) {
			if CheckKernel(k, isa) != nil {
				continue
			}
			b.Run(isa.String()+"/"+k.String(), func(b *testing.B) {
				b.SetBytes(int64(n * k.BytesPerElement()))
				for b.Loop() {
					k.runISA(isa, &a, n)
				}
			})
		}
	}
}
