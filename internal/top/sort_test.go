package top

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// randomProcesses are n processes with figures that tie often, measured or
// not, and NaN, -0 and +0 among them: what the sort's keys must order as
// CompareProcesses does.
func randomProcesses(r *rand.Rand, n int) []Process {
	odd := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), 1, 2}
	pick := func() float64 {
		if r.Intn(3) == 0 {
			return odd[r.Intn(len(odd))]
		}
		return float64(r.Intn(4))
	}
	pids := r.Perm(4 * n)
	ps := make([]Process, n)
	for i := range ps {
		p := &ps[i]
		p.PID = pids[i] + 1
		p.CPUPercent = pick()
		p.RSSBytes = uint64(r.Intn(3)) << 20
		if r.Intn(3) == 0 {
			p.MemoryByNode = map[string]uint64{"0": uint64(r.Intn(3)) << 20, "1": uint64(r.Intn(2)) << 20}
		}
		if r.Intn(2) == 0 {
			p.NUMAFaults = &Faults{Local: pick(), Remote: pick()}
		}
		if r.Intn(2) == 0 {
			m := pick()
			p.PagesMigrated = &m
		}
	}
	return ps
}

// TestSortProcessesIsCompareProcesses: the sort by keys taken once gives
// exactly the order a stable sort by CompareProcesses gives, under every
// key, including the PID key's ascending order.
func TestSortProcessesIsCompareProcesses(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for round := 0; round < 200; round++ {
		ps := randomProcesses(r, 1+r.Intn(300))
		for _, key := range SortKeys {
			want := slices.Clone(ps)
			slices.SortStableFunc(want, func(a, b Process) int { return CompareProcesses(&a, &b, key, key == SortPID) })
			got := slices.Clone(ps)
			SortProcesses(got, key)
			for i := range want {
				if got[i].PID != want[i].PID {
					t.Fatalf("round %d, key %s: place %d holds PID %d, want %d", round, key, i, got[i].PID, want[i].PID)
				}
			}
		}
	}
}

// BenchmarkSortProcesses: one sort of 1 000 processes, as a refresh of
// numascope top makes once or twice (docs/performance.md, "numascope top").
func BenchmarkSortProcesses(b *testing.B) {
	src := randomProcesses(rand.New(rand.NewSource(1)), 1000)
	ps := make([]Process, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(ps, src)
		SortProcesses(ps, SortCPU)
	}
}
