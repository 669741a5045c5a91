package sampler

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/cpuratio"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// liveDefault opens the default events on the live machine.
func liveDefault(tb testing.TB) *Sampler {
	tb.Helper()
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		tb.Fatal(err)
	}
	cat := Open(sensor.Env{FS: fs, Topology: topo})
	tb.Cleanup(func() { cat.Close() })
	cols, err := cat.Select(cat.Available(DefaultEvents), false)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(cols, Config{Interval: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestDefaultSampleDoesNotAllocate proves the steady-state claim on the real
// sensors and the real kernel files, not only on the test sensor.
func TestDefaultSampleDoesNotAllocate(t *testing.T) {
	s := liveDefault(t)
	k := s.AddSink("t", 2)
	s.Sample(time.Second)
	allocs := testing.AllocsPerRun(200, func() {
		s.Sample(time.Second)
		s.publish(time.Second, 0, 0)
		k.Release(<-k.queue)
	})
	if allocs != 0 {
		t.Errorf("a default sample allocates %v times", allocs)
	}
}

// BenchmarkDefaultSampleVsKernel measures numascope's main overhead figure:
// the CPU time of one sample of the default events, divided by the bare
// kernel cost of pread()ing the same files, both measured in the same run
// in interleaved chunks so that machine noise hits both alike. The ratio
// metric is what docs/performance.md reports; the goal is at most 1.2.
func BenchmarkDefaultSampleVsKernel(b *testing.B) {
	s := liveDefault(b)
	var files []*os.File
	for _, g := range s.groups {
		fr, ok := g.entry.Sensor.(sensor.FileReader)
		if !ok {
			b.Skipf("sensor %s does not list its files", g.entry.Name)
		}
		for _, name := range fr.Files() {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			files = append(files, f)
		}
	}
	buf := make([]byte, 256<<10)
	kernel := func() {
		for _, f := range files {
			if _, err := unix.Pread(int(f.Fd()), buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpuratio.Compare(b, "sample", func() { s.Sample(time.Second) }, "kernel-read", kernel)
	b.ReportMetric(float64(len(files)), "files")
}
