package recording

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wideHeader has n columns, like a recording of a 4-node machine's events.
func wideHeader(n int) *Header {
	h := &Header{Interval: 0.1}
	for i := 0; i < n; i++ {
		h.Columns = append(h.Columns, Column{Sensor: "node", Event: fmt.Sprintf("e%d", i/4), Sources: []string{fmt.Sprint(i % 4)}, Kind: Counter})
	}
	return h
}

// sampleValues fills v with a mix of what samplers produce: integers, rates
// with fractions, levels in the billions, the odd unreadable value.
func sampleValues(v []float64, i int) {
	for k := range v {
		switch k % 4 {
		case 0:
			v[k] = float64(i * k)
		case 1:
			v[k] = float64(i) * 1.37 / float64(k)
		case 2:
			v[k] = 64e9 - float64(i*4096)
		default:
			if i%17 == 0 {
				v[k] = nan
			} else {
				v[k] = float64(i%1000) / 1000
			}
		}
	}
}

// WriteSample runs on the sampling hot path: it must not allocate, plain or
// compressed, including the calls that complete a zstd block.
func TestWriteSampleAllocs(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("zstd=%v", compress), func(t *testing.T) {
			w := NewWriter(io.Discard, compress)
			if err := w.WriteHeader(wideHeader(32)); err != nil {
				t.Fatal(err)
			}
			v := make([]float64, 32)
			i := 0
			write := func() {
				sampleValues(v, i)
				if err := w.WriteSample(time.Duration(i)*100*time.Millisecond, v); err != nil {
					t.Fatal(err)
				}
				i++
			}
			// Steady state: buffers grown, encoder warmed up.
			for range 5000 {
				write()
			}
			// ~20000 lines of ~400 bytes are ~8 MB: dozens of zstd blocks.
			if a := testing.AllocsPerRun(20000, write); a != 0 {
				t.Errorf("WriteSample allocates %v times per call", a)
			}
			flushes := 0
			if a := testing.AllocsPerRun(200, func() {
				write()
				if flushes++; flushes%10 == 0 {
					w.Flush()
				}
			}); a != 0 {
				t.Errorf("WriteSample with periodic Flush allocates %v times per call", a)
			}
		})
	}
}

// A reader may load the file while it is being written: after each Flush it
// sees at least every sample written before it, and never a corrupt one.
func TestConcurrentReader(t *testing.T) {
	for _, name := range []string{"live.jsonl", "live.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteHeader(wideHeader(8)); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			var flushed atomic.Int64
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			errs := make(chan error, 1)
			go func() { // the reader
				defer wg.Done()
				loads := 0
				for {
					select {
					case <-done:
						if loads == 0 {
							errs <- fmt.Errorf("the reader never ran")
						}
						return
					default:
					}
					min := flushed.Load()
					rec, err := Load(path)
					if err != nil {
						errs <- err
						return
					}
					loads++
					if int64(len(rec.Samples)) < min {
						errs <- fmt.Errorf("read %d samples after %d were flushed", len(rec.Samples), min)
						return
					}
					v := make([]float64, 8)
					for i, s := range rec.Samples {
						sampleValues(v, i)
						for k := range v {
							if !sameFloat(s.V[k], round9(v[k])) {
								errs <- fmt.Errorf("sample %d value %d = %v, want %v", i, k, s.V[k], v[k])
								return
							}
						}
					}
					for _, sk := range rec.Skipped {
						if !strings.Contains(sk, "cut off mid-line") && !strings.Contains(sk, "ends mid-block") {
							errs <- fmt.Errorf("unexpected skip: %s", sk)
							return
						}
					}
				}
			}()
			v := make([]float64, 8)
			for i := 0; i < 3000; i++ {
				sampleValues(v, i)
				if err := w.WriteSample(time.Duration(i)*time.Millisecond, v); err != nil {
					t.Fatal(err)
				}
				if i%100 == 99 {
					if err := w.Flush(); err != nil {
						t.Fatal(err)
					}
					flushed.Store(int64(i + 1))
					time.Sleep(time.Millisecond)
				}
			}
			close(done)
			wg.Wait()
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			if err := w.Close(End{Samples: 3000}); err != nil {
				t.Fatal(err)
			}
			rec, err := Load(path)
			if err != nil || len(rec.Samples) != 3000 || rec.End == nil {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// Labels may come from another goroutine than samples.
func TestWriterConcurrentCalls(t *testing.T) {
	var buf strings.Builder
	w := NewWriter(&buf, false)
	if err := w.WriteHeader(wideHeader(4)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		v := []float64{1, 2, 3, 4}
		for i := 0; i < 1000; i++ {
			w.WriteSample(time.Duration(i)*time.Millisecond, v)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 100; i++ {
			w.WriteLabel(time.Duration(i)*10*time.Millisecond, fmt.Sprint("label ", i))
		}
	}()
	wg.Wait()
	if err := w.Close(End{Samples: 1000}); err != nil {
		t.Fatal(err)
	}
	rec, err := Read(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 1000 || len(rec.Marks) != 100 || len(rec.Skipped) != 0 {
		t.Errorf("%d samples, %d marks, skipped %q", len(rec.Samples), len(rec.Marks), rec.Skipped)
	}
}

// round9 is v as written: exact for integers below 1e15, else rounded to
// nine significant digits.
func round9(v float64) float64 {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', 8, 64), 64)
	return r
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// BenchmarkWriteSample measures the hot path with 32 columns and reports the
// bytes each sample costs on disk.
func BenchmarkWriteSample(b *testing.B) {
	for _, compress := range []bool{false, true} {
		name := "plain"
		if compress {
			name = "zstd"
		}
		b.Run(name, func(b *testing.B) {
			var out countingWriter
			w := NewWriter(&out, compress)
			if err := w.WriteHeader(wideHeader(32)); err != nil {
				b.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			start := out.n
			v := make([]float64, 32)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sampleValues(v, i)
				if err := w.WriteSample(time.Duration(i)*100*time.Millisecond, v); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := w.Close(End{}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(out.n-start)/float64(b.N), "bytes/sample")
		})
	}
}

// fullWriter accepts room bytes, then fails like a full disk, part way
// through a write if need be.
type fullWriter struct {
	got  []byte
	room int
}

func (f *fullWriter) Write(p []byte) (int, error) {
	n := min(len(p), f.room-len(f.got))
	f.got = append(f.got, p[:n]...)
	if n < len(p) {
		return n, fmt.Errorf("no space left on device")
	}
	return n, nil
}

// TestWrittenCountsWhatReachedTheOutput checks Written against the sample
// lines that a reader finds in the output of a writer which fills up part
// way through a line, or just before a line's newline (a last line without
// its newline is still read when it is complete).
func TestWrittenCountsWhatReachedTheOutput(t *testing.T) {
	rooms := []int{0, 100, 1000, 5000, 1 << 20}
	full := string(wideOutput(t))
	for _, at := range []int{100, 1000, 5000} {
		nl := at + strings.IndexByte(full[at:], '\n')
		rooms = append(rooms, nl, nl+1) // the line without, with its newline
	}
	for _, room := range rooms {
		out := &fullWriter{room: room}
		w := NewWriter(out, false)
		v := make([]float64, 8)
		err := w.WriteHeader(wideHeader(8))
		for i := 0; i < 200 && err == nil; i++ {
			sampleValues(v, i)
			if err = w.WriteSample(time.Duration(i)*time.Millisecond, v); err == nil && i%7 == 0 {
				err = w.Flush()
			}
		}
		cerr := w.Close(End{Samples: 12345})
		whole := 0
		if r, _ := Read(bytes.NewReader(out.got)); r != nil {
			whole = len(r.Samples)
		}
		if w.Written() != uint64(whole) {
			t.Errorf("room %d: Written() = %d, a reader finds %d sample lines", room, w.Written(), whole)
		}
		if room == 1<<20 {
			if cerr != nil || whole != 200 || !strings.HasSuffix(string(out.got), `"samples":200,"missed_deadlines":0,"dropped":0}`+"\n") {
				t.Errorf("room enough: %d lines, close %v, end %q", whole, cerr, out.got[max(0, len(out.got)-80):])
			}
		} else if cerr == nil && err == nil {
			t.Errorf("room %d: no error from a full output", room)
		}
	}
}

// wideOutput is what TestWrittenCountsWhatReachedTheOutput writes when
// nothing stops it.
func wideOutput(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, false)
	v := make([]float64, 8)
	err := w.WriteHeader(wideHeader(8))
	for i := 0; i < 200 && err == nil; i++ {
		sampleValues(v, i)
		err = w.WriteSample(time.Duration(i)*time.Millisecond, v)
	}
	if cerr := w.Close(End{}); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	return out.Bytes()
}
