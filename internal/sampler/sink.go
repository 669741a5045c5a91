package sampler

import (
	"iter"
	"sync/atomic"
	"time"
)

// RecordKind says what a Record carries. (A recording file's lines have
// recording.LineKind; an event's values, sensor.ValueKind.)
type RecordKind uint8

const (
	KindSample   RecordKind = iota // Values holds one sample
	KindLabel                      // Text is a label placed at T
	KindInterval                   // the interval changed to Interval at T
	KindPause                      // samples stop at T (sampling goes on)
	KindResume                     // samples continue at T
	KindRotate                     // file sinks switch to the file named by Text
	KindEnd                        // sampling ended; Stats and Dropped are final
)

var kindNames = [...]string{"sample", "label", "interval change", "pause", "resume", "record switch", "end"}

func (k RecordKind) String() string { return kindNames[k] }

// Record is what a sink receives. Sample records come from the sink's own
// pool and must be handed back with Release once consumed.
type Record struct {
	Kind     RecordKind
	T        time.Duration // since the sampler's start
	Values   []float64     // KindSample: one value per column
	Text     string
	Interval time.Duration
	Stats    Stats  // KindEnd
	Dropped  uint64 // KindEnd: samples this sink lost

	pooled bool
}

// Sink is a bounded queue from the sampler to one consumer. When the
// consumer falls behind, samples are dropped and counted; the sampler never
// waits for it.
//
// The consumer is woken in batches, not per sample: waking a parked
// goroutine costs a futex and a thread switch, more than the sample itself
// at short intervals. The sampler rings the sink's bell when BatchEvery has
// passed since it last rang (so at intervals of BatchEvery or more, every
// sample), when the queue is half full, and for every mark and the end; a
// sample so waits at most about BatchEvery plus one interval. A consumer
// may also take samples on the sampling goroutine (SetDirect), or none for
// a while (SetQuiet).
type Sink struct {
	name    string
	free    chan *Record
	queue   chan *Record
	bell    chan struct{}
	depth   int
	batch   time.Duration
	rung    int64 // CLOCK_MONOTONIC ns of the last ring; the sampling thread's
	dropped atomic.Uint64
	wakes   atomic.Uint64 // times Records parked and was woken, for tests
	direct  atomic.Pointer[Direct]

	// Quiet (SetQuiet): marks counts the marks queued (the sampling
	// thread's), taken those the consumer has taken (the consumer's);
	// quietAt is taken when the consumer asked for quiet, -1 when it did
	// not, and skipped the T+1 of the last sample passed over, 0 if none.
	marks   uint64
	taken   uint64
	quietAt atomic.Int64
	skipped atomic.Int64
}

// SetQuiet tells the sampler whether the consumer has any use for samples
// for now. A quiet sink is passed over: no record is taken from its pool,
// queued or rung for (at 1 s, about 3% of a sample's CPU:
// docs/performance.md, "Run together"), and LastSkipped says when the last
// sample passed over was taken. A mark (a label, a record switch...) ends
// the quiet: the samples after it are queued as usual until the consumer,
// having taken the mark, asks for quiet again. Only the consumer calls it, between records. It is for a
// recorder without a file: `stat`'s waits for a `ctl record` that may never
// come, and the samples before that command it never writes.
func (k *Sink) SetQuiet(q bool) {
	if q {
		k.quietAt.Store(int64(k.taken))
	} else {
		k.quietAt.Store(-1)
	}
}

// LastSkipped is the time (since the sampler's start) of the last sample
// passed over because the sink was quiet; false if none was. A consumer
// that starts to use samples after a mark (a recorder's first file) reads
// it when it takes the mark: then no later sample has been passed over.
func (k *Sink) LastSkipped() (time.Duration, bool) {
	t := k.skipped.Load()
	return time.Duration(t - 1), t > 0
}

// Direct takes a sample on the sampling goroutine instead of the sink's
// queue: t is its time since the sampler's start, values its values, valid
// only during the call. It returns false to decline, and the sample is then
// queued and the consumer woken as usual.
//
// The sampler offers a sample to Direct only when a batch is due and
// nothing waits in the queue, which from BatchEvery up is every sample: a
// consumer that can take such a sample without waiting spares it the
// hand-off to its goroutine (six channel operations and a goroutine switch:
// at 1 s, about 4% of a sample's CPU, docs/performance.md, "Run together").
// So Direct
// must never wait: not for a lock (TryLock, and decline), not for a write
// that may block (a pipe, a terminal, a file under a paused rawio), and not
// for the sampler (its Stop and other commands queue for the very goroutine
// Direct runs on): a failure is declined and left for the consumer's
// goroutine to report.
type Direct func(t time.Duration, values []float64) bool

// SetDirect lets the sampler hand samples to take (see Direct); nil stops it.
func (k *Sink) SetDirect(take Direct) {
	if take == nil {
		k.direct.Store(nil)
		return
	}
	k.direct.Store(&take)
}

// markRoom is how many marks (labels, pauses...) may wait in a queue on top
// of the full pool of samples.
const markRoom = 64

// BatchEvery is how long samples may gather in a sink's queue before its
// consumer is woken: short enough for a terminal or a browser to look live,
// long enough that at a 1 ms interval the consumer wakes 20 times a second
// rather than 1000.
const BatchEvery = 50 * time.Millisecond

// AddSink attaches a consumer that can fall up to depth samples behind.
// Sinks may be added while sampling runs; a sink added after Run returned
// gets a closed queue.
func (s *Sampler) AddSink(name string, depth int) *Sink {
	if depth < 1 {
		depth = 1
	}
	k := &Sink{name: name, free: make(chan *Record, depth), queue: make(chan *Record, depth+markRoom),
		bell: make(chan struct{}, 1), depth: depth, batch: BatchEvery}
	k.quietAt.Store(-1)
	for i := 0; i < depth; i++ {
		k.free <- &Record{Values: make([]float64, len(s.cols)), pooled: true}
	}
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	select {
	case <-s.stopped:
		close(k.queue)
		return k
	default:
	}
	old := *s.sinks.Load()
	sinks := append(append(make([]*Sink, 0, len(old)+1), old...), k)
	s.sinks.Store(&sinks)
	return k
}

// RemoveSink detaches a sink; its queue is closed after the records already in it.
func (s *Sampler) RemoveSink(k *Sink) {
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	old := *s.sinks.Load()
	sinks := make([]*Sink, 0, len(old))
	for _, x := range old {
		if x != k {
			sinks = append(sinks, x)
		}
	}
	if len(sinks) != len(old) {
		s.sinks.Store(&sinks)
		close(k.queue)
		k.ring()
	}
}

// Records yields the sink's records in order until the KindEnd record (or
// RemoveSink), parking between batches. Each record must be handed back
// with Release.
func (k *Sink) Records() iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		for {
			r, open := k.Next()
			switch {
			case r != nil:
				if !yield(r) {
					return
				}
			case !open:
				return
			default:
				<-k.bell
				k.wakes.Add(1)
			}
		}
	}
}

// Next returns the next queued record without waiting: nil and open when
// none waits yet, nil and !open once the queue is closed and drained. With
// Ready it lets a consumer that waits on other channels too drain a batch.
func (k *Sink) Next() (r *Record, open bool) {
	select {
	case r, ok := <-k.queue:
		if ok && r.Kind != KindSample {
			k.taken++
		}
		return r, ok
	default:
		return nil, true
	}
}

// Ready receives when a batch of records waits (or the queue was closed).
func (k *Sink) Ready() <-chan struct{} { return k.bell }

// Pending is the number of records waiting in the queue.
func (k *Sink) Pending() int { return len(k.queue) }

// ring wakes the consumer if it is parked; it never blocks.
func (k *Sink) ring() {
	select {
	case k.bell <- struct{}{}:
	default:
	}
}

// Release hands a consumed record back to the pool.
func (k *Sink) Release(r *Record) {
	if r.pooled {
		k.free <- r
	}
}

// Dropped is the number of samples this sink lost because it fell behind.
func (k *Sink) Dropped() uint64 { return k.dropped.Load() }

// push queues a mark without blocking; it reports false when there is no
// room. Only the sampling thread calls it.
func (k *Sink) push(m Record) bool {
	r := m
	select {
	case k.queue <- &r:
		k.marks++
		return true
	default:
		return false
	}
}
