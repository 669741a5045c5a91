package sampler

import (
	"sync/atomic"
	"time"
)

// Kind says what a Record carries.
type Kind uint8

const (
	KindSample   Kind = iota // Values holds one sample
	KindLabel                // Text is a label placed at T
	KindInterval             // the interval changed to Interval at T
	KindPause                // samples stop at T (sampling goes on)
	KindResume               // samples continue at T
	KindRotate               // file sinks switch to the file named by Text
	KindEnd                  // sampling ended; Stats and Dropped are final
)

var kindNames = [...]string{"sample", "label", "interval change", "pause", "resume", "record switch", "end"}

func (k Kind) String() string { return kindNames[k] }

// Record is what a sink receives. Sample records come from the sink's own
// pool and must be handed back with Release once consumed.
type Record struct {
	Kind     Kind
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
type Sink struct {
	name    string
	free    chan *Record
	queue   chan *Record
	dropped atomic.Uint64
}

// markRoom is how many marks (labels, pauses...) may wait in a queue on top
// of the full pool of samples.
const markRoom = 64

// AddSink attaches a consumer that can fall up to depth samples behind.
// Sinks may be added while sampling runs; a sink added after Run returned
// gets a closed queue.
func (s *Sampler) AddSink(name string, depth int) *Sink {
	if depth < 1 {
		depth = 1
	}
	k := &Sink{name: name, free: make(chan *Record, depth), queue: make(chan *Record, depth+markRoom)}
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
	}
}

// Records is the sink's queue; it is closed after the KindEnd record.
func (k *Sink) Records() <-chan *Record { return k.queue }

// Release hands a consumed record back to the pool.
func (k *Sink) Release(r *Record) {
	if r.pooled {
		k.free <- r
	}
}

// Dropped is the number of samples this sink lost because it fell behind.
func (k *Sink) Dropped() uint64 { return k.dropped.Load() }

// push queues a mark without blocking; it reports false when there is no room.
func (k *Sink) push(m Record) bool {
	r := m
	select {
	case k.queue <- &r:
		return true
	default:
		return false
	}
}
