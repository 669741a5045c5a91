package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/recording"
)

// RunRequest is what a Runner carries out: run Argv while recording Events
// every Interval to Recording, with the command's stdout and stderr in
// Output, within Timeout (0: none).
type RunRequest struct {
	ID        int
	Argv      []string
	Recording string
	Output    string
	Interval  time.Duration
	Events    []string
	Timeout   time.Duration
}

// Outcome is how a run went.
type Outcome struct {
	Start      time.Time
	Wall       time.Duration
	ExitStatus int
}

// Runner carries out one run. An error means the run could not be carried
// out (or was interrupted: ctx done); a command that fails is an Outcome
// with its exit status.
type Runner interface {
	Run(ctx context.Context, req RunRequest) (Outcome, error)
}

// Options steer Execute.
type Options struct {
	// Self is the numascope binary, which carries out the regimes
	// (numascope run).
	Self string
	// Progress receives one line per run and notes; nil discards them.
	Progress io.Writer
	// Now is the clock (for tests); nil is time.Now.
	Now func() time.Time
}

// ErrInterrupted is returned when ctx ends the experiment early.
var ErrInterrupted = errors.New("interrupted")

// Argv returns the command line of a run: the expanded template run by sh,
// under `numascope run` with the regime's options when there are regimes.
func (s *Spec) Argv(self string, r Run) []string {
	cmd := s.Expand(r.Levels, r.Regime, r.Rep, r.ID)
	argv := []string{"/bin/sh", "-c", cmd}
	if r.Regime == nil {
		return argv
	}
	out := append([]string{self, "run"}, r.Regime.RunArgs()...)
	out = append(out, "--")
	return append(out, argv...)
}

// Execute runs every run of the plan that the results file does not hold
// yet, appending each result as the run ends. It returns ErrInterrupted
// when ctx is done first; the interrupted run is not recorded and runs
// again on resume.
func Execute(ctx context.Context, spec *Spec, rf *ResultsFile, runner Runner, opt Options) error {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}
	// As every output: no directory created through another user's
	// symbolic link (issue 28, finding 4).
	if err := beneath.MkdirOutput(spec.RunsDir, 0o755); err != nil {
		return beneath.OutputError("the runs directory", spec.RunsDir, err)
	}
	plan := spec.Plan()
	factors := spec.AllFactors()
	left := 0
	for id := range plan.Len() {
		if _, ok := rf.Done[id]; !ok {
			left++
		}
	}
	total := plan.Len()
	done := total - left
	if rf.Repaired {
		fmt.Fprintf(progress, "the results file ended in a cut-off line (a crash while writing): dropped it; that run runs again\n")
	}
	if done > 0 && left > 0 {
		fmt.Fprintf(progress, "resuming: %d of %d runs already done, %d left\n", done, total, left)
	}
	if left == 0 {
		fmt.Fprintf(progress, "all %d runs are done\n", total)
		return nil
	}
	var spent time.Duration
	ran := 0
	checkedEvents := false
	for id := range plan.Len() {
		if _, ok := rf.Done[id]; ok {
			continue
		}
		r := plan.Run(id)
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		base := filepath.Join(spec.RunsDir, fmt.Sprintf("run-%04d", r.ID))
		req := RunRequest{ID: r.ID, Argv: spec.Argv(opt.Self, r), Recording: base + ".jsonl", Output: base + ".out",
			Interval: spec.Interval, Events: spec.Events, Timeout: spec.Timeout}
		kind := fmt.Sprintf("rep %d", r.Rep)
		if r.Warmup {
			kind = "warm-up"
		}
		t0 := now()
		out, err := runner.Run(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return fmt.Errorf("run %d (%s, %s): %w", r.ID, r.Label(factors), kind, err)
		}
		spent += now().Sub(t0)
		ran++
		res, err := spec.result(r, req, out)
		if err != nil {
			return fmt.Errorf("run %d (%s, %s): %w", r.ID, r.Label(factors), kind, err)
		}
		if out.ExitStatus != 0 && !spec.hasResponse(ExitStatus) {
			return fmt.Errorf("run %d (%s, %s): the command exited with status %d (its output is in %s); fix the command, "+
				"or list exit_status among the responses to study failures", r.ID, r.Label(factors), kind, out.ExitStatus, req.Output)
		}
		if !checkedEvents {
			checkedEvents = true
			for _, resp := range spec.Responses {
				if resp.Event != "" && res.Responses[resp.Name] == nil {
					return fmt.Errorf("response %s: the recording %s lacks %s (recorded: %s); fix the response or the events list",
						resp.Name, req.Recording, strings.SplitN(resp.Name, ":", 2)[1], strings.Join(eventNames(res.Events), ", "))
				}
			}
		}
		if err := rf.Append(res); err != nil {
			return err
		}
		done++
		left--
		eta := "-"
		if left > 0 {
			eta = (spent / time.Duration(ran) * time.Duration(left)).Round(time.Second).String()
		}
		fmt.Fprintf(progress, "[%d/%d] run %d %s (%s): %.3fs, exit %d; %d left, ETA %s\n",
			done, total, r.ID, r.Label(factors), kind, res.WallTime, res.ExitStatus, left, eta)
	}
	return nil
}

// CheckResponses makes, before anything runs, the check that the first run
// makes on its recording: every response's event, and the event it
// subtracts, must be one the runs record, as "sensor.event" (the sum over
// the nodes) or "sensor.N.event" (node N). recorded maps each recorded
// event "sensor.event" to the sources it has a column of its own for (the
// nodes of a discrete recording), none when only the sum is recorded.
// It lets `experiment --dry-run` find a misspelt response, and the real
// run fail at once instead of after its first run.
func (s *Spec) CheckResponses(recorded map[string][]string) error {
	have := func(event string) bool {
		if _, ok := recorded[event]; ok {
			return true
		}
		parts := strings.Split(event, ".")
		if len(parts) < 3 {
			return false
		}
		src := strings.Join(parts[1:len(parts)-1], ".")
		for _, x := range recorded[parts[0]+"."+parts[len(parts)-1]] {
			if x == src {
				return true
			}
		}
		return false
	}
	for _, resp := range s.Responses {
		for _, ev := range []string{resp.Event, resp.Minus} {
			if ev == "" || have(ev) {
				continue
			}
			names := make([]string, 0, len(recorded))
			for k := range recorded {
				names = append(names, k)
			}
			sort.Strings(names)
			return fmt.Errorf("%s: response %s: the runs do not record %s (they record: %s); fix the response or the events list",
				s.Path, resp.Name, ev, strings.Join(names, ", "))
		}
	}
	return nil
}

func (s *Spec) hasResponse(m Metric) bool {
	for _, r := range s.Responses {
		if r.Metric == m {
			return true
		}
	}
	return false
}

func eventNames(ev map[string]EventSummary) []string {
	var out []string
	for k := range ev {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// result builds a run's result line from its outcome and recording.
func (s *Spec) result(r Run, req RunRequest, out Outcome) (Result, error) {
	rec, err := recording.Load(req.Recording)
	if err != nil {
		return Result{}, fmt.Errorf("reading the run's recording: %w", err)
	}
	res := Result{Run: r.ID, Warmup: r.Warmup, Rep: r.Rep, Levels: r.Levels, Command: req.Argv,
		Recording: req.Recording, Output: req.Output, Start: out.Start.UTC(), WallTime: out.Wall.Seconds(),
		ExitStatus: out.ExitStatus, Events: Summarize(rec), Responses: map[string]*float64{}}
	for _, resp := range s.Responses {
		res.Responses[resp.Name] = responseValue(resp, res)
	}
	return res, nil
}

// responseValue computes a response from a result; nil when it cannot.
func responseValue(resp Response, res Result) *float64 {
	var v float64
	switch resp.Metric {
	case WallTime:
		v = res.WallTime
	case ExitStatus:
		v = float64(res.ExitStatus)
	case Total, Rate:
		var ok bool
		if v, ok = eventTotal(res, resp.Event); !ok {
			return nil
		}
		if resp.Minus != "" {
			m, ok := eventTotal(res, resp.Minus)
			if !ok {
				return nil
			}
			v -= m
		}
		if resp.Metric == Rate {
			if res.WallTime <= 0 {
				return nil
			}
			v /= res.WallTime
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// eventTotal returns an event's total in a result: "sensor.event" summed
// over the nodes, or "sensor.N.event" for node N.
func eventTotal(res Result, event string) (float64, bool) {
	if ev, ok := res.Events[event]; ok {
		return ev.Total, true
	}
	parts := strings.Split(event, ".")
	if len(parts) < 3 {
		return 0, false
	}
	key := parts[0] + "." + parts[len(parts)-1]
	src := strings.Join(parts[1:len(parts)-1], ".")
	e, ok := res.Events[key]
	if !ok {
		return 0, false
	}
	v, ok := e.PerNode[src]
	return v, ok
}
