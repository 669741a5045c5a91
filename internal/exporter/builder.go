package exporter

import (
	"sort"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// family is a metric family's name, help and type, made once at start and
// shared by every read (the encoders only read them).
type family struct {
	name, help *string
	typ        *dto.MetricType
}

var (
	counter = dto.MetricType_COUNTER
	gauge   = dto.MetricType_GAUGE
)

func newFamily(name, help string, typ dto.MetricType) *family {
	return &family{name: proto.String(name), help: proto.String(help), typ: &typ}
}

// labelPairs makes the label pairs of one series, sorted by name as the
// exposition formats want them; nil for a series without labels.
func labelPairs(names, values []string) []*dto.LabelPair {
	if len(names) == 0 {
		return nil
	}
	lp := make([]*dto.LabelPair, len(names))
	for i := range names {
		lp[i] = &dto.LabelPair{Name: proto.String(names[i]), Value: proto.String(values[i])}
	}
	sort.Slice(lp, func(i, j int) bool { return lp[i].GetName() < lp[j].GetName() })
	return lp
}

// builder collects one read's families. Its series live in slabs sized from
// the previous read, so that a read allocates a few slices rather than a
// few objects per series; a slab that fills up is replaced by a new one,
// never grown in place, since the families point into it.
type builder struct {
	fams    []*dto.MetricFamily
	cur     *dto.MetricFamily
	start   int // index in ptrs of cur's first series
	series  int
	metrics []dto.Metric
	ptrs    []*dto.Metric
	values  []float64
	counts  []dto.Counter
	gauges  []dto.Gauge
	famSlab []dto.MetricFamily
	ok      []float64 // per collector, for the exporter's own families
	took    []float64
}

// newBuilder sizes the slabs for the given numbers of series and
// families (the previous read's), so that a steady read fills one of each.
func newBuilder(series, families int) *builder {
	families = max(families, 16)
	b := &builder{fams: make([]*dto.MetricFamily, 0, families), famSlab: make([]dto.MetricFamily, 0, families)}
	b.grow(series)
	return b
}

// reset empties b for another read, keeping its storage: the slabs'
// elements are overwritten whole as series are added again.
func (b *builder) reset() {
	clear(b.fams)
	b.fams, b.cur, b.start, b.series = b.fams[:0], nil, 0, 0
	b.metrics, b.ptrs, b.values = b.metrics[:0], b.ptrs[:0], b.values[:0]
	b.counts, b.gauges, b.famSlab = b.counts[:0], b.gauges[:0], b.famSlab[:0]
}

// scratch returns two slices of n values kept with b, for the exporter's
// own per-collector values before they are added as series.
func (b *builder) scratch(n int) (ok, took []float64) {
	if cap(b.ok) < n {
		b.ok, b.took = make([]float64, n), make([]float64, n)
	}
	return b.ok[:n], b.took[:n]
}

// grow replaces the slabs by new ones of n series, carrying over the
// pointers to the current family's series.
func (b *builder) grow(n int) {
	n = max(n, 64)
	cur := b.ptrs[b.start:]
	b.metrics = make([]dto.Metric, 0, n)
	b.ptrs = append(make([]*dto.Metric, 0, n+len(cur)), cur...)
	b.start = 0
	b.values = make([]float64, 0, n)
	b.counts = make([]dto.Counter, 0, n)
	b.gauges = make([]dto.Gauge, 0, n)
}

// begin starts family f; the series added next belong to it.
func (b *builder) begin(f *family) {
	b.end()
	if len(b.famSlab) == cap(b.famSlab) {
		b.famSlab = make([]dto.MetricFamily, 0, 2*cap(b.famSlab))
	}
	b.famSlab = append(b.famSlab, dto.MetricFamily{Name: f.name, Help: f.help, Type: f.typ})
	b.cur = &b.famSlab[len(b.famSlab)-1]
	b.start = len(b.ptrs)
}

// end closes the current family: one with no series (every node failed)
// is left out, since the exposition formats have no empty family.
func (b *builder) end() {
	if b.cur != nil && len(b.cur.Metric) > 0 {
		b.fams = append(b.fams, b.cur)
	}
	b.cur = nil
}

// add adds a series with the given labels (shared, not copied) and value
// to the current family.
func (b *builder) add(labels []*dto.LabelPair, v float64) {
	if len(b.metrics) == cap(b.metrics) || len(b.ptrs) == cap(b.ptrs) {
		b.grow(2 * cap(b.metrics))
	}
	b.values = append(b.values, v)
	b.metrics = append(b.metrics, dto.Metric{Label: labels})
	m := &b.metrics[len(b.metrics)-1]
	vp := &b.values[len(b.values)-1]
	if b.cur.GetType() == dto.MetricType_COUNTER {
		b.counts = append(b.counts, dto.Counter{Value: vp})
		m.Counter = &b.counts[len(b.counts)-1]
	} else {
		b.gauges = append(b.gauges, dto.Gauge{Value: vp})
		m.Gauge = &b.gauges[len(b.gauges)-1]
	}
	b.ptrs = append(b.ptrs, m)
	b.cur.Metric = b.ptrs[b.start:len(b.ptrs):len(b.ptrs)]
	b.series++
}

// finish ends the last family and returns the read's families.
func (b *builder) finish() []*dto.MetricFamily {
	b.end()
	return b.fams
}
