package bench

// c2cSpan is the ping-pong's turns in assembly (c2c_amd64.s): the same
// LOCK CMPXCHGQ that sync/atomic's CompareAndSwapUint64 compiles to, kept
// out of Go so that a build with the race detector, which routes every
// sync/atomic call through its runtime and makes a round trip half as
// slow again, measures what the release binary does.
//
//go:noescape
func c2cSpan(w *uint64, mine uint64, n, spins int) (next uint64, done int)
