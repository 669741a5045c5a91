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

	dto "github.com/prometheus/client_model/go"

	"github.com/numascope/numascope/internal/sensor"
)

// collector is one kernel file (or family of files, one per node) turned
// into metrics.
type collector interface {
	// Name labels the collector's errors and timings, e.g. "numastat".
	Name() string
	// Update reads the collector's files once and adds its metrics to b.
	// An error says which metrics are missing from this read and why; the
	// ones added are fresh (a node whose files vanished is left out, the
	// others are there).
	Update(b *builder) error
	// Close releases its file descriptors.
	Close() error
}

// Exporter is a prometheus.Gatherer over numascope's collectors. It is
// safe for concurrent use: one read is in flight at a time, and the scrapes
// that arrive during it get its result.
//
// It keeps the metric families itself instead of going through a
// prometheus.Registry of const metrics, and writes the exposition formats
// itself (encode.go): names, help texts and label sets are made and
// escaped once at start and shared by every read, a read fills storage
// reused from the previous one, and a scrape appends one line per series
// to a reused buffer: no allocation per series, and no goroutine, sort or
// consistency check per scrape (docs/performance.md).
type Exporter struct {
	collectors []collector
	log        func(string)

	mu       sync.Mutex
	inflight *read        // the read scrapes now wait for, or nil
	waiting  atomic.Int32 // scrapes waiting for a read in flight (tests watch it)
	spare    *builder     // a builder no scrape uses any more, for the next read

	// Owned by the goroutine doing a read (one at a time).
	errCount []uint64 // per collector, errors since start
	failing  []string // per collector, the error of its failure streak, "" when fine
	reads    uint64   // reads done since start
	size     int      // series in the last read, to size the next one's storage
	nfams    int      // families in the last read, likewise

	success, duration, errs, readsFam *family
	byCollector                       []*labelSet // collector="NAME", per collector
}

// read is one pass over the collectors, shared by the scrapes that arrive
// while it runs, and so are its encodings: the first scrape that wants an
// encoding writes it, the others of the same read wait for it and send
// the same bytes. Its builder is not changed until the last scrape using
// the read is done (refs, under Exporter.mu); then its storage goes to the
// next read.
type read struct {
	done chan struct{}
	b    *builder
	refs int

	mu      sync.Mutex // held while an encoding is written
	encoded [numEncodings]bool
}

// encode returns encoding k of the read, written by the first caller.
func (r *read) encode(k int) *encoded {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k >= encTextGz && !r.encoded[k-encTextGz] {
		r.b.encode(k - encTextGz)
		r.encoded[k-encTextGz] = true
	}
	if !r.encoded[k] {
		r.b.encode(k)
		r.encoded[k] = true
	}
	return &r.b.out[k]
}

// newExporter wraps the collectors; the exporter owns and closes them.
func newExporter(cs []collector, log func(string)) *Exporter {
	if log == nil {
		log = func(string) {}
	}
	e := &Exporter{
		collectors: cs, log: log,
		errCount: make([]uint64, len(cs)), failing: make([]string, len(cs)),
		success: newFamily("numascope_scrape_collector_success",
			"1 when the collector read all its files in the last read, else 0 (see numascope_scrape_errors_total)", gauge),
		duration: newFamily("numascope_scrape_collector_duration_seconds", "wall time the collector's last read took", gauge),
		errs: newFamily("numascope_scrape_errors_total",
			"reads in which the collector could not read some or all of its files (a node that went away, a permission); its other metrics are still exported", counter),
		readsFam: newFamily("numascope_scrape_reads_total",
			"reads of the kernel files since the exporter started; scrapes that arrive during a read share it and do not count", counter),
	}
	for _, c := range cs {
		e.byCollector = append(e.byCollector, newLabels([]string{"collector"}, []string{c.Name()}))
	}
	return e
}

// Gather returns the metric families of one read, a new one or the one in
// flight when Gather is called, as client_golang's structures, made anew
// at each call (prometheus.TransactionalGatherer; done releases the read).
// The handler does not use it but for the protobuf formats: it writes the
// text formats from the read's own records.
func (e *Exporter) Gather() ([]*dto.MetricFamily, func(), error) {
	r := e.acquire()
	return r.b.dtoFamilies(), func() { e.release(r) }, nil
}

// Read makes or joins a read and releases it at once: for tests and
// benchmarks that only need it done, not its families.
func (e *Exporter) Read() {
	e.release(e.acquire())
}

// acquire returns a read, new or in flight, with a reference for the
// caller.
func (e *Exporter) acquire() *read {
	e.mu.Lock()
	if r := e.inflight; r != nil {
		r.refs++
		e.waiting.Add(1)
		e.mu.Unlock()
		<-r.done
		e.waiting.Add(-1)
		return r
	}
	r := &read{done: make(chan struct{}), refs: 1}
	e.inflight = r
	b := e.spare
	e.spare = nil
	e.mu.Unlock()

	r.b = e.readAll(b)

	e.mu.Lock()
	e.inflight = nil
	e.mu.Unlock()
	close(r.done)
	return r
}

// release drops a reference to r; the last one hands r's storage to the
// next read.
func (e *Exporter) release(r *read) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.refs--
	if r.refs == 0 {
		e.spare = r.b
		r.b = nil
	}
}

// readAll runs every collector once into b (nil: a new builder); only one
// goroutine runs it at a time.
func (e *Exporter) readAll(b *builder) *builder {
	if b == nil {
		b = newBuilder(e.size+3*len(e.collectors)+1, e.nfams)
	} else {
		b.reset()
	}
	e.reads++
	ok, took := b.scratch(len(e.collectors))
	for i, c := range e.collectors {
		start := time.Now()
		err := c.Update(b)
		took[i] = time.Since(start).Seconds()
		ok[i] = 1
		if err != nil {
			ok[i] = 0
			e.errCount[i]++
			if msg := err.Error(); msg != e.failing[i] {
				e.log(fmt.Sprintf("exporter: %s: %s", c.Name(), msg))
				e.failing[i] = msg
			}
		} else if e.failing[i] != "" {
			e.log(fmt.Sprintf("exporter: %s: read again after failing", c.Name()))
			e.failing[i] = ""
		}
	}
	b.begin(e.success)
	for i := range e.collectors {
		b.add(e.byCollector[i], ok[i])
	}
	b.begin(e.duration)
	for i := range e.collectors {
		b.add(e.byCollector[i], took[i])
	}
	b.begin(e.errs)
	for i := range e.collectors {
		b.add(e.byCollector[i], float64(e.errCount[i]))
	}
	b.begin(e.readsFam)
	b.add(nil, float64(e.reads))
	b.finish()
	e.size, e.nfams = len(b.series), len(b.spans)
	return b
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
	// Cgroups, when set, adds the per-cgroup series (numascope exporter
	// --cgroups; cgroups.go).
	Cgroups *CgroupConfig
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
	if cfg.Cgroups != nil {
		c, err := newCgroupCollector(*cfg.Cgroups, cfg.Env.FS, cfg.Env.Topology, cfg.Log)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
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
