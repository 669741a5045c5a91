// Package exporter serves numascope's counters to Prometheus: per-node
// numastat, meminfo and vmstat, the machine's /proc/vmstat, the NUMA
// topology and, where asked for and permitted, perf events.
//
// It reads at scrape time, through the same sensors (internal/sensor) that
// stat, record and live sample with, and keeps no background sampler: an
// idle exporter costs nothing. Each kernel file family is one collector
// behind a small interface, as in node_exporter, so that a file that cannot
// be read costs only its own metrics and is counted in
// numascope_scrape_errors_total{collector}. Scrapes that arrive while a read
// is in flight wait for that read and share its result, so that several
// Prometheus servers (or a burst of requests) never read the files more than
// once at a time.
//
// Values are the kernel's raw ones: counters are monotonic and end in
// _total, and Prometheus computes rate(); gauges are gauges. docs/exporter.md
// lists every name.
package exporter

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/numascope/numascope/internal/sensor"
)

// collector is one kernel file (or family of files, one per node) turned
// into metrics.
type collector interface {
	// Name labels the collector's errors and timings, e.g. "numastat".
	Name() string
	// Update reads the collector's files once and emits its metrics. An
	// error says which metrics are missing from this scrape and why; the
	// ones emitted are fresh (a node whose files vanished is left out,
	// the others are there).
	Update(emit func(prometheus.Metric)) error
	// Close releases its file descriptors.
	Close() error
}

// Exporter is a prometheus.Collector over numascope's collectors. It is
// safe for concurrent use: one read is in flight at a time, and the scrapes
// that arrive during it get its result.
type Exporter struct {
	collectors []collector
	log        func(string)

	mu       sync.Mutex
	inflight *read // the read scrapes now wait for, or nil
	waiting  atomic.Int32 // scrapes waiting for a read in flight (tests watch it)

	// Owned by the goroutine doing a read (one at a time).
	errCount []uint64 // per collector, errors since start
	failing  []string // per collector, the error of its failure streak, "" when fine
	reads    uint64   // reads done since start

	successDesc, durationDesc, errorsDesc, readsDesc *prometheus.Desc
}

// read is one pass over the collectors, shared by the scrapes that arrive
// while it runs.
type read struct {
	done    chan struct{}
	metrics []prometheus.Metric
}

// newExporter wraps the collectors; the exporter owns and closes them.
func newExporter(cs []collector, log func(string)) *Exporter {
	if log == nil {
		log = func(string) {}
	}
	return &Exporter{
		collectors: cs, log: log,
		errCount: make([]uint64, len(cs)), failing: make([]string, len(cs)),
		successDesc: prometheus.NewDesc("numascope_scrape_collector_success",
			"1 when the collector read all its files in the last read, else 0 (see numascope_scrape_errors_total)", []string{"collector"}, nil),
		durationDesc: prometheus.NewDesc("numascope_scrape_collector_duration_seconds",
			"wall time the collector's last read took", []string{"collector"}, nil),
		errorsDesc: prometheus.NewDesc("numascope_scrape_errors_total",
			"reads in which the collector could not read some or all of its files (a node that went away, a permission); its other metrics are still exported", []string{"collector"}, nil),
		readsDesc: prometheus.NewDesc("numascope_scrape_reads_total",
			"reads of the kernel files since the exporter started; scrapes that arrive during a read share it and do not count", nil, nil),
	}
}

// Describe sends nothing: the exporter is an unchecked collector, since
// which metrics a read yields depends on the kernel and on which nodes are
// there at the time.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect reads the collectors, or waits for the read in flight, and sends
// the result.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	for _, m := range e.Read() {
		ch <- m
	}
}

// Read returns the metrics of one read: a new one, or the one in flight
// when Read is called.
func (e *Exporter) Read() []prometheus.Metric {
	e.mu.Lock()
	if r := e.inflight; r != nil {
		e.waiting.Add(1)
		e.mu.Unlock()
		<-r.done
		e.waiting.Add(-1)
		return r.metrics
	}
	r := &read{done: make(chan struct{})}
	e.inflight = r
	e.mu.Unlock()

	r.metrics = e.readAll()

	e.mu.Lock()
	e.inflight = nil
	e.mu.Unlock()
	close(r.done)
	return r.metrics
}

// readAll runs every collector once; only one goroutine runs it at a time.
func (e *Exporter) readAll() []prometheus.Metric {
	var out []prometheus.Metric
	emit := func(m prometheus.Metric) { out = append(out, m) }
	e.reads++
	for i, c := range e.collectors {
		start := time.Now()
		err := c.Update(emit)
		took := time.Since(start).Seconds()
		ok := 1.0
		if err != nil {
			ok = 0
			e.errCount[i]++
			if msg := err.Error(); msg != e.failing[i] {
				e.log(fmt.Sprintf("exporter: %s: %s", c.Name(), msg))
				e.failing[i] = msg
			}
		} else if e.failing[i] != "" {
			e.log(fmt.Sprintf("exporter: %s: read again after failing", c.Name()))
			e.failing[i] = ""
		}
		emit(prometheus.MustNewConstMetric(e.successDesc, prometheus.GaugeValue, ok, c.Name()))
		emit(prometheus.MustNewConstMetric(e.durationDesc, prometheus.GaugeValue, took, c.Name()))
		emit(prometheus.MustNewConstMetric(e.errorsDesc, prometheus.CounterValue, float64(e.errCount[i]), c.Name()))
	}
	emit(prometheus.MustNewConstMetric(e.readsDesc, prometheus.CounterValue, float64(e.reads)))
	return out
}

// Close closes every collector. The exporter must not be read after it.
func (e *Exporter) Close() error {
	var errs []error
	for _, c := range e.collectors {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Config says what to export.
type Config struct {
	// Env is the filesystem root and topology the file sensors open on.
	Env sensor.Env
	// Perf are opened perf or uncore sensors with the events to export
	// (numascope exporter -e); the exporter enables those events on them
	// and reads them, but does not close them: their catalog does.
	Perf []PerfEvents
	// Log receives one line when a collector starts failing (a node's
	// files went away) and when it recovers. May be nil.
	Log func(string)
}

// PerfEvents is a perf or uncore sensor and the indexes into its Events()
// to export.
type PerfEvents struct {
	Sensor sensor.Sensor
	Events []int
}

// New opens the collectors: numastat, the nodes' meminfo and vmstat,
// /proc/vmstat, the topology and the perf events of cfg. A file the
// exporter cannot read at start is an error naming it, so that a broken
// set-up shows at once rather than as missing series.
func New(cfg Config) (_ *Exporter, err error) {
	var cs []collector
	defer func() {
		if err != nil {
			for _, c := range cs {
				c.Close()
			}
		}
	}()
	node, err := nodeCollectors(cfg.Env)
	cs = append(cs, node...)
	if err != nil {
		return nil, err
	}
	vm, err := vmstatCollector(cfg.Env)
	if err != nil {
		return nil, err
	}
	cs = append(cs, vm)
	if cfg.Env.Topology != nil {
		cs = append(cs, topologyCollector(cfg.Env.Topology))
	}
	for _, p := range cfg.Perf {
		c, err := perfCollector(p)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return newExporter(cs, cfg.Log), nil
}
