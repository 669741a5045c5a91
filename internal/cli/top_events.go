package cli

import (
	"fmt"

	"github.com/numascope/numascope/internal/numatrace"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/top"
)

// openTopEvents opens top's kernel event sources (internal/numatrace): the
// kprobe on task_numa_fault, migrate:mm_migrate_pages and the DRAM presets.
// What cannot be opened comes back as lines for Source.Missing.
func openTopEvents(fs sysfs.FS, presets []string) (top.EventSource, []string) {
	if !fs.Live() {
		return nil, []string{"fault and migration rates: not read on a captured tree (--root); they need the live kernel"}
	}
	t, err := numatrace.Open(fs, numatrace.Options{PMU: true, Presets: presets})
	if err != nil {
		return nil, []string{fmt.Sprintf("fault and migration rates: %v", err)}
	}
	return newTraceSource(t), nil
}

// traceSource adapts a numatrace.Tracer to top.EventSource.
type traceSource struct {
	t *numatrace.Tracer
	c *numatrace.Counts
	// The tracer's sources are fixed once it is open; the collector asks
	// for them once per process and refresh, so they are resolved here.
	faults, migrations, pmu string
	missing                 []string
}

func newTraceSource(t *numatrace.Tracer) *traceSource {
	s := &traceSource{t: t, c: numatrace.NewCounts(), missing: t.Missing()}
	for _, st := range t.Sources() {
		if !st.OK {
			continue
		}
		switch st.Name {
		case numatrace.SourceFaults:
			s.faults = st.Event
		case numatrace.SourceMigrations:
			s.migrations = st.Event
		default:
			s.pmu = st.Event
		}
	}
	return s
}

func (s *traceSource) Collect(into *top.EventCounts) {
	s.c.Reset()
	s.t.Collect(s.c)
	addTraceCounts(into, s.c)
}

// addTraceCounts adds one Collect's counts to into: hinting faults by
// process, thread and memory node, the pages migrated on them
// (TNF_MIGRATED), migrations by reason, the PMU's DRAM samples times their
// period (loads), and the records lost.
func addTraceCounts(into *top.EventCounts, c *numatrace.Counts) {
	for pid, p := range c.Procs {
		addTask(into.Procs, int(pid), &p.Faults, p.LocalDRAM, p.RemoteDRAM, c.PMUPeriod)
	}
	for tid, th := range c.Threads {
		addTask(into.Threads, int(tid), &th.Faults, th.LocalDRAM, th.RemoteDRAM, c.PMUPeriod)
	}
	for n := range c.Nodes {
		addTask(into.Nodes, n, &c.Nodes[n].Faults, 0, 0, 0)
	}
	for r, n := range c.MigratedByReason {
		if n > 0 {
			into.Migrations[r] += n
		}
	}
	into.Lost += c.Lost
}

// addTask adds one process's or thread's faults and DRAM samples to its
// entry in m. One with nothing this interval (kept by numatrace's Reset for
// reuse) adds no entry.
func addTask(m map[int]*top.TaskEvents, id int, f *numatrace.Faults, localDRAM, remoteDRAM, period uint64) {
	if f.Local+f.Remote+f.MigratedPages+localDRAM+remoteDRAM == 0 {
		return
	}
	e := top.Task(m, id)
	e.LocalFaults += f.Local
	e.RemoteFaults += f.Remote
	e.MigratedPages += f.MigratedPages
	e.PMULocal += localDRAM * period
	e.PMURemote += remoteDRAM * period
}

func (s *traceSource) Sources() (faults, migrations, pmu string, missing []string) {
	return s.faults, s.migrations, s.pmu, s.missing
}

func (s *traceSource) Close() error { return s.t.Close() }
