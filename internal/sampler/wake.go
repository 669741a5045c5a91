package sampler

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/rawio"
)

// waker is how the sampler sleeps: on a timerfd armed at absolute
// CLOCK_MONOTONIC deadlines, one per interval, so that it does not drift and
// wakes once per sample, the single wake-up a bare C sampler pays with
// clock_nanosleep. Nothing polls, however long the interval.
//
// The timerfd is non-blocking and registered with the Go runtime's network
// poller, and the sampling goroutine parks on it (RawConn.Read with a raw
// read), while the process runs on one P (see procs). The thread that wakes
// from epoll_wait takes the sample, then runs the consumers it readied
// itself, and goes back to epoll_wait: one thread wakes per sample in the
// whole process, no system call enters the scheduler (entersyscall wakes
// sysmon from its deep sleep), and nothing hands the sampler from one
// thread to another. At every interval that is the cheapest sleep and the
// one that keeps deadlines best (docs/performance.md, "Missed deadlines at
// 100 µs": a raw blocking read on a thread of its own, used below 10 ms
// until then, was preempted by sysmon every 10 ms and handed between
// threads, and its consumers ran on the CPU it woke on).
//
// The timer is read only once it may have fired: at or after its next
// expiry, or after a notify since the sampler last armed it. A read before
// that, which would only find the timer not yet due, is a system call per
// sample saved (one of the five the sampler made per sample at 10 ms and
// more); the poller tells when the timer fires. The next expiry is the
// timer's own, not the sampler's deadline: a periodic timerfd that fired
// starts its next period only when it is read, so a read it is owed must
// never be skipped (a sampler late behind a deadline that the timer
// reached after its last read would otherwise sleep forever).
//
// A command (Stop, SetInterval, a label...) wakes the sampler by re-arming
// the timer to a time already past, which ends the sleep at once. The
// sampler, woken with commands queued, takes them and re-arms the timer to
// its deadlines; it then looks at the queue again, so that a command whose
// re-arming it overwrote is not left waiting (see Sampler.Run).
type waker struct {
	mu     sync.Mutex // guards fd against notify and close; orders notify and arm
	fd     int
	closed bool

	file *os.File        // the timerfd, registered with the poller
	conn syscall.RawConn // file's, for reading it without entersyscall
	read func(fd uintptr) bool
	err  syscall.Errno // the last read's error, set by read
	buf  [8]byte

	// The sampling goroutine's: when the timer fires next, at the latest
	// (CLOCK_MONOTONIC ns), and its period, as last armed and read.
	next, period int64
	notes        atomic.Uint64 // notifies that re-armed the timer
	armed        uint64        // notes when the sampler last armed it
	reads        int           // the timer's reads, for tests
}

func newWaker() *waker { return &waker{fd: -1} }

// open creates the timer, which the caller must arm. Only the sampler
// calls it, once.
func (w *waker) open() error {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("timerfd_create: %w", err)
	}
	// A non-blocking descriptor becomes pollable: os registers it with the
	// runtime's poller.
	file := os.NewFile(uintptr(fd), "sampling timer")
	conn, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return fmt.Errorf("sampling timer: %w", err)
	}
	// One closure for the waker's life: a wait allocates nothing.
	w.read = func(fd uintptr) bool {
		now := nanotime()
		if !w.notified() && now < w.next {
			// Neither its period nor a notify can have fired the
			// timer: park in the poller without asking the kernel.
			// (Either firing after this look wakes the poller, which
			// RawConn has told to wait for the next one before calling
			// read.) A notify's re-arming, which replaced the periodic
			// timer, must be read and then armed over by the sampler.
			return false
		}
		w.reads++
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
		if e == unix.EAGAIN {
			return false // not yet: park in the poller
		}
		if e == 0 && now >= w.next {
			// The read started the timer's next period: its first
			// expiry after the kernel's clock at the read, which was
			// at least now.
			w.next += ((now-w.next)/w.period + 1) * w.period
		}
		w.err = e
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		file.Close()
		return fmt.Errorf("sampling timer: closed before it was opened")
	}
	w.fd, w.file, w.conn = fd, file, conn
	return nil
}

// arm makes the timer fire at first (CLOCK_MONOTONIC ns) and every period
// after it.
func (w *waker) arm(first, period int64) error {
	// With notify's count and setting on one side of this, not between
	// (see notify): a notify counted after this look sets the timer after
	// this arm does.
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = w.notes.Load()
	w.next, w.period = first, period
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(first), Interval: unix.NsecToTimespec(period)}
	if err := unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return fmt.Errorf("timerfd_settime: %w", err)
	}
	return nil
}

// notified says whether a notify re-armed the timer since the sampler last
// armed it.
func (w *waker) notified() bool { return w.notes.Load() != w.armed }

// wait sleeps until the timer fires: at a deadline, or at once after notify.
// The caller tells which by the clock and its command queue. It does not
// enter the scheduler as a system call.
func (w *waker) wait() error {
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
	// Counted before the timer is set, so that the sampler, woken by this
	// setting, sees the count and reads the timer (counted after, it could
	// park on a one-shot timer that fired); and under mu, as arm looks at
	// the count and sets the timer, so that no arm comes between the two
	// and overlooks a setting that then outlasts its own.
	w.notes.Add(1)
	// 1 ns after boot: long past, so the timer expires at once.
	spec := unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}
	_ = unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		if w.file != nil {
			w.file.Close() // deregisters it from the poller
		}
	}
}

// procs sets the process's Ps while samplers run: one (see waker), its
// original number after. A GOMAXPROCS set in the environment is the user's
// and is left alone.
//
// It also says whether files may be written raw (internal/rawio). On one P
// a raw write the kernel holds (the dirty-page throttle under another
// process's writeback, a frozen file system) holds the whole process,
// sampling included, until it returns. From RawFilesFrom up that costs at
// most a few deadlines, once per rawio.RawPause, and raw writes spare a
// sysmon wake-up per write; at shorter intervals, where one held write would
// miss hundreds of deadlines, files are written the ordinary way, and the
// runtime gives the P to another thread while a write blocks.
var procs struct {
	mu      sync.Mutex
	orig    int // GOMAXPROCS when the first running sampler started
	running int // samplers running
	short   int // of them, sampling below RawFilesFrom
	fixed   bool
}

// SamplingProcess gives a process whose steady work is one sampler (numascope
// stat, record) the single P it will sample on from its very start, rather
// than from Run on: the Go runtime's default is one P per CPU the process may
// run on, and what start-up does on them grows with the machine, not with the
// work. Start-up's garbage collection (and the FreeOSMemory a session makes
// before sampling) starts a mark worker on every idle P, each on a thread of
// its own, and the threads it creates stay for the process's life: on a
// 300-CPU machine, hundreds of threads and the CPU to start and stop them for
// a loop that needs one (docs/performance.md, "Cost against the number of
// CPUs"). A GOMAXPROCS set in the environment is the user's and wins, here
// and in Run.
func SamplingProcess() {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	runtime.GOMAXPROCS(1)
}

// RawFilesFrom is the shortest interval at which files are written raw
// while a sampler runs (see procs).
const RawFilesFrom = 10 * time.Millisecond

// useProcs moves one sampler from interval from to interval to (0: none,
// to start or end one) and sets the process's Ps and raw file writes for
// the samplers that run.
func useProcs(from, to int64) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.running == 0 {
		procs.orig = runtime.GOMAXPROCS(0)
		_, procs.fixed = os.LookupEnv("GOMAXPROCS")
	}
	for _, c := range [...]struct {
		iv int64
		d  int
	}{{from, -1}, {to, 1}} {
		if c.iv == 0 {
			continue
		}
		procs.running += c.d
		if c.iv < int64(RawFilesFrom) {
			procs.short += c.d
		}
	}
	rawio.SetRawFiles(procs.short == 0)
	if procs.fixed {
		return
	}
	n := procs.orig
	if procs.running > 0 {
		n = 1
	}
	if runtime.GOMAXPROCS(0) != n {
		runtime.GOMAXPROCS(n)
	}
}
