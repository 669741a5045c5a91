package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/experiment"
	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/term"
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
			if format != "text" && format != "markdown" && format != "json" {
				return fmt.Errorf("--format %q: want text, markdown or json", format)
			}
			spec, err := experiment.Load(args[0])
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cannot find numascope's own binary (to run the regimes): %w", err)
			}
			if err := checkRegimes(g, spec); err != nil {
				return err
			}
			if spec.DefaultEvents {
				// Keep the default events this machine has (a kernel without
				// NUMA balancing has no hinting-fault counters).
				_, cat, err := g.open()
				if err != nil {
					return err
				}
				var keep []string
				for _, p := range spec.Events {
					if _, err := cat.Select([]string{p}, true); err == nil {
						keep = append(keep, p)
					}
				}
				cat.Close()
				if len(keep) == 0 {
					return fmt.Errorf("%s: none of the default events is available here; name some with events = [...] (see numascope events)", spec.Path)
				}
				spec.Events = keep
			}
			if !analyzeOnly {
				if err := checkResponses(g, spec); err != nil {
					return err
				}
			}
			plan := spec.Plan()
			if dryRun {
				// Printed as it is built, one run at a time. Levels come
				// from the spec, which may not be the user's own: the
				// output is cleaned (term.Clean) on its way out.
				factors := spec.AllFactors()
				cw := term.NewWriter(os.Stdout)
				w := bufio.NewWriter(cw)
				for id := range plan.Len() {
					r := plan.Run(id)
					kind := fmt.Sprintf("rep %d", r.Rep)
					if r.Warmup {
						kind = "warm-up"
					}
					argv := spec.Argv(self, r)
					fmt.Fprintf(w, "run %d (%s, %s): %q\n", r.ID, r.Label(factors), kind, argv)
				}
				fmt.Fprintf(w, "%d runs; results to %s, recordings in %s\n", plan.Len(), spec.Results, spec.RunsDir)
				if err := w.Flush(); err != nil {
					return err
				}
				return cw.Flush()
			}
			if !analyzeOnly {
				rf, err := experiment.OpenResults(spec.Results, spec, plan.Len())
				if err != nil {
					return err
				}
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				err = experiment.Execute(ctx, spec, rf, &sessionRunner{g: g}, experiment.Options{Self: self, Progress: term.NewWriter(os.Stderr)})
				stop()
				done := len(rf.Done)
				rf.Close()
				if errors.Is(err, experiment.ErrInterrupted) {
					fmt.Fprintf(os.Stderr, "numascope: interrupted: %d of %d runs done (in %s); run the same command again to resume\n",
						done, plan.Len(), spec.Results)
					return exitError{130}
				}
				if err != nil {
					return err
				}
			}
			_, results, err := experiment.LoadResults(spec.Results)
			if err != nil {
				return err
			}
			a := experiment.Analyze(spec, results)
			if err := writeAnalysis(os.Stdout, a, format); err != nil {
				return err
			}
			if report != "" {
				// As every output: through no other user's symbolic
				// link, never onto a link, FIFO or hard-linked file.
				f, err := beneath.CreateOutput(report, true, 0o644)
				if err != nil {
					return beneath.OutputError("the report", report, err)
				}
				if err := writeAnalysis(f, a, "markdown"); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return fmt.Errorf("writing the report: %w", err)
				}
				fmt.Fprintf(os.Stderr, "numascope: markdown report written to %s\n", report)
			}
			if web {
				return serveReport(&wf, spec.Results, experiment.NewWebReport(a, results))
			}
			return nil
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

// writeAnalysis writes an experiment's analysis in format (text, markdown
// or json). Levels, factor and response names come from the spec and the
// results file: the text is cleaned (term.Clean) and the JSON escaped so
// that none of their control or bidi characters reaches a terminal.
func writeAnalysis(out io.Writer, a *experiment.Analysis, format string) error {
	if format == "json" {
		b, err := json.MarshalIndent(a, "", "  ")
		if err != nil {
			return err
		}
		_, err = out.Write(append(term.EscapeJSON(b), '\n'))
		return err
	}
	cw := term.NewWriter(out)
	w := bufio.NewWriter(cw)
	var err error
	if format == "markdown" {
		err = a.WriteMarkdown(w)
	} else {
		err = a.WriteText(w)
	}
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return cw.Flush()
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

// checkResponses checks the spec's responses against the events its runs
// will record on this machine (resolved as the run's session resolves them),
// before anything runs: the dry run checks what the real run checks.
func checkResponses(g *globals, spec *experiment.Spec) error {
	_, cat, err := g.open()
	if err != nil {
		return err
	}
	defer cat.Close()
	patterns, err := cat.ExpandPresets(spec.Events)
	if err != nil {
		return fmt.Errorf("%s: events: %w", spec.Path, err)
	}
	cols, err := cat.Select(patterns, true) // the runs record discrete columns
	if err != nil {
		return fmt.Errorf("%s: events: %w", spec.Path, err)
	}
	recorded := map[string][]string{}
	for _, c := range cols {
		key := c.Sensor + "." + c.Event.Name
		if c.Name != key && len(c.Sources) == 1 && c.Sources[0] != "" && strings.HasPrefix(c.Name, c.Sensor+"."+c.Sources[0]+".") {
			recorded[key] = append(recorded[key], c.Sources[0])
		} else if _, ok := recorded[key]; !ok {
			recorded[key] = nil
		}
	}
	return spec.CheckResponses(recorded)
}

// checkRegimes checks every regime's nodes and CPUs against this machine
// before anything runs: a typo would otherwise fail the first run of that
// regime, possibly hours into the experiment.
func checkRegimes(g *globals, spec *experiment.Spec) error {
	if len(spec.Regimes) == 0 {
		return nil
	}
	_, topo, err := g.discover()
	if err != nil {
		return err
	}
	for _, r := range spec.Regimes {
		if _, err := placement.ParsePolicy(r.Policy, topo); err != nil {
			return fmt.Errorf("%s:%d: regime %s: %w", spec.Path, r.Line, r.Name, err)
		}
		if _, err := placement.ResolveCPUs(r.CPUs, r.Nodes, r.ThreadsPerNode, topo); err != nil {
			return fmt.Errorf("%s:%d: regime %s: %w", spec.Path, r.Line, r.Name, err)
		}
	}
	return nil
}
