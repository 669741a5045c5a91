package recorder

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// begun returns a recorder whose file at path is begun, as Run leaves it
// after the first record: its timeline is set up by one real record.
func begun(t *testing.T, path string) (*Recorder, *[]string) {
	t.Helper()
	smp, rec, msgs := setup(t, 1)
	if err := rec.Create(path); err != nil {
		t.Fatal(err)
	}
	sink := smp.AddSink("first", 4)
	if err := smp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	first, _ := sink.Next()
	if first == nil {
		t.Fatal("no record")
	}
	if rec.take(first.T, first.Values) {
		t.Fatal("took a sample before the file was begun")
	}
	rec.Handle(first)
	if rec.Flush() != 0 {
		t.Fatal("a flush held back right after the header")
	}
	return rec, msgs
}

// TestTakeWritesOnlyWhatCannotWait: the sampling goroutine's write of a
// sample (take) goes to the file at once, and is declined, for Run to
// handle, whenever it might wait or has something to report: Run writing,
// a compressed file's flush not yet due, a failed write.
func TestTakeWritesOnlyWhatCannotWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	rec, msgs := begun(t, path)
	if !rec.take(time.Second, []float64{1, 2}) {
		t.Fatal("declined a sample into a local file")
	}
	r, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Samples); n != 2 || r.Samples[1].T != 1 || r.Samples[1].V[0] != 1 {
		t.Fatalf("the file holds %d samples (%v); want the first and the one taken, 1 s, at once", n, r.Samples)
	}
	if rec.lastSample != time.Second {
		t.Errorf("lastSample = %v after a sample taken at 1 s", rec.lastSample)
	}

	rec.mu.Lock()
	if rec.take(2*time.Second, []float64{1, 2}) {
		t.Error("took a sample while Run wrote")
	}
	rec.mu.Unlock()

	// A write that fails: declined, the error left for Run, which reports
	// it and stops the recording; sampling, and take, go on without a file.
	_ = rec.w.Close(recording.End{})
	if rec.take(3*time.Second, []float64{1, 2}) || rec.derr == nil {
		t.Fatalf("after a failed write: took it, or kept no error (%v)", rec.derr)
	}
	if rec.take(4*time.Second, []float64{1, 2}) {
		t.Error("took a sample with a write error waiting to be reported")
	}
	if len(*msgs) != 0 {
		t.Fatalf("take reported %q itself", *msgs)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	rec.drain(timer)
	if rec.w != nil || rec.derr != nil || len(*msgs) != 1 || !strings.Contains((*msgs)[0], "recording stopped") {
		t.Fatalf("after Run's turn: file %v, error %v, reported %q; want the recording stopped and said so once", rec.w, rec.derr, *msgs)
	}
	if rec.take(5*time.Second, []float64{1, 2}) {
		t.Error("took a sample without a file")
	}
	if rec.Written() != 2 || rec.directN != 1 {
		t.Errorf("Written() = %d, %d taken; want the 2 samples that reached the file, 1 of them taken", rec.Written(), rec.directN)
	}
}

// TestTakeCompressedWhenItsFlushIsDue: a compressed file is written by take
// only when its flush is due, so that Run's timer keeps the flushes held
// back, and no block is smaller than zstdFlushEvery allows.
func TestTakeCompressedWhenItsFlushIsDue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl.zst")
	rec, msgs := begun(t, path)
	rec.lastFlush = time.Now()
	if rec.take(time.Second, []float64{1, 2}) {
		t.Fatal("took a sample right after a flush")
	}
	rec.lastFlush = time.Now().Add(-zstdFlushEvery)
	if !rec.take(time.Second, []float64{1, 2}) {
		t.Fatal("declined a sample whose flush was due")
	}
	if time.Since(rec.lastFlush) > zstdFlushEvery/2 {
		t.Errorf("lastFlush %v ago after the flush", time.Since(rec.lastFlush))
	}
	rec.Stop()
	r, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != 2 || r.End == nil || r.End.Samples != 2 || len(*msgs) != 0 {
		t.Errorf("%d samples, end %+v, reported %q; want 2 and a clean end", len(r.Samples), r.End, *msgs)
	}
}

// TestRecordingTakenOnTheSamplingGoroutine: recorded by Run at an interval
// of sampler.BatchEvery, the samples are written by the sampling goroutine
// (all but a few: the first, which begins the file, and any that found a
// mark queued), and the file holds every sample and the label in order, as
// the sampler took them.
func TestRecordingTakenOnTheSamplingGoroutine(t *testing.T) {
	const n = 12
	cat, topo := openCatalog(t)
	cols, err := cat.Select([]string{"vmstat.pgfault"}, false)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := sampler.New(cols, sampler.Config{Interval: sampler.BatchEvery, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	report := func(m string) { msgs = append(msgs, m) }
	rec := New(smp, smp.AddSink("rec", 64), recording.Header{Host: "test", Topology: topo, Columns: Columns(cols)},
		false, func(err error) { report(err.Error()) }, report)
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := rec.Create(path); err != nil {
		t.Fatal(err)
	}
	// The times the sampler took, from a sink of its own.
	var want []time.Duration
	var label time.Duration
	other := smp.AddSink("all", 64)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for r := range other.Records() {
			switch r.Kind {
			case sampler.KindSample:
				want = append(want, r.T)
			case sampler.KindLabel:
				label = r.T
			}
			other.Release(r)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- rec.Run() }()
	go func() {
		<-smp.Sampling()
		time.Sleep(5 * sampler.BatchEvery)
		smp.Label("half")
	}()
	if err := smp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-drained
	r, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for _, s := range r.Samples {
		got = append(got, micros(s.T))
	}
	// The file's times are written to the microsecond.
	for i := range want {
		want[i] = want[i].Round(time.Microsecond)
	}
	if !slices.Equal(got, want) || r.End == nil || r.End.Samples != n || len(msgs) != 0 {
		t.Fatalf("the file holds samples at %v (end %+v, reported %q); want the sampler's %v", got, r.End, msgs, want)
	}
	if len(r.Marks) != 1 || r.Marks[0].Text != "half" {
		t.Fatalf("marks %+v; want the label", r.Marks)
	}
	lt := micros(r.Marks[0].T)
	if lt != label.Round(time.Microsecond) {
		t.Errorf("the label at %v in the file, at %v in the sampler", lt, label)
	}
	if rec.directN < n/2 {
		t.Errorf("%d of %d samples taken on the sampling goroutine; want most", rec.directN, n)
	}
}

// micros is a recording's time in seconds, written to the microsecond.
func micros(s float64) time.Duration { return time.Duration(math.Round(s*1e6)) * time.Microsecond }

// TestSwitchWhileTakingDirectly: `ctl record` at an interval whose samples
// the sampling goroutine writes. The switch is Run's; the samples taken
// before it end the first file, and the second file's t=0 is the last of
// them, as when every sample went through Run.
func TestSwitchWhileTakingDirectly(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	smp, rec, msgs := setupAt(t, sampler.BatchEvery, n)
	if err := rec.Create(a); err != nil {
		t.Fatal(err)
	}
	runRotating(t, smp, rec, 8*sampler.BatchEvery+sampler.BatchEvery/2, b)
	ra, rb := loadSwitched(t, a, b)
	if got := len(ra.Samples) + len(rb.Samples); got != n || len(*msgs) != 1 {
		t.Errorf("%d + %d samples across the two files, reported %q; want %d and the switch", len(ra.Samples), len(rb.Samples), *msgs, n)
	}
	if rec.directN < n/2 {
		t.Errorf("%d of %d samples taken on the sampling goroutine; want most", rec.directN, n)
	}
}
