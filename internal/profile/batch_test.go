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
			a.batch.recs = b
			a.batch.sort()
			got := a.batch.recs
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

// TestKeepMasks: the CPU masks of the records a round leaves for the next
// stay reachable through their records' indices, and the others go: all of
// them when the batch is empty, else once there are more than maxMasks.
func TestKeepMasks(t *testing.T) {
	a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
	for i := 1; i <= maxMasks+10; i++ {
		a.batch.masks = append(a.batch.masks, []byte{byte(i), byte(i >> 8)})
	}
	a.batch.recs = []rawSample{{time: 1, mask: 5}, {time: 2}, {time: 3, mask: maxMasks + 9}}
	a.batch.keepMasks()
	if len(a.batch.masks) != 3 || a.batch.recs[0].mask != 1 || a.batch.recs[1].mask != 0 || a.batch.recs[2].mask != 2 {
		t.Fatalf("after compaction: %d masks, record masks %d %d %d; want 3 masks (none, and the two kept), indices 1 0 2",
			len(a.batch.masks), a.batch.recs[0].mask, a.batch.recs[1].mask, a.batch.recs[2].mask)
	}
	if m := a.batch.masks[a.batch.recs[0].mask]; m[0] != 5 || m[1] != 0 {
		t.Errorf("first record's mask %v, want the 5th", m)
	}
	if m := a.batch.masks[a.batch.recs[2].mask]; int(m[0])|int(m[1])<<8 != maxMasks+9 {
		t.Errorf("third record's mask %v, want the %dth", m, maxMasks+9)
	}
	a.batch.recs = a.batch.recs[:0]
	a.batch.keepMasks()
	if len(a.batch.masks) != 1 || a.batch.masks[0] != nil {
		t.Errorf("with an empty batch: %d masks, want only the none entry", len(a.batch.masks))
	}
}
