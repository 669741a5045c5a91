package live

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/web"
)

// BenchmarkBatchSample is the web path's cost per sample in the hub (not
// in the sampler): encoding one row of 50 values into the pending batch.
func BenchmarkBatchSample(b *testing.B) {
	l := &Live{}
	vals := make([]float64, 50)
	for i := range vals {
		vals[i] = float64(i) * 12345.678
	}
	vals[7] = math.NaN()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if l.nbatch == 400 { // a 400 ms batch at 1 kHz
			l.nbatch = 0
		}
		l.appendSample(time.Duration(i)*time.Millisecond, vals)
	}
}

func TestBatchEncoding(t *testing.T) {
	l := &Live{}
	l.appendSample(1500*time.Microsecond, []float64{1, 0.125, math.NaN(), 2.5e15, -3})
	l.appendSample(2*time.Second, []float64{0, 0, 0, 0, 1e-7})
	got := string(l.batch) + "]}"
	want := `{"type":"batch","samples":[[0.0015,1,0.125,null,2.5e+15,-3],[2,0,0,0,0,1e-07]]}`
	if got != want {
		t.Fatalf("batch\n got %s\nwant %s", got, want)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		l.nbatch = 0
		l.appendSample(time.Second, []float64{1, 2, 3, 4, 5})
	}); allocs != 0 {
		t.Fatalf("appendSample allocates %v times per sample", allocs)
	}
}

// BenchmarkHubSample is the hub's whole cost per sample of 50 values for
// the web path: the row into the pending batch, the values into the
// history for later clients, and a flush every 400 samples (no clients).
func BenchmarkHubSample(b *testing.B) {
	l := &Live{clients: map[*web.Client]bool{}}
	vals := make([]float64, 50)
	names := make([]string, len(vals))
	for i := range vals {
		vals[i] = float64(i) * 12345.678
		names[i] = fmt.Sprint("s.e", i)
	}
	vals[7] = math.NaN()
	l.hist.setColumns(histCols(names...))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		t := time.Duration(i) * time.Millisecond
		l.appendSample(t, vals)
		l.hist.add(t, vals)
		if l.nbatch == 400 {
			l.flush()
		}
	}
}

// BenchmarkHistoryAdd is the history's part of BenchmarkHubSample: one
// sample of 50 values into the ring, once it is full.
func BenchmarkHistoryAdd(b *testing.B) {
	var h history
	vals := make([]float64, 50)
	names := make([]string, len(vals))
	for i := range names {
		names[i] = fmt.Sprint("s.e", i)
	}
	h.setColumns(histCols(names...))
	for i := 0; i < h.limit(len(h.cols)); i++ {
		h.add(time.Duration(i), vals)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.add(time.Duration(i), vals)
	}
}

// BenchmarkHistoryReplay is what a client that connects costs the hub: the
// full default history of 50 columns (about 41,000 samples) encoded as one
// batch.
func BenchmarkHistoryReplay(b *testing.B) {
	var h history
	vals := make([]float64, 50)
	names := make([]string, len(vals))
	for i := range names {
		vals[i] = float64(i) * 12345.678
		names[i] = fmt.Sprint("s.e", i)
	}
	h.setColumns(histCols(names...))
	for i := 0; i < h.limit(len(h.cols)); i++ {
		h.add(time.Duration(i)*time.Millisecond, vals)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.SetBytes(int64(len(h.batch())))
	}
}
