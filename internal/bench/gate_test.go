package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gateTeam is a gate's threads for a test: n goroutines, each locked to
// its thread, that wait for a pass on their channel, call arrive (if not
// nil), enter the gate (thread 0 leads), call work and leave.
type gateTeam struct {
	g     *gate
	start []chan uint64
	wg    sync.WaitGroup
}

func startGateTeam(n int, arrive, work func(w int, pass uint64)) *gateTeam {
	gt := &gateTeam{g: newGate(n), start: make([]chan uint64, n)}
	for w := range n {
		gt.start[w] = make(chan uint64, 1)
		gt.wg.Add(1)
		go func() {
			defer gt.wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for pass := range gt.start[w] {
				if arrive != nil {
					arrive(w, pass)
				}
				gt.g.enter(w == 0, pass)
				work(w, pass)
				gt.g.leave()
			}
		}()
	}
	return gt
}

// pass runs pass on every thread, as team.pass does, and returns its time.
func (gt *gateTeam) pass(pass uint64) int64 {
	gt.g.arm()
	for _, c := range gt.start {
		c <- pass
	}
	return gt.g.wait()
}

func (gt *gateTeam) stop() {
	for _, c := range gt.start {
		close(c)
	}
	gt.wg.Wait()
}

// TestGateStartsAllAtOnce: no thread leaves the gate before the last one
// has arrived, the clock starts at the release, and a pass's time covers
// every thread's work, the slowest's included. The threads arrive at
// different times (the coordinator wakes them one by one, and here some
// sleep first), and their work takes different times.
func TestGateStartsAllAtOnce(t *testing.T) {
	const n, passes = 4, 50
	defer enoughPs(n + 1)()
	var arrived, left [n]atomic.Int64 // per thread, this pass's times (nanotime)
	var slowest atomic.Int64
	gt := startGateTeam(n, func(w int, pass uint64) {
		time.Sleep(time.Duration(w*int(pass%3)) * 100 * time.Microsecond) // late arrivals
		arrived[w].Store(nanotime())
	}, func(w int, pass uint64) {
		left[w].Store(nanotime())
		work := time.Duration(w+1) * 200 * time.Microsecond
		for t0 := nanotime(); nanotime()-t0 < int64(work); {
		}
		slowest.Store(max(slowest.Load(), int64(work)))
	})
	defer gt.stop()
	for pass := uint64(1); pass <= passes; pass++ {
		dt := gt.pass(pass)
		var last int64
		for w := range n {
			last = max(last, arrived[w].Load())
		}
		for w := range n {
			if l := left[w].Load(); l < last {
				t.Fatalf("pass %d: thread %d left the gate %d ns before the last thread arrived", pass, w, last-l)
			}
			if l := left[w].Load(); l < gt.g.t0 {
				t.Fatalf("pass %d: thread %d left the gate %d ns before the clock started", pass, w, gt.g.t0-l)
			}
		}
		if gt.g.t0 < last {
			t.Fatalf("pass %d: the clock started %d ns before the last thread arrived", pass, last-gt.g.t0)
		}
		if dt < slowest.Load() {
			t.Fatalf("pass %d: timed %d ns, less than the slowest thread's work (%d ns)", pass, dt, slowest.Load())
		}
	}
}

// TestGateRunsEachPassOnce: over many quick passes every thread streams
// each pass exactly once, and wait returns only when all have finished.
func TestGateRunsEachPassOnce(t *testing.T) {
	const n, passes = 3, 2000
	defer enoughPs(n + 1)()
	var runs [n]atomic.Int64
	gt := startGateTeam(n, nil, func(w int, _ uint64) { runs[w].Add(1) })
	defer gt.stop()
	for pass := uint64(1); pass <= passes; pass++ {
		gt.pass(pass)
		for w := range n {
			if r := runs[w].Load(); r != int64(pass) {
				t.Fatalf("after pass %d thread %d ran %d passes", pass, w, r)
			}
		}
	}
}

// TestEnoughPs: GOMAXPROCS is raised to what a run needs and put back
// after; never lowered.
func TestEnoughPs(t *testing.T) {
	was := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(was)
	restore := enoughPs(5)
	if got := runtime.GOMAXPROCS(0); got != 5 {
		t.Errorf("GOMAXPROCS %d during the run, want 5", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d after the run, want 1 back", got)
	}
	runtime.GOMAXPROCS(8)
	enoughPs(3)()
	if got := runtime.GOMAXPROCS(0); got != 8 {
		t.Errorf("GOMAXPROCS %d, want 8 left alone", got)
	}
}

// TestRunOnOneP: under GOMAXPROCS=1 (or a container quota the runtime
// takes for its default), Run still gives each measuring thread a P of
// its own while it measures: without, the bandwidth threads would take
// turns, a spinning thread handing its P over only now and then (the
// gate's Gosched after 1 ms), and a pass would time them one after
// another.
func TestRunOnOneP(t *testing.T) {
	topo := liveTopology(t)
	ini, err := Initiators("", topo)
	if err != nil {
		t.Fatal(err)
	}
	threads := len(usableCPUs(topo)[ini[0]])
	was := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(was)
	var during []int
	done := make(chan struct{})
	var res *Result
	go func() {
		defer close(done)
		res, err = Run(Options{Topology: topo, Kinds: Kinds{Bandwidth: true}, Kernel: Copy, From: "0", To: "0", Size: 6 << 20, Repeat: 2,
			Progress: func(_, _ int, _ string) { during = append(during, runtime.GOMAXPROCS(0)) }})
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("a bandwidth run under GOMAXPROCS=1 did not end in 2 minutes")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(during) == 0 || during[0] < threads+1 {
		t.Errorf("GOMAXPROCS during the run %v, want %d or more (%d threads and the coordinator)", during, threads+1, threads)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d after the run, want 1 back", got)
	}
	if m := res.Bandwidth.Matrix[0][0]; m == nil || *m <= 0 {
		t.Errorf("no bandwidth measured: %v", res.Bandwidth.Matrix)
	}
}
