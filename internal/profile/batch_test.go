package profile

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortBatch: whatever the runs (none, one, a few, more than
// maxMergeRuns, equal times across runs), the batch comes out in time
// order, and records of equal time keep their order (a ring's munmap before
// its fault at the same instant).
func TestSortBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, runs := range []int{0, 1, 2, 3, 5, 17, maxMergeRuns + 10} {
		for round := range 3 {
			a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
			var b []rawSample
			for r := range runs {
				t0 := uint64(rng.IntN(50))
				for i := range rng.IntN(40) {
					t0 += uint64(rng.IntN(3)) // equal times too
					b = append(b, rawSample{time: t0, a0: uint64(r), a1: uint64(i)})
				}
			}
			want := slices.Clone(b)
			slices.SortStableFunc(want, func(x, y rawSample) int { return cmp.Compare(x.time, y.time) })
			a.batch = b
			a.sortBatch()
			got := a.batch
			if len(got) != len(want) {
				t.Fatalf("%d runs, round %d: %d records, want %d", runs, round, len(got), len(want))
			}
			for i := range got {
				if got[i].time != want[i].time || (got[i].time == want[i].time && runs <= maxMergeRuns && (got[i].a0 != want[i].a0 || got[i].a1 != want[i].a1)) {
					t.Fatalf("%d runs, round %d: record %d is %+v, want %+v", runs, round, i, got[i], want[i])
				}
			}
		}
	}
}
