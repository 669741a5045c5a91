package profile

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// startStopped starts cmd so that it executes no instruction of its own
// before attach has run, and returns once it is running.
//
// How: Go cannot run code between fork and exec, so there is no place for a
// pipe handshake in the child. Instead the child asks to be traced
// (PTRACE_TRACEME, via SysProcAttr.Ptrace) and the kernel stops it with
// SIGTRAP right after execve succeeds, before its first user instruction.
// attach opens the perf events on its pid while it is stopped; they are
// inherited from then on by every thread and process it creates. The child
// is then detached (PTRACE_DETACH) and runs untraced: ptrace is used only for
// this one stop, never to inspect or slow the program.
//
// ptrace requests must come from the tracing thread, so the calling
// goroutine is locked to its thread for the duration.
func startStopped(cmd *exec.Cmd, attach func(pid int) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			_ = cmd.Process.Kill()
			return fmt.Errorf("waiting for %s to stop after exec: %w", cmd.Path, err)
		}
		break
	}
	if !ws.Stopped() {
		// It died before its first instruction; cmd.Wait cannot see the status any more.
		return fmt.Errorf("%s ended before it started (wait status %#x)", cmd.Path, uint32(ws))
	}
	aerr := attach(pid)
	if aerr != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	if err := unix.PtraceDetach(pid); err != nil && aerr == nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		aerr = fmt.Errorf("detaching from %s: %w", cmd.Path, err)
	}
	return aerr
}
