// Package sigfwd passes the signals numascope receives on to the command it
// runs (record -- CMD, profile -- CMD), so that stopping numascope stops the
// command and numascope then ends cleanly when the command exits; and tells
// how the command ended (ExitStatus), the same way for every command that
// runs one (record, experiment, profile).
package sigfwd

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitStatus is how a command ended, from its exec.Cmd.Wait error, as a
// shell reports it: its exit status, or 128+N and the signal when signal N
// killed it. err is a failure to wait for it (werr itself), not a non-zero
// status.
func ExitStatus(werr error) (code int, sig syscall.Signal, err error) {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, 0, nil
	case errors.As(werr, &ee):
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), st.Signal(), nil
		}
		return ee.ExitCode(), 0, nil
	default:
		return 0, 0, werr
	}
}

// Relay passes sig on to p. The one exception is a SIGINT while numascope's
// process group is the foreground group of its terminal: then Ctrl-C sent
// it to the whole group, the command (in the same group) got it too, and a
// second one would turn a program's graceful stop on the first into a hard
// one. A SIGINT sent to numascope alone (kill -INT PID from a script, or
// numascope in the background or without a terminal) is passed on, as perf
// record does.
func Relay(p *os.Process, sig os.Signal) error {
	if sig == os.Interrupt && terminalForeground() {
		return nil
	}
	return p.Signal(sig)
}

// terminalForeground reports whether this process's group is the foreground
// process group of its controlling terminal.
func terminalForeground() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // no controlling terminal: no Ctrl-C reached the group
	}
	defer unix.Close(fd)
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}
