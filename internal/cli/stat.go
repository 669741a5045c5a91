package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/rawio"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/term"
)

func newStatCmd(g *globals) *cobra.Command {
	var f sampleFlags
	var csv bool
	cmd := &cobra.Command{
		Use:   "stat",
		Short: "Print one line per sample, like vmstat",
		Long: `Print one line per sample with a column per selected event. Counters are shown as rates
per second, gauges as levels, CPU time as %. On a terminal numbers use K/M/G units and the
headings repeat every 25 lines; piped, numbers are raw. The control FIFO accepts label,
pause, resume, interval and record commands (see numascope ctl).`,
		Example: `  numascope stat
  numascope stat -i 100ms -n 50 --discrete -e 'numa_*'
  numascope stat --csv -e node.*.MemFree > free.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			s, err := newSession(g, cfg)
			if err != nil {
				return err
			}
			// On a screen, headings are mnemonics; where two columns would
			// share one (node.numa_hit and vmstat.numa_hit), both use their
			// full names. CSV is for scripts: its headings are the full
			// names, as in a recording and in convert's CSV, so that the
			// name selected is the name a script reads on every machine.
			seen := map[string]int{}
			for _, c := range s.smp.Columns() {
				seen[c.Heading()]++
			}
			var cols []term.Column
			for _, c := range s.smp.Columns() {
				h := c.Heading()
				if seen[h] > 1 || csv {
					h = c.Name
				}
				cols = append(cols, term.Column{Heading: h, Unit: c.Event.Unit})
			}
			tty := term.IsTerminal(os.Stdout)
			opt := term.Options{Human: tty && !csv, CSV: csv}
			if tty && !csv {
				opt.Repeat = 25
				// A second heading line with the units on a terminal;
				// piped, the output stays one heading line for scripts.
				opt.Units = displayUnits(s.smp.Columns())
			}
			// Lines go out once per batch of samples (see sampler.Sink):
			// the same bytes in fewer writes; raw when stdout is a local
			// file (see rawio), kept for the same figure as recordings'
			// (docs/performance.md, "Hand-written I/O").
			file := rawio.NewFileWriter(os.Stdout)
			out := bufio.NewWriterSize(file, 64<<10)
			tm := &terminal{p: term.NewPrinter(out, cols, opt), out: out, file: file, s: s}
			tm.sink = s.smp.AddSink("terminal", sampler.SinkDepth(s.smp.Interval()))
			tm.sink.SetDirect(tm.take)
			printed := make(chan error, 1)
			go func() { printed <- tm.run() }()

			// A closed pipe (stat | head) ends sampling cleanly, so the FIFO is removed.
			signal.Ignore(syscall.SIGPIPE)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = s.run(ctx)
			if perr := <-printed; err == nil && !errors.Is(perr, syscall.EPIPE) {
				err = perr
			}
			return err
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&csv, "csv", false, "comma-separated output with a time_s column")
	return cmd
}

// displayUnits are the units of the values stat shows for cols: a
// counter's rate per second (pages/s), a gauge's level (bytes), and % for
// CPU time and other shares.
func displayUnits(cols []*sampler.Column) []string {
	units := make([]string, len(cols))
	for i, c := range cols {
		switch u := c.Event.Unit; {
		case u == "%" || c.Event.Kind != sensor.Counter:
			units[i] = u
		case u == "":
			units[i] = "/s"
		default:
			units[i] = u + "/s"
		}
	}
	return units
}

// terminal prints what stat's sink receives. Its goroutine (run) prints
// each batch the sampler queues; from sampler.BatchEvery up, where every
// sample is a batch of its own, the sampling goroutine prints it instead
// (take) when stdout takes a write without waiting (a local file written
// raw), and the sample is spared the hand-off (see sampler.Direct).
type terminal struct {
	mu   sync.Mutex // held by whichever of run and take prints
	p    *term.Printer
	out  *bufio.Writer
	file *rawio.FileWriter // under out
	sink *sampler.Sink
	s    *session
	werr error // the first write error: nothing more is printed
	derr error // a write error take met, for run to report
}

// run prints what the sink queues until sampling ends, writing out each
// batch once it has been formatted, and returns the first write error.
func (tm *terminal) run() error {
	for range tm.sink.Ready() {
		tm.mu.Lock()
		if tm.derr != nil {
			tm.fail(tm.derr)
		}
		for {
			r, open := tm.sink.Next()
			if r == nil {
				if tm.werr == nil {
					tm.fail(tm.out.Flush())
				}
				if !open {
					tm.mu.Unlock()
					return tm.werr
				}
				break
			}
			if tm.werr == nil {
				tm.fail(printRecord(tm.p, r, tm.s))
			}
			tm.sink.Release(r)
		}
		tm.mu.Unlock()
	}
	return tm.werr // the bell is never closed: a closed queue ends the loop above
}

// fail keeps the first write error and stops sampling: typically a closed
// pipe, after which nothing more is reported. run's goroutine only: Stop
// waits for room in the sampler's command queue.
func (tm *terminal) fail(err error) {
	if err != nil && tm.werr == nil {
		tm.s.smp.Stop()
		tm.werr = fmt.Errorf("writing to stdout: %w", err)
	}
}

// take prints one sample on the sampling goroutine (a sampler.Direct): only
// when run is not printing and the write will be raw, so that it never
// waits on anything but the kernel. (On the one P the process samples on,
// a raw write the kernel holds delays sampling wherever it is made; with
// more Ps, from a GOMAXPROCS in the environment, only when made here.
// Either way rawio then writes the ordinary way for a while, and take
// declines.) A failed write is declined and left to run, which the queued
// sample wakes.
func (tm *terminal) take(t time.Duration, values []float64) bool {
	if !tm.mu.TryLock() {
		return false
	}
	defer tm.mu.Unlock()
	if tm.werr != nil || tm.derr != nil || !tm.file.RawNow() {
		return false
	}
	err := tm.p.Sample(t, values)
	if err == nil {
		err = tm.out.Flush()
	}
	if err != nil {
		tm.derr = err
		return false
	}
	return true
}

func printRecord(p *term.Printer, r *sampler.Record, s *session) error {
	switch r.Kind {
	case sampler.KindSample:
		return p.Sample(r.T, r.Values)
	case sampler.KindLabel:
		return p.Note(r.T, "label: %s", r.Text)
	case sampler.KindInterval:
		return p.Note(r.T, "interval: %v", r.Interval)
	case sampler.KindPause:
		return p.Note(r.T, "paused (sampling goes on; resume with: numascope ctl resume)")
	case sampler.KindResume:
		return p.Note(r.T, "resumed")
	case sampler.KindEnd:
		if r.Dropped > 0 || r.Stats.MissedDeadlines > 0 || r.Stats.ReadErrors > 0 {
			s.stderr.printf("%d samples, %d missed deadlines, %d dropped by the terminal, %d read errors",
				r.Stats.Samples, r.Stats.MissedDeadlines, r.Dropped, r.Stats.ReadErrors)
		}
	}
	return nil
}
