package sampler

import (
	"context"
	"math"
	"testing"
	"time"
)

// runAndSum runs s until stop ends it and returns, per column, the sum over
// the samples of value × the sample's real length (the time since the
// previous sample, or since t=0 for the first), the samples and the end record.
func runAndSum(t *testing.T, s *Sampler, stop func(cancel func())) (sums []float64, samples int, end Record) {
	t.Helper()
	k := s.AddSink("t", 1<<12)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	go stop(cancel)
	sums = make([]float64, len(s.Columns()))
	var prev time.Duration
	for r := range k.Records() {
		switch r.Kind {
		case KindSample:
			samples++
			dt := (r.T - prev).Seconds()
			prev = r.T
			for i, v := range r.Values {
				sums[i] += v * dt
			}
		case KindEnd:
			end = *r
			if r.T != prev {
				t.Errorf("end record at %v, last sample at %v: the end must be the final sample's instant", r.T, prev)
			}
		}
		k.Release(r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return sums, samples, end
}

// TestFinalSampleCoversTheWholeRun checks that however sampling stops, a
// counter's rate × sample length summed over all samples is exactly its
// change over the whole run: the partial interval at the end is sampled too.
func TestFinalSampleCoversTheWholeRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		interval time.Duration
		count    uint64
		stop     func(s *Sampler, cancel func())
		minN     int
	}{
		// The whole run is shorter than one interval (record -i 1s -- true).
		{"context before the first deadline", time.Hour, 0, func(_ *Sampler, cancel func()) {
			time.Sleep(30 * time.Millisecond)
			cancel()
		}, 1},
		{"Stop before the first deadline", time.Hour, 0, func(s *Sampler, _ func()) {
			time.Sleep(30 * time.Millisecond)
			s.Stop()
		}, 1},
		// Several whole intervals, then a partial one.
		{"context after several deadlines", 10 * time.Millisecond, 0, func(_ *Sampler, cancel func()) {
			time.Sleep(75 * time.Millisecond)
			cancel()
		}, 5},
		{"Stop after several deadlines", 10 * time.Millisecond, 0, func(s *Sampler, _ func()) {
			time.Sleep(75 * time.Millisecond)
			s.Stop()
		}, 5},
		// The count's last sample is the final one: no extra sample.
		{"count", 5 * time.Millisecond, 4, func(*Sampler, func()) {}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat, st := newStepCatalog()
			cols, err := cat.Select([]string{"step.hits", "step.1.hits"}, false)
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(cols, Config{Interval: c.interval, Count: c.count})
			if err != nil {
				t.Fatal(err)
			}
			sums, n, end := runAndSum(t, s, func(cancel func()) { c.stop(s, cancel) })
			st.mu.Lock()
			reads := st.reads
			st.mu.Unlock()
			if n < c.minN || (c.count > 0 && n != int(c.count)) {
				t.Errorf("%d samples, want at least %d (count %d)", n, c.minN, c.count)
			}
			if reads != n+1 { // the priming read plus one per sample
				t.Errorf("%d reads for %d samples", reads, n)
			}
			if end.Stats.Samples != uint64(n) {
				t.Errorf("end record counts %d samples, %d delivered", end.Stats.Samples, n)
			}
			// step.hits grows by 10+30 per read, step.1.hits by 30.
			for i, perRead := range []float64{40, 30} {
				want := perRead * float64(reads-1)
				if math.Abs(sums[i]-want) > 1e-9*want {
					t.Errorf("%s: sum of rate × length = %v, counter changed by %v", cols[i].Name, sums[i], want)
				}
			}
		})
	}
}

// TestAbortTakesNoFinalSample: Abort undoes a start, so it adds no sample.
func TestAbortTakesNoFinalSample(t *testing.T) {
	cat, _ := newStepCatalog()
	cols, _ := cat.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, n, end := runAndSum(t, s, func(func()) {
		time.Sleep(20 * time.Millisecond)
		s.Abort()
	})
	if n != 0 || end.Stats.Samples != 0 {
		t.Errorf("Abort delivered %d samples (end counts %d), want none", n, end.Stats.Samples)
	}
}
