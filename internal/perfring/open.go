package perfring

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenError is a CPU's event or ring that could not be had. Map says which:
// false, the kernel refused the event (perf_event_open; Err is its errno);
// true, the event opened but no ring down to the smallest asked for could
// be mapped (the locked-memory limit, kernel.perf_event_mlock_kb).
type OpenError struct {
	CPU int
	Map bool
	Err error
}

func (e *OpenError) Error() string {
	if e.Map {
		return fmt.Sprintf("mapping the perf ring of cpu %d: %v (raise the locked-memory limit or kernel.perf_event_mlock_kb)", e.CPU, e.Err)
	}
	return fmt.Sprintf("perf_event_open(cpu %d): %v", e.CPU, e.Err)
}

func (e *OpenError) Unwrap() error { return e.Err }

// Open opens the event attr describes on each CPU of cpus, following pid
// (-1: every task on the CPU), and maps a ring of pages data pages for each
// (a power of two). Without CAP_IPC_LOCK the kernel caps the locked ring
// memory per user, so a refused mapping (EPERM, ENOMEM) is tried again at
// half the size, down to minPages: a smaller ring that drops records under
// a burst is worth more than no profile. On any failure it closes what it
// opened and returns an *OpenError.
//
// profile's page-fault sampling and numatrace's system-wide tracepoints
// open their rings here, so that the rule for shrinking a ring, and its
// error, is written once.
func Open(attr *unix.PerfEventAttr, pid int, cpus []int, pages, minPages int) ([]*Ring, error) {
	pg := os.Getpagesize()
	rings := make([]*Ring, 0, len(cpus))
	fail := func(e *OpenError) ([]*Ring, error) {
		for _, r := range rings {
			r.Close()
		}
		return nil, e
	}
	for _, cpu := range cpus {
		fd, err := unix.PerfEventOpen(attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return fail(&OpenError{CPU: cpu, Err: err})
		}
		var mem []byte
		for n := pages; n >= minPages; n /= 2 {
			if mem, err = unix.Mmap(fd, 0, (1+n)*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil ||
				(err != unix.EPERM && err != unix.ENOMEM) {
				break
			}
		}
		if err == nil && mem == nil {
			err = unix.ENOMEM // pages < minPages: nothing tried
		}
		if err != nil {
			unix.Close(fd)
			return fail(&OpenError{CPU: cpu, Map: true, Err: err})
		}
		rings = append(rings, NewRing(fd, cpu, mem, pg))
	}
	return rings, nil
}
