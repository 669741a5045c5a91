package sampler

import _ "unsafe" // for go:linkname

// nanotime is CLOCK_MONOTONIC in nanoseconds, the clock the timerfd's
// deadlines are set on, read through the vDSO as the Go runtime reads it:
// no system call (unix.ClockGettime makes one) and no wall-clock read
// (time.Now makes two).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
