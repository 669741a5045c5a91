package bench

import "runtime"

// threadsAtOnce is the most measuring threads the plan runs at one time:
// a node's bandwidth threads or injectors (loaded latency's chaser takes
// the place of one), a core-to-core pair, or the latency's one chaser.
func (p *plan) threadsAtOnce() int {
	n := 1
	if p.opt.Kinds.Bandwidth || p.opt.Kinds.Loaded {
		for _, cpus := range p.bwCPUs {
			n = max(n, len(cpus))
		}
	}
	if p.c2c != nil {
		n = max(n, 2)
	}
	return n
}

// enoughPs raises GOMAXPROCS to n for a run, if it is lower, and returns
// what puts it back. Every measuring thread runs Go code (the kernels are
// Go assembly, the gate and the ping-pong spin), so each needs a P of its
// own: with fewer, as under GOMAXPROCS=1 or a container's CPU quota (which
// the runtime takes for its default), the threads would take turns, and a
// bandwidth matrix would measure one thread at a time while calling it
// all of them, a core-to-core pair would never have both ends running.
// n counts the coordinator too, which sleeps while the threads measure.
func enoughPs(n int) (restore func()) {
	was := runtime.GOMAXPROCS(0)
	if was >= n {
		return func() {}
	}
	runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(was) }
}
