package profile

// The consumer replayed on a captured record stream: a real fault storm
// (testdata/storm.cap.zst: scripts/bench-profile's profbench, 8 threads on
// 2 CPUs mapping, first-touching and unmapping 64 MiB 4 times, captured with
// `numascope profile --capture`) goes through the decoder and the analyzer
// exactly as the rings gave it, drain by drain, with the kernel faked from
// what the capture recorded. That makes the consumer's throughput a figure
// that does not depend on the kernel or on the machine's load
// (BenchmarkReplay), and its counts a regression test (TestReplayStorm).

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

// stormCapture is the captured stream and the captured program's
// executable, unpacked into dir.
func stormCapture(tb testing.TB) (capture []byte, exe string) {
	tb.Helper()
	return captureNamed(tb, "storm.cap.zst")
}

// captureNamed is the capture testdata/name and the captured program's
// executable (the same profbench for every capture here).
func captureNamed(tb testing.TB, name string) (capture []byte, exe string) {
	tb.Helper()
	unzst := func(name string) []byte {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		d, err := zstd.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		defer d.Close()
		b, err := io.ReadAll(d)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		return b
	}
	exe = filepath.Join(tb.TempDir(), "profbench")
	if err := os.WriteFile(exe, unzst("profbench.zst"), 0o755); err != nil {
		tb.Fatal(err)
	}
	return unzst(name), exe
}

// replay runs a capture through a new analyzer, with exe standing for the
// captured program's executable, and returns the analyzer after the last
// drain. The kernel is a fake that knows the program's maps and main
// thread's affinity at its start, and no page.
func replay(capture []byte, exe string) (*analyzer, error) {
	a, r, err := replayStart(capture, exe)
	if err != nil {
		return nil, err
	}
	return a, replayRecords(a, r)
}

// replayStart sets up the analyzer as the run did before its first record.
func replayStart(capture []byte, exe string) (*analyzer, *perfring.Capture, error) {
	r, meta, err := perfring.ReadCapture(capture)
	if err != nil {
		return nil, nil, err
	}
	var m captureMeta
	if err := json.Unmarshal(meta, &m); err != nil {
		return nil, nil, err
	}
	a := newAnalyzer(m.CPUNode, m.PageNodes, m.ThreadNodes)
	a.hinting, a.thp.disabled = m.Hinting, m.THPOff
	k := useFakeKernel(a)
	k.maps[m.PID] = replaceExe(m.Maps, m.Comm, exe)
	k.setAffinity(int(m.PID), int(m.PID), m.Affinity)
	var evs []openedEvent
	for _, sc := range m.Syscalls {
		for i := range syscallEvents {
			if syscallEvents[i].name == sc.Name {
				evs = append(evs, openedEvent{id: uint16(sc.Tracepoint.ID), ev: &syscallEvents[i], tp: sc.Tracepoint})
			}
		}
	}
	a.useSyscalls(evs)
	a.seed(int(m.PID), m.Comm)
	return a, r, nil
}

// replayRecords hands the capture's records to a, drain by drain.
func replayRecords(a *analyzer, r *perfring.Capture) error {
	for {
		rec, pass, horizon, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			a.handleBatch()
			return nil
		case err != nil:
			return err
		case pass:
			a.handleUntil(horizon)
		default:
			a.record(rec)
		}
	}
}

// replaceExe points the maps lines of the executable named comm at exe.
func replaceExe(maps, comm, exe string) string {
	var b strings.Builder
	for line := range strings.Lines(maps) {
		f := strings.Fields(line)
		if len(f) >= 6 && filepath.Base(f[5]) == comm {
			line = strings.Join(append(f[:5], exe), " ") + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

// TestReplayStorm: the replayed storm gives the counts the live run gave
// (its profile said: 65 574 page faults, 65 572 first touches, 2 repeat
// faults, nothing lost, no accesses on this one-node machine), with the
// first touches on the line of profbench.c that made them (line 102 in the
// captured executable's debug information) and the mmap calls as their
// allocation site.
func TestReplayStorm(t *testing.T) {
	capture, exe := stormCapture(t)
	a, err := replay(capture, exe)
	if err != nil {
		t.Fatal(err)
	}
	p := &Profile{Nodes: a.pageNodes}
	a.fill(p)
	if p.Samples != 65574 || p.Lost != 0 || p.RepeatFaults != 2 || p.FaultsAfterLoss != 0 {
		t.Errorf("samples %d, lost %d, repeats %d, after loss %d; want 65574, 0, 2, 0", p.Samples, p.Lost, p.RepeatFaults, p.FaultsAfterLoss)
	}
	if p.Totals != (Metrics{FirstTouch: 65572}) {
		t.Errorf("totals %+v, want 65572 first touches and nothing else", p.Totals)
	}
	if len(p.Locations) == 0 || filepath.Base(p.Locations[0].File) != "profbench.c" || p.Locations[0].Line != 102 ||
		p.Locations[0].Metrics.FirstTouch != 65536 {
		t.Errorf("top location %+v, want profbench.c:102 with the 65536 faults of the storm", p.Locations[:min(1, len(p.Locations))])
	}
	if len(p.Allocations) == 0 || p.Allocations[0].Kind != "mmap" || p.Allocations[0].Calls != 32 || p.Allocations[0].Metrics.FirstTouch != 65536 {
		t.Errorf("top allocation site %+v, want the storm's 32 mmaps with its 65536 first touches", p.Allocations[:min(1, len(p.Allocations))])
	}
	if len(p.Threads) != 9 {
		t.Errorf("%d threads, want 9 (main and 8 workers)", len(p.Threads))
	}
}

// BenchmarkReplay measures the consumer on the captured storm: decoding and
// analysing every record, drain by drain, as one consumer goroutine does
// during a run (the kernel's answers faked, so without the cost of
// move_pages and /proc reads, which a one-node machine does not make
// anyway). It reports the samples handled per second of the process's CPU.
// The start of each replay (reading the program's symbols while it is
// stopped, once per run) is not timed.
//
// "fresh" replays into a new analyzer each time: its buffers (a drain's
// worth of records) and page maps grow as a run's do at its start, which
// weighs on a stream this short. "warm" hands each replay the buffers and
// the page table nodes (freed, for reuse) of the last one, as a long run has them after its
// first drains: the steady state.
func BenchmarkReplay(b *testing.B) {
	capture, exe := stormCapture(b)
	for _, warm := range []bool{false, true} {
		name := "fresh"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			var samples uint64
			var cpu time.Duration
			var last *analyzer
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				a, r, err := replayStart(capture, exe)
				if err != nil {
					b.Fatal(err)
				}
				if warm && last != nil {
					a.batch.recs, a.batch.sortBuf, a.nodes.pending, a.nodes.queries = last.batch.recs[:0], last.batch.sortBuf[:0], last.nodes.pending[:0], last.nodes.queries[:0]
					// The page table's freed nodes too, as a long run
					// has them to reuse.
					warmPages(&a.pg, &last.pg)
				}
				b.StartTimer()
				c0 := processCPU()
				if err := replayRecords(a, r); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - c0
				samples += a.samples
				last = a
			}
			// Per second of CPU, the whole process's (the garbage
			// collector's threads included): unlike the elapsed time,
			// not inflated when the machine is shared.
			b.ReportMetric(float64(samples)/cpu.Seconds(), "samples/cpu-s")
			b.ReportMetric(cpu.Seconds()*1e9/float64(samples), "cpu-ns/sample")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(samples), "ns/sample")
		})
	}
}

// warmPages hands to t the nodes of from's page table, freed, as a long
// run has them in its pools.
func warmPages(t, from *pageTracker) {
	for pid := range from.procs {
		from.free(pid, 0, ^uint64(0), nil)
	}
	t.chunks, t.regions, t.dirs, t.mids = from.chunks, from.regions, from.dirs, from.mids
}

// processCPU is the CPU time of the whole process so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
