package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/sigfwd"
)

func newRecordCmd(g *globals) *cobra.Command {
	var f sampleFlags
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "record -o FILE [flags] [-- CMD ARGS...]",
		Short: "Record samples to a file, until interrupted or while a command runs",
		Long: `Record the selected events to FILE (JSON Lines; a .zst suffix compresses with zstd).

Without a command, recording goes on until SIGINT or SIGTERM, which close the file cleanly.
With a command, numascope runs it, stops when it exits and returns its exit status. While the
command runs, SIGINT, SIGTERM and SIGHUP sent to numascope are passed on to it (Ctrl-C at the
terminal reaches it directly, and is not passed on a second time); numascope stops when it exits.
An existing FILE is never overwritten unless --force is given. The control FIFO accepts
label, pause, resume, interval and record FILE (switch files) commands.`,
		Example: `  numascope record -o run.jsonl.zst -i 100ms -- ./my_app --threads 64
  numascope record -o idle.jsonl -e 'node.*.numa_miss,numa_hint_faults'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("record needs -o FILE (e.g. -o run.jsonl or -o run.jsonl.zst)")
			}
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unexpected argument %q: put the command to run after --", args[0])
			}
			s, err := newSession(g, &f, out, force, args)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				err := s.run(ctx)
				s.summary(out)
				return err
			}
			return recordCommand(s, out, args)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "recording file (.zst suffix: zstd-compressed)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return cmd
}

// recordCommand samples while args runs and returns its exit status.
func recordCommand(s *session, out string, args []string) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	done := make(chan error, 1)
	go func() { done <- s.run(context.Background()) }()
	if err := s.waitSampling(done); err != nil {
		<-done
		s.summary(out)
		return err
	}

	c := exec.Command(args[0], args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		s.smp.Stop()
		<-done
		s.summary(out)
		return fmt.Errorf("cannot run %s: %w (the recording %s holds the samples taken so far)", args[0], err, out)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	var werr error
	for running := true; running; {
		select {
		case sig := <-sigs:
			_ = sigfwd.Relay(c.Process, sig) // the command stops; sampling ends when it exits
		case werr = <-waited:
			running = false
		}
	}
	s.smp.Stop()
	err := <-done
	s.summary(out)
	if err != nil {
		return err
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			s.stderr.printf("%s was killed by signal %v", args[0], st.Signal())
			return exitError{128 + int(st.Signal())}
		}
		return exitError{ee.ExitCode()}
	}
	return werr
}

// summary says on stderr what was recorded: the samples the files hold,
// not the samples taken (a full disk loses the rest).
func (s *session) summary(out string) {
	st := s.smp.Stats()
	files := s.rec.Files()
	if len(files) == 0 {
		files = []string{out}
	}
	s.stderr.printf("recorded %d samples to %s (%d missed deadlines, %d dropped because writing fell behind, %d read errors)",
		s.rec.Written(), strings.Join(files, ", "), st.MissedDeadlines, s.rec.Dropped(), st.ReadErrors)
}
