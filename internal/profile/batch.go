package profile

// The round's batch: the records handled in time order (faults, execs,
// forks, syscalls), gathered from the rings, put in order, handled up to
// the round's horizon, and the rest kept for the next round.

import (
	"cmp"
	"slices"
	"sort"
)

// roundBatch holds the records waiting to be handled in time order and the
// buffers that order them. It is the analyzer's; nothing else touches its
// fields.
type roundBatch struct {
	recs []rawSample
	// masks are the CPU masks of the sched_setaffinity calls in the batch
	// ([0] is none).
	masks [][]byte
	// sortBuf and runs are sort's buffers.
	sortBuf []rawSample
	runs    []int
	// cut is where take stopped: the records from it wait for next round.
	cut int
}

func newRoundBatch() roundBatch { return roundBatch{masks: [][]byte{nil}} }

// add queues records.
func (b *roundBatch) add(s ...rawSample) { b.recs = append(b.recs, s...) }

// addMask keeps a copy of a CPU mask for a record and returns its index.
func (b *roundBatch) addMask(m []byte) uint32 {
	b.masks = append(b.masks, append([]byte(nil), m...))
	return uint32(len(b.masks) - 1)
}

// mask is the CPU mask of index i (nil for 0, none).
func (b *roundBatch) mask(i uint32) []byte { return b.masks[i] }

// take puts the batch in time order and returns its records up to
// horizon; keepRest then keeps the others for the next round.
func (b *roundBatch) take(horizon uint64) []rawSample {
	b.sort()
	b.cut = sort.Search(len(b.recs), func(i int) bool { return b.recs[i].time > horizon })
	return b.recs[:b.cut]
}

// keepRest drops the records take returned, and the masks only they used.
func (b *roundBatch) keepRest() {
	b.recs = b.recs[:copy(b.recs, b.recs[b.cut:])]
	b.cut = 0
	b.keepMasks()
}

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
func (rb *roundBatch) sort() {
	b := rb.recs
	runs := append(rb.runs[:0], 0)
	for i := 1; i < len(b); i++ {
		if b[i].time < b[i-1].time {
			runs = append(runs, i)
			if len(runs) > maxMergeRuns {
				rb.runs = runs[:0]
				slices.SortStableFunc(b, func(x, y rawSample) int { return cmp.Compare(x.time, y.time) })
				return
			}
		}
	}
	runs = append(runs, len(b))
	rb.runs = runs
	if len(runs) <= 2 {
		return // one run: in order already
	}
	if cap(rb.sortBuf) < len(b) {
		rb.sortBuf = make([]rawSample, len(b), cap(b))
	}
	src, dst := b, rb.sortBuf[:len(b)]
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
		rb.recs, rb.sortBuf = src[:len(b):cap(src)], b[:0:cap(b)]
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
func (b *roundBatch) keepMasks() {
	switch {
	case len(b.masks) == 1:
	case len(b.recs) == 0:
		clear(b.masks[1:])
		b.masks = b.masks[:1]
	case len(b.masks) > maxMasks:
		kept := [][]byte{nil}
		for i := range b.recs {
			if s := &b.recs[i]; s.mask != 0 {
				kept = append(kept, b.masks[s.mask])
				s.mask = uint32(len(kept) - 1)
			}
		}
		b.masks = kept
	}
}
