package profile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

// replayPass is one drain of a capture, its records split among readers.
type replayPass struct {
	recs    [][][]byte // by reader
	horizon uint64
	last    bool // the end of the run: everything left is handled
}

// splitCapture splits a capture's records among n readers, drain by drain,
// by the thread each record is about: as the rings of a machine with a CPU
// for each faulting thread would split them (the capture comes from 2 CPUs,
// which would feed 2 readers at most).
func splitCapture(tb testing.TB, r *perfring.Capture, n int) []replayPass {
	tb.Helper()
	var passes []replayPass
	cur := replayPass{recs: make([][][]byte, n)}
	var s perfring.Sample
	for {
		rec, pass, horizon, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			cur.last = true
			return append(passes, cur)
		case err != nil:
			tb.Fatal(err)
		case pass:
			cur.horizon = horizon
			passes = append(passes, cur)
			cur = replayPass{recs: make([][][]byte, n)}
		default:
			var tid uint32
			if perfring.Type(rec) == unix.PERF_RECORD_SAMPLE && perfring.DecodeSample(rec, &s) {
				tid = uint32(s.TID)
			} else if len(rec) >= 8+perfring.SampleIDSize {
				tid = binary.LittleEndian.Uint32(rec[len(rec)-perfring.SampleIDSize+4:])
			}
			i := int(tid) % n
			cur.recs[i] = append(cur.recs[i], rec)
		}
	}
}

// replayReaders hands the passes to a through a pool of readers, as Run
// does: the readers decode a pass in parallel while the analyzer handles
// the one before.
func replayReaders(a *analyzer, p *readerPool, passes []replayPass) {
	pl := &pipeline{a: a, pool: p}
	for _, ps := range passes {
		horizon := ps.horizon
		if ps.last {
			horizon = ^uint64(0)
		}
		pl.round(func(rd *ringReader) {
			for _, rec := range ps.recs[rd.idx] {
				rd.record(rec)
			}
		}, func(rd *ringReader) bool { return len(ps.recs[rd.idx]) > 0 }, horizon)
	}
	pl.flush()
}

// TestReplayStormReaders: the storm replayed through 1 to 4 parallel
// readers beside the analyzer gives exactly the counts one consumer gives, line, allocation
// site and threads included.
func TestReplayStormReaders(t *testing.T) {
	capture, exe := stormCapture(t)
	one, err := replay(capture, exe)
	if err != nil {
		t.Fatal(err)
	}
	want := &Profile{Nodes: one.pageNodes}
	one.fill(want)
	if want.Samples != 65574 || want.Totals.FirstTouch != 65572 {
		t.Fatalf("the one-consumer replay gave %d samples, %d first touches; want 65574, 65572", want.Samples, want.Totals.FirstTouch)
	}
	for _, n := range []int{1, 2, 3, 4} {
		a, r, err := replayStart(capture, exe)
		if err != nil {
			t.Fatal(err)
		}
		p := newReaderPool(&a.code, n)
		replayReaders(a, p, splitCapture(t, r, n))
		p.stop()
		got := &Profile{Nodes: a.pageNodes}
		a.fill(got)
		if got.Samples != want.Samples || got.Lost != want.Lost || got.RepeatFaults != want.RepeatFaults || got.Totals != want.Totals {
			t.Errorf("%d readers: samples %d, lost %d, repeats %d, totals %+v; one consumer: %d, %d, %d, %+v",
				n, got.Samples, got.Lost, got.RepeatFaults, got.Totals, want.Samples, want.Lost, want.RepeatFaults, want.Totals)
		}
		if len(got.Locations) == 0 || filepath.Base(got.Locations[0].File) != "profbench.c" || got.Locations[0].Line != 102 ||
			got.Locations[0].Metrics != want.Locations[0].Metrics {
			t.Errorf("%d readers: top location %+v, want %+v", n, got.Locations[:min(1, len(got.Locations))], want.Locations[0])
		}
		if len(got.Allocations) != len(want.Allocations) || len(got.Allocations) == 0 || got.Allocations[0].Calls != want.Allocations[0].Calls ||
			got.Allocations[0].Metrics != want.Allocations[0].Metrics {
			t.Errorf("%d readers: allocations %+v, want %+v", n, got.Allocations, want.Allocations)
		}
		if len(got.Threads) != len(want.Threads) {
			t.Fatalf("%d readers: %d threads, want %d", n, len(got.Threads), len(want.Threads))
		}
		for i := range got.Threads {
			if g, w := got.Threads[i], want.Threads[i]; g.TID != w.TID || g.Comm != w.Comm || g.Metrics != w.Metrics {
				t.Errorf("%d readers: thread %+v, want %+v", n, g, w)
			}
		}
	}
}

// BenchmarkReplayConsumers measures the consumer on a longer captured storm
// (testdata/storm-long.cap.zst: profbench --faults, 8 threads on 2 CPUs,
// 64 MiB 16 times, 262 749 records in 30 drains of 4096 or more) with one
// consumer (consumers=1: the analyzer reads and handles, as Run does below
// 16 CPUs) and with 1, 2 and 4 readers beside it (consumers=2, 3, 5; the
// records split by thread, see splitCapture), warm: samples per second of
// the whole process's CPU (what they cost, hand-offs included) and per
// second of elapsed time (how fast the consumer goes given the CPUs).
func BenchmarkReplayConsumers(b *testing.B) {
	capture, exe := captureNamed(b, "storm-long.cap.zst")
	for _, n := range []int{1, 2, 3, 5} {
		b.Run(fmt.Sprintf("consumers=%d", n), func(b *testing.B) {
			var samples uint64
			var cpu, wall time.Duration
			var last *analyzer
			var lastPool *readerPool
			// The records split once: the split allocates, and its
			// garbage would be collected during the timed replays.
			var passes []replayPass
			if n > 1 {
				_, r, err := replayStart(capture, exe)
				if err != nil {
					b.Fatal(err)
				}
				passes = splitCapture(b, r, n-1)
			}
			for range b.N {
				b.StopTimer()
				a, r, err := replayStart(capture, exe)
				if err != nil {
					b.Fatal(err)
				}
				var p *readerPool
				if n > 1 {
					p = newReaderPool(&a.code, n-1)
				}
				if last != nil {
					a.batch.recs, a.batch.sortBuf, a.nodes.pending, a.nodes.queries = last.batch.recs[:0], last.batch.sortBuf[:0], last.nodes.pending[:0], last.nodes.queries[:0]
					warmPages(&a.pg, &last.pg)
					if p != nil {
						for i, rd := range p.readers {
							rd.run, rd.other, rd.ends = lastPool.readers[i].run[:0], lastPool.readers[i].other[:0], lastPool.readers[i].ends[:0]
						}
					}
				}
				runtime.GC()
				b.StartTimer()
				c0, w0 := processCPU(), time.Now()
				if p != nil {
					replayReaders(a, p, passes)
				} else if err := replayRecords(a, r); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - c0
				wall += time.Since(w0)
				b.StopTimer()
				if p != nil {
					p.stop()
				}
				samples += a.samples
				last, lastPool = a, p
			}
			b.ReportMetric(float64(samples)/cpu.Seconds(), "samples/cpu-s")
			b.ReportMetric(float64(samples)/wall.Seconds(), "samples/s")
			b.ReportMetric(cpu.Seconds()*1e9/float64(samples), "cpu-ns/sample")
		})
	}
}

// TestReplayLongStormReaders: on the longer storm too, the readers give one
// consumer's counts.
func TestReplayLongStormReaders(t *testing.T) {
	capture, exe := captureNamed(t, "storm-long.cap.zst")
	one, err := replay(capture, exe)
	if err != nil {
		t.Fatal(err)
	}
	want := &Profile{Nodes: one.pageNodes}
	one.fill(want)
	if want.Samples < 262_144 || want.Lost != 0 || want.Totals.FirstTouch < 262_144 {
		t.Fatalf("one consumer: %d samples, %d lost, %+v; want the storm's 262 144 faults and first touches at least, none lost", want.Samples, want.Lost, want.Totals)
	}
	a, r, err := replayStart(capture, exe)
	if err != nil {
		t.Fatal(err)
	}
	p := newReaderPool(&a.code, 3)
	replayReaders(a, p, splitCapture(t, r, 3))
	p.stop()
	got := &Profile{Nodes: a.pageNodes}
	a.fill(got)
	if got.Samples != want.Samples || got.Totals != want.Totals || got.RepeatFaults != want.RepeatFaults || len(got.Threads) != len(want.Threads) {
		t.Errorf("3 readers: %d samples, %+v, %d repeats, %d threads; one consumer: %d, %+v, %d, %d",
			got.Samples, got.Totals, got.RepeatFaults, len(got.Threads), want.Samples, want.Totals, want.RepeatFaults, len(want.Threads))
	}
}

func TestDefaultConsumers(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{{1, 1}, {2, 1}, {15, 1}, {16, 2}, {64, 2}, {65, 3}, {256, 5}, {4096, 9}} {
		if got := defaultConsumers(c.cpus); got != c.want {
			t.Errorf("defaultConsumers(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}

// TestFollowStopsWhenFlushed: a reader following its rings while the
// analyzer handles a round stops when told the round is done, not at a
// timeout, and a pool's next round starts with the signal cleared.
func TestFollowStopsWhenFlushed(t *testing.T) {
	a := newAnalyzer([]int{0}, []int{0}, []int{-1, 0})
	p := newReaderPool(&a.code, 1)
	defer p.stop()
	if p.wake < 0 {
		t.Fatal("no eventfd for the readers")
	}
	for round := range 3 {
		p.woken = 1 // as begin counts the reader it wakes
		done := make(chan struct{})
		go func() { p.readers[0].follow(p); close(done) }()
		select {
		case <-done:
			t.Fatalf("round %d: follow returned before the analyzer was done", round)
		case <-time.After(3 * pollMs * time.Millisecond):
		}
		start := time.Now()
		p.flushDone()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: follow still running 5 s after flushDone", round)
		}
		t.Logf("round %d: follow returned %v after flushDone", round, time.Since(start))
		p.collected()
	}
}
