// Package cpuratio holds numascope's one method for overhead figures: the
// CPU time of some work against a baseline (usually the bare system calls the
// work cannot avoid), measured in the same benchmark run. Both sides run
// alternately in short chunks on one locked OS thread and are timed with the
// thread's CPU clock, so machine noise and descheduling hit both alike and
// neither counts time the thread did not run. docs/performance.md reports
// the ratio.
package cpuratio

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// chunk is how many calls of one side run before switching to the other.
const chunk = 100

// threadCPU is this thread's CPU time in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// Compare runs work and baseline b.N times each, alternating, and reports
// "cpu-ns/NAME" for both and their "ratio" (work over baseline).
func Compare(b *testing.B, workName string, work func(), baseName string, baseline func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	work() // warm up caches and any lazily grown buffers
	baseline()
	b.ReportAllocs()
	b.ResetTimer()
	var tWork, tBase int64
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := threadCPU()
		for i := 0; i < n; i++ {
			work()
		}
		t1 := threadCPU()
		for i := 0; i < n; i++ {
			baseline()
		}
		t2 := threadCPU()
		tWork += t1 - t0
		tBase += t2 - t1
	}
	b.ReportMetric(float64(tWork)/float64(b.N), "cpu-ns/"+workName)
	b.ReportMetric(float64(tBase)/float64(b.N), "cpu-ns/"+baseName)
	b.ReportMetric(float64(tWork)/float64(tBase), "ratio")
}
