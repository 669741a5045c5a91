package recorder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// openCatalog opens the vmstat and node sensors of the live machine.
func openCatalog(t *testing.T) (*sampler.Catalog, *topology.Topology) {
	t.Helper()
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	cat := sampler.Open(sensor.Env{FS: fs, Topology: topo}, "vmstat", "node")
	t.Cleanup(func() { cat.Close() })
	return cat, topo
}

// setup samples vmstat.pgfault and node.MemFree on the live machine every
// 10 ms.
func setup(t *testing.T, count uint64) (*sampler.Sampler, *Recorder, *[]string) {
	t.Helper()
	return setupAt(t, 10*time.Millisecond, count)
}

// setupAt is setup at another interval.
func setupAt(t *testing.T, interval time.Duration, count uint64) (*sampler.Sampler, *Recorder, *[]string) {
	t.Helper()
	cat, topo := openCatalog(t)
	cols, err := cat.Select([]string{"vmstat.pgfault", "node.MemFree"}, false)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := sampler.New(cols, sampler.Config{Interval: interval, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []string
	h := recording.Header{Host: "test", Topology: topo}
	for _, c := range cols {
		h.Columns = append(h.Columns, recording.Column{Name: c.Name, Sensor: c.Sensor, Event: c.Event.Name,
			Sources: c.Sources, Unit: c.Event.Unit, Kind: recording.ValueKind(c.Event.Kind.String())})
	}
	report := func(m string) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, m)
	}
	rec := New(smp, smp.AddSink("rec", 64), h, false, func(err error) { report(err.Error()) }, report)
	return smp, rec, &msgs
}

// loadSwitched loads the two files of a switch from a to b: each closed
// cleanly, its end line counting the samples it holds (at least five), and
// b's t=0 at a's last sample, so that b's first rates cover time within b.
func loadSwitched(t *testing.T, a, b string) (ra, rb *recording.Recording) {
	t.Helper()
	var recs []*recording.Recording
	for _, path := range []string{a, b} {
		r, err := recording.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if r.End == nil || len(r.Samples) < 5 || r.End.Samples != uint64(len(r.Samples)) {
			t.Fatalf("%s: end %+v with %d samples in the file; want a clean end counting them", path, r.End, len(r.Samples))
		}
		recs = append(recs, r)
	}
	ra, rb = recs[0], recs[1]
	lastA := ra.Header.Start.Add(time.Duration(ra.Samples[len(ra.Samples)-1].T * 1e9))
	if d := rb.Header.Start.Sub(lastA); d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("b starts %v after a's last sample, want at it", d)
	}
	return ra, rb
}

func TestRotationKeepsEverySample(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl.zst")
	existing := filepath.Join(dir, "existing.jsonl")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	smp, rec, msgs := setup(t, 60)
	if err := rec.Create(a); err != nil {
		t.Fatal(err)
	}
	if err := rec.Create(existing); err == nil {
		t.Fatal("Create overwrote an existing file")
	}
	if err := rec.Create(a); err == nil { // a exists now too
		t.Fatal("Create of an existing file succeeded")
	}
	done := make(chan error)
	go func() { done <- rec.Run() }()
	rotated := make(chan time.Time, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		smp.Label("before switch")
		smp.Rotate(existing) // refused: recording goes on in a
		time.Sleep(100 * time.Millisecond)
		rotated <- time.Now()
		smp.Rotate(b)
		smp.Label("after switch")
	}()
	began := time.Now()
	if err := smp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ra, rb := loadSwitched(t, a, b)
	if n := len(ra.Samples) + len(rb.Samples); n != 60 {
		t.Errorf("%d + %d samples across the two files, want 60", len(ra.Samples), len(rb.Samples))
	}
	// The first file's clock starts with sampling, so its first sample is
	// at least one interval (10 ms) in.
	if first := ra.Samples[0].T; first < 0.009 {
		t.Errorf("first file's first sample at t=%v, want one interval (0.01) or later", first)
	}
	// Each file's samples, placed by its own clock (header Start + T), lie
	// where they were taken: the first file's between the start of sampling
	// and its end, the second's after the switch was asked for. A second
	// file that went on with the first's clock would place its samples a
	// quarter of a second late, past the end. These bounds follow from
	// causality alone, so a loaded machine cannot break them (run 3 of a
	// loaded run on 2026-11-28 took its first sample after the switch
	// 110 ms late, past the 0.1 s this test once allowed); the 2 ms are the
	// wall clock's and the monotonic clock's drift between two readings.
	slack := 2 * time.Millisecond
	switched := <-rotated
	within := func(name string, r *recording.Recording, from time.Time) {
		for _, x := range []recording.Sample{r.Samples[0], r.Samples[len(r.Samples)-1]} {
			at := r.Header.Start.Add(time.Duration(x.T * 1e9))
			if at.Before(from.Add(-slack)) || at.After(ended.Add(slack)) {
				t.Errorf("%s: a sample at t=%v places itself at %s, outside %s..%s, when it was taken",
					name, x.T, at.Format("15:04:05.000000"), from.Format("15:04:05.000000"), ended.Format("15:04:05.000000"))
			}
		}
	}
	within(a, ra, began)
	within(b, rb, switched)
	if l := ra.Labels(); len(l) != 1 || l[0].Text != "before switch" {
		t.Errorf("labels in a: %+v", l)
	}
	if l := rb.Labels(); len(l) != 1 || l[0].Text != "after switch" {
		t.Errorf("labels in b: %+v", l)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("existing file overwritten: %q", b)
	}
	joined := strings.Join(*msgs, "\n")
	if !strings.Contains(joined, "existing.jsonl") || !strings.Contains(joined, "still recording to "+a) {
		t.Errorf("refused switch not reported clearly: %q", joined)
	}
}

func TestEmptyRunStillWritesAValidFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.jsonl")
	smp, rec, _ := setup(t, 0)
	if err := rec.Create(path); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- rec.Run() }()
	// Stop before the first deadline: a command sent before Run is handled
	// before its first sleep (sampler.Run). A cancelled context alone was a
	// race: its Stop comes from a goroutine of context.AfterFunc, which a
	// loaded machine ran after the 10 ms deadline had passed, so the run
	// took a regular sample before its final one (issue 29).
	smp.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // and a cancelled context, as a signal gives: it adds no sample
	if err := smp.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Stopped at once, the run is still sampled once, over its whole length.
	if r.End == nil || len(r.Samples) != 1 || r.End.Samples != 1 || len(r.Columns) != 2 {
		t.Errorf("recording stopped at once: end %v, %d samples, %d columns; want one final sample", r.End, len(r.Samples), len(r.Columns))
	}
}

// TestRotatedFileStartsAtTheLastSample checks that the file begun by ctl
// record has its t=0 at the last sample before the switch: its first sample's
// rates cover the time since that sample, which must lie within the new file.
func TestRotatedFileStartsAtTheLastSample(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	smp, rec, _ := setup(t, 30)
	if err := rec.Create(a); err != nil {
		t.Fatal(err)
	}
	runRotating(t, smp, rec, 105*time.Millisecond, b)
	// loadSwitched checks that b's t=0 is a's last sample; so b's first
	// sample's rates cover (0, T], nothing before t=0. (Not "one interval
	// later": on a loaded machine a's last sample may itself be late.)
	_, rb := loadSwitched(t, a, b)
	if first := rb.Samples[0].T; first <= 0 {
		t.Errorf("b's first sample at t=%v: its rates cover time before t=0", first)
	}
}

// TestFirstFileOfAQuietRecorder: a recorder without a file (stat's) is
// passed over while it waits (its sink is quiet), yet the file that `ctl
// record` begins has its t=0 at the last sample before the switch, and
// holds every sample after it.
func TestFirstFileOfAQuietRecorder(t *testing.T) {
	b := filepath.Join(t.TempDir(), "b.jsonl")
	smp, rec, msgs := setup(t, 40)
	type seen struct {
		kind sampler.RecordKind
		t    time.Duration
	}
	var all []seen
	other := smp.AddSink("all", 64)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for r := range other.Records() {
			all = append(all, seen{r.Kind, r.T})
			other.Release(r)
		}
	}()
	runRotating(t, smp, rec, 300*time.Millisecond, b)
	<-drained
	if len(*msgs) != 0 {
		t.Fatalf("reported %q", *msgs)
	}
	var before time.Duration
	after := 0
	rotated := false
	for _, r := range all {
		switch {
		case r.kind == sampler.KindRotate:
			rotated = true
		case r.kind == sampler.KindSample && !rotated:
			before = r.t
		case r.kind == sampler.KindSample:
			after++
		}
	}
	if !rotated || before == 0 || after == 0 {
		t.Fatalf("the other sink saw %d records, switch %v, last sample before it %v, %d after", len(all), rotated, before, after)
	}
	if st, ok := rec.sink.LastSkipped(); !ok || st != before {
		t.Errorf("LastSkipped = %v, %v; want the last sample before the switch, %v, passed over", st, ok, before)
	}
	rb, err := recording.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := rb.Header.Start.Sub(smp.Start()) - before; d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("b starts %v after the last sample before the switch, want at it", d)
	}
	if len(rb.Samples) != after || rb.End == nil || rb.End.Samples != uint64(after) {
		t.Errorf("b holds %d samples (end %+v), want the %d after the switch", len(rb.Samples), rb.End, after)
	}
}

// feeder is an owner that feeds a Recorder synchronously, as live's hub
// does: Handle for each record, FlushLater when no record waits and when
// the flush timer fires, and something of its own every 20 ms (here: a look
// at the file, as a reader following it would).
type feeder struct {
	rec   *Recorder
	timer *time.Timer
	// until, when set, ends sampling early: feed asks it every 20 ms,
	// after look, and stops the sampler once it says so.
	until func() bool
}

// feed handles smp's records until sampling ends (stop is called after d)
// and calls look every 20 ms meanwhile.
func (f *feeder) feed(t *testing.T, smp *sampler.Sampler, sink *sampler.Sink, d time.Duration, look func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- smp.Run(context.Background()) }()
	stop := time.After(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-sink.Ready():
			for {
				r, open := sink.Next()
				if r == nil {
					if !open {
						if err := <-done; err != nil {
							t.Fatal(err)
						}
						return
					}
					f.rec.FlushLater(f.timer)
					break
				}
				f.rec.Handle(r)
				sink.Release(r)
			}
		case <-f.timer.C:
			f.rec.FlushLater(f.timer)
		case <-tick.C:
			look()
			if f.until != nil && f.until() {
				f.until = nil
				smp.Stop()
			}
		case <-stop:
			smp.Stop()
		}
	}
}

// TestSynchronousFeed records the way live does: fed by its owner, across
// two samplers with different columns on one timeline, switching from a
// compressed file to a plain one on the way. A reader following the
// compressed file sees each sample within the flush bound; the second file
// starts at the last sample before the switch; every end line counts what
// its file holds.
func TestSynchronousFeed(t *testing.T) {
	const interval = 10 * time.Millisecond
	cat, topo := openCatalog(t)
	newSampler := func(events ...string) (*sampler.Sampler, *sampler.Sink) {
		cols, err := cat.Select(events, false)
		if err != nil {
			t.Fatal(err)
		}
		smp, err := sampler.New(cols, sampler.Config{Interval: interval})
		if err != nil {
			t.Fatal(err)
		}
		return smp, smp.AddSink("rec", sampler.SinkDepth(interval))
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl.zst"), filepath.Join(dir, "b.jsonl")
	smpA, sinkA := newSampler("vmstat.pgfault", "node.MemFree")
	h := recording.Header{Host: "test", Topology: topo, Columns: Columns(smpA.Columns())}
	var msgs []string
	rec := New(smpA, sinkA, h, false, func(err error) { msgs = append(msgs, err.Error()) },
		func(m string) { msgs = append(msgs, m) })
	created := time.Now()
	if err := rec.Create(a); err != nil {
		t.Fatal(err)
	}
	f := &feeder{rec: rec, timer: time.NewTimer(time.Hour)}
	f.timer.Stop()

	// The compressed file, followed by a reader: the newest sample it
	// shows is never older than the bound (plus an interval and slack for
	// a loaded machine), and the recorder flushes it no more often than
	// the bound allows.
	bound := zstdFlushEvery + interval + 200*time.Millisecond
	var worst time.Duration
	looks := 0
	look := func() {
		r, _ := recording.Load(a) // still being written: the frame is open
		if r == nil || len(r.Samples) == 0 || time.Since(rec.Start()) < 2*zstdFlushEvery {
			return
		}
		looks++
		last := time.Duration(r.Samples[len(r.Samples)-1].T * float64(time.Second))
		worst = max(worst, time.Since(r.Header.Start)-last)
	}
	// The switch comes after 600 ms and at least 5 looks, and sampling
	// goes on 200 ms after it: by time and looks, not a fixed 800 ms, in
	// which a loaded machine managed only 4 looks (a Load of the open
	// file is slow there).
	var switched time.Time
	f.until = func() bool { return !switched.IsZero() && time.Since(switched) > 200*time.Millisecond }
	began := time.Now()
	f.feed(t, smpA, sinkA, time.Minute, func() {
		if rec.Path() == a {
			look()
		}
		if time.Since(rec.Start()) > 600*time.Millisecond && looks >= 5 && rec.Path() == a {
			if path, err := rec.Switch(Dest{Path: b}); err != nil || path != b {
				t.Fatalf("Switch: %q, %v", path, err)
			}
			switched = time.Now()
		}
	})
	if looks < 5 || worst > bound {
		t.Errorf("a reader of %s saw samples up to %v old in %d looks, want at most %v", a, worst, looks, bound)
	}

	// The event set changes: a new sampler on the same timeline, its
	// columns set before its first record is handled, as live does.
	smpB, sinkB := newSampler("node.MemFree")
	rec.Attach(smpB, sinkB)
	rec.SetColumns(time.Since(rec.Start()), Columns(smpB.Columns()))
	f.feed(t, smpB, sinkB, 200*time.Millisecond, func() {})
	rec.Stop()

	ra, rb := loadSwitched(t, a, b)
	if got := uint64(len(ra.Samples) + len(rb.Samples)); rec.Written() != got {
		t.Errorf("Written() = %d, the files hold %d", rec.Written(), got)
	}
	if fs := rec.Files(); len(fs) != 2 || fs[0] != a || fs[1] != b {
		t.Errorf("Files() = %v", fs)
	}
	// The first file begins when its first record comes (its header is
	// written then, with sampling's clock) and places its first sample one
	// interval or more after sampling began. By causality, not by "t about
	// 0.01": on a loaded machine the goroutine that samples may start late.
	const slack = 2 * time.Millisecond // the wall clock against the monotonic one
	if st := ra.Header.Start; st.Before(created.Add(-slack)) {
		t.Errorf("a's header Start %s, before the file was created at %s",
			st.Format("15:04:05.000000"), created.Format("15:04:05.000000"))
	}
	if t0 := ra.Samples[0].T; t0 < 0.009 {
		t.Errorf("a's first sample at t=%v, want one interval or later", t0)
	}
	if at := ra.Header.Start.Add(time.Duration(ra.Samples[0].T * 1e9)); at.Before(began.Add(interval - slack)) {
		t.Errorf("a's first sample at t=%v places itself at %s, before one interval after sampling began at %s",
			ra.Samples[0].T, at.Format("15:04:05.000000"), began.Format("15:04:05.000000"))
	}
	// And a's last sample, taken before the switch, places itself before
	// it: a clock that started before the file would place it late.
	lastA := ra.Samples[len(ra.Samples)-1]
	if at := ra.Header.Start.Add(time.Duration(lastA.T * 1e9)); at.After(switched.Add(slack)) {
		t.Errorf("a's last sample at t=%v places itself at %s, after the switch at %s",
			lastA.T, at.Format("15:04:05.000000"), switched.Format("15:04:05.000000"))
	}
	// b holds the first sampler's samples after the switch, a columns
	// mark, then the second sampler's, later on the same timeline.
	if len(rb.Marks) != 1 || rb.Marks[0].Type != recording.MarkColumns {
		t.Fatalf("b's marks: %+v (reported %q)", rb.Marks, msgs)
	}
	markT := rb.Marks[0].T
	var before, after int
	for i, s := range rb.Samples {
		if i > 0 && s.T < rb.Samples[i-1].T {
			t.Fatalf("b's time goes back at sample %d", i)
		}
		if s.T < markT {
			before++
		} else {
			after++
		}
	}
	if before < 5 || after < 5 || len(rb.Columns) != 2 {
		t.Errorf("b: %d samples before the columns mark at %v, %d after, %d columns", before, markT, after, len(rb.Columns))
	}
	if len(msgs) != 0 {
		t.Errorf("reported: %q", msgs)
	}
}

// TestHandlingASampleDoesNotAllocate: the per-sample path of a recording
// (Handle and the flush after it), plain and compressed, allocates nothing.
func TestHandlingASampleDoesNotAllocate(t *testing.T) {
	for _, name := range []string{"a.jsonl", "a.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			// One real record sets the timeline up and begins the file.
			rec, msgs := begun(t, filepath.Join(t.TempDir(), name))
			r := &sampler.Record{Kind: sampler.KindSample, Values: []float64{1, 2}}
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			if a := testing.AllocsPerRun(1000, func() {
				r.T += 10 * time.Millisecond
				rec.Handle(r)
				rec.FlushLater(timer)
			}); a != 0 {
				t.Errorf("%v allocations per sample", a)
			}
			rec.Stop()
			if rec.Written() < 1000 || len(*msgs) != 0 {
				t.Errorf("Written() = %d, reported %q", rec.Written(), *msgs)
			}
		})
	}
}

// runRotating records until smp's count ends sampling, switching to path
// after the given time, as `ctl record` does.
func runRotating(t *testing.T, smp *sampler.Sampler, rec *Recorder, after time.Duration, path string) {
	t.Helper()
	done := make(chan error)
	go func() { done <- rec.Run() }()
	go func() {
		time.Sleep(after)
		smp.Rotate(path)
	}()
	if err := smp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
