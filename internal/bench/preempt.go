package bench

import "golang.org/x/sys/unix"

// holdPreemption blocks, on the calling thread, the signal with which Go's
// runtime preempts a goroutine (SIGURG), and returns what unblocks it. The
// caller must be locked to its thread (lockPinned).
//
// Why: the runtime's monitor thread signals every goroutine that has run
// 10 ms without a call into the scheduler, and a measuring loop never
// makes one, so a chase or a streaming kernel is interrupted 50 to 100
// times a second for as long as it runs. On hardware a signal costs a few
// microseconds, which a figure hardly shows; under an emulator it can cost
// milliseconds: in the NUMA VM of the tests (QEMU TCG) numascope bench's
// idle latency over 256 MiB read 297 ns with the signals and 241 ns
// without, the independent C chase 242 (docs/fidelity.md), and that C
// chase, signalled 50 times a second by a timer, 290.
//
// Nothing is lost by holding the signal: the runtime sends the next only
// once this one is delivered (when released), the loops are preempted
// cooperatively between pieces, and a stop-the-world waits at most for the
// piece in progress (a repeat's chase, a window), during which bench
// allocates nothing (no collection ran in any kind, GODEBUG=gctrace=1).
func holdPreemption() (release func(), err error) {
	var urg, was unix.Sigset_t
	n := uint(unix.SIGURG) - 1
	urg.Val[n/64] |= 1 << (n % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &urg, &was); err != nil {
		return func() {}, err
	}
	return func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &was, nil) }, nil
}
