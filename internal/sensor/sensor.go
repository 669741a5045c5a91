// Package sensor defines the extension point of numascope: a Sensor is one
// source of events (a kernel file family, a PMU, an interconnect). Supporting
// new hardware means adding one file to this package that implements Sensor
// and registers itself in init.
//
// A sensor reads raw values; it never computes rates. The sampler turns
// counters into rates per second from monotonic time deltas (wrap-around safe,
// using Event.Bits) and sums sources when an event is not enabled discretely.
// Keeping sensors this dumb keeps them small and keeps all timing in one place.
package sensor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// ValueKind says how the sampler treats an event's raw values; a recording
// writes it as recording.ValueKind, its String.
type ValueKind uint8

const (
	// Counter values only grow (modulo wrap-around); they are shown as rates per second.
	Counter ValueKind = iota
	// Gauge values are levels (free memory, a temperature); they are shown as read.
	Gauge
)

func (k ValueKind) String() string {
	if k == Gauge {
		return "gauge"
	}
	return "counter"
}

// Event describes one event of a sensor.
type Event struct {
	// Name is the mnemonic, unique within the sensor and free of dots,
	// e.g. "numa_hint_faults" or "MemFree". It is what headings show.
	Name string
	// Desc is a one-line description for `numascope events` and the web client.
	Desc string
	// Unit is the unit of the value: for a counter the unit of what it counts
	// (its rate is Unit per second), for a gauge the unit of the level. The
	// special unit "%" means the value is shown as a percentage of Max.
	Unit string
	Kind ValueKind
	// Bits is the width of a counter that wraps around; 0 means 64.
	Bits uint8
	// Max, when not nil, holds per source the highest rate (counters) or value
	// (gauges) the event can reach, e.g. CPU-time ticks per second of a node.
	// Summed columns use the sum over their sources. Events with Unit "%" are
	// shown as 100*value/Max; others may be plotted as % of Max on request.
	Max []float64
	// Unavailable, when not empty, says why the event is listed but cannot be
	// counted here and what to do (e.g. no PMU in a VM). Globs skip such
	// events; naming one exactly is an error that gives this reason. It
	// reads "REASON; fix: WHAT TO DO" (or just REASON), which
	// sampler.DescribeEvent splits for clients that show the two apart.
	Unavailable string
	// ShareOf, when set, names the counter of the same sensor that this
	// counter is a part of (cpu.user of cpu.ticks): the event is shown as
	// 100 * its increase / ShareOf's increase over the same sources and
	// interval, which is a share whatever the interval, and null when
	// ShareOf did not move. A rate over wall time divided by Max would not
	// be: the kernel accounts CPU time in ticks, so 100 ms holds ten or
	// eleven of a CPU's 10 ms ticks (up to 110%), and the few ms of a final
	// partial sample none or one.
	ShareOf string
}

// Env is what a sensor may consult when it opens.
type Env struct {
	FS       sysfs.FS
	Topology *topology.Topology
}

// Sensor is one source of events. The sampler calls Open once; if it fails the
// sensor is reported absent with the error as the reason, and the tool goes on
// without it. Sources, Events and Enable are called between Open and the first
// Read; Read is then called once per sample from a single goroutine.
type Sensor interface {
	// Name is the short name that prefixes the sensor's events ("vmstat").
	Name() string
	// Open discovers the sensor's sources and events. An error says why the
	// sensor is absent (missing files, permissions, no hardware) and what to do.
	Open(env Env) error
	// Sources names the sensor's sources in order, e.g. node IDs "0", "1".
	// A sensor that has no natural sources has exactly one, named "".
	Sources() []string
	// Events lists every event the sensor offers.
	Events() []Event
	// Enable restricts reading to the given indexes into Events(), in that
	// order. A sensor should skip all work that only disabled events need.
	Enable(events []int) error
	// Read stores the current raw values of the enabled events in dst:
	// dst[k*len(Sources())+s] is the k-th enabled event at source s. It must
	// not allocate in steady state.
	//
	// A sensor whose sources are read separately (one file per node) returns
	// a *SourceError, unwrapped, when only some of them could not be read:
	// the other sources' values in dst are fresh and are used as usual. Any
	// other error means that no source was read. Either way the sampler
	// reports the failure once, shows the failed sources' columns as missing
	// (NaN, written as null) instead of stale or zero values, and reads them
	// again at the next sample. A counter's first rate after a source recovers
	// is missing too, since its previous read failed: a rate is only ever
	// computed from two good reads, so recovery never shows as a burst.
	Read(dst []int64) error
	// Close releases file descriptors and other resources.
	Close() error
}

// FileReader is implemented by sensors whose Read preads kernel files. Files
// lists exactly the files Read reads for the current Enable set (none when
// nothing is enabled), so that a benchmark can measure the bare kernel cost of
// reading the same files and compare a sensor's overhead against it.
type FileReader interface {
	Files() []string
}

// FileOfEvent is implemented by sensors whose sources each read several
// files (the node sensor: numastat, vmstat, meminfo). FileOf names the file
// event i of Events() comes from, so that a consumer such as the Prometheus
// exporter can give each file its own metric family and error count.
type FileOfEvent interface {
	FileOf(event int) string
}

// Options are the settings that only some sensors read, given to every
// factory when a sensor is made, so that the shared Env carries nothing that
// only one sensor reads and no caller replaces a registered sensor to set
// them.
type Options struct {
	// Perf configures the perf and uncore sensors (--perf-events,
	// --presets, --perf-per-cpu).
	Perf PerfOptions
}

// Factory makes a new, unopened sensor with opts.
type Factory func(opts Options) Sensor

var registry = map[string]Factory{}

// Register makes a sensor available under name. It is called from the init
// function of the file that implements the sensor.
func Register(name string, f Factory) {
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("sensor %q registered twice", name))
	}
	registry[name] = f
}

// Names lists the registered sensors in a stable order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New makes a new sensor by name, with opts.
func New(name string, opts Options) (Sensor, bool) {
	f, ok := registry[name]
	if !ok {
		return nil, false
	}
	return f(opts), true
}

// SourceError is what Read returns when some of a sensor's sources could not
// be read and the others were (see Sensor.Read). A sensor keeps one and
// reuses it (Reset, then Add), so that a failing source does not make every
// Read allocate; the sampler is done with it before the next Read.
type SourceError struct {
	// Sources lists the indexes into Sources() that failed, each once.
	Sources []int
	// Errs holds, parallel to Sources, why each one failed.
	Errs []error
}

// Reset empties e for the next Read, keeping its storage.
func (e *SourceError) Reset() {
	clear(e.Errs)
	e.Sources, e.Errs = e.Sources[:0], e.Errs[:0]
}

// Add records that source src failed with err; a source already listed
// keeps its first error.
func (e *SourceError) Add(src int, err error) {
	for _, s := range e.Sources {
		if s == src {
			return
		}
	}
	e.Sources = append(e.Sources, src)
	e.Errs = append(e.Errs, err)
}

// Failed reports whether any source failed.
func (e *SourceError) Failed() bool { return len(e.Sources) > 0 }

func (e *SourceError) Error() string {
	var b strings.Builder
	for i, s := range e.Sources {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "source %d: %v", s, e.Errs[i])
	}
	return b.String()
}
