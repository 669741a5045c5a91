// Package sigfwd passes the signals numascope receives on to the command it
// runs (record -- CMD, profile -- CMD), so that stopping numascope stops the
// command and numascope then ends cleanly when the command exits.
package sigfwd

import (
	"os"

	"golang.org/x/sys/unix"
)

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
