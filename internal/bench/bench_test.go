package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// liveTopology discovers this machine; the bench tests measure it for real
// (small buffers: they check what is measured, never how fast).
func liveTopology(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		t.Fatal(err)
	}
	if !topo.NUMA {
		t.Skip("the kernel shows no NUMA node (CONFIG_NUMA off): mbind cannot bind")
	}
	return topo
}

// TestRunLive measures every pair of this machine with small buffers and
// checks the result's shape, placement and STREAM byte count.
func TestRunLive(t *testing.T) {
	topo := liveTopology(t)
	var progress []string
	for k := range Kernel(len(KernelNames)) {
		// Latency once (with load): it does not depend on the kernel, and
		// its 2^21 loads per repeat add up on a machine with many nodes.
		res, err := Run(Options{Topology: topo, Kinds: Kinds{Latency: k == Load, Bandwidth: true}, Kernel: k, Size: 6 << 20, Repeat: 2,
			Progress: func(done, total int, what string) { progress = append(progress, what) }})
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		ini, _ := Initiators("", topo)
		tg, _ := Targets("", topo)
		for _, m := range []*Matrix{res.Latency, res.Bandwidth} {
			if m == nil {
				continue
			}
			if len(m.Matrix) != len(ini) || len(m.Matrix[0]) != len(tg) {
				t.Fatalf("%s: matrix %dx%d, want %dx%d", k, len(m.Matrix), len(m.Matrix[0]), len(ini), len(tg))
			}
			for r := range m.Matrix {
				for c, v := range m.Matrix[r] {
					if v == nil || *v <= 0 || len(m.Samples[r][c]) != 2 {
						t.Errorf("%s: [%d][%d] = %v with samples %v", k, r, c, v, m.Samples[r][c])
					}
				}
			}
		}
		// STREAM's bytes: 6M split over the kernel's arrays, each array's
		// elements split evenly between the threads in blocks, 8 bytes per
		// array per element.
		arrays := uint64(k.Arrays())
		elems := 6 << 20 / arrays / ChainPage * ChainPage / 8
		threads := uint64(len(res.Bandwidth.CPUs[0]))
		want := elems / threads &^ (block - 1) * threads * arrays * 8
		if res.Bandwidth.BytesCounted != want || res.Bandwidth.Kernel != k.String() {
			t.Errorf("%s: %d bytes counted, want %d", k, res.Bandwidth.BytesCounted, want)
		}
		if f := res.Placement.MinFractionOnTarget; f == nil || *f < 0.99 {
			t.Errorf("%s: placement %v, want at least 0.99 on the target", k, f)
		}
		if res.Conditions.KernelISA == "" || res.Conditions.Kernel == "" {
			t.Errorf("conditions %+v: ISA or kernel release missing", res.Conditions)
		}
		var out strings.Builder
		if err := res.WriteText(&out); err != nil || !strings.Contains(out.String(), "from\\to") {
			t.Errorf("text: %v\n%s", err, out.String())
		}
	}
	if len(progress) == 0 || !strings.Contains(progress[0], "latency node") {
		t.Errorf("progress %q", progress)
	}
}

// TestBalancingNotTouchedWithoutRoot: as a user, NUMA balancing is left
// alone and the result says so.
func TestBalancingNotTouchedWithoutRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root bench turns balancing off; the VM test checks that (TestBench)")
	}
	topo := liveTopology(t)
	res, err := Run(Options{Topology: topo, Kinds: Kinds{Latency: true}, Size: 2 << 20, Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Conditions.NUMABalancingOff {
		t.Error("balancing turned off without root")
	}
}
