package sampling

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

func catalog(t *testing.T) (*sampler.Catalog, *topology.Topology) {
	t.Helper()
	fs := sysfs.New("../sensor/testdata/twonode")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	cat := sampler.Open(sensor.Env{FS: fs, Topology: topo})
	t.Cleanup(func() { cat.Close() })
	return cat, topo
}

func names(cols []recording.Column) string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

// TestNewDefaultsAndPresets: without events a session samples the default
// events this machine has; patterns are resolved the same way for every
// command, discrete columns included.
func TestNewDefaultsAndPresets(t *testing.T) {
	cat, _ := catalog(t)
	s, err := New(Config{Catalog: cat, Interval: time.Second, Sink: "recording"})
	if err != nil {
		t.Fatal(err)
	}
	// The fixture has every file the defaults read: all of them.
	if want := strings.Join(sampler.DefaultEvents, ","); strings.Join(s.Events(), ",") != want {
		t.Errorf("events %q, want every default %q", s.Events(), want)
	}
	// A machine without /proc/vmstat: the defaults less the vmstat ones.
	bare := t.TempDir()
	if err := os.CopyFS(bare, os.DirFS("../sensor/testdata/twonode")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bare, "proc", "vmstat")); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(bare)
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	bareCat := sampler.Open(sensor.Env{FS: fs, Topology: topo})
	defer bareCat.Close()
	b, err := New(Config{Catalog: bareCat, Interval: time.Second, Sink: "recording"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range sampler.DefaultEvents {
		if !strings.HasPrefix(e, "vmstat.") {
			want = append(want, e)
		}
	}
	if got := strings.Join(b.Events(), ","); got != strings.Join(want, ",") {
		t.Errorf("without /proc/vmstat: events %q, want %q", got, want)
	}
	d, err := New(Config{Catalog: cat, Events: []string{"node.numa_hit"}, Discrete: true, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(d.Columns); got != "node.0.numa_hit,node.1.numa_hit" {
		t.Errorf("discrete columns %q", got)
	}
	if _, err := New(Config{Catalog: cat, Events: []string{"node.nosuch"}, Interval: time.Second}); err == nil {
		t.Error("an unknown event gave a session")
	}
}

// TestNewCreatesTheRecordingAtOnce: an existing file is refused before
// anything runs (and kept); with Force it is replaced.
func TestNewCreatesTheRecordingAtOnce(t *testing.T) {
	cat, _ := catalog(t)
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Catalog: cat, Events: []string{"node.numa_hit"}, Interval: time.Second, Record: path}
	if _, err := New(cfg); err == nil {
		t.Fatal("New overwrote an existing recording")
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Fatalf("the existing file became %q", b)
	}
	cfg.Force = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Recorder.Path() != path {
		t.Errorf("recording %q, want %q", s.Recorder.Path(), path)
	}
	s.Recorder.Stop()
}

// TestReplaceKeepsTheRecorder: Replace gives a new sampler for the new
// events that the same recorder reads; a bad event set leaves the session
// as it was.
func TestReplaceKeepsTheRecorder(t *testing.T) {
	cat, _ := catalog(t)
	s, err := New(Config{Catalog: cat, Events: []string{"node.numa_hit"}, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec, first := s.Recorder, s.Sampler
	run := func() {
		done := make(chan error, 1)
		go func() { done <- s.Sampler.Run(context.Background()) }()
		for r := range s.Sink.Records() {
			s.Recorder.Handle(r)
			s.Sink.Release(r)
			if r.Kind == sampler.KindSample {
				s.Sampler.Stop()
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	run()
	if err := s.Replace([]string{"node.nosuch"}, false, 10*time.Millisecond); err == nil {
		t.Fatal("Replace took an unknown event")
	}
	if s.Sampler != first || names(s.Columns) != "node.numa_hit" {
		t.Fatalf("a failed Replace changed the session: %q", names(s.Columns))
	}
	if err := s.Replace([]string{"vmstat.pgfault"}, false, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if s.Recorder != rec || s.Sampler == first || names(s.Columns) != "vmstat.pgfault" {
		t.Fatalf("after Replace: same recorder %v, new sampler %v, columns %q", s.Recorder == rec, s.Sampler != first, names(s.Columns))
	}
	run()
}
