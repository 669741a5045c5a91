package rawio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pread reads from fd at off with a raw system call, retrying on EINTR.
// It is for kernel files built in memory when read (the /proc and /sys
// statistics the sensors re-read every sample), which answer in
// microseconds and never block: a read through the scheduler's entry would
// wake the runtime's monitor thread whenever the process had been idle, as
// the writes of FileWriter do.
// The error is the call's errno; the caller names the file.
func Pread(fd int, b []byte, off int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}
