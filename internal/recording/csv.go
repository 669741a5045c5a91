package recording

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// CSVOptions tune WriteCSVOptions.
type CSVOptions struct {
	// Labels adds a last column "label" holding, on each sample's row, the
	// text of the labels that fell after the previous sample and at or
	// before this one (joined by "; "). Labels after the last sample get
	// rows of their own, with empty values.
	Labels bool
}

// WriteCSV writes the samples as CSV: a header row "time_s" and the
// qualified column names, then one row per sample with the time in seconds
// since Start and one cell per column, empty where the value is absent.
// Numbers are compact: shortest round-trip form, with an exponent where
// that is shorter (a time of 1e300 s is "1e+300", not 301 digits).
//
// Column names and labels come from a file that may be old or crafted, and
// CSV often ends up on a terminal: they are written as SanitizeText cleans
// them, so no escape sequence, BEL or bidi control gets through.
func (r *Recording) WriteCSV(w io.Writer) error {
	return r.WriteCSVOptions(w, CSVOptions{})
}

// WriteCSVOptions is WriteCSV with options.
func (r *Recording) WriteCSVOptions(w io.Writer, o CSVOptions) error {
	cw := csv.NewWriter(w)
	n := 1 + len(r.Columns)
	if o.Labels {
		n++
	}
	row := make([]string, n)
	row[0] = "time_s"
	for i := range r.Columns {
		row[1+i] = SanitizeText(r.Columns[i].Name)
	}
	if o.Labels {
		row[n-1] = "label"
	}
	if err := cw.Write(row); err != nil {
		return err
	}

	labels := r.Labels()
	sort.SliceStable(labels, func(i, j int) bool { return labels[i].T < labels[j].T })
	next := 0
	var buf []byte
	var texts []string
	for _, s := range r.Samples {
		buf = appendSecondsFloat(buf[:0], s.T)
		row[0] = string(buf)
		for i := range r.Columns {
			x := math.NaN()
			if i < len(s.V) {
				x = s.V[i]
			}
			buf = appendFullValue(buf[:0], x)
			row[1+i] = string(buf)
		}
		if o.Labels {
			texts = texts[:0]
			for next < len(labels) && labels[next].T <= s.T {
				texts = append(texts, shownLabel(labels[next].Text))
				next++
			}
			row[n-1] = strings.Join(texts, "; ")
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	if o.Labels {
		for ; next < len(labels); next++ {
			buf = appendSecondsFloat(buf[:0], labels[next].T)
			row[0] = string(buf)
			for i := 1; i < n-1; i++ {
				row[i] = ""
			}
			row[n-1] = shownLabel(labels[next].Text)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// shownLabel is a label read from a file, cleaned as labels are on their way
// in. One that has no printable text left is shown as U+FFFD rather than
// dropped, so that it is still seen that a label was there.
func shownLabel(s string) string {
	if t := SanitizeText(s); t != "" {
		return t
	}
	return "\uFFFD"
}

// Encode writes the recording to w in the current format: the header with
// Columns as the column set, then samples and marks in time order (a mark
// before a sample at the same time). Column-set changes are not repeated:
// every sample carries all columns, NaN (null) where a value is absent.
// The caller closes w, e.g. with w.Close(*r.End) when r.End is set.
// Labels are cleaned as CSV's are: a file converted by an older version or
// crafted by hand gets labels as today's numascope would have taken them.
// This is how `convert` turns a legacy recording into the current format.
func (r *Recording) Encode(w *Writer) error {
	h := r.Header
	h.Columns = r.Columns
	if err := w.WriteHeader(&h); err != nil {
		return err
	}
	dur := func(t float64) time.Duration {
		return time.Duration(math.Round(t*1e6)) * time.Microsecond
	}
	marks := make([]Mark, 0, len(r.Marks))
	for _, m := range r.Marks {
		if m.Type != MarkColumns {
			marks = append(marks, m)
		}
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].T < marks[j].T })
	writeMark := func(m Mark) error {
		t := dur(m.T)
		switch m.Type {
		case MarkLabel:
			return w.WriteLabel(t, shownLabel(m.Text))
		case MarkInterval:
			return w.WriteInterval(t, time.Duration(math.Round(m.Interval*1e9)))
		case MarkPause:
			return w.WritePause(t)
		case MarkResume:
			return w.WriteResume(t)
		}
		return fmt.Errorf("recording: unknown mark type %q", m.Type)
	}
	j := 0
	for _, s := range r.Samples {
		for j < len(marks) && marks[j].T <= s.T {
			if err := writeMark(marks[j]); err != nil {
				return err
			}
			j++
		}
		if err := w.WriteSample(dur(s.T), s.V); err != nil {
			return err
		}
	}
	for ; j < len(marks); j++ {
		if err := writeMark(marks[j]); err != nil {
			return err
		}
	}
	return nil
}
