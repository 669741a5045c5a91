package bench

import (
	"fmt"
	"time"
)

// worker is one bandwidth thread: its part of each array, and the sum the
// load kernel returns (kept, so that the loads are not dead code). The
// padding keeps two workers' sums off one cache line.
type worker struct {
	arrays [4][]float64
	n      int
	sum    float64
	start  chan struct{}
	_      [64]byte
}

// initial values of the arrays: copy copies 1s, triad computes 1+2*3; the
// destination starts at 0. Touching them is also the first touch, by the
// thread that streams over them, though the binding alone decides the node.
var initial = [4]float64{0, 1, 2, 3}

// bandwidth measures the bandwidth of the kernel from cpus (all on
// initiator) to target: each thread pinned to one CPU streams over its own
// contiguous part of every array, all bound to target. The threads start
// together; a repeat lasts from the first start to the last finish. One
// uncounted repeat comes first (STREAM's rule: best of N excluding the
// first), then Repeat counted ones, in MB/s (10^6 bytes) of the bytes
// STREAM counts.
func (p *plan) bandwidth(cpus []int, initiator, target int) (samples []float64, counted uint64, pl []Pair, huge float64, err error) {
	k := p.stream
	elems := int(p.bwPerArray / 8)
	chunk := elems / len(cpus) / k.granule() * k.granule()
	if chunk == 0 {
		return nil, 0, nil, -1, fmt.Errorf("--size is too small for %d threads: each needs at least %d bytes per array", len(cpus), k.granule()*8)
	}
	bufs := make([]*buffer, k.arrays())
	defer func() {
		for _, b := range bufs {
			if b != nil {
				b.free()
			}
		}
	}()
	for a := range bufs {
		if bufs[a], err = newBuffer(int(p.bwPerArray), target, !p.opt.NoHugePages); err != nil {
			return nil, 0, nil, -1, err
		}
	}
	workers := make([]*worker, len(cpus))
	ready := make(chan error, len(cpus))
	done := make(chan struct{}, len(cpus))
	for w, cpu := range cpus {
		wk := &worker{n: chunk, start: make(chan struct{}, 1)}
		for a, b := range bufs {
			wk.arrays[a] = b.floats(w*chunk*8, chunk)
		}
		workers[w] = wk
		go func() {
			// Locked for good: the pinned thread exits with the goroutine.
			restore, err := lockPinned([]int{cpu})
			defer restore()
			if err != nil {
				ready <- fmt.Errorf("pinning a bandwidth thread to CPU %d: %w", cpu, err)
				return
			}
			for a := range k.arrays() {
				v := k.initial(a)
				arr := wk.arrays[a]
				for i := range arr {
					arr[i] = v
				}
			}
			ready <- nil
			for range wk.start {
				wk.sum += k.run(&wk.arrays, wk.n)
				done <- struct{}{}
			}
		}()
	}
	defer func() {
		for _, wk := range workers {
			close(wk.start)
		}
	}()
	for range cpus {
		if e := <-ready; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return nil, 0, nil, -1, err
	}
	counted = uint64(chunk) * uint64(len(cpus)) * uint64(k.bytesPerElement())
	samples = make([]float64, p.opt.Repeat)
	for r := -1; r < len(samples); r++ {
		t0 := time.Now()
		for _, wk := range workers {
			wk.start <- struct{}{}
		}
		for range workers {
			<-done
		}
		dt := time.Since(t0)
		if r >= 0 {
			samples[r] = float64(counted) / dt.Seconds() / 1e6
		}
	}
	pair, huge, err := placedAll(bufs, "bandwidth", initiator, target)
	if err != nil {
		return nil, 0, nil, -1, err
	}
	return samples, counted, []Pair{pair}, huge, nil
}
