package recording

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTruncatePlain cuts the test recording at every byte offset, as a crash
// or kill -9 would: every complete line before the cut must survive, a cut
// inside a line must be reported, and a cut inside the header is an error.
func TestTruncatePlain(t *testing.T) {
	var buf bytes.Buffer
	writeTest(t, NewWriter(&buf, false))
	data := buf.Bytes()
	full, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}

	type span struct{ start, end int } // end: index of the '\n'
	var lines []span
	for s := 0; s < len(data); {
		e := s + bytes.IndexByte(data[s:], '\n')
		lines = append(lines, span{s, e})
		s = e + 1
	}
	for n := 0; n <= len(data); n++ {
		rec, err := Read(bytes.NewReader(data[:n]))
		if n < lines[0].end {
			if !errors.Is(err, ErrNoHeader) {
				t.Fatalf("cut at %d (inside the header): err = %v, want ErrNoHeader", n, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		samples, marks, end, mid := 0, 0, false, false
		for _, l := range lines[1:] {
			switch {
			case l.end <= n:
				switch {
				case data[l.start] == '[':
					samples++
				case bytes.Contains(data[l.start:l.end], []byte(`"type":"end"`)):
					end = true
				default:
					marks++
				}
			case l.start < n:
				mid = true
			}
		}
		if len(rec.Samples) != samples || len(rec.Marks) != marks || (rec.End != nil) != end {
			t.Fatalf("cut at %d: %d samples, %d marks, end %v; want %d, %d, %v",
				n, len(rec.Samples), len(rec.Marks), rec.End != nil, samples, marks, end)
		}
		for i, s := range rec.Samples {
			// Samples before a column change are padded only as far as
			// the union read so far.
			for k, v := range s.V {
				if !sameFloat(v, full.Samples[i].V[k]) {
					t.Fatalf("cut at %d: sample %d value %d = %v, want %v", n, i, k, v, full.Samples[i].V[k])
				}
			}
		}
		if mid {
			if len(rec.Skipped) != 1 || !strings.Contains(rec.Skipped[0], "cut off mid-line") || !strings.HasSuffix(rec.Skipped[0], "1 line skipped") {
				t.Fatalf("cut at %d inside a line: Skipped = %q", n, rec.Skipped)
			}
		} else if len(rec.Skipped) != 0 {
			t.Fatalf("cut at %d on a line boundary: Skipped = %q", n, rec.Skipped)
		}
	}
}

// flushPoint is the compressed size after a Flush and what it covers.
type flushPoint struct {
	size, samples, marks int
}

// writeFlushed writes a zstd recording, flushing after every line, and
// returns the data and the flush points.
func writeFlushed(t *testing.T) ([]byte, []flushPoint) {
	var buf bytes.Buffer
	w := NewWriter(&buf, true)
	var points []flushPoint
	samples, marks := 0, 0
	flush := func() {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		points = append(points, flushPoint{buf.Len(), samples, marks})
	}
	if err := w.WriteHeader(testHeader()); err != nil {
		t.Fatal(err)
	}
	flush()
	for i := 0; i < 12; i++ {
		if i == 5 {
			if err := w.WriteLabel(ms(i*100), fmt.Sprintf("label %d", i)); err != nil {
				t.Fatal(err)
			}
			marks++
			flush()
		}
		if err := w.WriteSample(ms(i*100), []float64{float64(i), float64(i) * 1.5, 1e6 + float64(i)}); err != nil {
			t.Fatal(err)
		}
		samples++
		flush()
	}
	if err := w.Close(End{Samples: 12}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), points
}

// TestTruncateZstd cuts a compressed recording at every byte offset:
// everything flushed before the cut must survive.
func TestTruncateZstd(t *testing.T) {
	data, points := writeFlushed(t)
	for n := 0; n <= len(data); n++ {
		rec, err := Read(bytes.NewReader(data[:n]))
		if n < points[0].size {
			if err == nil {
				t.Fatalf("cut at %d (before the header's block): no error", n)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		want := points[0]
		for _, p := range points {
			if p.size <= n {
				want = p
			}
		}
		last := points[len(points)-1]
		if n < last.size && (len(rec.Samples) != want.samples || len(rec.Marks) != want.marks) {
			t.Fatalf("cut at %d: %d samples, %d marks; want %d, %d (flushed)", n, len(rec.Samples), len(rec.Marks), want.samples, want.marks)
		}
		for i, s := range rec.Samples {
			if s.T != float64(i)/10 || s.V[0] != float64(i) || s.V[2] != 1e6+float64(i) {
				t.Fatalf("cut at %d: sample %d = %v", n, i, s)
			}
		}
		switch {
		case n == len(data):
			if rec.End == nil || len(rec.Samples) != 12 || len(rec.Skipped) != 0 {
				t.Fatalf("whole file: end %v, %d samples, skipped %q", rec.End, len(rec.Samples), rec.Skipped)
			}
		case n < last.size:
			if rec.End != nil {
				t.Fatalf("cut at %d: end line before it was written", n)
			}
			if n > want.size && (len(rec.Skipped) != 1 || !strings.Contains(rec.Skipped[0], "ends mid-block")) {
				t.Fatalf("cut at %d inside a block: Skipped = %q", n, rec.Skipped)
			}
		}
	}
}

// A writer that is killed leaves an open zstd frame; a reader sees what was
// flushed and nothing unflushed.
func TestZstdOpenFrame(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, true)
	if err := w.WriteHeader(testHeader()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := w.WriteSample(time.Duration(i)*time.Millisecond, []float64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := buf.Len()
	for i := 0; i < 50; i++ {
		if err := w.WriteSample(time.Second, []float64{4, 5, 6}); err != nil {
			t.Fatal(err)
		}
	}
	if buf.Len() != flushed {
		t.Fatalf("unflushed samples reached the output (%d > %d bytes)", buf.Len(), flushed)
	}
	rec, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 100 || rec.End != nil || len(rec.Skipped) != 1 {
		t.Errorf("open frame: %d samples, end %v, skipped %q", len(rec.Samples), rec.End, rec.Skipped)
	}
}
