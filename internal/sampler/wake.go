package sampler

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waker is how the sampler sleeps: on a timerfd armed at absolute
// CLOCK_MONOTONIC deadlines, one per interval, so that it does not drift and
// wakes once per sample, the single wake-up a bare C sampler pays with
// clock_nanosleep. Nothing polls, however long the interval.
//
// A command (Stop, SetInterval, a label...) wakes the sampler by re-arming
// the timer to a time already past, which ends the sleep at once. The
// sampler, woken with commands queued, takes them and re-arms the timer to
// its deadlines; it then looks at the queue again, so that a command whose
// re-arming it overwrote is not left waiting (see Sampler.Run).
//
// It sleeps in one of two ways (see sleepMode), each on a timerfd of its
// own: a blocking timerfd read in a raw system call (modeRaw), or parked in
// the Go runtime's network poller on a non-blocking one (modePoll). A mode
// change swaps the timer; the caller then arms the new one.
type waker struct {
	mu     sync.Mutex // guards fd (written only by the sampler) against notify
	fd     int
	closed bool

	mode mode
	file *os.File        // modePoll: the timerfd, registered with the poller
	conn syscall.RawConn // file's, for reading it without entersyscall
	read func(fd uintptr) bool
	err  syscall.Errno // the last read's error, set by read
	buf  [8]byte
}

type mode uint8

const (
	modeRaw  mode = iota + 1 // a raw blocking read: keeps the P (short intervals)
	modePoll                 // parked in the netpoller on one P (long intervals)
)

// rawWaitBelow is the interval under which the sampler sleeps in a raw
// system call. A raw sleep keeps its P: the runtime believes the thread
// busy, keeps its monitor thread (sysmon) awake, polling every 10 ms, and
// the thread wakes for nothing else. Below 10 ms that is the cheapest
// sleep (at 1 ms it cut the process's CPU per sample by a quarter,
// docs/performance.md); the consumers then run on other Ps, in parallel.
// A raw sleep can delay a garbage collection's stop-the-world by up to one
// interval; sampling allocates nothing, so collections are rare.
//
// From 10 ms up the sampler parks in the netpoller instead, and the process
// runs on one P (see procs): the thread that wakes from epoll_wait takes the
// sample, then runs the consumers it readied itself, and goes back to
// epoll_wait. No other thread wakes (a second P would make the runtime wake
// a second thread to take work the first does a microsecond later), no
// system call enters the scheduler (entersyscall wakes sysmon from its deep
// sleep), and sysmon sleeps through the run.
const rawWaitBelow = 10 * time.Millisecond

// sleepMode says how to sleep at interval. A raw sleep needs a second P for
// the consumers, so with GOMAXPROCS 1 (a one-CPU container) the sampler
// always parks in the poller.
func sleepMode(interval int64, maxprocs int) mode {
	if interval < int64(rawWaitBelow) && maxprocs > 1 {
		return modeRaw
	}
	return modePoll
}

func newWaker() *waker { return &waker{fd: -1} }

// setMode switches the waker to sleep in mode m, on a new timerfd, which
// the caller must arm. Only the sampler calls it.
func (w *waker) setMode(m mode) error {
	if m == w.mode {
		return nil
	}
	flags := unix.TFD_CLOEXEC
	if m == modePoll {
		flags |= unix.TFD_NONBLOCK
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, flags)
	if err != nil {
		return fmt.Errorf("timerfd_create: %w", err)
	}
	var file *os.File
	var conn syscall.RawConn
	if m == modePoll {
		// A non-blocking descriptor becomes pollable: os registers it
		// with the runtime's poller.
		file = os.NewFile(uintptr(fd), "sampling timer")
		if conn, err = file.SyscallConn(); err != nil {
			file.Close()
			return fmt.Errorf("sampling timer: %w", err)
		}
	}
	w.mu.Lock()
	oldFd, oldFile := w.fd, w.file
	w.fd, w.file, w.conn, w.mode = fd, file, conn, m
	w.mu.Unlock()
	closeTimer(oldFd, oldFile)
	if w.read == nil {
		// One closure for the waker's life: a wait allocates nothing.
		w.read = func(fd uintptr) bool {
			_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
			if e == unix.EAGAIN {
				return false // not yet: park in the poller
			}
			w.err = e
			return true
		}
	}
	return nil
}

func closeTimer(fd int, file *os.File) {
	switch {
	case file != nil:
		file.Close() // deregisters it from the poller
	case fd >= 0:
		unix.Close(fd)
	}
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
// runtime asked for it. Neither way enters the scheduler as a system call.
func (w *waker) wait() error {
	if w.mode == modeRaw {
		_, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(w.fd), uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
		if e != 0 && e != unix.EINTR {
			return fmt.Errorf("reading the sampling timer: %w", e)
		}
		return nil
	}
	w.err = 0
	if err := w.conn.Read(w.read); err != nil {
		return fmt.Errorf("waiting for the sampling timer: %w", err)
	}
	if w.err != 0 && w.err != unix.EINTR {
		return fmt.Errorf("reading the sampling timer: %w", w.err)
	}
	return nil
}

// notify wakes the sampler from any goroutine. After close it does nothing,
// so that a command sent as Run ends never touches a descriptor number the
// process may have reused.
func (w *waker) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.fd < 0 {
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
		closeTimer(w.fd, w.file)
	}
}

// procs sets how many Ps (GOMAXPROCS) the process runs with while samplers
// run: its original number while any sampler sleeps raw (the consumers run
// beside it), one while all park in the poller (see rawWaitBelow). A
// GOMAXPROCS set in the environment is the user's and is left alone.
var procs struct {
	mu        sync.Mutex
	orig      int // GOMAXPROCS when the first running sampler started
	raw, poll int // running samplers in each mode
	fixed     bool
}

// maxprocs is the number of Ps a sampler may count on for its mode choice.
func maxprocs() int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.raw+procs.poll > 0 {
		return procs.orig
	}
	return runtime.GOMAXPROCS(0)
}

// useProcs moves one sampler from mode from to mode to (0: none, to start
// or end one) and sets GOMAXPROCS for the samplers that run.
func useProcs(from, to mode) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.raw+procs.poll == 0 {
		procs.orig = runtime.GOMAXPROCS(0)
		_, procs.fixed = os.LookupEnv("GOMAXPROCS")
	}
	for _, c := range [...]struct {
		m mode
		d int
	}{{from, -1}, {to, 1}} {
		switch c.m {
		case modeRaw:
			procs.raw += c.d
		case modePoll:
			procs.poll += c.d
		}
	}
	if procs.fixed {
		return
	}
	switch {
	case procs.raw > 0:
		setProcs(procs.orig)
	case procs.poll > 0:
		setProcs(1)
	default:
		setProcs(procs.orig)
	}
}

func setProcs(n int) {
	if runtime.GOMAXPROCS(0) != n {
		runtime.GOMAXPROCS(n)
	}
}
