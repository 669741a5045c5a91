package bench

import "fmt"

// worker is one bandwidth thread: its part of each array, and the sum the
// load kernel returns (kept, so that the loads are not dead code). The
// padding keeps two workers' sums off one cache line.
type worker struct {
	arrays [4][]float64
	n      int
	sum    float64
	start  chan uint64 // a pass to stream; closed at the end
	_      [64]byte
}

// initial values of the arrays: copy copies 1s, triad computes 1+2*3; the
// destination starts at 0. Touching them is also the first touch, by the
// thread that streams over them, though the binding alone decides the node.
var initial = [4]float64{0, 1, 2, 3}

// bandwidth measures the bandwidth of the kernel from cpus (all on
// initiator) to target: each thread pinned to one CPU streams over its own
// contiguous part of every array, all bound to target. A gate starts the
// threads at once; a repeat lasts from that start to the last finish. One
// uncounted repeat comes first (STREAM's rule: best of N excluding the
// first), then Repeat counted ones, in MB/s (10^6 bytes) of the bytes
// STREAM counts.
func (p *plan) bandwidth(cpus []int, initiator, target int) (samples []float64, counted uint64, pl []Pair, huge float64, err error) {
	tm, err := p.newTeam(cpus, target)
	if err != nil {
		return nil, 0, nil, -1, err
	}
	defer tm.close()
	samples = make([]float64, p.opt.Repeat)
	for r := -1; r < len(samples); r++ {
		if mbs := tm.pass(); r >= 0 {
			samples[r] = mbs
		}
	}
	pair, huge, err := placedAll(tm.bufs, "bandwidth", initiator, target)
	if err != nil {
		return nil, 0, nil, -1, err
	}
	return samples, tm.counted, []Pair{pair}, huge, nil
}

// team is a pair's bandwidth threads, each pinned to its CPU with its part
// of the arrays first touched, waiting for passes; close ends them.
type team struct {
	bufs    []*buffer
	workers []*worker
	gate    *gate
	counted uint64 // bytes a pass is credited with (STREAM's rules)
	passes  uint64
}

// newTeam maps the kernel's arrays on target and starts a thread on each
// of cpus, which first-touches its part.
func (p *plan) newTeam(cpus []int, target int) (_ *team, err error) {
	k := p.stream
	elems := int(p.bwPerArray / 8)
	chunk := elems / len(cpus) / k.granule() * k.granule()
	if chunk == 0 {
		return nil, fmt.Errorf("--size is too small for %d threads: each needs at least %d bytes per array", len(cpus), k.granule()*8)
	}
	tm := &team{bufs: make([]*buffer, k.arrays()), gate: newGate(len(cpus))}
	defer func() {
		if err != nil {
			tm.close()
		}
	}()
	for a := range tm.bufs {
		if tm.bufs[a], err = newBuffer(int(p.bwPerArray), target, !p.opt.NoHugePages); err != nil {
			return nil, err
		}
	}
	ready := make(chan error, len(cpus))
	for w, cpu := range cpus {
		wk := &worker{n: chunk, start: make(chan uint64, 1)}
		for a, b := range tm.bufs {
			wk.arrays[a] = b.floats(w*chunk*8, chunk)
		}
		tm.workers = append(tm.workers, wk)
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
			for pass := range wk.start {
				tm.gate.enter(w == 0, pass)
				wk.sum += k.run(&wk.arrays, wk.n)
				tm.gate.leave()
			}
		}()
	}
	for range cpus {
		if e := <-ready; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return nil, err
	}
	tm.counted = uint64(chunk) * uint64(len(cpus)) * uint64(k.bytesPerElement())
	return tm, nil
}

// pass runs one pass of every thread and returns its MB/s.
func (tm *team) pass() float64 {
	tm.passes++ // never 0, the gate's initial release
	tm.gate.arm()
	for _, wk := range tm.workers {
		wk.start <- tm.passes
	}
	ns := tm.gate.wait()
	return float64(tm.counted) / (float64(ns) / 1e9) / 1e6
}

// close ends the threads and unmaps the arrays.
func (tm *team) close() {
	for _, wk := range tm.workers {
		close(wk.start)
	}
	for _, b := range tm.bufs {
		if b != nil {
			b.free()
		}
	}
}
