package profile

// Starting the program under the profiler: it is started stopped before
// its first instruction, and while it is stopped the profiler attaches to
// it, in order: the analyzer seeded with what exists before the first
// record (its executable mappings, its main thread), the perf rings and
// the syscall tracepoints opened on it and the capture's header written.
// Run calls startStopped with attach and nothing else of the start.

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/procnuma"
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

// attach runs while the program pid (named name) is stopped before its
// first instruction (see startStopped): it seeds the analyzer a with what
// exists, opens the rings and the syscall tracepoints that tell every
// change from then on, and starts the capture, if asked. Nothing changes
// while the program is stopped, so the seed and the events agree whichever
// comes first; what exists is read first, as the records that follow
// build on it.
func (pr *profiler) attach(opt Options, a *analyzer, pid int, name string) error {
	a.seed(pid, name)
	var err error
	if pr.ps, err = openPerf(pid, pr.cpus, pr.stackCopy, opt.RingBytes); err != nil {
		return err
	}
	if evs, err := pr.ps.openSyscalls(pid); err != nil {
		fix := "run as root, or set kernel.perf_event_paranoid=-1"
		if errors.Is(err, perfevent.ErrTracefsDenied) {
			fix = perfevent.TracefsFix(err) // no sysctl opens tracefs to other users
		}
		pr.p.Notes = append(pr.p.Notes, fmt.Sprintf("allocation sites are not tracked, thread affinities are polled every %d ms, not followed, "+
			"and memory given back and mapped again (munmap, MADV_DONTNEED) is not noticed, so touching it again counts as accesses: "+
			"the syscall tracepoints are unavailable (%v); %s", pollMs, err, fix))
	} else {
		a.useSyscalls(evs)
	}
	if opt.Capture != nil {
		if pr.capture, err = startCapture(opt.Capture, a, pid); err != nil {
			return err
		}
	}
	return nil
}

// seed records what exists before the program's first instruction: its
// executable mappings (mapped by execve, before the event existed, so no
// MMAP2 record describes them) and its main thread.
func (a *analyzer) seed(pid int, name string) {
	if maps, ok := a.kern.Maps(int32(pid)); ok {
		for line := range strings.Lines(string(maps)) {
			if m, ok := parseMapsLine(line); ok {
				a.code.addMapping(int32(pid), m)
				// Read the program's line tables now, while it is
				// stopped: the first faults ask for them, and reading a
				// large table while the program runs would let its rings
				// overflow.
				a.code.loadSymbols(m.file)
			}
		}
	}
	t := a.thread(int32(pid), int32(pid))
	if t.status == "" {
		a.th.read(t, "start", 0) // stopped: its affinity at its start
	}
	t.comm = name
	if comm, ok := a.kern.Comm(int32(pid)); ok {
		t.comm = comm
	}
}

// parseMapsLine parses an executable file mapping of /proc/PID/maps.
func parseMapsLine(line string) (mapping, bool) {
	m, ok := procnuma.ParseMapsLine(line)
	if !ok || !m.Executable() || !strings.HasPrefix(m.Path, "/") {
		return mapping{}, false
	}
	return mapping{start: m.Start, end: m.End, pgoff: m.Offset, file: m.Path}, true
}
