package exporter

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// sensorCollector exports some events of one sensor: one metric per
// enabled event and source, each source a label value (numa_node="0").
type sensorCollector struct {
	name   string
	s      sensor.Sensor
	owned  bool // the collector opened s and closes it
	fams   []*family
	labels []*labelSet // per source
	dst    []int64
	failed []bool // per source, scratch for Update
}

// metricSpec is one event of a sensor as a metric.
type metricSpec struct {
	event int // index into the sensor's Events()
	name  string
	help  string
	typ   dto.MetricType
}

// newSensorCollector enables specs' events on s and makes their families;
// label names the sources' label ("" for a sensor with one unnamed
// source), and labelValue maps a source name to its value. Specs whose name
// another spec already took are left out: two kernel names that differ
// only in characters a metric name cannot hold would otherwise give a
// family twice.
func newSensorCollector(name string, s sensor.Sensor, owned bool, specs []metricSpec, label string, labelValue func(string) string) (*sensorCollector, error) {
	c := &sensorCollector{name: name, s: s, owned: owned}
	seen := map[string]bool{}
	var events []int
	for _, sp := range specs {
		if seen[sp.name] {
			continue
		}
		seen[sp.name] = true
		events = append(events, sp.event)
		c.fams = append(c.fams, newFamily(sp.name, sp.help, sp.typ))
	}
	if err := s.Enable(events); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, src := range s.Sources() {
		if label == "" {
			c.labels = append(c.labels, nil)
		} else {
			c.labels = append(c.labels, newLabels([]string{label}, []string{labelValue(src)}))
		}
	}
	c.dst = make([]int64, len(events)*len(c.labels))
	c.failed = make([]bool, len(c.labels))
	return c, nil
}

func (c *sensorCollector) Name() string { return c.name }

func (c *sensorCollector) Update(b *builder) error {
	clear(c.failed)
	err := c.s.Read(c.dst)
	if err != nil {
		var se *sensor.SourceError
		if !errors.As(err, &se) {
			return err // no source was read
		}
		for _, s := range se.Sources {
			c.failed[s] = true
		}
		err = errors.New(se.Error()) // se is reused by the next Read
	}
	ns := len(c.labels)
	for k, f := range c.fams {
		b.begin(f)
		for s := range ns {
			if !c.failed[s] {
				b.add(c.labels[s], float64(c.dst[k*ns+s]))
			}
		}
	}
	return err
}

func (c *sensorCollector) Close() error {
	if c.owned {
		return c.s.Close()
	}
	return nil
}

// identity is the label value of a source named by its node ID.
func identity(s string) string { return s }

// valueType maps a sensor's counter or gauge to Prometheus's.
func valueType(k sensor.ValueKind) dto.MetricType {
	if k == sensor.Gauge {
		return gauge
	}
	return counter
}

// nodeFiles are the node sensor's files, each its own collector.
var nodeFiles = []string{"numastat", "vmstat", "meminfo"}

// nodeCollectors opens one node sensor per node file (numastat, vmstat,
// meminfo), each enabled for that file's events only, so that each file is
// one collector with its own error count. A file no node has (numastat
// and vmstat on a kernel without NUMA, where meminfo is /proc/meminfo as
// node 0) gives no collector.
func nodeCollectors(env sensor.Env) ([]collector, error) {
	var cs []collector
	for _, file := range nodeFiles {
		s, ok := sensor.New("node", sensor.Options{})
		if !ok {
			return cs, errors.New("exporter: the node sensor is not registered")
		}
		if err := s.Open(env); err != nil {
			return cs, err // its message names the directory and what to do
		}
		fo, ok := s.(sensor.FileOfEvent)
		if !ok {
			s.Close()
			return cs, errors.New("exporter: the node sensor does not say which file an event comes from")
		}
		var specs []metricSpec
		for i, ev := range s.Events() {
			if fo.FileOf(i) != file {
				continue
			}
			specs = append(specs, nodeSpec(file, i, ev))
		}
		if len(specs) == 0 {
			s.Close()
			continue
		}
		if err := nodeFilesReadable(env, file); err != nil {
			s.Close()
			return cs, err
		}
		name := "node_" + file
		if file == "numastat" {
			name = file
		}
		c, err := newSensorCollector(name, s, true, specs, "numa_node", identity)
		if err != nil {
			s.Close()
			return cs, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// nodeFilesReadable checks that every node's file can be read. The node
// sensor reads a node whose file it cannot open as having none of its
// lines (0), which suits a sampler that shows the other nodes; an exporter
// would publish those zeros as the node's counters, so an unreadable file
// is an error at start instead. A file that is absent everywhere gave no
// events and is not checked.
func nodeFilesReadable(env sensor.Env, file string) error {
	if env.Topology == nil || !env.Topology.NUMA {
		return nil
	}
	for _, n := range env.Topology.Nodes {
		path := env.FS.Sys("devices/system/node", "node"+strconv.Itoa(n.ID), file)
		f, err := sysfs.Open(path) // never blocks on a FIFO in a --root tree
		if nr := (*sysfs.NotRegularError)(nil); errors.As(err, &nr) {
			return fmt.Errorf("exporter: %v", nr)
		}
		if err != nil {
			return fmt.Errorf("exporter: cannot read %s: %v (every node's %s is exported; is /sys mounted, or the --root tree complete?)", path, errors.Unwrap(err), file)
		}
		f.Close()
	}
	return nil
}

// nodeSpec names event i, from a node's file, as a metric:
//
//	numastat  numascope_node_<name>_total                  (pages)
//	vmstat    numascope_node_vmstat_<name>_total, or without _total for a level
//	meminfo   numascope_node_memory_<field>_bytes, or without _bytes for a count
func nodeSpec(file string, i int, ev sensor.Event) metricSpec {
	sp := metricSpec{event: i, typ: valueType(ev.Kind), help: ev.Desc}
	switch file {
	case "numastat":
		sp.name = "numascope_node_" + metricPart(ev.Name) + "_total"
		sp.help += " (pages; nodeN/numastat)"
	case "vmstat":
		sp.name = "numascope_node_vmstat_" + metricPart(ev.Name)
		sp.help += " (nodeN/vmstat)"
		if ev.Kind == sensor.Counter {
			sp.name += "_total"
		}
	default:
		sp.name = "numascope_node_memory_" + meminfoPart(ev.Name)
		if ev.Unit == "bytes" {
			sp.name += "_bytes"
		}
		sp.help += " (" + ev.Unit + "; nodeN/meminfo " + ev.Name + ")"
	}
	return sp
}

// vmstatCollector exports every line of /proc/vmstat:
// numascope_vmstat_<name>_total for counters, numascope_vmstat_<name> for
// the nr_* levels (pages).
func vmstatCollector(env sensor.Env) (collector, error) {
	s, ok := sensor.New("vmstat", sensor.Options{})
	if !ok {
		return nil, errors.New("exporter: the vmstat sensor is not registered")
	}
	if err := s.Open(env); err != nil {
		return nil, err
	}
	var specs []metricSpec
	for i, ev := range s.Events() {
		sp := metricSpec{event: i, typ: valueType(ev.Kind), name: "numascope_vmstat_" + metricPart(ev.Name), help: ev.Desc + " (/proc/vmstat " + ev.Name + ")"}
		if ev.Kind == sensor.Counter {
			sp.name += "_total"
		}
		specs = append(specs, sp)
	}
	c, err := newSensorCollector("vmstat", s, true, specs, "", nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	return c, nil
}

// perfCollector exports the chosen events of an opened perf or uncore
// sensor as numascope_perf_<event>_total (numascope_uncore_... for uncore),
// labelled numa_node, cpu (--perf-per-cpu) or package (uncore). Gauges
// (none of the built-in events is one) keep their name without _total.
func perfCollector(p PerfEvents) (collector, error) {
	s := p.Sensor
	evs := s.Events()
	var specs []metricSpec
	for _, i := range p.Events {
		if i < 0 || i >= len(evs) {
			return nil, fmt.Errorf("exporter: %s event index %d out of range", s.Name(), i)
		}
		ev := evs[i]
		if ev.Unavailable != "" {
			return nil, fmt.Errorf("%s.%s: %s", s.Name(), ev.Name, ev.Unavailable)
		}
		sp := metricSpec{event: i, typ: valueType(ev.Kind), name: "numascope_" + s.Name() + "_" + metricPart(ev.Name), help: ev.Desc + " (" + s.Name() + "." + ev.Name + ", " + ev.Unit + ")"}
		if ev.Kind == sensor.Counter {
			sp.name += "_total"
		}
		specs = append(specs, sp)
	}
	label, value := "numa_node", identity
	srcs := s.Sources()
	switch {
	case s.Name() == "uncore":
		label = "package"
	case len(srcs) > 0 && strings.HasPrefix(srcs[0], "cpu"):
		label, value = "cpu", func(s string) string { return strings.TrimPrefix(s, "cpu") }
	}
	return newSensorCollector(s.Name(), s, false, specs, label, value)
}

// topoCollector exports the topology found at start: it reads no file at
// scrape time (distances and CPU lists change only with hotplug, which
// restarting the exporter picks up).
type topoCollector struct {
	info, dist *family
	infoLabels []*labelSet
	distLabels []*labelSet
	distValues []float64
}

func topologyCollector(t *topology.Topology) collector {
	c := &topoCollector{
		dist: newFamily("numascope_numa_distance",
			"the firmware's (SLIT) distance from node from to node to; 10 is local", gauge),
		info: newFamily("numascope_numa_node_info",
			"one series per NUMA node, always 1: its CPUs (kernel list format, empty for a CPU-less node) and memory tier (the N of memory_tierN, empty without tiering)", gauge),
	}
	for _, n := range t.Nodes {
		id := strconv.Itoa(n.ID)
		tier := ""
		if n.MemoryTier != nil {
			tier = strconv.Itoa(*n.MemoryTier)
		}
		c.infoLabels = append(c.infoLabels, newLabels([]string{"numa_node", "cpus", "tier"}, []string{id, sysfs.FormatCPUList(n.CPUs), tier}))
		to := make([]string, 0, len(n.Distances))
		for k := range n.Distances {
			to = append(to, k)
		}
		slices.SortFunc(to, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
		for _, k := range to {
			c.distLabels = append(c.distLabels, newLabels([]string{"from", "to"}, []string{id, k}))
			c.distValues = append(c.distValues, float64(n.Distances[k]))
		}
	}
	return c
}

func (c *topoCollector) Name() string { return "topology" }
func (c *topoCollector) Update(b *builder) error {
	b.begin(c.info)
	for _, l := range c.infoLabels {
		b.add(l, 1)
	}
	b.begin(c.dist)
	for i, l := range c.distLabels {
		b.add(l, c.distValues[i])
	}
	return nil
}
func (c *topoCollector) Close() error { return nil }
