//go:build !amd64

package bench

func mixBlocks(a []float64, reads, writes int) float64 { return mixGo(a, reads, writes) }

// spinSink keeps spin's loop alive.
var spinSink int

// spin waits n turns of a short dependent loop: the injectors' delay,
// calibrated by calibrateSpin.
func spin(n int) {
	x := 0
	for i := 0; i < n; i++ {
		x = x*3 + 1
	}
	spinSink = x
}
