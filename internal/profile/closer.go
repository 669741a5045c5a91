package profile

// The background closer: closing the syscall tracepoint events costs an RCU
// grace period each, a third of a second in all, which a process started
// for that alone pays after numascope has exited.

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// CloserArg, as a program's only argument, makes numascope close the
// inherited file descriptors from 3 on and exit (see RunCloser).
const CloserArg = "__numascope-close-perf-events"

// closeSyscallsVia closes the syscall tracepoint events through a
// background process when closer (a numascope executable) is given:
// closing the last reference to a tracepoint's event unregisters the probe
// and waits for an RCU grace period, some 30 ms per tracepoint, a third of a
// second in all, paid by whoever closes last. A process started for that
// alone (in its own session, without our stdio) pays it after numascope has
// exited; numascope only drops its own references, which is quick. Without
// closer, or if it cannot start, they are closed here.
func (ps *perfSession) closeSyscallsVia(closer string) {
	if closer == "" || len(ps.extra) == 0 {
		ps.closeSyscalls()
		return
	}
	files := make([]*os.File, len(ps.extra))
	for i, fd := range ps.extra {
		files[i] = os.NewFile(uintptr(fd), "perf-tracepoint")
	}
	cmd := exec.Command(closer, CloserArg)
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err := cmd.Start()
	for _, f := range files {
		f.Close() // ours: the last reference is the closer's, or this one if it did not start
	}
	ps.extra = nil
	if err == nil {
		go func() { _ = cmd.Wait() }() // reaped if numascope is still running
	}
}

// RunCloser is the background closer's whole life: close the perf events
// it inherited from numascope profile, then exit.
func RunCloser() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 1
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == "anon_inode:[perf_event]" {
			unix.Close(fd)
		}
	}
	return 0
}
