package profile

import (
	"cmp"
	"slices"
)

// maxMergeRuns bounds the runs sortBatch merges; a batch in more pieces
// than that is not the concatenation of a few ordered streams, and is
// sorted outright.
const maxMergeRuns = 256

// sortBatch puts the batch in time order, stably. It is made of a few runs
// already in order: what the last round left for this one, then each
// ring's records in the order the ring gave them (one CPU's events, in the
// order they happened). Merging the runs pairwise moves each record
// log2(runs) times, where a general sort of records this size (some 100
// bytes) spends a fifth of the consumer's time in a fault storm.
func (a *analyzer) sortBatch() {
	b := a.batch
	runs := append(a.runs[:0], 0)
	for i := 1; i < len(b); i++ {
		if b[i].time < b[i-1].time {
			runs = append(runs, i)
			if len(runs) > maxMergeRuns {
				a.runs = runs[:0]
				slices.SortStableFunc(b, func(x, y rawSample) int { return cmp.Compare(x.time, y.time) })
				return
			}
		}
	}
	runs = append(runs, len(b))
	a.runs = runs
	if len(runs) <= 2 {
		return // one run: in order already
	}
	if cap(a.sortBuf) < len(b) {
		a.sortBuf = make([]rawSample, len(b), cap(b))
	}
	src, dst := b, a.sortBuf[:len(b)]
	for len(runs) > 2 {
		next := runs[:1]
		for i := 0; i+1 < len(runs); i += 2 {
			lo, mid := runs[i], runs[i+1]
			if i+2 >= len(runs) { // an odd run out: copied as it is
				copy(dst[lo:mid], src[lo:mid])
				next = append(next, mid)
				break
			}
			hi := runs[i+2]
			mergeRuns(dst[lo:hi], src[lo:mid], src[mid:hi])
			next = append(next, hi)
		}
		runs = next
		src, dst = dst, src
	}
	// The sorted records are in src: make it the batch, and the other
	// buffer the next round's scratch.
	if &src[0] != &b[0] {
		a.batch, a.sortBuf = src[:len(b):cap(src)], b[:0:cap(b)]
	}
}

// mergeRuns merges x and y, each in time order, into out, x's records
// first among equal times.
func mergeRuns(out, x, y []rawSample) {
	i, j, k := 0, 0, 0
	for i < len(x) && j < len(y) {
		if y[j].time < x[i].time {
			out[k] = y[j]
			j++
		} else {
			out[k] = x[i]
			i++
		}
		k++
	}
	k += copy(out[k:], x[i:])
	copy(out[k:], y[j:])
}

// maxMasks bounds the CPU masks kept for the records a round leaves for the
// next (see keepMasks).
const maxMasks = 1024

// keepMasks drops the CPU masks no record in the batch refers to any more:
// all of them when the batch is empty, else, once there are many, all but
// those of the records left.
func (a *analyzer) keepMasks() {
	switch {
	case len(a.masks) == 1:
	case len(a.batch) == 0:
		clear(a.masks[1:])
		a.masks = a.masks[:1]
	case len(a.masks) > maxMasks:
		kept := [][]byte{nil}
		for i := range a.batch {
			if s := &a.batch[i]; s.mask != 0 {
				kept = append(kept, a.masks[s.mask])
				s.mask = uint32(len(kept) - 1)
			}
		}
		a.masks = kept
	}
}
