//go:build !amd64

package bench

import "sync/atomic"

// c2cSpan is the ping-pong's turns (c2c_amd64.s says what they do), with
// sync/atomic's compare-and-swap: up to n turns, returning early after one
// fails spins times in a row.
func c2cSpan(w *uint64, mine uint64, n, spins int) (uint64, int) {
	for i := range n {
		for s := 1; !atomic.CompareAndSwapUint64(w, mine, mine+1); s++ {
			if s >= spins {
				return mine, i
			}
		}
		mine += 2
	}
	return mine, n
}
