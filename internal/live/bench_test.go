package live

import (
	"math"
	"testing"
	"time"
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
