package exporter

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// expfmtBody encodes fams with prometheus/common's encoder for format, as
// promhttp did before the exporter wrote the formats itself: the
// reference the direct encoding is checked against.
func expfmtBody(t testing.TB, fams []*dto.MetricFamily, format expfmt.Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatalf("expfmt: %v", err)
		}
	}
	if err := enc.(expfmt.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decode parses body in format with prometheus/common's decoder (for
// OpenMetrics, its OpenMetrics 1.0 grammar), the families sorted by name.
func decode(t testing.TB, body []byte, format expfmt.Format) []*dto.MetricFamily {
	t.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	var fams []*dto.MetricFamily
	for {
		f := &dto.MetricFamily{}
		err := dec.Decode(f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parsing %s: %v\n%s", format, err, body)
		}
		fams = append(fams, f)
	}
	slices.SortFunc(fams, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return fams
}

// sameFamilies fails unless a and b are the same families, series, labels
// and values.
func sameFamilies(t testing.TB, what string, got, want []*dto.MetricFamily) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d families, the reference has %d", what, len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: family %s differs from the reference:\n got %v\nwant %v", what, want[i].GetName(), got[i], want[i])
		}
	}
}

// sameLines fails unless got and want have the same lines, but for the
// value of a sample, which may be written otherwise if it is the same
// number (appendValue writes whole numbers in full).
func sameLines(t testing.TB, what string, got, want []byte) {
	t.Helper()
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	if len(gl) != len(wl) {
		t.Fatalf("%s: %d lines, the reference has %d\n got %s\nwant %s", what, len(gl), len(wl), got, want)
	}
	for i := range gl {
		if gl[i] == wl[i] {
			continue
		}
		gk, gv, _ := cutLast(gl[i])
		wk, wv, _ := cutLast(wl[i])
		g, gerr := strconv.ParseFloat(gv, 64)
		w, werr := strconv.ParseFloat(wv, 64)
		if strings.HasPrefix(gl[i], "#") || gk != wk || gerr != nil || werr != nil || g != w {
			t.Fatalf("%s: line %d\n got %q\nwant %q", what, i+1, gl[i], wl[i])
		}
	}
}

func cutLast(l string) (string, string, bool) {
	i := strings.LastIndexByte(l, ' ')
	if i < 0 {
		return l, "", false
	}
	return l[:i], l[i+1:], true
}

var (
	fmtText = expfmt.FmtText
	fmtOM   = expfmt.FmtOpenMetrics_1_0_0
	// textFormats are the exporter's own encodings and their formats.
	textFormats = []struct {
		enc    int
		format expfmt.Format
	}{{encText, fmtText}, {encOM, fmtOM}}
)

// labelsOf maps a series' label names to their values.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestEncodingMatchesExpfmt: on this machine and on the two-node capture,
// the exporter's own text and OpenMetrics encodings of a read are the same
// text line for line as prometheus/common's encoders give for the same
// read, but for whole numbers written in full; and they parse, with
// prometheus/common's parsers, into exactly the families, series, labels
// and values of the reference's text encoding parsed by its text parser.
//
// The OpenMetrics body is checked against the reference's text, not its
// OpenMetrics: prometheus/common's OpenMetrics parser (a general ABNF
// parser) takes 3 to 13 s for one body here, 30 to 50 s under the race
// detector beside busy loops, and the reference's OpenMetrics body, equal
// to ours line for line, would add nothing but a second such parse. The
// two parsers agreeing is a check of its own.
func TestEncodingMatchesExpfmt(t *testing.T) {
	for _, root := range []string{"", twoNode} {
		x := newTestExporter(t, root)
		r := x.acquire()
		ref := r.b.dtoFamilies()
		refText := decode(t, expfmtBody(t, ref, fmtText), fmtText)
		for _, c := range textFormats {
			got := r.encode(c.enc).body
			what := "root " + strconv.Quote(root) + " " + string(c.format)
			sameLines(t, what, got, expfmtBody(t, ref, c.format))
			sameFamilies(t, what, decode(t, got, c.format), refText)
		}
		x.release(r)
	}
}

// TestHandlerMatchesPromhttp: the handler answers the Accept and
// Accept-Encoding headers of the clients one meets (Prometheus 2 and 3,
// curl, a browser, a client asking for protobuf or an escaping scheme)
// with the Content-Type, Vary and Content-Encoding promhttp gave, and a
// body that decodes to the same families (less the exporter's own timings,
// which differ between the two reads).
func TestHandlerMatchesPromhttp(t *testing.T) {
	x := newTestExporter(t, twoNode)
	decoded := map[string]bool{}
	for _, compress := range []bool{false, true} {
		ours := x.handler(compress, DefaultWriteTimeout)
		ref := promhttp.HandlerForTransactional(x, promhttp.HandlerOpts{EnableOpenMetrics: true,
			ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: maxInFlight, DisableCompression: !compress})
		for _, accept := range []string{
			"",
			"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
			"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
			"application/openmetrics-text;version=0.0.1",
			"application/openmetrics-text; version=1.0.0; escaping=values",
			"text/plain",
			"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
			"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3",
			"*/*",
		} {
			for _, ae := range []string{"", "gzip", "gzip, deflate, br", "identity", "gzip;q=0.5, identity", "gzip;q=0"} {
				what := "compress " + strconv.FormatBool(compress) + " Accept " + strconv.Quote(accept) + " Accept-Encoding " + strconv.Quote(ae)
				got, want := serveOnce(ours, accept, ae), serveOnce(ref, accept, ae)
				for _, h := range []string{"Content-Type", "Content-Encoding"} {
					if got.Header().Get(h) != want.Header().Get(h) {
						t.Errorf("%s: %s %q, promhttp gave %q", what, h, got.Header().Get(h), want.Header().Get(h))
					}
				}
				if g, w := got.Header().Values("Vary"), want.Header().Values("Vary"); !slices.Equal(g, w) {
					t.Errorf("%s: Vary %q, promhttp gave %q", what, g, w)
				}
				if got.Code != 200 {
					t.Fatalf("%s: HTTP %d", what, got.Code)
				}
				// The bodies are decoded once per format and coding: the
				// OpenMetrics parser takes seconds for one (see
				// TestEncodingMatchesExpfmt), so promhttp's OpenMetrics
				// answer is checked against its text one, which
				// TestEncodingMatchesExpfmt shows parse the same.
				format := expfmt.Format(got.Header().Get("Content-Type"))
				kind := strconv.Itoa(int(format.FormatType())) + got.Header().Get("Content-Encoding")
				if decoded[kind] {
					continue
				}
				decoded[kind] = true
				gf := decode(t, unzip(t, got), format)
				var wf []*dto.MetricFamily
				if format.FormatType() == expfmt.TypeOpenMetrics {
					wf = decode(t, serveOnce(ref, string(fmtText), "").Body.Bytes(), fmtText)
				} else {
					wf = decode(t, unzip(t, want), format)
				}
				sameFamilies(t, what, withoutTimings(gf), withoutTimings(wf))
			}
		}
	}
}

// serveOnce GETs /metrics from h with the headers.
func serveOnce(h http.Handler, accept, acceptEncoding string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// unzip is the response's body, gunzipped if it says it is gzipped.
func unzip(t *testing.T, rec *httptest.ResponseRecorder) []byte {
	t.Helper()
	if rec.Header().Get("Content-Encoding") != "gzip" {
		return rec.Body.Bytes()
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withoutTimings leaves out the families that change from one read to the
// next whatever the files say: the exporter's own timings and read count.
func withoutTimings(fams []*dto.MetricFamily) []*dto.MetricFamily {
	return slices.DeleteFunc(slices.Clone(fams), func(f *dto.MetricFamily) bool {
		return f.GetName() == "numascope_scrape_collector_duration_seconds" || f.GetName() == "numascope_scrape_reads_total"
	})
}

// TestNameFilter: name[]=NAME keeps only the families named, as promhttp
// did, in both formats.
func TestNameFilter(t *testing.T) {
	x := newTestExporter(t, twoNode)
	for _, format := range []expfmt.Format{fmtText, fmtOM} {
		req := httptest.NewRequest("GET", "/metrics?name[]=numascope_node_numa_hit_total&name[]=numascope_numa_distance&name[]=nothing", nil)
		req.Header.Set("Accept", string(format))
		rec := httptest.NewRecorder()
		x.Handler().ServeHTTP(rec, req)
		var names []string
		for _, f := range decode(t, rec.Body.Bytes(), format) {
			names = append(names, f.GetName())
		}
		if !slices.Equal(names, []string{"numascope_node_numa_hit_total", "numascope_numa_distance"}) {
			t.Errorf("%s: name[] gave %v", format, names)
		}
	}
}

// hostileCollector exports one family whose help and label values are
// what a file or a perf event could make them: quotes, backslashes,
// newlines, braces, invalid UTF-8.
type hostileCollector struct {
	f      *family
	labels []*labelSet
}

var hostile = []string{"plain", `a"b`, `back\slash`, "new\nline", `\n literally`, "\xff\xfe not UTF-8", "}{=,", "\r\t", "", `"\"`, "é ü 日本", "trailing\\"}

func newHostileCollector(help string, values []string) *hostileCollector {
	c := &hostileCollector{f: newFamily("test_hostile_total", help, counter)}
	for i, v := range values {
		c.labels = append(c.labels, newLabels([]string{"value", "i"}, []string{v, strconv.Itoa(i)}))
	}
	return c
}

func (c *hostileCollector) Name() string { return "hostile" }
func (c *hostileCollector) Close() error { return nil }
func (c *hostileCollector) Update(b *builder) error {
	b.begin(c.f)
	for i, l := range c.labels {
		b.add(l, float64(i))
	}
	return nil
}

// checkHostile encodes help and values in both formats: the bodies are
// line for line what prometheus/common writes, and parse and give back
// the help and every value (invalid UTF-8 replaced by U+FFFD). The
// OpenMetrics body is parsed only when omParse is set: prometheus/common's
// OpenMetrics parser takes some 40 ms, too slow for a fuzz target.
func checkHostile(t *testing.T, help string, values []string, omParse bool) {
	t.Helper()
	x := newExporter([]collector{newHostileCollector(help, values)}, nil)
	r := x.acquire()
	defer x.release(r)
	ref := r.b.dtoFamilies()
	for _, c := range textFormats {
		got := r.encode(c.enc).body
		sameLines(t, string(c.format), got, expfmtBody(t, ref, c.format))
		if c.enc == encOM && !omParse {
			continue
		}
		fams := decode(t, got, c.format)
		i := slices.IndexFunc(fams, func(f *dto.MetricFamily) bool { return f.GetName() == "test_hostile_total" })
		if i < 0 {
			t.Fatalf("%s: no test_hostile_total in\n%s", c.format, got)
		}
		f := fams[i]
		if want := strings.TrimSpace(strings.ToValidUTF8(help, "\uFFFD")); f.GetHelp() != want {
			t.Errorf("%s: help %q, want %q", c.format, f.GetHelp(), want)
		}
		if len(f.Metric) != len(values) {
			t.Fatalf("%s: %d series, want %d\n%s", c.format, len(f.Metric), len(values), got)
		}
		for _, m := range f.Metric {
			l := labelsOf(m)
			v := l["value"]
			k, _ := strconv.Atoi(l["i"])
			if want := strings.ToValidUTF8(values[k], "\uFFFD"); v != want || m.GetCounter().GetValue() != float64(k) {
				t.Errorf("%s: series %d: value label %q = %v, want %q = %d", c.format, k, v, m.GetCounter().GetValue(), want, k)
			}
		}
	}
}

// TestHostileLabels: label values and help texts that would break a
// format naively written come back intact through both parsers.
func TestHostileLabels(t *testing.T) {
	checkHostile(t, `help with "quotes", a back\slash and a`+"\nnewline \xff", hostile, true)
}

// FuzzLabelEscaping: whatever a label value or a help text is, the text
// format parses and gives it back, and both formats are what
// prometheus/common writes (TestHostileLabels parses OpenMetrics too).
func FuzzLabelEscaping(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkHostile(t, s, []string{s}, false)
	})
}

// TestValues: the values a family can hold are written as numbers both
// parsers read back exactly.
func TestValues(t *testing.T) {
	for _, v := range []float64{0, 1, -1, 0.5, 1e-9, 123456789, 1 << 53, 1<<53 + 2, 1e21, 1.5e300, -3.25, 18446744073709551615} {
		for _, om := range []bool{false, true} {
			s := string(appendValue(nil, v, om))
			got, err := strconv.ParseFloat(s, 64)
			if err != nil || got != v {
				t.Errorf("%v (om %v) written %q", v, om, s)
			}
			if om && !strings.ContainsAny(s, ".eIN") {
				t.Errorf("%v written %q in OpenMetrics, without .0", v, s)
			}
		}
	}
	for v, want := range map[float64]string{0: "0", 16777216: "16777216", 0.25: "0.25", 1e21: "1e+21"} {
		if got := string(appendValue(nil, v, false)); got != want {
			t.Errorf("%v written %q, want %q", v, got, want)
		}
	}
}

// TestScrapeEncodingAllocations: once the storage of a previous read is
// there to reuse, a read and both its encodings (and gzip's) allocate only
// the read's bookkeeping, not per series.
func TestScrapeEncodingAllocations(t *testing.T) {
	x := newTestExporter(t, twoNode)
	scrape := func() {
		r := x.acquire()
		for k := range numEncodings {
			r.encode(k)
		}
		x.release(r)
	}
	scrape()
	if a := testing.AllocsPerRun(50, scrape); a > 2 {
		t.Errorf("a read and its encodings allocate %v times", a)
	}
	r := x.acquire()
	defer x.release(r)
	if a := testing.AllocsPerRun(50, func() { r.b.encode(encText); r.b.encode(encOM) }); a != 0 {
		t.Errorf("encoding a read allocates %v times", a)
	}
}
