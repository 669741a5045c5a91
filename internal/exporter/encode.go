package exporter

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	dto "github.com/prometheus/client_model/go"
)

// The exposition formats are written here directly from a read's records
// into a byte slice kept with the read's builder, rather than through
// prometheus/common's encoders: those escape and check every name and
// label again at each scrape, through an io.Writer, and were most of a
// scrape's cost (docs/performance.md, The Prometheus exporter). Here the
// HELP and TYPE lines and the label sets are written once at start
// (newFamily, newLabels), and a scrape appends, per series, the name, the
// label set, the value and a newline: no allocation, no escaping. The
// output is byte for byte what prometheus/common writes for the same
// families but for whole numbers, written in full (appendValue); names are
// valid in the legacy character set (metricPart), so that no escaping
// scheme changes them (TestEncodingMatchesExpfmt).

// An encoding of a read, as served.
const (
	encText   = iota // text format 0.0.4
	encOM            // OpenMetrics 1.0.0 (and 0.0.1: the same text)
	encTextGz        // encText, gzipped
	encOMGz          // encOM, gzipped
	numEncodings
)

// encoded is one encoding of a read: the body, and for the uncompressed
// ones where each family starts in it (a scrape asking for some names
// only, name[]=..., gets those families' bytes).
type encoded struct {
	body []byte
	offs []int // len(spans)+1 offsets into body
}

func (e *encoded) reset() { e.body, e.offs = e.body[:0], e.offs[:0] }

// encode writes encoding k of b's records into b.out[k] and returns it.
// It must be called once per read and encoding (read.encode sees to it).
func (b *builder) encode(k int) *encoded {
	b.encodings++
	out := &b.out[k]
	switch k {
	case encText, encOM:
		om := k == encOM
		buf, offs := out.body[:0], out.offs[:0]
		for _, s := range b.spans {
			offs = append(offs, len(buf))
			buf = appendFamily(buf, s.f, b.series[s.start:s.end], om)
		}
		offs = append(offs, len(buf))
		if om {
			buf = append(buf, "# EOF\n"...)
		}
		out.body, out.offs = buf, offs
	case encTextGz, encOMGz:
		plain := b.out[k-encTextGz].body
		out.body = b.gz.compress(out.body[:0], plain)
	}
	return out
}

// appendFamily appends family f with its series in the text format, or
// in OpenMetrics when om is set.
func appendFamily(buf []byte, f *family, ss []series, om bool) []byte {
	if om {
		buf = append(buf, f.omHead...)
	} else {
		buf = append(buf, f.textHead...)
	}
	for _, s := range ss {
		buf = append(buf, f.name...)
		buf = append(buf, s.labels.rendered()...)
		buf = append(buf, ' ')
		buf = appendValue(buf, s.value, om)
		buf = append(buf, '\n')
	}
	return buf
}

// appendValue appends v as prometheus/common writes it, the shortest
// representation that reads back the same ('g', -1), +Inf, -Inf, NaN, in
// OpenMetrics with ".0" after a number with neither '.' nor 'e'; except
// that a whole number from 0 to 2^53, which every kernel counter is, is
// written in full (16777216, not 1.6777216e+07): quicker, easier to read,
// and the same value to a parser.
func appendValue(buf []byte, v float64, om bool) []byte {
	switch {
	case v >= 0 && v < 1<<53 && v == math.Trunc(v):
		buf = strconv.AppendUint(buf, uint64(v), 10)
		if om {
			buf = append(buf, '.', '0')
		}
		return buf
	case math.IsNaN(v):
		return append(buf, "NaN"...)
	case math.IsInf(v, 1):
		return append(buf, "+Inf"...)
	case math.IsInf(v, -1):
		return append(buf, "-Inf"...)
	}
	n := len(buf)
	buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
	if om && !bytes.ContainsAny(buf[n:], ".e") {
		buf = append(buf, '.', '0')
	}
	return buf
}

// appendTextHead appends the HELP and TYPE lines of a family in the text
// format 0.0.4, whose HELP escapes backslash and newline only.
func appendTextHead(buf []byte, name, help string, typ dto.MetricType) []byte {
	return appendHead(buf, name, help, strings.ToLower(typ.String()), false)
}

// appendOMHead appends the HELP and TYPE lines of a family in OpenMetrics
// 1.0.0: a counter's family is named without the _total its samples carry
// (a "counter" not ending in _total would be "unknown", as
// prometheus/common has it; the exporter has none), and HELP escapes the
// double quote as well.
func appendOMHead(buf []byte, name, help string, typ dto.MetricType) []byte {
	kind := strings.ToLower(typ.String())
	if typ == dto.MetricType_COUNTER {
		if base, ok := strings.CutSuffix(name, "_total"); ok {
			name = base
		} else {
			kind = "unknown"
		}
	}
	return appendHead(buf, name, help, kind, true)
}

// appendHead appends "# HELP name help\n# TYPE name kind\n", help escaped,
// with its double quotes when quote is set.
func appendHead(buf []byte, name, help, kind string, quote bool) []byte {
	buf = append(buf, "# HELP "...)
	buf = append(buf, name...)
	buf = append(buf, ' ')
	buf = appendEscaped(buf, help, quote)
	buf = append(buf, "\n# TYPE "...)
	buf = append(buf, name...)
	buf = append(buf, ' ')
	buf = append(buf, kind...)
	return append(buf, '\n')
}

// appendLabels appends `{n1="v1",n2="v2"}`, the values escaped; the names
// are the exporter's own and valid.
func appendLabels(buf []byte, names, values []string) []byte {
	buf = append(buf, '{')
	for i := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, names[i]...)
		buf = append(buf, '=', '"')
		buf = appendEscaped(buf, values[i], true)
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

// appendEscaped appends s with backslash and newline escaped (\\, \n),
// and the double quote (\") when quote is set: a label value in both
// formats, HELP in OpenMetrics. Nothing else is escaped in either format;
// a carriage return or a control character stays as it is, inside quotes
// or at the end of a HELP line, where the parsers take it as text.
func appendEscaped(buf []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			buf = append(buf, '\\', '\\')
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '"' && quote:
			buf = append(buf, '\\', '"')
		default:
			buf = append(buf, c)
		}
	}
	return buf
}

// gzipper compresses a read's body for a client that accepts gzip
// (--compress), with a writer kept from read to read.
type gzipper struct {
	w   *gzip.Writer
	dst sliceWriter
}

// sliceWriter appends what is written to it to a byte slice.
type sliceWriter struct{ b []byte }

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// compress appends src gzipped to dst, at the default level as promhttp
// compressed (klauspost/compress's gzip, faster than the standard
// library's at the same level).
func (g *gzipper) compress(dst, src []byte) []byte {
	g.dst.b = dst
	if g.w == nil {
		g.w = gzip.NewWriter(&g.dst)
	} else {
		g.w.Reset(&g.dst)
	}
	g.w.Write(src) // a sliceWriter does not fail
	g.w.Close()
	dst = g.dst.b
	g.dst.b = nil
	return dst
}
