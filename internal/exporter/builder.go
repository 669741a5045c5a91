package exporter

import (
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// family is a metric family's name, help and type, made once at start and
// shared by every read, with its HELP and TYPE lines already written in
// both exposition formats, so that a scrape only copies them.
type family struct {
	name, help string
	typ        dto.MetricType
	textHead   []byte // "# HELP ...\n# TYPE ...\n", text format 0.0.4
	omHead     []byte // the same in OpenMetrics 1.0.0
}

var (
	counter = dto.MetricType_COUNTER
	gauge   = dto.MetricType_GAUGE
)

// newFamily makes a family. Its help has invalid UTF-8 replaced by U+FFFD
// (both formats are UTF-8) and leading and trailing blanks cut (the text
// format's parser drops leading ones).
func newFamily(name, help string, typ dto.MetricType) *family {
	help = strings.TrimSpace(strings.ToValidUTF8(help, "\uFFFD"))
	return &family{name: name, help: help, typ: typ,
		textHead: appendTextHead(nil, name, help, typ), omHead: appendOMHead(nil, name, help, typ)}
}

// labelSet is the labels of one series, made once at start and shared by
// every read: the pairs sorted by name, as the exposition formats want
// them, and already written as `{name="value",...}` with the values
// escaped. A nil *labelSet is a series without labels.
type labelSet struct {
	names, values []string
	text          []byte
}

// newLabels makes the label set of one series; nil for none. A value that
// is not valid UTF-8 (a name read from a file) has the invalid bytes
// replaced by U+FFFD: both formats are UTF-8.
func newLabels(names, values []string) *labelSet {
	if len(names) == 0 {
		return nil
	}
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
	ls := &labelSet{}
	for _, i := range idx {
		ls.names = append(ls.names, names[i])
		ls.values = append(ls.values, strings.ToValidUTF8(values[i], "\uFFFD"))
	}
	ls.text = appendLabels(nil, ls.names, ls.values)
	return ls
}

// rendered is the label set as written after a sample's name, "" for none.
func (l *labelSet) rendered() []byte {
	if l == nil {
		return nil
	}
	return l.text
}

// series is one sample of a read.
type series struct {
	labels *labelSet
	value  float64
}

// span is one family of a read: its series are builder.series[start:end].
type span struct {
	f          *family
	start, end int
}

// builder collects one read's families as plain records (a family and
// the range of its series, a label set and a value per series) in slices
// that are reused from read to read, so that a steady read allocates
// nothing. The exposition formats are written from these records
// (encode.go); client_golang's structures are made from them only for a
// client that asks for protobuf (dtoFamilies).
type builder struct {
	spans  []span
	series []series
	open   bool      // the last span is the family being added to
	ok     []float64 // per collector, for the exporter's own families
	took   []float64

	// The read's encodings, written on demand by the first scrape that
	// wants each and shared by the others (read.encode); their storage is
	// reused by the next read.
	out       [numEncodings]encoded
	gz        gzipper
	encodings int // encodings written since reset (tests watch it)
}

// newBuilder sizes the storage for the given numbers of series and
// families (the previous read's), so that a steady read does not grow it.
func newBuilder(nseries, families int) *builder {
	return &builder{spans: make([]span, 0, max(families, 16)), series: make([]series, 0, max(nseries, 64))}
}

// reset empties b for another read, keeping its storage.
func (b *builder) reset() {
	b.spans, b.series, b.open, b.encodings = b.spans[:0], b.series[:0], false, 0
	for i := range b.out {
		b.out[i].reset()
	}
}

// scratch returns two slices of n values kept with b, for the exporter's
// own per-collector values before they are added as series.
func (b *builder) scratch(n int) (ok, took []float64) {
	if cap(b.ok) < n {
		b.ok, b.took = make([]float64, n), make([]float64, n)
	}
	return b.ok[:n], b.took[:n]
}

// begin starts family f; the series added next belong to it.
func (b *builder) begin(f *family) {
	b.end()
	b.spans = append(b.spans, span{f: f, start: len(b.series), end: len(b.series)})
	b.open = true
}

// end closes the current family: one with no series (every node failed)
// is left out, since the exposition formats have no empty family.
func (b *builder) end() {
	if b.open && b.spans[len(b.spans)-1].end == b.spans[len(b.spans)-1].start {
		b.spans = b.spans[:len(b.spans)-1]
	}
	b.open = false
}

// add adds a series with the given labels (shared, not copied) and value
// to the current family.
func (b *builder) add(l *labelSet, v float64) {
	b.series = append(b.series, series{labels: l, value: v})
	b.spans[len(b.spans)-1].end++
}

// finish ends the last family.
func (b *builder) finish() {
	b.end()
}

// dtoFamilies makes client_golang's structures of the read, new ones at
// each call: for the protobuf formats, which are encoded by
// prometheus/common, and for tests that compare with its encoders.
func (b *builder) dtoFamilies() []*dto.MetricFamily {
	fams := make([]*dto.MetricFamily, 0, len(b.spans))
	for _, s := range b.spans {
		mf := &dto.MetricFamily{Name: proto.String(s.f.name), Help: proto.String(s.f.help), Type: s.f.typ.Enum()}
		for _, se := range b.series[s.start:s.end] {
			m := &dto.Metric{}
			if l := se.labels; l != nil {
				for i := range l.names {
					m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(l.names[i]), Value: proto.String(l.values[i])})
				}
			}
			if s.f.typ == dto.MetricType_COUNTER {
				m.Counter = &dto.Counter{Value: proto.Float64(se.value)}
			} else {
				m.Gauge = &dto.Gauge{Value: proto.Float64(se.value)}
			}
			mf.Metric = append(mf.Metric, m)
		}
		fams = append(fams, mf)
	}
	return fams
}
