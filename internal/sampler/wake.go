package sampler

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waker is how the sampling thread sleeps: a blocking read of a timerfd
// armed at absolute CLOCK_MONOTONIC deadlines, one per interval. That is one
// system call per sample, the same single sleep a bare C sampler pays with
// clock_nanosleep, and nothing polls however long the interval.
//
// A command (Stop, SetInterval, a label...) wakes the thread by re-arming the
// same timer to a time already past, which makes the read return at once.
// The thread, woken with commands queued, takes them and re-arms the timer to
// its deadlines; it then looks at the queue again, so that a command whose
// re-arming it overwrote is not left waiting (see Sampler.Run).
type waker struct {
	fd int

	mu     sync.Mutex // guards fd against a late notify after close
	closed bool
	buf    [8]byte
	// raw makes the sleep a raw system call, which the Go scheduler does
	// not see (see rawWaitBelow); only the sampling thread touches it.
	raw bool
}

// rawWaitBelow is the interval under which the sampling thread sleeps in a
// raw system call. A sleep the scheduler knows of (entersyscall) gives its P
// up for the duration, and getting one back on waking wakes the runtime's
// monitor thread (sysmon) from its deep sleep: one more thread wake-up, and
// a few of sysmon's 20 µs polls, per sample. Below 10 ms that costs more
// than what a raw sleep costs instead: the runtime, which believes the
// thread busy, keeps sysmon awake (it wakes every 10 ms) and asks the thread
// to yield every 10 ms. At 1 ms this cut the process's CPU per sample by a
// quarter (docs/performance.md). A raw sleep can delay a garbage
// collection's stop-the-world by up to one interval; sampling allocates
// nothing, so collections are rare.
const rawWaitBelow = 10 * time.Millisecond

// rawWait says whether to sleep raw at interval. A raw sleep keeps its P, so
// it needs another for the sinks' consumers: with GOMAXPROCS 1 (a one-CPU
// container) they would run only when the runtime preempts the sampler.
func rawWait(interval int64) bool {
	return interval < int64(rawWaitBelow) && runtime.GOMAXPROCS(0) > 1
}

func newWaker() (*waker, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	return &waker{fd: fd}, nil
}

// arm makes the timer fire at first (CLOCK_MONOTONIC ns) and every period
// after it.
func (w *waker) arm(first, period int64) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(first), Interval: unix.NsecToTimespec(period)}
	if err := unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return fmt.Errorf("timerfd_settime: %w", err)
	}
	return nil
}

// wait sleeps until the timer fires: at a deadline, or at once after notify.
// The caller tells which by the clock and its command queue. A signal
// (EINTR) returns too, so that the caller's next call can yield if the
// runtime asked for it.
func (w *waker) wait() error {
	if w.raw {
		_, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(w.fd), uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
		if e != 0 && e != unix.EINTR {
			return fmt.Errorf("reading the sampling timer: %w", e)
		}
		return nil
	}
	for {
		_, err := unix.Read(w.fd, w.buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the sampling timer: %w", err)
		}
		return nil
	}
}

// notify wakes the sampling thread from any goroutine. After close it does
// nothing, so that a command sent as Run ends never touches a descriptor
// number the process may have reused.
func (w *waker) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	// 1 ns after boot: long past, so the timer expires at once.
	spec := unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}
	_ = unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		unix.Close(w.fd)
	}
}
