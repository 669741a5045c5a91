package bench

import _ "unsafe" // for go:linkname

// nanotime is CLOCK_MONOTONIC in nanoseconds, read through the vDSO as the
// Go runtime reads it. It times the core-to-core windows right around the
// ping-pong: time.Now reads the wall clock too, and under the race detector
// the time package is instrumented, which put a fixed cost of some hundred
// nanoseconds into every window (docs/fidelity.md).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
