package recording

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWriteCSV(t *testing.T) {
	var buf bytes.Buffer
	writeTest(t, NewWriter(&buf, false))
	rec, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"time_s", "node.0.numa_miss", "node.1.numa_miss", "node.MemFree", "node.cpu_busy"},
		{"0.1", "1", "2.5", "1073741824", ""},
		{"0.2", "0", "", "1.5e-07", ""},
		{"0.3", "-3", "123456789012", "0.333333333", ""},
		{"0.4", "", "7", "500000000", "99.5"},
		{"0.5", "", "8", "", "12.25"},
	}
	var out bytes.Buffer
	if err := rec.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	checkCSV(t, out.String(), want)

	// With labels: the label at 0.15 belongs to the sample at 0.2; labels
	// at or before the first sample go to it; labels after the last get
	// their own rows.
	if err := writeLabelled(t, &buf); err != nil {
		t.Fatal(err)
	}
	rec, err = Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := rec.WriteCSVOptions(&out, CSVOptions{Labels: true}); err != nil {
		t.Fatal(err)
	}
	checkCSV(t, out.String(), [][]string{
		{"time_s", "a.x", "a.y", "label"},
		{"1", "1", "", "before; at, first"},
		{"2", "2", "20", ""},
		{"3", "", "30", "\"quoted\" line"}, // labels are cleaned: one line
		{"3.5", "", "", "after"},
	})
}

// writeLabelled writes a small recording with labels around its samples.
func writeLabelled(t *testing.T, buf *bytes.Buffer) error {
	buf.Reset()
	w := NewWriter(buf, false)
	h := &Header{Columns: []Column{{Sensor: "a", Event: "x", Kind: Counter}, {Sensor: "a", Event: "y", Kind: Gauge}}}
	if err := w.WriteHeader(h); err != nil {
		return err
	}
	steps := []func() error{
		func() error { return w.WriteLabel(500*time.Millisecond, "before") },
		func() error { return w.WriteLabel(time.Second, "at, first") },
		func() error { return w.WriteSample(time.Second, []float64{1, nan}) },
		func() error { return w.WriteSample(2*time.Second, []float64{2, 20}) },
		func() error { return w.WriteLabel(2500*time.Millisecond, "\"quoted\"\nline") },
		func() error { return w.WriteSample(3*time.Second, []float64{nan, 30}) },
		func() error { return w.WriteLabel(3500*time.Millisecond, "after") },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return w.Close(End{Samples: 3})
}

func checkCSV(t *testing.T, got string, want [][]string) {
	t.Helper()
	if !strings.HasSuffix(got, "\n") {
		t.Error("CSV does not end with a newline")
	}
	rows, err := csv.NewReader(strings.NewReader(got)).ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v\n%s", err, got)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(rows[i], want[i]) {
			t.Errorf("row %d = %q, want %q", i, rows[i], want[i])
		}
	}
}

// TestWriteCSVHostileFile: a crafted recording whose column name and labels
// hold an escape sequence, BEL, bidi controls and invalid UTF-8, and whose
// times are 1e300 s, converts to CSV with the names and labels cleaned and
// the times compact.
func TestWriteCSVHostileFile(t *testing.T) {
	rec, err := Load("testdata/hostile-names.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rec.WriteCSVOptions(&out, CSVOptions{Labels: true}); err != nil {
		t.Fatal(err)
	}
	checkCSV(t, out.String(), [][]string{
		{"time_s", "evil[2J.x", "a.y", "label"},
		{"1", "1", "2", "a[2Jbcd\uFFFDef g"},
		{"1e+300", "1e+300", "3", ""},
		{"2e+300", "", "", "]0;title"},
	})
}

// TestCSVNumbersCompact: times and values far outside the usual range are
// written in the shortest form that reads back exactly.
func TestCSVNumbersCompact(t *testing.T) {
	for _, c := range []struct {
		t    float64
		want string
	}{{1e300, "1e+300"}, {-1e300, "-1e+300"}, {1e13, "10000000000000"}, {123456789012345.5, "123456789012345.5"},
		{8e12, "8000000000000"}, {-9.5e9, "-9500000000"}, {8e9 + 0.25, "8000000000.25"}, {1e15, "1e+15"}, {0.5, "0.5"}} {
		got := string(appendSecondsFloat(nil, c.t))
		if got != c.want {
			t.Errorf("time %g written as %q, want %q", c.t, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{1e300, "1e+300"}, {-1.5e-300, "-1.5e-300"}, {1e15, "1e+15"}, {42, "42"}, {0.1, "0.1"}} {
		if got := string(appendFullValue(nil, c.v)); got != c.want {
			t.Errorf("value %g written as %q, want %q", c.v, got, c.want)
		}
	}
}

// TestEncodeColumnChange: a recording whose column set changed encodes
// (as convert -o .jsonl does) into one that reads back with the same samples.
func TestEncodeColumnChange(t *testing.T) {
	var buf bytes.Buffer
	writeTest(t, NewWriter(&buf, false))
	rec, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := NewWriter(&out, false)
	if err := rec.Encode(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(End{Samples: uint64(len(rec.Samples))}); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, back.Samples, wantSamples)
}
