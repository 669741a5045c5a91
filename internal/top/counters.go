package top

import "time"

// counters turns the kernel's cumulative counters (a node's numastat and
// vmstat, /proc/vmstat, a cgroup's memory.stat) into rates, each over the
// time between its own two reads. These files are read after the walk of
// /proc, not at the frame's time, and the walk's length varies from frame
// to frame (the numa_maps reads of every MapsEvery make one frame's walk
// much longer than the next's): divided by the frame's interval, a rate
// would be high after a long walk and low after a short one.
type counters struct {
	prev map[string]counterRead
	// now is the clock of the reads (time.Now; a test's own).
	now func() time.Time
}

type counterRead struct {
	v  uint64
	at time.Time
}

func (c *counters) init() {
	c.prev, c.now = map[string]counterRead{}, time.Now
}

// rate records v, read at the instant at, as counter key's value and
// returns its increase per second since the previous read; 0 for the
// first read and for a counter that went back (reset).
func (c *counters) rate(key string, v uint64, at time.Time) float64 {
	old, ok := c.prev[key]
	c.prev[key] = counterRead{v, at}
	dt := at.Sub(old.at).Seconds()
	if !ok || dt <= 0 || v < old.v {
		return 0
	}
	return float64(v-old.v) / dt
}

// has says whether counter key has been read before.
func (c *counters) has(key string) bool {
	_, ok := c.prev[key]
	return ok
}

// diff records v as counter key's value and returns its increase since
// the previous read (false for the first read or a reset): for a ratio
// of two counters read together, where no clock is needed.
func (c *counters) diff(key string, v uint64) (uint64, bool) {
	old, ok := c.prev[key]
	c.prev[key] = counterRead{v: v}
	if !ok || v < old.v {
		return 0, false
	}
	return v - old.v, true
}

// forget drops the counters whose key keep says no to (those of a cgroup
// that is gone).
func (c *counters) forget(keep func(key string) bool) {
	for k := range c.prev {
		if !keep(k) {
			delete(c.prev, k)
		}
	}
}
