package profile

// The ring readers: on a machine of many CPUs the rings are drained and
// their page-fault records decoded by a pool of goroutines, each owning a
// share of the rings, while the analyzer handles the round before; the
// analyzer then applies everything else in ring order and handles the
// round's faults in time order, as one consumer does. Draining, decoding a
// record, finding its caller and writing its batch entry is some 40% of the
// consumer's work per sample (docs/profile.md, "The consumers"); the rest,
// the attribution in time order, stays on one goroutine, because each
// fault's meaning depends on every event before it.

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
)

// MaxConsumers bounds Options.Consumers.
const MaxConsumers = 64

// defaultConsumers is the number of consumer goroutines for ncpu rings: one
// below 16 CPUs, the analyzer reading the rings itself (there the faulting
// threads leave no CPU for more, and one goroutine hands nothing over);
// from 16 on, the analyzer and one ring reader per 64 CPUs begun.
func defaultConsumers(ncpu int) int {
	if ncpu < 16 {
		return 1
	}
	return min(1+(ncpu+63)/64, 9)
}

// ringReader drains its rings and decodes their records: page faults into
// batch entries (run), in each ring's order; every other record (mappings,
// names, forks, exits, losses, syscalls) copied as it came (other), for the
// analyzer to apply. It owns its decoder and its answers about code; the
// code index it shares is only read while the readers run.
type ringReader struct {
	idx   int // in its pool
	rings []*perfring.Ring
	dec   decoded
	calls callerCache
	run   []rawSample
	// other holds the records the analyzer applies, back to back; ends
	// are where each one ends.
	other   []byte
	ends    []int
	samples uint64
	// fn is record, bound once (a method value allocates).
	fn   func(rec *perfring.Record)
	pfds []unix.PollFd // follow's
}

func newRingReader(code *codeIndex, rings []*perfring.Ring) *ringReader {
	rd := &ringReader{rings: rings, calls: newCallerCache(code)}
	rd.fn = func(r *perfring.Record) { rd.record(r.Raw) }
	return rd
}

// record takes one record of the reader's rings.
func (rd *ringReader) record(rec []byte) {
	switch perfring.Type(rec) {
	case unix.PERF_RECORD_SAMPLE:
		s := &rd.dec.sample
		if !perfring.DecodeSample(rec, s) {
			return
		}
		if s.Raw == nil {
			rd.samples++
			rd.run = append(rd.run, rd.calls.fault(s))
			return
		}
	case unix.PERF_RECORD_EXIT:
		if e := &rd.dec.task; perfring.DecodeTask(rec, e) {
			rd.calls.exited(e.TID)
		}
	}
	rd.other = append(rd.other, rec...)
	rd.ends = append(rd.ends, len(rd.other))
}

// hasRecords says whether a ring of the reader holds a record.
func (rd *ringReader) hasRecords() bool {
	for _, r := range rd.rings {
		if !r.Empty() {
			return true
		}
	}
	return false
}

// drain reads every complete record of the reader's rings.
func (rd *ringReader) drain() {
	for _, r := range rd.rings {
		r.Drain(rd.fn)
	}
}

// maxHeld bounds the fault entries a reader holds for one round while it
// follows its rings (80 bytes each: 64 MiB).
const maxHeld = 800_000

// follow drains the reader's rings, then goes on draining them each time
// one passes its watermark until the analyzer has handled the round before
// (p.flushed): a round the kernel holds up (a move_pages or pagemap read
// waits for the mmap lock of a program that maps and unmaps without pause)
// then does not let the rings overflow. It stops early when its rings hang
// up (the program is gone) or its buffers hold maxHeld entries.
func (rd *ringReader) follow(p *readerPool) {
	rd.drain()
	if p.wake < 0 {
		return
	}
	rd.pfds = rd.pfds[:0]
	for _, r := range rd.rings {
		rd.pfds = append(rd.pfds, unix.PollFd{Fd: int32(r.FD), Events: unix.POLLIN})
	}
	rd.pfds = append(rd.pfds, unix.PollFd{Fd: int32(p.wake), Events: unix.POLLIN})
	for !p.flushed.Load() && len(rd.run) < maxHeld {
		if _, err := unix.Poll(rd.pfds, pollMs); err != nil && err != unix.EINTR {
			return
		}
		if rd.pfds[len(rd.pfds)-1].Revents != 0 || hungUp(rd.pfds[:len(rd.pfds)-1]) {
			return // the analyzer is done, or the program is gone
		}
		rd.drain()
	}
}

// readerPool runs the ring readers, each on a goroutine of its own, woken
// once a round.
type readerPool struct {
	readers []*ringReader
	start   []chan struct{}
	done    sync.WaitGroup
	// fn is what the readers run this round (set before they are woken).
	fn func(rd *ringReader)
	// drainFn and hasFn are (*ringReader).follow and hasRecords, bound
	// once.
	drainFn func(rd *ringReader)
	hasFn   func(rd *ringReader) bool
	// flushed says the analyzer has handled the round before, and wake
	// (an eventfd, readable from then until the round is collected)
	// wakes the readers following their rings to say so (-1: none).
	flushed atomic.Bool
	wake    int
	// woken is how many readers this round's begin woke.
	woken int
}

// newReaderPool starts n readers (at least one) with no rings yet.
func newReaderPool(code *codeIndex, n int) *readerPool {
	p := &readerPool{hasFn: (*ringReader).hasRecords, wake: -1}
	p.drainFn = func(rd *ringReader) { rd.follow(p) }
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		p.wake = fd
	}
	for i := range max(n, 1) {
		rd := newRingReader(code, nil)
		rd.idx = i
		p.readers = append(p.readers, rd)
		start := make(chan struct{})
		p.start = append(p.start, start)
		go func() {
			for range start {
				p.fn(rd)
				p.done.Done()
			}
		}()
	}
	return p
}

// assign splits rings among the readers, consecutive rings to each (so
// the records of a CPU, and of its neighbours, stay with one reader).
func (p *readerPool) assign(rings []*perfring.Ring) {
	n := len(p.readers)
	for i, rd := range p.readers {
		rd.rings = rings[i*len(rings)/n : (i+1)*len(rings)/n]
	}
}

// begin wakes the readers for which has says there is work to run fn;
// wait returns when they are done. A reader with nothing to read is not
// woken: a round costs no hand-off when the rings are empty.
func (p *readerPool) begin(fn func(rd *ringReader), has func(rd *ringReader) bool) {
	p.fn = fn
	p.woken = 0
	for i, rd := range p.readers {
		if has(rd) {
			p.woken++
			p.done.Add(1)
			p.start[i] <- struct{}{}
		}
	}
}

func (p *readerPool) wait() { p.done.Wait() }

// flushDone tells the readers following their rings that the analyzer has
// handled the round before: they stop after their next drain.
func (p *readerPool) flushDone() {
	p.flushed.Store(true)
	if p.wake >= 0 && p.woken > 0 {
		var one = [8]byte{1}
		_, _ = unix.Write(p.wake, one[:])
	}
}

// collected resets what flushDone set, for the next round.
func (p *readerPool) collected() {
	p.flushed.Store(false)
	if p.wake >= 0 && p.woken > 0 {
		var b [8]byte
		_, _ = unix.Read(p.wake, b[:])
	}
}

// stop ends the readers' goroutines.
func (p *readerPool) stop() {
	for _, c := range p.start {
		close(c)
	}
	p.start = nil
	if p.wake >= 0 {
		unix.Close(p.wake)
		p.wake = -1
	}
}

// overlapMin is the smallest round whose handling overlaps the next drain.
// A storm's rounds are large and come back to back (the rings pass their
// watermark at once), so handling one while the readers drain the next
// costs no delay; a small round is handled at once, as by one consumer,
// so that its first touches are asked of move_pages no later than they
// would be.
const overlapMin = 4096

// pipeline is the consumer with readers: while the readers drain round k,
// the analyzer handles round k-1 (when it was large, see overlapMin); then
// it collects round k. The analyzer and the readers never touch the same
// state at once: the readers read the code index, which only collect
// changes, and write only their own buffers.
type pipeline struct {
	a       *analyzer
	pool    *readerPool
	pending bool   // a round waits to be handled
	horizon uint64 // its horizon
}

// round has the readers for which has says there is work run fill (drain
// their rings; in a replay, hand them records), handles the round before
// meanwhile, and collects this one.
func (pl *pipeline) round(fill func(rd *ringReader), has func(rd *ringReader) bool, horizon uint64) {
	pl.pool.begin(fill, has)
	pl.flush()
	pl.pool.flushDone()
	pl.pool.wait()
	pl.pool.collected()
	if pl.a.collect(pl.pool) >= overlapMin {
		pl.pending, pl.horizon = true, horizon
		return
	}
	pl.a.handleUntil(horizon)
}

// flush handles the round waiting, if any.
func (pl *pipeline) flush() {
	if pl.pending {
		pl.pending = false
		pl.a.handleUntil(pl.horizon)
	}
}

// collect hands what the readers read to the analyzer, reader by reader:
// first the records it applies, in the order they came, then the fault
// entries, appended to the batch as they are (each ring's in its order:
// sortBatch merges them).
func (a *analyzer) collect(p *readerPool) (records int) {
	for _, rd := range p.readers {
		records += len(rd.ends) + len(rd.run)
		from := 0
		for _, end := range rd.ends {
			a.record(rd.other[from:end])
			from = end
		}
		a.samples += rd.samples
		a.batch.add(rd.run...)
		rd.run, rd.other, rd.ends, rd.samples = rd.run[:0], rd.other[:0], rd.ends[:0], 0
	}
	return records
}
