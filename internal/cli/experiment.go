package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/experiment"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/topology"
	"github.com/numascope/numascope/internal/web"
)

func newExperimentCmd(g *globals) *cobra.Command {
	var report, format string
	var dryRun, analyzeOnly, web bool
	var wf webFlags
	cmd := &cobra.Command{
		Use:   "experiment SPEC.toml",
		Short: "Run a full factorial experiment over placement regimes and analyse it (ANOVA)",
		Long: `Run the full factorial experiment that SPEC.toml describes: every combination of the
factors' levels and of the placement regimes (carried out by numascope run), replicated, in a
seeded random order, after the warm-up runs. Every run is recorded; its result is appended to
the results file as soon as it ends. Interrupted (Ctrl-C, a crash), the same command resumes
where it stopped: no run is lost and none is repeated.

Then, for each response, the analysis: cell means, effects, the ANOVA table, confidence
intervals, residual diagnostics and a verdict per factor; "regime B vs regime A" tables
(speedup and % change of every event); and the per-node distribution of each event.
docs/experiment.md describes the spec.

With --web, the report is then served to the web client.
` + webSecurityHelp,
		Example: `  numascope experiment regimes.toml
  numascope experiment regimes.toml --dry-run
  numascope experiment regimes.toml --analyze --report regimes.md
  numascope experiment regimes.toml --analyze --web     # the report in the web client`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.check(); web && err != nil {
				return err
			}
			var err error
			cfg := experiment.CommandConfig{Spec: args[0], DryRun: dryRun, AnalyzeOnly: analyzeOnly, Report: report}
			if cfg.Format, err = experiment.ParseFormat(format); err != nil {
				return err
			}
			if cfg.Self, err = os.Executable(); err != nil {
				return fmt.Errorf("cannot find numascope's own binary (to run the regimes): %w", err)
			}
			done, err := experiment.RunCommand(cfg, experiment.Host{
				Runner:   &sessionRunner{g: g},
				Topology: func() (*topology.Topology, error) { _, topo, err := g.discover(); return topo, err },
				Catalog:  func() (*sampler.Catalog, error) { _, cat, err := g.open(); return cat, err },
				Stdout:   os.Stdout,
				Stderr:   os.Stderr,
			})
			switch {
			case errors.Is(err, experiment.ErrInterrupted):
				return exitError{130} // RunCommand said how far it got
			case err != nil || done == nil || !web:
				return err
			}
			return serveReport(&wf, done.Spec.Results, experiment.NewWebReport(done.Analysis, done.Results))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "check the spec (regimes, responses against the events recorded here), print the plan (every run's command, in order) and stop")
	f.BoolVar(&analyzeOnly, "analyze", false, "run nothing: analyse the results file as it is")
	f.StringVar(&report, "report", "", "also write the analysis as markdown to FILE")
	f.StringVar(&format, "format", "text", "analysis output: text, markdown or json")
	f.BoolVar(&web, "web", false, "then serve the report in the web client (effects, boxplots, QQ plot, ANOVA) until Ctrl-C; see --listen")
	wf.register(cmd)
	return cmd
}

// serveReport serves an experiment's report to the web client until
// interrupted.
func serveReport(w *webFlags, file string, report *experiment.WebReport) error {
	stderr := &lockedWriter{w: os.Stderr}
	srv, err := web.NewReport(w.options(stderr), file, report)
	if err != nil {
		return err
	}
	return serveUntilSignal(stderr, srv.Server)
}

// sessionRunner carries out one run with numascope's own sampling session:
// the recorder writes the run's recording while the command runs.
type sessionRunner struct{ g *globals }

func (r *sessionRunner) Run(ctx context.Context, req experiment.RunRequest) (experiment.Outcome, error) {
	var out experiment.Outcome
	s, err := newSession(r.g, sessionConfig{
		patterns: splitPatterns(req.Events),
		// Whole microseconds, as the runs have always been sampled.
		interval:    req.Interval.Truncate(time.Microsecond),
		discrete:    true,
		ctl:         filepath.Join(filepath.Dir(req.Recording), "ctl"),
		samplerNode: "auto",
		record:      req.Recording,
		force:       true,
		command:     req.Argv,
	})
	if err != nil {
		return out, err
	}
	// After the command exits, the session runs until the next sample, so
	// that the last events are counted.
	run, err := s.runCommand(ctx, supervision{argv: req.Argv, output: req.Output, timeout: req.Timeout,
		lastSample: 2*req.Interval + time.Second})
	out.Start, out.Wall = run.start, run.wall
	switch {
	case errors.Is(err, errTimedOut):
		return out, fmt.Errorf("timed out after %v (timeout in the spec); its output is in %s", req.Timeout, req.Output)
	case err != nil:
		return out, err
	case run.sampling != nil:
		return out, fmt.Errorf("recording: %w", run.sampling)
	}
	out.ExitStatus, _, err = run.status()
	return out, err
}
