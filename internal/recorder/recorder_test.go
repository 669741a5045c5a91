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

// setup samples vmstat.pgfault and node.MemFree on the live machine.
func setup(t *testing.T, count uint64) (*sampler.Sampler, *Recorder, *[]string) {
	t.Helper()
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	cat := sampler.Open(sensor.Env{FS: fs, Topology: topo}, "vmstat", "node")
	t.Cleanup(func() { cat.Close() })
	cols, err := cat.Select([]string{"vmstat.pgfault", "node.MemFree"}, false)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := sampler.New(cols, sampler.Config{Interval: 10 * time.Millisecond, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []string
	h := recording.Header{Host: "test", Topology: topo}
	for _, c := range cols {
		h.Columns = append(h.Columns, recording.Column{Name: c.Name, Sensor: c.Sensor, Event: c.Event.Name,
			Sources: c.Sources, Unit: c.Event.Unit, Kind: c.Event.Kind.String()})
	}
	rec := New(smp, smp.AddSink("rec", 64), h, false, func(err error) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, err.Error())
	})
	return smp, rec, &msgs
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
	go func() {
		time.Sleep(150 * time.Millisecond)
		smp.Label("before switch")
		smp.Rotate(existing) // refused: recording goes on in a
		time.Sleep(100 * time.Millisecond)
		smp.Rotate(b)
		smp.Label("after switch")
	}()
	if err := smp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ra, err := recording.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := recording.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if ra.End == nil || rb.End == nil {
		t.Fatalf("files not closed cleanly: %v %v", ra.End, rb.End)
	}
	if n := len(ra.Samples) + len(rb.Samples); n != 60 {
		t.Errorf("%d + %d samples across the two files, want 60", len(ra.Samples), len(rb.Samples))
	}
	if len(ra.Samples) < 5 || len(rb.Samples) < 5 {
		t.Errorf("switch at the wrong time: %d and %d samples", len(ra.Samples), len(rb.Samples))
	}
	if ra.End.Samples != uint64(len(ra.Samples)) || rb.End.Samples != uint64(len(rb.Samples)) {
		t.Errorf("end lines count %d/%d, files hold %d/%d", ra.End.Samples, rb.End.Samples, len(ra.Samples), len(rb.Samples))
	}
	// The first file's clock starts with sampling, so its first sample is
	// one interval (10 ms) in; the second file starts its own clock.
	if first := ra.Samples[0].T; first < 0.009 || first > 0.1 {
		t.Errorf("first file's first sample at t=%v, want about 0.01", first)
	}
	if first := rb.Samples[0].T; first > 0.1 {
		t.Errorf("second file's first sample at t=%v, want near 0", first)
	}
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
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop before the first deadline
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
	done := make(chan error)
	go func() { done <- rec.Run() }()
	go func() {
		time.Sleep(105 * time.Millisecond)
		smp.Rotate(b)
	}()
	if err := smp.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ra, err := recording.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := recording.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra.Samples) == 0 || len(rb.Samples) == 0 {
		t.Fatalf("%d and %d samples", len(ra.Samples), len(rb.Samples))
	}
	lastA := ra.Header.Start.Add(time.Duration(ra.Samples[len(ra.Samples)-1].T * 1e9))
	if d := rb.Header.Start.Sub(lastA); d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("b starts %v after a's last sample, want at it", d)
	}
	// The first sample is one interval (10 ms) after the previous one.
	if first := rb.Samples[0].T; first < 0.009 {
		t.Errorf("b's first sample at t=%v: its rates cover time before t=0", first)
	}
}
