package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/outname"
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
FILE may hold ` + outname.Help + `
(e.g. -o run.%h.%r.jsonl.zst under mpirun or srun); expanded values are reduced to
[A-Za-z0-9._-], so the file stays in the directory named.
An existing FILE is never overwritten unless --force is given. The control FIFO accepts
label, pause, resume, interval and record FILE (switch files) commands.`,
		Example: `  numascope record -o run.jsonl.zst -i 100ms -- ./my_app --threads 64
  numascope record -o idle.jsonl -e 'node.*.numa_miss,numa_hint_faults'`,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if out == "" {
				return fmt.Errorf("record needs -o FILE (e.g. -o run.jsonl or -o run.jsonl.zst)")
			}
			if out, err = outname.Expand(out, outname.Current(time.Now())); err != nil {
				return err
			}
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unexpected argument %q: put the command to run after --", args[0])
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			cfg.record, cfg.force, cfg.command = out, force, args
			s, err := newSession(g, cfg)
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
	cmd.Flags().StringVarP(&out, "output", "o", "", "recording file (.zst suffix: zstd-compressed); "+outname.Help)
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return cmd
}

// recordCommand samples while args runs and returns its exit status.
func recordCommand(s *session, out string, args []string) error {
	run, err := s.runCommand(context.Background(), supervision{argv: args, relay: true})
	s.summary(out)
	var se *startError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w (the recording %s holds the samples taken so far)", err, out)
	case err != nil:
		return err
	case run.sampling != nil:
		return run.sampling
	}
	code, sig, err := run.status()
	switch {
	case err != nil:
		return err
	case sig != 0:
		s.stderr.printf("%s was killed by signal %v", args[0], sig)
	case code == 0:
		return nil
	}
	return exitError{code}
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
