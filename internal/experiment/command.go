package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/topology"
)

// Format is how the analysis is written.
type Format string

// The analysis formats.
const (
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
	FormatJSON     Format = "json"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatText, FormatMarkdown, FormatJSON:
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want text, markdown or json", s)
}

// CommandConfig is what `numascope experiment` was asked to do, parsed
// from its command line.
type CommandConfig struct {
	Spec        string // the spec's path
	Self        string // numascope's own binary, which carries out the regimes
	DryRun      bool   // check the spec, print the plan and stop
	AnalyzeOnly bool   // run nothing: analyse the results file as it is
	Report      string // also write the analysis as markdown here, unless ""
	Format      Format // of the analysis on Stdout
}

// Host is what the command needs from the rest of numascope, which this
// package does not own: the sampling session that carries out each run,
// and the machine's topology and event catalog to check the spec against.
type Host struct {
	Runner   Runner
	Topology func() (*topology.Topology, error)
	// Catalog opens the sensors' catalog, as the runs' sessions will; the
	// command closes it.
	Catalog        func() (*sampler.Catalog, error)
	Stdout, Stderr io.Writer
}

// Finished is what a command that did not stop at the dry run leaves for
// its caller to show (the web report).
type Finished struct {
	Spec     *Spec
	Analysis *Analysis
	Results  []Result
}

// RunCommand carries out `numascope experiment`: it checks the spec
// against this machine, then prints the plan (DryRun), or runs what is
// left of it (unless AnalyzeOnly), analyses the results and writes the
// analysis. Interrupted by SIGINT or SIGTERM while running, it says how
// far it got on Stderr and returns ErrInterrupted. It
// returns nil Finished after a dry run.
func RunCommand(cfg CommandConfig, h Host) (*Finished, error) {
	spec, err := Load(cfg.Spec)
	if err != nil {
		return nil, err
	}
	if err := checkRegimes(h, spec); err != nil {
		return nil, err
	}
	if spec.DefaultEvents {
		if err := keepAvailableEvents(h, spec); err != nil {
			return nil, err
		}
	}
	if !cfg.AnalyzeOnly {
		if err := checkResponses(h, spec); err != nil {
			return nil, err
		}
	}
	plan := spec.Plan()
	if cfg.DryRun {
		return nil, writePlan(h.Stdout, spec, plan, cfg.Self)
	}
	if !cfg.AnalyzeOnly {
		if err := runPlan(h, spec, plan, cfg.Self); err != nil {
			return nil, err
		}
	}
	_, results, err := LoadResults(spec.Results)
	if err != nil {
		return nil, err
	}
	a := Analyze(spec, results)
	if err := WriteAnalysis(h.Stdout, a, cfg.Format); err != nil {
		return nil, err
	}
	if cfg.Report != "" {
		if err := writeReport(cfg.Report, a); err != nil {
			return nil, err
		}
		fmt.Fprintf(h.Stderr, "numascope: markdown report written to %s\n", cfg.Report)
	}
	return &Finished{Spec: spec, Analysis: a, Results: results}, nil
}

// keepAvailableEvents keeps the default events this machine has (a kernel
// without NUMA balancing has no hinting-fault counters).
func keepAvailableEvents(h Host, spec *Spec) error {
	cat, err := h.Catalog()
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
	return nil
}

// writePlan prints the plan as it is built, one run at a time. Levels come
// from the spec, which may not be the user's own: the output is cleaned
// (term.Clean) on its way out.
func writePlan(out io.Writer, spec *Spec, plan *Plan, self string) error {
	factors := spec.AllFactors()
	cw := term.NewWriter(out)
	w := bufio.NewWriter(cw)
	for id := range plan.Len() {
		r := plan.Run(id)
		kind := fmt.Sprintf("rep %d", r.Rep)
		if r.Warmup {
			kind = "warm-up"
		}
		fmt.Fprintf(w, "run %d (%s, %s): %q\n", r.ID, r.Label(factors), kind, spec.Argv(self, r))
	}
	fmt.Fprintf(w, "%d runs; results to %s, recordings in %s\n", plan.Len(), spec.Results, spec.RunsDir)
	if err := w.Flush(); err != nil {
		return err
	}
	return cw.Flush()
}

// runPlan runs the runs not done yet until the plan is done or SIGINT or
// SIGTERM stops it.
func runPlan(h Host, spec *Spec, plan *Plan, self string) error {
	rf, err := OpenResults(spec.Results, spec, plan.Len())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = Execute(ctx, spec, rf, h.Runner, Options{Self: self, Progress: term.NewWriter(h.Stderr)})
	stop()
	done := len(rf.Done)
	rf.Close()
	if errors.Is(err, ErrInterrupted) {
		fmt.Fprintf(h.Stderr, "numascope: interrupted: %d of %d runs done (in %s); run the same command again to resume\n",
			done, plan.Len(), spec.Results)
	}
	return err
}

// WriteAnalysis writes an experiment's analysis in format. Levels, factor
// and response names come from the spec and the results file: the text is
// cleaned (term.Clean) and the JSON escaped so that none of their control
// or bidi characters reaches a terminal.
func WriteAnalysis(out io.Writer, a *Analysis, format Format) error {
	if format == FormatJSON {
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
	if format == FormatMarkdown {
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

// writeReport writes the markdown report as every output is written:
// through no other user's symbolic link, never onto a link, FIFO or
// hard-linked file.
func writeReport(path string, a *Analysis) error {
	f, err := beneath.CreateOutput(path, true, 0o644)
	if err != nil {
		return beneath.OutputError("the report", path, err)
	}
	if err := WriteAnalysis(f, a, FormatMarkdown); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// checkResponses checks the spec's responses against the events its runs
// will record on this machine (resolved as the run's session resolves them),
// before anything runs: the dry run checks what the real run checks.
func checkResponses(h Host, spec *Spec) error {
	cat, err := h.Catalog()
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
	recorded, gauges := map[string][]string{}, map[string]string{}
	for _, c := range cols {
		key := c.Sensor + "." + c.Event.Name
		if c.Event.Kind == sensor.Gauge {
			gauges[key] = c.Event.Unit
		}
		if c.Name != key && len(c.Sources) == 1 && c.Sources[0] != "" && strings.HasPrefix(c.Name, c.Sensor+"."+c.Sources[0]+".") {
			recorded[key] = append(recorded[key], c.Sources[0])
		} else if _, ok := recorded[key]; !ok {
			recorded[key] = nil
		}
	}
	if err := spec.CheckRates(gauges); err != nil {
		return err
	}
	return spec.CheckResponses(recorded)
}

// checkRegimes checks every regime's nodes and CPUs against this machine
// before anything runs: a typo would otherwise fail the first run of that
// regime, possibly hours into the experiment.
func checkRegimes(h Host, spec *Spec) error {
	if len(spec.Regimes) == 0 {
		return nil
	}
	topo, err := h.Topology()
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
