package exporter

import (
	"net/http/httptest"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/cpuratio"
	"github.com/numascope/numascope/internal/sensor"
)

// kernelReads is the floor of a read: one pread of each file the exporter's
// collectors read, on open descriptors.
func kernelReads(b *testing.B, x *Exporter) func() {
	var files []*os.File
	for _, c := range x.collectors {
		sc, ok := c.(*sensorCollector)
		if !ok {
			continue
		}
		fr, ok := sc.s.(sensor.FileReader)
		if !ok {
			b.Fatalf("sensor %s does not list its files", sc.s.Name())
		}
		for _, name := range fr.Files() {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { f.Close() })
			files = append(files, f)
		}
	}
	b.ReportMetric(float64(len(files)), "files")
	buf := make([]byte, 256<<10)
	return func() {
		for _, f := range files {
			if _, err := unix.Pread(int(f.Fd()), buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReadVsKernel: the CPU of one read (every collector, the
// families built) against the bare preads of the same files, on this
// machine (docs/performance.md, The Prometheus exporter).
func BenchmarkReadVsKernel(b *testing.B) {
	x := newTestExporter(b, "")
	cpuratio.Compare(b, "read", func() { x.Read() }, "kernel-read", kernelReads(b, x))
}

// BenchmarkEncodeVsKernel: the CPU of writing one read's OpenMetrics (the
// read done once before) against the same floor.
func BenchmarkEncodeVsKernel(b *testing.B) {
	x := newTestExporter(b, "")
	r := x.acquire()
	b.Cleanup(func() { x.release(r) })
	cpuratio.Compare(b, "encode", func() { r.b.encode(encOM) }, "kernel-read", kernelReads(b, x))
}

// BenchmarkScrapeVsKernel: a whole scrape as the handler serves it
// (OpenMetrics, uncompressed, into a recorder: no socket) against the same
// floor. Work the runtime does on other threads (the garbage collector's)
// is not counted here; scripts/bench-exporter measures the whole process.
func BenchmarkScrapeVsKernel(b *testing.B) {
	x := newTestExporter(b, "")
	h := x.Handler()
	scrape := func() {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	cpuratio.Compare(b, "scrape", scrape, "kernel-read", kernelReads(b, x))
}
