package bench

import (
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// gate starts the bandwidth threads of a pass at once and times the pass
// from that start to the last thread's finish, as STREAM's clock brackets
// an OpenMP loop whose threads wait at a spinning barrier.
//
// Waking the threads one by one and timing from the first wake-up does
// not: each wake-up takes tens of microseconds (a futex, a P handed to the
// locked thread, on a VM an idle vCPU woken), so the wake-ups fall inside
// the pass one after another, and the first threads stream with part of
// the memory system to themselves. On the 2-vCPU build machine the second
// of two threads arrived a median 73 us after the first, 0.8 ms at the
// 90th percentile (docs/bench.md); with many threads it adds up.
//
// A pass: the coordinator arms the gate and wakes every thread (a token on
// its channel). Each woken thread says it arrived and spins; the lead
// (thread 0) spins until all have arrived, reads the clock and releases
// them with one store. Each thread streams its part; the last to finish
// reads the clock and hands the reading to the coordinator, which sleeps
// meanwhile. Nothing but the threads' own parts lies between the two
// clock readings.
type gate struct {
	n       int32
	arrived atomic.Int32  // threads woken for the pass and waiting at the gate
	release atomic.Uint64 // the pass the lead released
	left    atomic.Int32  // threads still streaming
	t0      int64         // the lead's clock at release (nanotime)
	end     chan int64    // the last finisher's clock
	_       [64]byte      // the spinning threads' lines apart from a worker's
}

// gateSpin is how long a thread waiting at the gate spins on the line
// alone before it also yields the CPU between its looks (sched_yield): the
// wake-ups of a pass land within some tens of microseconds on a quiet
// machine, but the coordinator may share a CPU with a waiting thread, and
// on a busy one another task may need it. A yield returns at once when
// nothing else is runnable there, so a yielding thread still sees the
// release within a microsecond.
const gateSpin = 200_000 // ns

// gateGosched is how long a thread waits before it also lets its goroutine
// be rescheduled now and then (every 65536 looks, some hundreds of
// yields): a thread that spins holds its P, and with
// fewer Ps than threads (Run's enoughPs sees to it that there are enough)
// the one that has not arrived would never run. Rescheduling a locked
// goroutine hands its P to another thread and costs some tens of
// microseconds, so not while a pass's wake-ups are still landing.
const gateGosched = 1_000_000 // ns

func newGate(n int) *gate {
	return &gate{n: int32(n), end: make(chan int64, 1)}
}

// arm readies the gate for a pass, before the threads are woken.
func (g *gate) arm() {
	g.arrived.Store(0)
	g.left.Store(g.n)
}

// enter is a woken thread's wait for pass: the lead (thread 0) releases it
// once every thread has arrived; the others wait for the release.
func (g *gate) enter(lead bool, pass uint64) {
	g.arrived.Add(1)
	start := nanotime()
	for i := 0; ; i++ {
		if lead {
			if g.arrived.Load() == g.n {
				g.t0 = nanotime()
				g.release.Store(pass)
				return
			}
		} else if g.release.Load() == pass {
			return
		}
		if i&255 == 255 {
			waited := nanotime() - start
			if waited > gateSpin {
				yield()
			}
			if waited > gateGosched && i&(1<<16-1) == 1<<16-1 {
				runtime.Gosched()
			}
		}
	}
}

// leave is a thread's finish: the last one hands the clock to the
// coordinator.
func (g *gate) leave() {
	if g.left.Add(-1) == 0 {
		g.end <- nanotime()
	}
}

// wait is the coordinator's: the pass's time in nanoseconds, from the
// release to the last finish.
func (g *gate) wait() int64 {
	t1 := <-g.end
	// The lead wrote t0 before its release, which the last finisher saw
	// before it sent t1: the receive orders the read after the write.
	return t1 - g.t0
}

// yield gives the CPU to another runnable thread there, if any. Not the
// runtime's Gosched: the waiting goroutine is locked to its thread, and
// rescheduling it would hand its P to another thread and wake its own
// again through a futex.
func yield() {
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
