package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sigfwd"
)

// This file is the one place where numascope runs a command while a session
// samples (record -- CMD, and each run of an experiment): starting sampling
// first, so that the command is counted whole, and stopping it after, so
// that its end is. `profile -- CMD` runs its command inside internal/profile,
// which must stop it at its exec to attach the perf events first; it shares
// the signal relay and the exit status with this file (internal/sigfwd).

// supervision says how a command runs under a session.
type supervision struct {
	argv []string
	// output, when set, is the file that gets the command's stdout and
	// stderr, created once sampling has begun; stdin is then /dev/null.
	// Without it the command shares numascope's stdin, stdout and stderr.
	output string
	// relay passes SIGINT, SIGTERM and SIGHUP sent to numascope on to the
	// command (sigfwd.Relay), which stops; sampling ends when it exits. This
	// is for a command the user runs by hand, in numascope's process group.
	// Without relay the command has a process group of its own: Ctrl-C
	// stops numascope, which stops the command's whole group (stopGroup).
	relay bool
	// timeout, when positive, stops the command's group after this long.
	timeout time.Duration
	// lastSample, when positive, waits up to this long after the command
	// exits for the sample that covers its end, so that its last events are
	// counted; otherwise sampling stops at once.
	lastSample time.Duration
}

// startError is runCommand's error when the command could not start.
type startError struct {
	name string
	err  error
}

func (e *startError) Error() string { return fmt.Sprintf("cannot run %s: %v", e.name, e.err) }
func (e *startError) Unwrap() error { return e.err }

// errTimedOut is runCommand's error when the command ran past its timeout.
var errTimedOut = errors.New("timed out")

// stopGrace is how long a stopped command's group has between SIGTERM and
// SIGKILL.
const stopGrace = 5 * time.Second

// commandRun is how a supervised command ended.
type commandRun struct {
	start time.Time     // when it started
	wall  time.Duration // how long it ran
	wait  error         // its exec.Cmd.Wait error: how it exited
	// sampling is the session's error, from after the command exited; the
	// command's exit is known even when sampling failed.
	sampling error
}

// status is the command's exit status, 128+N when signal N killed it (as a
// shell reports it), and that signal. err is a failure to wait for it, not
// a non-zero status.
func (r commandRun) status() (code int, sig syscall.Signal, err error) {
	return sigfwd.ExitStatus(r.wait)
}

// runCommand runs sup.argv while s samples, and ends the session: it starts
// sampling, waits until the counters' starting values are read, runs the
// command to its end (relaying signals, or stopping its group when ctx is
// done or the timeout passes), waits for the last sample if asked, and
// stops sampling. An error means the command did not run to its end: it
// could not start (*startError), ctx was done
// (ctx.Err()), it timed out (errTimedOut), or sampling never began.
func (s *session) runCommand(ctx context.Context, sup supervision) (commandRun, error) {
	var run commandRun
	var sigs chan os.Signal
	if sup.relay {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	var sampled chan struct{}
	if sup.lastSample > 0 {
		// A sink of our own tells when samples are taken.
		sink := s.smp.AddSink("experiment", 64)
		sampled = make(chan struct{}, 1)
		go signalSamples(sink, sampled)
	}
	done := make(chan error, 1)
	go func() { done <- s.run(context.Background()) }()
	stopSampling := func() error {
		s.smp.Stop()
		return <-done
	}
	if err := s.waitSampling(done); err != nil {
		<-done
		return run, err
	}

	c := exec.Command(sup.argv[0], sup.argv[1:]...)
	if sup.output != "" {
		// In the experiment's runs directory, as root often: through no
		// other user's symbolic link, never onto a link or a FIFO.
		logf, err := beneath.CreateOutput(sup.output, true, 0o644)
		if err != nil {
			_ = stopSampling()
			return run, beneath.OutputError("the run's output file", sup.output, err)
		}
		defer logf.Close()
		c.Stdout, c.Stderr = logf, logf
	} else {
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	}
	if !sup.relay {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	run.start = time.Now()
	if err := c.Start(); err != nil {
		_ = stopSampling()
		return run, &startError{sup.argv[0], err}
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	var timeout <-chan time.Time
	if sup.timeout > 0 {
		t := time.NewTimer(sup.timeout)
		defer t.Stop()
		timeout = t.C
	}
	for running := true; running; {
		select {
		case sig := <-sigs: // nil without relay: never ready
			_ = sigfwd.Relay(c.Process, sig) // the command stops; sampling ends when it exits
		case run.wait = <-waited:
			run.wall = time.Since(run.start)
			running = false
		case <-ctx.Done():
			stopGroup(c.Process.Pid, waited)
			_ = stopSampling()
			return run, ctx.Err()
		case <-timeout:
			stopGroup(c.Process.Pid, waited)
			_ = stopSampling()
			return run, errTimedOut
		}
	}
	if sampled != nil {
		select {
		case <-sampled: // a sample taken while the command ran: drop it
		default:
		}
		select {
		case <-sampled:
		case <-time.After(sup.lastSample):
		}
	}
	run.sampling = stopSampling()
	return run, nil
}

// stopGroup stops the process group of pid, whose Wait reports to waited:
// SIGTERM, then SIGKILL if it is still there after stopGrace.
func stopGroup(pid int, waited <-chan error) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-waited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-waited
	}
}

// signalSamples tells sampled, without waiting, that a sample was taken,
// for every sample until sampling ends.
func signalSamples(sink *sampler.Sink, sampled chan<- struct{}) {
	for rec := range sink.Records() {
		if rec.Kind == sampler.KindSample {
			select {
			case sampled <- struct{}{}:
			default:
			}
		}
		sink.Release(rec)
	}
}
