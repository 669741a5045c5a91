// Command gofloor is testdata/bench/plainsampler.c's job written in Go, for
// scripts/bench-scale: what a sample costs any Go program, before numascope
// does anything of its own. It shares no code with numascope.
//
// It sleeps the cheapest way a Go program can (docs/performance.md, "How the
// sampling loop keeps its cost down"): one P (GOMAXPROCS 1), a periodic
// CLOCK_MONOTONIC timerfd (its deadlines fixed from the start) registered with the runtime's
// network poller, the goroutine parked on it and the timer read with a raw
// read once it may have fired (not before: a read then would only find it
// not yet due), so that the only thread that wakes is the one that returns
// from epoll_pwait. Per sample it then does what the C sampler does: one pread of
// /proc/vmstat, a scan of its lines for the named counters, one line
// "seconds value value ..." (each counter's change since the previous sample)
// into a 4 KiB buffer, written out when full. SIGUSR1 writes "# label: mN" at
// the next sample and flushes; SIGTERM and SIGINT flush and exit.
//
// Against the C sampler, it measures the Go runtime's share of a sample (its
// scheduler and poller on the way in and out of the sleep); against it,
// numascope's own.
//
// Build: CGO_ENABLED=0 go build -o gofloor ./testdata/bench/gofloor
// Usage: gofloor INTERVAL_NS COUNTER...   (e.g. 1000000 pgfault pgfree)
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gofloor INTERVAL_NS COUNTER...")
		os.Exit(2)
	}
	iv, err := strconv.ParseInt(os.Args[1], 10, 64)
	if err != nil || iv <= 0 {
		fmt.Fprintln(os.Stderr, "gofloor: INTERVAL_NS must be a positive number of nanoseconds")
		os.Exit(2)
	}
	if err := run(iv, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(1)
	}
}

func run(iv int64, names []string) error {
	runtime.GOMAXPROCS(1)
	vm, err := unix.Open("/proc/vmstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /proc/vmstat: %w", err)
	}
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("timerfd_create: %w", err)
	}
	timer := os.NewFile(uintptr(tfd), "timer") // non-blocking: registered with the poller
	conn, err := timer.SyscallConn()
	if err != nil {
		return err
	}
	// Signals: a label at the next sample; a stop fires the timer at once.
	var marks, stop atomic.Int32
	usr1 := make(chan os.Signal, 8)
	signal.Notify(usr1, syscall.SIGUSR1)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for range usr1 {
			marks.Add(1)
		}
	}()
	go func() {
		<-term
		stop.Store(1)
		now := unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}
		_ = unix.TimerfdSettime(tfd, unix.TFD_TIMER_ABSTIME, &now, nil)
	}()

	// The clock is read the runtime's way (the vDSO, through time.Now's
	// monotonic reading): a clock_gettime made as a system call enters the
	// scheduler and wakes sysmon, a thread more at every sample.
	t0 := time.Now()
	// next is the timer's next expiry in ns after t0, or a little before it
	// (the timer is set just after t0): before next, unless a stop fired it,
	// the timer has not fired, and the goroutine parks without reading it.
	next := iv
	var expirations [8]byte
	readTimer := func(fd uintptr) bool {
		if stop.Load() == 0 && int64(time.Since(t0)) < next {
			return false
		}
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&expirations[0])), 8)
		return e != unix.EAGAIN
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(iv), Interval: unix.NsecToTimespec(iv)}
	if err := unix.TimerfdSettime(tfd, 0, &spec, nil); err != nil {
		return fmt.Errorf("timerfd_settime: %w", err)
	}

	out := bufio.NewWriterSize(os.Stdout, 4096)
	defer out.Flush()
	buf := make([]byte, 1<<16)
	keys := make([][]byte, len(names))
	for i, n := range names {
		keys[i] = []byte(n)
	}
	prev, cur := make([]uint64, len(names)), make([]uint64, len(names))
	line := make([]byte, 0, 256)
	seen, first := int32(0), true
	for {
		if err := conn.Read(readTimer); err != nil {
			return fmt.Errorf("waiting for the timer: %w", err)
		}
		if stop.Load() != 0 {
			return nil
		}
		next += int64(binary.NativeEndian.Uint64(expirations[:])) * iv
		n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(vm), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		if e != 0 || n == 0 {
			return fmt.Errorf("pread /proc/vmstat: %v", e)
		}
		for data := buf[:n]; len(data) > 0; {
			sp := bytes.IndexByte(data, ' ')
			if sp < 0 {
				break
			}
			for i, k := range keys {
				if bytes.Equal(data[:sp], k) {
					v := data[sp+1:]
					if nl := bytes.IndexByte(v, '\n'); nl >= 0 {
						v = v[:nl]
					}
					cur[i], _ = strconv.ParseUint(string(v), 10, 64)
				}
			}
			nl := bytes.IndexByte(data[sp:], '\n')
			if nl < 0 {
				break
			}
			data = data[sp+nl+1:]
		}
		elapsed := time.Since(t0)
		if m := marks.Load(); m != seen {
			seen = m
			fmt.Fprintf(out, "# label: m%d\n", seen)
			if err := out.Flush(); err != nil {
				return err
			}
		}
		if !first {
			line = strconv.AppendFloat(line[:0], elapsed.Seconds(), 'f', 3, 64)
			for i := range cur {
				line = append(line, ' ')
				line = strconv.AppendUint(line, cur[i]-prev[i], 10)
			}
			line = append(line, '\n')
			if _, err := out.Write(line); err != nil {
				return err
			}
		}
		first = false
		copy(prev, cur)
	}
}
