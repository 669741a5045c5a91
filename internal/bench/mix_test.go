package bench

import (
	"strings"
	"testing"
)

func TestParseMix(t *testing.T) {
	for in, want := range map[string]Mix{"1:0": {1, 0}, "3:1": {3, 1}, "2:1": {2, 1}, "1:1": {1, 1}, "0:1": {0, 1}, "2:2": {1, 1}, " 6:2 ": {3, 1}, "0:5": {0, 1}, "16:3": {16, 3}} {
		got, err := ParseMix(in)
		if err != nil || got != want {
			t.Errorf("ParseMix(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if s := (Mix{3, 1}).String(); s != "3:1" {
		t.Errorf("String %q, want 3:1", s)
	}
	for in, why := range map[string]string{"": "no colon", "3": "no colon", "3-1": "no colon", "a:b": "not two whole numbers", "1.5:1": "not two whole numbers",
		"3:": "not two whole numbers", "-1:1": "out of range", "17:1": "out of range", "0:0": "neither reads nor writes", "1:1:1": "not two whole numbers"} {
		_, err := ParseMix(in)
		if err == nil {
			t.Errorf("ParseMix(%q): no error", in)
			continue
		}
		// One line naming the flag, the problem and what to give.
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "--mix") || !strings.Contains(msg, why) || !strings.Contains(msg, "like 1:0 (all reads), 3:1") {
			t.Errorf("ParseMix(%q): %q, want one line with --mix, %q and examples", in, msg, why)
		}
	}
}

// checkMix runs a mix implementation over n elements (whole groups) of
// ones, with a sentinel past them, and checks that it read exactly the
// read blocks (their sum), wrote every write block and nothing else.
func checkMix(t *testing.T, name string, run func(a []float64, reads, writes int) float64) {
	t.Helper()
	for _, m := range []Mix{{1, 0}, {0, 1}, {1, 1}, {3, 1}, {2, 1}, {1, 3}, {16, 3}} {
		for _, groups := range []int{0, 1, 2, 7} {
			n := groups * m.group()
			a := make([]float64, n+block)
			for i := range a {
				a[i] = 1
			}
			for i := n; i < len(a); i++ {
				a[i] = -7
			}
			// Mark the write blocks, to see that each was written.
			g := m.group()
			for i := range n {
				if i%g >= m.Reads*block {
					a[i] = -1
				}
			}
			sum := 0.0
			if n > 0 {
				sum = run(a[:n], m.Reads, m.Writes)
			}
			if want := float64(groups * m.Reads * block); sum != want {
				t.Errorf("%s %s over %d groups: read sum %v, want %v", name, m, groups, sum, want)
			}
			for i := range a {
				switch {
				case i >= n && a[i] != -7:
					t.Fatalf("%s %s: a[%d] = %v past the end, want it untouched", name, m, i, a[i])
				case i < n && i%g < m.Reads*block && a[i] != 1:
					t.Fatalf("%s %s: read element a[%d] = %v, changed", name, m, i, a[i])
				case i < n && i%g >= m.Reads*block && a[i] < 0:
					t.Fatalf("%s %s: write element a[%d] not written", name, m, i)
				}
			}
		}
	}
}

func TestMixComputes(t *testing.T) {
	checkMix(t, "go", mixGo)
	checkMix(t, "dispatch", mixBlocks)
	checkMixAsm(t)
}

// TestMixStream: a mix streams one array, is counted 8 bytes per element
// whatever its ratio, and each thread's part is whole groups.
func TestMixStream(t *testing.T) {
	s := stream{kernel: Triad, mix: &Mix{3, 1}}
	if s.arrays() != 1 || s.bytesPerElement() != 8 || s.granule() != 4*block || s.Name() != "mix" || s.MixName() != "3:1" {
		t.Errorf("mix stream: %d arrays, %d bytes, granule %d, %q %q", s.arrays(), s.bytesPerElement(), s.granule(), s.Name(), s.MixName())
	}
	k := stream{kernel: Triad}
	if k.arrays() != 4 || k.bytesPerElement() != 32 || k.granule() != block || k.Name() != "triad" || k.MixName() != "" {
		t.Errorf("triad stream: %d arrays, %d bytes, granule %d, %q", k.arrays(), k.bytesPerElement(), k.granule(), k.Name())
	}
}

// TestRunMix: --mix in a bandwidth run is recorded, and its bytes are
// STREAM's: every element of the one array, whole groups per thread.
func TestRunMix(t *testing.T) {
	topo := liveTopology(t)
	m := Mix{3, 1}
	res, err := Run(Options{Topology: topo, Kinds: Kinds{Bandwidth: true}, Kernel: Copy, Mix: &m, Size: 6 << 20, Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := res.Bandwidth
	if b.Kernel != "mix" || b.Mix != "3:1" {
		t.Errorf("kernel %q mix %q, want mix 3:1", b.Kernel, b.Mix)
	}
	elems := uint64(6<<20) / ChainPage * ChainPage / 8
	threads := uint64(len(b.CPUs[0]))
	group := uint64(4 * block)
	if want := elems / threads / group * group * threads * 8; b.BytesCounted != want || b.SizeBytes != 6<<20 {
		t.Errorf("%d bytes counted of %d, want %d of 6M", b.BytesCounted, b.SizeBytes, want)
	}
	for _, row := range b.Matrix {
		for _, v := range row {
			if v == nil || *v <= 0 {
				t.Errorf("matrix %v", b.Matrix)
			}
		}
	}
}

// FuzzParseMix: any --mix is a mix in lowest terms within the bounds,
// written back as it parses, or one line of error.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"1:0", "3:1", "2:2", "0:0", "17:1", "a:b", "3", " 6 : 2 ", "-1:1", "1:1:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--mix") {
				t.Fatalf("ParseMix(%q): error %q, want one line naming --mix", s, err)
			}
			return
		}
		if m.Reads < 0 || m.Writes < 0 || m.Reads > maxMix || m.Writes > maxMix || m.Reads+m.Writes == 0 || gcd(m.Reads, m.Writes) != 1 {
			t.Fatalf("ParseMix(%q) = %v: out of bounds or not in lowest terms", s, m)
		}
		if again, err := ParseMix(m.String()); err != nil || again != m {
			t.Fatalf("ParseMix(%q) = %v, which reads back as %v, %v", s, m, again, err)
		}
	})
}
