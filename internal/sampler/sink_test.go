package sampler

import (
	"context"
	"slices"
	"testing"
	"time"
)

// newSinkSampler is a sampler at interval with one sink, for tests that
// drive publish and publishMark by hand, as Run does on its goroutine.
func newSinkSampler(t *testing.T, interval time.Duration) (*Sampler, *Sink) {
	t.Helper()
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	return s, s.AddSink("t", 64)
}

// take returns the kinds and times of the records queued in k, released.
func take(k *Sink) (kinds []RecordKind, ts []time.Duration) {
	for {
		r, _ := k.Next()
		if r == nil {
			return kinds, ts
		}
		kinds = append(kinds, r.Kind)
		ts = append(ts, r.T)
		k.Release(r)
	}
}

// TestQuietSinkIsPassedOver: a quiet sink gets no samples, and says when the
// last one it was passed over was taken; a mark ends the quiet until the
// consumer, having taken it, asks again, and a request made before it took
// the mark does not count.
func TestQuietSinkIsPassedOver(t *testing.T) {
	s, k := newSinkSampler(t, time.Second)
	sec := int64(time.Second)
	if _, ok := k.LastSkipped(); ok {
		t.Fatal("LastSkipped reports a sample before any")
	}
	k.SetQuiet(true)
	s.publish(1*time.Second, 1*sec, sec)
	s.publish(2*time.Second, 2*sec, sec)
	if n := k.Pending(); n != 0 {
		t.Fatalf("%d records queued for a quiet sink", n)
	}
	if len(k.bell) != 0 {
		t.Error("a quiet sink was rung for samples")
	}
	if st, ok := k.LastSkipped(); !ok || st != 2*time.Second {
		t.Errorf("LastSkipped = %v, %v; want 2s", st, ok)
	}
	s.publishMark(Record{Kind: KindLabel, T: 2500 * time.Millisecond})
	k.SetQuiet(true) // before the label was taken: no effect
	s.publish(3*time.Second, 3*sec, sec)
	kinds, ts := take(k)
	if !slices.Equal(kinds, []RecordKind{KindLabel, KindSample}) || ts[1] != 3*time.Second {
		t.Fatalf("after a label: %v at %v; want the label, then the sample at 3s", kinds, ts)
	}
	k.SetQuiet(true) // the label taken: quiet again
	s.publish(4*time.Second, 4*sec, sec)
	if kinds, _ := take(k); len(kinds) != 0 {
		t.Fatalf("quiet again, yet %v queued", kinds)
	}
	if st, _ := k.LastSkipped(); st != 4*time.Second {
		t.Errorf("LastSkipped = %v, want 4s", st)
	}
	k.SetQuiet(false)
	s.publish(5*time.Second, 5*sec, sec)
	if kinds, _ := take(k); !slices.Equal(kinds, []RecordKind{KindSample}) {
		t.Errorf("no longer quiet: %v queued, want one sample", kinds)
	}
	if k.Dropped() != 0 {
		t.Errorf("%d samples counted as dropped; passing a quiet sink over drops nothing", k.Dropped())
	}
}

// TestDirectSink: a Direct consumer is offered a sample only when a batch is
// due and nothing waits in the queue; a declined sample is queued and rung.
func TestDirectSink(t *testing.T) {
	s, k := newSinkSampler(t, time.Second)
	var got []time.Duration
	accept := true
	k.SetDirect(func(t time.Duration, values []float64) bool {
		if accept {
			got = append(got, t)
		}
		return accept
	})
	sec := int64(time.Second)
	s.publish(1*time.Second, 1*sec, sec)
	s.publish(2*time.Second, 2*sec, sec)
	if !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second}) || k.Pending() != 0 || len(k.bell) != 0 {
		t.Fatalf("taken %v, %d queued, bell %d; want both taken, nothing queued or rung", got, k.Pending(), len(k.bell))
	}
	accept = false
	s.publish(3*time.Second, 3*sec, sec)
	if k.Pending() != 1 || len(k.bell) != 1 {
		t.Fatalf("declined: %d queued, bell %d; want it queued and rung", k.Pending(), len(k.bell))
	}
	accept = true
	s.publish(4*time.Second, 4*sec, sec) // the declined one still waits: queued behind it
	if len(got) != 2 || k.Pending() != 2 {
		t.Fatalf("with a record waiting: taken %v, %d queued; want it queued behind", got, k.Pending())
	}
	<-k.bell
	if _, ts := take(k); !slices.Equal(ts, []time.Duration{3 * time.Second, 4 * time.Second}) {
		t.Fatalf("queued %v, want 3s and 4s in order", ts)
	}
	// At 10 ms, 10 ms after the last ring, a sample waits for its batch.
	ms10 := int64(10 * time.Millisecond)
	s.publish(4010*time.Millisecond, 4*sec+ms10, ms10)
	if len(got) != 2 || k.Pending() != 1 {
		t.Fatalf("a sample before the batch was due: taken %v, %d queued", got, k.Pending())
	}
	take(k)
	k.SetDirect(nil)
	s.publish(6*time.Second, 6*sec, sec)
	if len(got) != 2 || k.Pending() != 1 {
		t.Errorf("after SetDirect(nil): taken %v, %d queued", got, k.Pending())
	}
}

// TestDirectSinkWhileRunning: at an interval of BatchEvery and more every
// sample goes to a Direct consumer that takes it, and the marks reach the
// sink's queue in order with them.
func TestDirectSinkWhileRunning(t *testing.T) {
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: BatchEvery, Count: 8})
	if err != nil {
		t.Fatal(err)
	}
	k := s.AddSink("t", 64)
	taken := make(chan time.Duration, 64)
	k.SetDirect(func(t time.Duration, _ []float64) bool { taken <- t; return true })
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	go func() {
		<-s.Sampling()
		time.Sleep(3 * BatchEvery)
		s.Label("x")
	}()
	var queued, labels int
	var label time.Duration
	for r := range k.Records() {
		switch r.Kind {
		case KindSample:
			queued++
		case KindLabel:
			labels, label = labels+1, r.T
		}
		k.Release(r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(taken)
	var ts []time.Duration
	for t := range taken {
		ts = append(ts, t)
	}
	// A sample right after the label finds it queued and queues behind it;
	// every other one is taken directly.
	if labels != 1 || len(ts)+queued != 8 || queued > 1 {
		t.Fatalf("%d taken directly, %d queued, %d labels; want 8 samples, at most one queued, one label", len(ts), queued, labels)
	}
	if !slices.IsSorted(ts) {
		t.Errorf("taken out of order: %v", ts)
	}
	if !slices.ContainsFunc(ts, func(t time.Duration) bool { return t < label }) {
		t.Errorf("no sample taken before the label at %v: %v", label, ts)
	}
}

// TestDirectAndQuietDoNotAllocate: handing a sample to a Direct consumer, or
// passing a quiet sink over, allocates nothing.
func TestDirectAndQuietDoNotAllocate(t *testing.T) {
	s, direct := newSinkSampler(t, time.Second)
	quiet := s.AddSink("quiet", 64)
	quiet.SetQuiet(true)
	direct.SetDirect(func(time.Duration, []float64) bool { return true })
	sec := int64(time.Second)
	now := sec
	if a := testing.AllocsPerRun(100, func() {
		now += sec
		s.publish(time.Duration(now), now, sec)
	}); a != 0 {
		t.Errorf("%v allocations per sample", a)
	}
	if direct.Pending() != 0 || quiet.Pending() != 0 {
		t.Errorf("%d and %d queued; want none", direct.Pending(), quiet.Pending())
	}
}
