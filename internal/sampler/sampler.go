// Package sampler runs numascope's one hot loop: it reads the enabled events
// of every sensor at absolute deadlines, turns counters into rates, and hands
// each sample to sinks (terminal, recording, web clients) through bounded
// queues so that a slow sink never stalls sampling.
//
// Steady-state sampling allocates nothing: sensors read into preallocated
// buffers, values are computed in place, and sinks receive samples in records
// taken from their own free lists.
package sampler

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/term"
)

// group is one sensor in use: the events enabled on it and the raw values of
// the current and previous reads, with which of its sources each read got.
type group struct {
	entry  *Entry
	events []int // indexes into entry.Events, in Enable order
	cur    []int64
	prev   []int64
	okCur  []bool // per source: the current read got it
	okPrev []bool // per source: the previous read got it
	clean  bool   // every source is ok in both reads: no column is missing
	// failed says per source that its last read failed, so that a failure
	// streak is reported once; errs counts the failed reads of the streak.
	failed []bool
	errs   []uint64
}

// sum is one event of one group summed over some of its sources.
type sum struct {
	g    *group
	offs []int  // offsets into g.cur
	srcs []int  // the source of each offset
	mask uint64 // wrap-around mask for counters narrower than 64 bits, else 0
}

// ok reports whether every source of the sum was read, in both of the last
// two reads for a counter (a rate needs two good reads).
func (t *sum) ok(counter bool) bool {
	if t.g.clean {
		return true
	}
	for _, src := range t.srcs {
		if !t.g.okCur[src] || (counter && !t.g.okPrev[src]) {
			return false
		}
	}
	return true
}

// delta is the counter's increase between the last two reads, wrap-around safe.
func (t *sum) delta() int64 {
	var d int64
	for _, o := range t.offs {
		x := uint64(t.g.cur[o]) - uint64(t.g.prev[o])
		if t.mask != 0 {
			x &= t.mask
		}
		d += int64(x)
	}
	return d
}

// level is the gauge's current value.
func (t *sum) level() int64 {
	var v int64
	for _, o := range t.offs {
		v += t.g.cur[o]
	}
	return v
}

// plan is how one column is computed from raw values.
type plan struct {
	num     sum
	div     *sum // a counter shown per unit of another counter (Column.Per), else nil
	counter bool
	scale   float64
}

// Config tunes a Sampler.
type Config struct {
	Interval time.Duration
	// Count stops sampling after this many samples; 0 means run until stopped.
	Count uint64
	// PinCPUs, when not empty, pins the process (the sampler and its
	// consumers) to these CPUs, so it stays out of the workload's way.
	PinCPUs []int
	// Errors receives read failures and other problems worth a line on
	// stderr; Notices, news that is not a problem (a sensor reading again).
	// Both are called from the sampling goroutine and must not block; either
	// may be nil. They are apart so that a caller can tell a problem from
	// the all-clear that follows it.
	Errors  func(error)
	Notices func(string)
}

// Stats are cumulative counts, safe to read while sampling runs.
type Stats struct {
	Samples         uint64
	MissedDeadlines uint64
	ReadErrors      uint64
}

// Sampler owns the hot loop. Create it with New, add sinks, then Run.
type Sampler struct {
	cfg     Config
	cols    []*Column
	groups  []*group
	plans   []plan
	values  []float64
	sinks   atomic.Pointer[[]*Sink]
	sinkMu  sync.Mutex
	ctl     chan control
	wake    *waker        // the sampling thread's sleep: deadlines and commands
	stopped chan struct{} // closed when Run returns
	primed  chan struct{} // closed when Run has read the counters' start
	start   time.Time

	interval atomic.Int64 // current interval in ns, for readers outside the loop
	samples  atomic.Uint64
	missed   atomic.Uint64
	readErrs atomic.Uint64
	tid      atomic.Int32 // the thread Run started on, for tests that wait for it
}

// New prepares sampling of cols. It enables on each sensor exactly the events
// the columns need, so disabled events cost nothing.
func New(cols []*Column, cfg Config) (*Sampler, error) {
	if err := CheckInterval(cfg.Interval); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no columns to sample")
	}
	s := &Sampler{cfg: cfg, cols: cols, ctl: make(chan control, 64), stopped: make(chan struct{}),
		primed: make(chan struct{})}
	if s.cfg.Errors == nil {
		s.cfg.Errors = func(error) {}
	}
	if s.cfg.Notices == nil {
		s.cfg.Notices = func(string) {}
	}
	s.interval.Store(int64(cfg.Interval))
	s.sinks.Store(&[]*Sink{})

	// Enable on each sensor exactly the events the columns (and their
	// divisors) need, each once.
	byEntry := map[*Entry]*group{}
	evIndex := map[*group]map[int]int{} // event index -> position in group.events
	need := func(c *Column) {
		g := byEntry[c.entry]
		if g == nil {
			g = &group{entry: c.entry}
			byEntry[c.entry] = g
			evIndex[g] = map[int]int{}
			s.groups = append(s.groups, g)
		}
		if _, ok := evIndex[g][c.event]; !ok {
			evIndex[g][c.event] = len(g.events)
			g.events = append(g.events, c.event)
		}
	}
	// A share (Event.ShareOf) is divided by its whole over the same
	// sources, as a counter shown per unit of another is.
	whole := make([]*Column, len(cols))
	for i, c := range cols {
		need(c)
		if c.Per != nil {
			need(c.Per)
		}
		if c.Event.ShareOf != "" && c.Event.Kind == sensor.Counter {
			ev := slices.IndexFunc(c.entry.Events, func(e sensor.Event) bool { return e.Name == c.Event.ShareOf })
			if ev < 0 {
				return nil, fmt.Errorf("%s: event %s is a share of %s, which the sensor lacks", c.entry.Name, c.Event.Name, c.Event.ShareOf)
			}
			whole[i] = &Column{Sensor: c.Sensor, Event: c.entry.Events[ev], entry: c.entry, event: ev, source: c.source}
			need(whole[i])
		}
	}
	for _, g := range s.groups {
		if err := g.entry.Sensor.Enable(g.events); err != nil {
			return nil, fmt.Errorf("%s: enabling events: %w", g.entry.Name, err)
		}
		ns := len(g.entry.Sources)
		n := len(g.events) * ns
		g.cur, g.prev = make([]int64, n), make([]int64, n)
		g.okCur, g.okPrev = make([]bool, ns), make([]bool, ns)
		g.failed, g.errs = make([]bool, ns), make([]uint64, ns)
	}
	sumOf := func(c *Column) sum {
		g := byEntry[c.entry]
		k := evIndex[g][c.event]
		t := sum{g: g}
		if b := c.Event.Bits; b > 0 && b < 64 {
			t.mask = 1<<b - 1
		}
		for _, src := range c.source {
			t.offs = append(t.offs, k*len(g.entry.Sources)+src)
			t.srcs = append(t.srcs, src)
		}
		return t
	}
	for i, c := range cols {
		p := plan{num: sumOf(c), counter: c.Event.Kind == sensor.Counter, scale: 1}
		if c.Event.Unit == "%" && c.Max > 0 {
			p.scale = 100 / c.Max
		}
		if c.Per != nil {
			d := sumOf(c.Per)
			p.div = &d
		}
		if whole[i] != nil {
			d := sumOf(whole[i])
			p.div, p.scale = &d, 100
		}
		s.plans = append(s.plans, p)
	}
	s.values = make([]float64, len(cols))
	w := newWaker()
	s.wake = w
	// A Sampler that never runs (a failed start, a benchmark of Sample)
	// still gives its descriptors back.
	runtime.AddCleanup(s, func(w *waker) { w.close() }, w)
	return s, nil
}

// Sampling is closed once Run has taken the counters' starting values:
// what a workload started after it does is all counted. (Run may spend
// milliseconds before it, after start-up's garbage collection.)
func (s *Sampler) Sampling() <-chan struct{} { return s.primed }

// Columns returns the sampled columns, in value order.
func (s *Sampler) Columns() []*Column { return s.cols }

// Interval returns the current sampling interval.
func (s *Sampler) Interval() time.Duration { return time.Duration(s.interval.Load()) }

// Start returns the wall-clock time of t=0, valid once Run has begun.
func (s *Sampler) Start() time.Time { return s.start }

// Stats returns the cumulative counts.
func (s *Sampler) Stats() Stats {
	return Stats{Samples: s.samples.Load(), MissedDeadlines: s.missed.Load(), ReadErrors: s.readErrs.Load()}
}

// read reads every group. A source that could not be read (all of a
// group's sources when its Read fails with anything but a
// *sensor.SourceError) is marked missing in this read: its columns are NaN
// rather than a stale value, and its next rate too.
func (s *Sampler) read() {
	for _, g := range s.groups {
		g.prev, g.cur = g.cur, g.prev
		g.okPrev, g.okCur = g.okCur, g.okPrev
		err := g.entry.Sensor.Read(g.cur)
		for i := range g.okCur {
			g.okCur[i] = true
		}
		if err != nil {
			s.readErrs.Add(1)
			if se, ok := err.(*sensor.SourceError); ok {
				for i, src := range se.Sources {
					if src >= 0 && src < len(g.okCur) {
						g.okCur[src] = false
						s.sourceFailed(g, src, se.Errs[i])
					}
				}
			} else {
				for src := range g.okCur {
					g.okCur[src] = false
				}
				if !slices.Contains(g.failed, true) {
					s.cfg.Errors(fmt.Errorf("%s: %w (its values are missing until it reads again; sampling goes on)", g.entry.Name, err))
				}
				for src := range g.failed {
					g.failed[src] = true
					g.errs[src]++
				}
			}
		}
		g.clean = true
		recovered := 0
		for src, ok := range g.okCur {
			if ok && g.failed[src] {
				recovered++
			}
			g.clean = g.clean && ok && g.okPrev[src]
		}
		if recovered == 0 {
			continue
		}
		if recovered == len(g.failed) { // the whole sensor: one line
			s.cfg.Notices(fmt.Sprintf("%s: reading works again after %s", g.entry.Name, term.Plural(int(slices.Max(g.errs)), "failed sample", "failed samples")))
			clear(g.failed)
			clear(g.errs)
			continue
		}
		for src, ok := range g.okCur {
			if ok && g.failed[src] {
				g.failed[src] = false
				s.cfg.Notices(fmt.Sprintf("%s: source %s: reading works again after %s",
					g.entry.Name, sourceName(g.entry.Sources[src]), term.Plural(int(g.errs[src]), "failed sample", "failed samples")))
				g.errs[src] = 0
			}
		}
	}
}

// sourceFailed counts a failed read of one source and reports the first of a streak.
func (s *Sampler) sourceFailed(g *group, src int, err error) {
	g.errs[src]++
	if !g.failed[src] {
		g.failed[src] = true
		s.cfg.Errors(fmt.Errorf("%s: source %s: %w (its values are missing until it reads again; sampling goes on)",
			g.entry.Name, sourceName(g.entry.Sources[src]), err))
	}
}

func sourceName(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// compute fills s.values from the last two reads, dt seconds apart. A value
// whose sources were not all read is NaN (a rate needs both reads).
func (s *Sampler) compute(dt float64) {
	inv := 1 / dt
	for i := range s.plans {
		p := &s.plans[i]
		switch {
		case !p.num.ok(p.counter) || (p.div != nil && !p.div.ok(true)):
			s.values[i] = math.NaN()
		case !p.counter:
			s.values[i] = float64(p.num.level()) * p.scale
		case p.div != nil:
			// Per unit of another counter; NaN when the divisor did not move.
			s.values[i] = float64(p.num.delta()) / float64(p.div.delta()) * p.scale
			if math.IsInf(s.values[i], 0) {
				s.values[i] = math.NaN()
			}
		default:
			s.values[i] = float64(p.num.delta()) * inv * p.scale
		}
	}
}

// Sample reads all sensors once and computes values as if dt had passed
// since the previous call. It exists for benchmarks and tests of the
// per-sample work; Run is the real loop.
func (s *Sampler) Sample(dt time.Duration) []float64 {
	s.read()
	s.compute(dt.Seconds())
	return s.values
}

type ctlOp int

const (
	opInterval ctlOp = iota
	opPause
	opResume
	opMark
	opStop
	opAbort
)

type control struct {
	op       ctlOp
	interval time.Duration
	mark     Record
}

// send queues a command for the loop. Commands sent before Run are handled
// when it starts; after Run has returned they are dropped.
func (s *Sampler) send(c control) {
	select {
	case s.ctl <- c:
		s.wake.notify()
	case <-s.stopped:
	}
}

// SetInterval changes the sampling interval from the next deadline on.
func (s *Sampler) SetInterval(d time.Duration) error {
	if err := CheckInterval(d); err != nil {
		return err
	}
	s.send(control{op: opInterval, interval: d})
	return nil
}

// Pause stops handing samples to sinks; sampling goes on, so rates stay
// correct when Resume is called.
func (s *Sampler) Pause() { s.send(control{op: opPause}) }

// Resume hands samples to sinks again.
func (s *Sampler) Resume() { s.send(control{op: opResume}) }

// Label puts a label at this instant, in order with the samples, on every sink.
func (s *Sampler) Label(text string) {
	s.send(control{op: opMark, mark: Record{Kind: KindLabel, Text: text}})
}

// Rotate asks the sinks that record to files to close the current file and
// continue in path, at this instant.
func (s *Sampler) Rotate(path string) {
	s.send(control{op: opMark, mark: Record{Kind: KindRotate, Text: path}})
}

// Stop ends Run with a final sample over the time since the last one.
func (s *Sampler) Stop() { s.send(control{op: opStop}) }

// Abort ends Run without a final sample. It is for undoing a start that
// failed (nothing was meant to be sampled); a stop of a real run is Stop.
func (s *Sampler) Abort() { s.send(control{op: opAbort}) }

// Run samples until ctx is done, Stop is called or Count samples were taken.
// When ctx or Stop ends it between deadlines, it takes a final sample over
// the partial interval, so no part of the run goes unrecorded.
//
// It sleeps on a timerfd armed at absolute CLOCK_MONOTONIC deadlines, so it
// does not drift and wakes once per sample; a command (Stop, SetInterval, a
// label...) wakes it at once however long the interval (see waker). While it
// runs, the process runs on one P (see waker and procs) and, with
// Config.PinCPUs, is pinned. A wake-up more than one interval after its
// deadline counts the deadlines in between as missed and skips them rather
// than catching up with a burst. Each sample reads the clock once for its
// time (the waker reads it too, to skip a read of a timer not yet due).
func (s *Sampler) Run(ctx context.Context) error {
	if len(s.cfg.PinCPUs) > 0 {
		if err := pinProcess(s.cfg.PinCPUs); err != nil {
			s.cfg.Errors(fmt.Errorf("cannot pin numascope to CPUs %v: %v (sampling unpinned)", s.cfg.PinCPUs, err))
		}
	}
	s.tid.Store(int32(unix.Gettid()))
	w := s.wake
	defer w.close()
	if err := w.open(); err != nil {
		return err
	}
	// A cancelled context is a Stop: it wakes the thread like any command.
	defer context.AfterFunc(ctx, s.Stop)()

	mono := nanotime
	s.start = time.Now()
	base := mono()
	// Prime: counters need a previous read before the first rate.
	s.read()
	close(s.primed)
	last := base
	interval := int64(s.cfg.Interval)
	deadline := base + interval
	paused := false

	// sample takes one sample at now, over the time since the previous one:
	// its rate is the counters' change over exactly that time, so that rate
	// × length summed over the samples is each counter's change over the
	// whole run. The clock is read before the sensors, as for the priming
	// read, so that both ends of every interval are measured alike.
	sample := func(now int64) uint64 {
		s.read()
		s.compute(float64(now-last) / 1e9)
		last = now
		n := s.samples.Add(1)
		if !paused {
			s.publish(time.Duration(now-base), now, interval)
		}
		return n
	}
	// However sampling stops (context, Stop, or the count), the end is the
	// last sample's instant. A stop between deadlines first takes a final
	// sample over the partial interval, so that the end of a run (all of a
	// run shorter than one interval) is recorded too.
	defer close(s.stopped)
	defer func() { s.finish(time.Duration(last - base)) }()
	final := func() {
		if now := mono(); now > last {
			sample(now)
		}
	}
	useProcs(0, interval)
	defer func() { useProcs(interval, 0) }()
	if err := w.arm(deadline, interval); err != nil {
		return err
	}

	for {
		// Commands are looked for before every sleep and after it (a look
		// at an empty channel costs nothing): one sent before Run began, or
		// while a sample was taken, may have had its notify overwritten by
		// an arm.
		if len(s.ctl) == 0 {
			if err := w.wait(); err != nil {
				return err
			}
		}
		if len(s.ctl) > 0 {
			now := mono()
			for len(s.ctl) > 0 {
				for more := true; more; {
					select {
					case c := <-s.ctl:
						switch c.op {
						case opStop:
							final()
							return nil
						case opAbort:
							return nil
						case opInterval:
							useProcs(interval, int64(c.interval))
							interval = int64(c.interval)
							s.interval.Store(interval)
							deadline = now + interval
							s.publishMark(Record{Kind: KindInterval, T: time.Duration(now - base), Interval: c.interval})
						case opPause:
							if !paused {
								s.publishMark(Record{Kind: KindPause, T: time.Duration(now - base)})
								paused = true
							}
						case opResume:
							if paused {
								paused = false
								s.publishMark(Record{Kind: KindResume, T: time.Duration(now - base)})
							}
						case opMark:
							c.mark.T = time.Duration(now - base)
							s.publishMark(c.mark)
						}
					default:
						more = false
					}
				}
				// A notify re-armed the timer to fire at once; back to the
				// deadlines. A command queued meanwhile may have had its
				// notify overwritten by this: the loop takes it now.
				if err := w.arm(deadline, interval); err != nil {
					return err
				}
			}
		}
		now := mono()
		if now < deadline {
			// Woken by a notify whose command was taken at the previous
			// wake-up: the timer fires once more at the deadline.
			if err := w.arm(deadline, interval); err != nil {
				return err
			}
			continue
		}
		// Serve the latest deadline that has passed; earlier ones are missed.
		if skipped := (now - deadline) / interval; skipped > 0 {
			s.missed.Add(uint64(skipped))
			deadline += skipped * interval
		}
		deadline += interval
		if w.notified() {
			// A notify whose command was taken already fired the timer
			// as a deadline passed: a one-shot now, it must be armed to
			// the deadlines again (or sampling would stop here).
			if err := w.arm(deadline, interval); err != nil {
				return err
			}
		}
		n := sample(now)
		if s.cfg.Count > 0 && n >= s.cfg.Count {
			return nil // the count's last sample is the final one
		}
	}
}

// finish tells every sink that sampling ended at end and closes their queues.
func (s *Sampler) finish(end time.Duration) {
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	st := s.Stats()
	for _, k := range *s.sinks.Load() {
		k.push(Record{Kind: KindEnd, T: end, Stats: st, Dropped: k.Dropped()})
		close(k.queue)
		k.ring()
	}
	s.sinks.Store(&[]*Sink{})
}

// publish hands the current values to every sink. It wakes a sink's
// consumer only once per batch (see Sink), not per sample, offers the
// sample to a Direct consumer when a batch is due or each sample is one
// (interval ns of BatchEvery and more: the clock's jitter makes some wake-ups
// at exactly BatchEvery come a little less than it after the last ring),
// and passes over a quiet sink.
func (s *Sampler) publish(t time.Duration, now, interval int64) {
	for _, k := range *s.sinks.Load() {
		if q := k.quietAt.Load(); q >= 0 && uint64(q) == k.marks {
			k.skipped.Store(int64(t) + 1)
			continue
		}
		due := now-k.rung >= int64(k.batch)
		if (due || interval >= int64(k.batch)) && len(k.queue) == 0 {
			if take := k.direct.Load(); take != nil && (*take)(t, s.values) {
				k.rung = now
				continue
			}
		}
		select {
		case r := <-k.free:
			r.Kind, r.T, r.Text = KindSample, t, ""
			copy(r.Values, s.values)
			k.queue <- r // never blocks: the queue holds the whole pool plus room for marks
		default:
			k.dropped.Add(1)
		}
		if due || len(k.queue) >= k.depth/2 {
			k.rung = now
			k.ring()
		}
	}
}

func (s *Sampler) publishMark(m Record) {
	for _, k := range *s.sinks.Load() {
		if !k.push(m) {
			s.cfg.Errors(fmt.Errorf("sink %s is not keeping up: a %s was lost", k.name, m.Kind))
		}
		k.ring() // marks are rare and clients show them at once
	}
}
