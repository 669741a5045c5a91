package bench

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync/atomic"
	"time"
	"unsafe"
)

// Loaded latency and peak injection bandwidth, as Intel MLC measures them.
//
// For each pair, the initiator's bandwidth threads (the injectors) stream
// the kernel (or --mix) over arrays bound to the target, each on its own
// CPU, waiting a delay after each piece of pieceElems elements; one CPU of
// the initiator, the one idle latency uses, meanwhile follows the latency
// chain on the same target. The delay steps from none (full rate) to long
// ones, plus an idle step without injection, so that the latency is seen
// against the bandwidth the memory is asked for. The delay is calibrated:
// a multiple of the time one piece takes at full rate on this pair
// (loadedFactors), counted in turns of a spin loop whose speed is measured
// once per run (calibrateSpin). The bandwidth reported for a step is what
// the injectors streamed while the chain was followed, not what the delay
// was meant to give. Peak injection bandwidth is every bandwidth thread,
// the chasing CPU's included, at full rate with no chain.

// loadedFactors are the delay steps, each a multiple of the time one piece
// takes at full rate (0: none), from the lightest load to full rate. The
// rate they aim at is about 1/(1+factor) of full rate. The idle step
// (no injection) comes before them.
var loadedFactors = []float64{32, 16, 8, 4, 2, 1, 0.5, 0}

// pieceElems is what an injector streams of each array between two
// delays: 32 KiB, some microseconds at memory speeds, fine enough that a
// delay shapes a steady rate rather than bursts.
const pieceElems = 4096

// peakWindow is how long one repeat of peak injection streams.
const peakWindow = 200 * time.Millisecond

// Loaded is the loaded-latency curves (JSON key "loaded"): one per pair,
// latency against the bandwidth injected meanwhile, step by step.
type Loaded struct {
	// Kernel is what the injectors run ("mix" for a read:write mix).
	Kernel string `json:"kernel"`
	Mix    string `json:"mix,omitempty"`
	// SizeBytes is the chain's size; InjectBytes the injectors' arrays
	// together.
	SizeBytes   uint64 `json:"size_bytes"`
	InjectBytes uint64 `json:"inject_size_bytes"`
	// Loads is the dependent loads per latency measurement.
	Loads int `json:"loads"`
	// Chain is the latency chain's order, as idle latency's.
	Chain  string `json:"chain"`
	Repeat int    `json:"repeat"`
	// DelayFactors are the steps: the delay after each piece over the time
	// a piece takes at full rate; null for the idle step (no injection).
	DelayFactors []*float64 `json:"delay_factors"`
	// Pairs are every initiator and target, in matrix order.
	Pairs []LoadedPair `json:"pairs"`
}

// LoadedPair is one pair's curve. Its arrays have one value per step
// (Loaded.DelayFactors); they are null when the pair was not measured,
// and Reason says why.
type LoadedPair struct {
	Initiator int `json:"initiator"`
	Target    int `json:"target"`
	// CPU follows the chain; Injectors are the CPUs injecting.
	CPU       int   `json:"cpu"`
	Injectors []int `json:"injectors"`
	// BandwidthMBs is the bandwidth the injectors streamed while the chain
	// was followed (median over the repeats, MB/s by STREAM's count);
	// LatencyNS the latency meanwhile (median), LatencyMinNS and
	// LatencyMaxNS its spread.
	BandwidthMBs []float64 `json:"bandwidth_mbs"`
	LatencyNS    []float64 `json:"latency_ns"`
	LatencyMinNS []float64 `json:"latency_min_ns"`
	LatencyMaxNS []float64 `json:"latency_max_ns"`
	// DelayNS is each step's delay after a piece (null: idle).
	DelayNS []*float64 `json:"delay_ns"`
	Reason  string     `json:"reason,omitempty"`
	// Monotonic says whether the latency and the injected bandwidth
	// rise (or hold) from step to step, beyond the repeats' spread
	// (null: no curve); NotMonotonic is the first fall, in words.
	Monotonic    *bool  `json:"monotonic"`
	NotMonotonic string `json:"not_monotonic,omitempty"`
}

// calibrateSpin returns how many turns of spin run per nanosecond: spin
// is timed with now over doubling turns until a run lasts 2 ms.
func calibrateSpin(spin func(int), now func() time.Time) (float64, error) {
	for n := 1 << 10; n <= 1<<40; n *= 2 {
		t0 := now()
		spin(n)
		if d := now().Sub(t0); d >= 2*time.Millisecond {
			return float64(n) / float64(d.Nanoseconds()), nil
		}
	}
	return 0, errors.New("calibrating the injectors' delay: the spin loop does not take time")
}

// delayTurns is the spin turns for a delay of factor times a piece's
// time (pieceNS) at turnsPerNS.
func delayTurns(factor, pieceNS, turnsPerNS float64) int {
	return int(math.Round(factor * pieceNS * turnsPerNS))
}

// injector is one thread of a crew. It counts what it streamed in
// streamed and done, its own, and publishes them to bytes and pieces, which
// the thread that times a window reads, once per batch of pieces (publish);
// the padding keeps two injectors' counters off one cache line.
type injector struct {
	_              [64]byte
	bytes          atomic.Uint64
	pieces         atomic.Uint64
	streamed, done uint64
	cpu            int
	arrays         [4][]float64
	n, pos         int
	sum            float64
	orders         chan order
	_              [64]byte
}

// publishNS is about how often, in time, an injector publishes its
// counters and looks whether to stop: the batch of pieces between two
// looks (order.every) takes about this long. Three atomic operations a
// piece, with the race detector's hooks on the path (see piece), cost a
// third of the injected bandwidth under -race (a 32 KiB piece takes some
// microseconds, an atomic operation there some hundreds of nanoseconds;
// without -race no difference was measured); at 20 us the counters still
// move in steps far finer than a window (a chase of 2^21 loads, hundreds
// of milliseconds), and a window's two reads of them lag alike, so what it
// counts is not biased.
const publishNS = 20_000

// peakEvery is order.every at full rate before the pieces are timed (peak
// injection, and the uncounted step that times them): 8 pieces of 32 KiB,
// 13 us at 20 GB/s.
const peakEvery = 8

// publishEvery is order.every for a step whose delay is factor times a
// piece's time pieceNS.
func publishEvery(pieceNS, factor float64) int {
	return max(1, int(publishNS/(pieceNS*(1+factor))))
}

// order is what a crew's thread does until the crew stops: inject with
// delay spin turns after each piece, publishing its counters and looking
// whether to stop every so many pieces, and, for the one that times
// (window > 0 or chase > 0), wait until every active injector has
// streamed since started, then time the window or the chase.
type order struct {
	delay   int
	every   int
	window  time.Duration
	chase   int
	active  []*injector
	started []uint64
}

// window is what the timing thread measured.
type window struct {
	dt     time.Duration
	bytes  uint64
	pieces uint64
}

// crew is a pair's injectors and its chaser, and the buffers they use:
// the arrays, then the chain.
type crew struct {
	s       stream
	bufs    []*buffer
	workers []*injector
	stop    atomic.Bool
	done    chan struct{}
	report  chan window
	chaser  chan order
	ptr     unsafe.Pointer
}

// piece streams the next piece of the injector's part, wrapping around.
// Not instrumented by the race detector, as the kernels' path
// (Kernel.runISA): its fields are the injector's thread's own.
//
//go:norace
func (w *injector) piece(s stream) {
	m := min(pieceElems/s.granule()*s.granule(), w.n-w.pos)
	var a [4][]float64
	for i := range s.arrays() {
		a[i] = w.arrays[i][w.pos : w.pos+m]
	}
	w.sum += s.run(&a, m)
	if w.pos += m; w.pos >= w.n {
		w.pos = 0
	}
	w.streamed += uint64(m * s.bytesPerElement())
	w.done++
}

// batch streams every pieces (at least one), each followed by delay spin
// turns, then publishes the counts. Not instrumented by the race detector,
// as piece.
//
//go:norace
func (w *injector) batch(s stream, every, delay int) {
	for range max(1, every) {
		w.piece(s)
		spin(delay)
	}
	w.publish()
}

// publish makes the injector's counts visible to the timing thread.
func (w *injector) publish() {
	w.bytes.Store(w.streamed)
	w.pieces.Store(w.done)
}

// totals sums the active injectors' counters.
func totals(active []*injector) (bytes, pieces uint64) {
	for _, w := range active {
		bytes += w.bytes.Load()
		pieces += w.pieces.Load()
	}
	return bytes, pieces
}

// waitStarted waits until every active injector but self has published a
// piece since its count was started, so that a window sees them all
// streaming.
func waitStarted(active []*injector, started []uint64, self *injector) {
	for i, w := range active {
		for w != self && w.pieces.Load() <= started[i] {
			runtime.Gosched()
		}
	}
}

// timed measures one window for the order: from every injector streaming
// to the end of the chase, or of the window (streaming meanwhile).
func (c *crew) timed(o order, self *injector) {
	waitStarted(o.active, o.started, self)
	if self != nil {
		self.publish()
	}
	b0, p0 := totals(o.active)
	t0 := time.Now()
	if o.chase > 0 {
		c.ptr = chase(c.ptr, o.chase)
	} else {
		for time.Since(t0) < o.window {
			self.piece(c.s)
		}
		self.publish()
	}
	dt := time.Since(t0)
	b1, p1 := totals(o.active)
	c.stop.Store(true)
	c.report <- window{dt, b1 - b0, p1 - p0}
}

// inject is an injector's thread: pinned, it first-touches its part, then
// follows orders until its channel closes. It never unlocks its thread.
func (c *crew) inject(w *injector, ready chan<- error) {
	restore, err := lockPinned([]int{w.cpu})
	defer restore()
	if err != nil {
		ready <- fmt.Errorf("pinning an injector to CPU %d: %w", w.cpu, err)
		return
	}
	for a := range c.s.arrays() {
		v := c.s.initial(a)
		for i := range w.arrays[a] {
			w.arrays[a][i] = v
		}
	}
	ready <- nil
	for o := range w.orders {
		if o.window > 0 {
			c.timed(o, w)
		}
		for !c.stop.Load() {
			w.batch(c.s, o.every, o.delay)
		}
		c.done <- struct{}{}
	}
}

// follow is the chaser's thread: pinned to cpu, it builds the chain in buf
// (the one idle latency follows) and warms it up, then chases as ordered.
func (c *crew) follow(p *plan, cpu int, buf *buffer, ready chan<- error) {
	restore, err := lockPinned([]int{cpu})
	defer restore()
	if err != nil {
		ready <- fmt.Errorf("pinning the chaser to CPU %d: %w", cpu, err)
		return
	}
	c.ptr = p.warm(p.buildChain(buf.b))
	ready <- nil
	for o := range c.chaser {
		c.timed(o, nil)
	}
}

// run gives the injectors in active the delay and the batch of pieces
// between their looks at the stop (every), and the timer its order, and
// returns what the timer measured once all have stopped.
func (c *crew) run(active []*injector, delay, every int, timer chan<- order, o order) window {
	o.delay, o.every = delay, every
	o.active = active
	o.started = make([]uint64, len(active))
	for i, w := range active {
		o.started[i] = w.pieces.Load()
	}
	c.stop.Store(false)
	for _, w := range active {
		if w.orders != timer {
			w.orders <- order{delay: delay, every: every}
		}
	}
	timer <- o
	m := <-c.report
	for range active {
		<-c.done
	}
	return m
}

// mbs is MB/s (10^6 bytes).
func mbs(bytes uint64, dt time.Duration) float64 { return float64(bytes) / dt.Seconds() / 1e6 }

// loaded measures peak injection and the loaded-latency curve of one pair:
// peak's samples, the curve in lp (or lp.Reason when the initiator has no
// CPU to inject beside the chaser's), where the buffers were and their
// share of huge pages.
func (p *plan) loaded(r, target int, lp *LoadedPair, status func(string)) (peak []float64, pl []Pair, huge float64, err error) {
	initiator := p.initiators[r]
	lp.CPU = usableCPUs(p.opt.Topology)[initiator][0]
	c, err := p.newCrew(p.bwCPUs[r], lp.CPU, target)
	if err != nil {
		return nil, nil, -1, err
	}
	defer c.close()

	// Peak: every thread at full rate, one uncounted window first.
	status("peak injection")
	for k := -1; k < p.opt.Repeat; k++ {
		m := c.run(c.workers, 0, peakEvery, c.workers[0].orders, order{window: peakWindow})
		if k >= 0 {
			peak = append(peak, mbs(m.bytes, m.dt))
		}
	}

	inj := c.injectors(lp.CPU)
	lp.Injectors = []int{}
	for _, w := range inj {
		lp.Injectors = append(lp.Injectors, w.cpu)
	}
	if len(inj) == 0 {
		lp.Reason = fmt.Sprintf("node %d has only CPU %d to use, which follows the chain: no CPU is left to inject bandwidth (loaded latency needs two)", initiator, lp.CPU)
		if n := len(usableCPUs(p.opt.Topology)[initiator]); n > 1 {
			lp.Reason = fmt.Sprintf("--threads %d gives node %d only CPU %d, which follows the chain: no CPU is left to inject bandwidth (give --threads 2 or more; the node has %d)", p.opt.Threads, initiator, lp.CPU, n)
		}
	} else {
		if err := p.curve(c, inj, lp, status); err != nil {
			return nil, nil, -1, err
		}
	}

	pair, huge, err := placedAll(c.bufs, "loaded", initiator, target)
	if err != nil {
		return nil, nil, -1, err
	}
	return peak, []Pair{pair}, huge, nil
}

// newCrew binds a pair's buffers to target and starts its threads: an
// injector pinned to each of cpus, which first-touches its part of the
// arrays, and the chaser pinned to chaseCPU, which builds and warms the
// chain. The chasing CPU, when among cpus, leads peak. close ends the
// threads and frees the buffers.
func (p *plan) newCrew(cpus []int, chaseCPU, target int) (c *crew, err error) {
	s := p.stream
	cpus = slices.Clone(cpus)
	if k := slices.Index(cpus, chaseCPU); k > 0 {
		cpus[0], cpus[k] = cpus[k], cpus[0]
	}
	elems := int(p.bwPerArray / 8)
	part := elems / len(cpus) / s.granule() * s.granule()
	if part == 0 {
		return nil, fmt.Errorf("--size is too small for %d injectors: each needs at least %d bytes per array", len(cpus), s.granule()*8)
	}
	c = &crew{s: s, done: make(chan struct{}, len(cpus)), report: make(chan window, 1), chaser: make(chan order)}
	c.bufs = make([]*buffer, s.arrays()+1)
	for a := range c.bufs {
		size := p.bwPerArray
		if a == s.arrays() {
			size = p.latSize
		}
		if c.bufs[a], err = newBuffer(int(size), target, !p.opt.NoHugePages); err != nil {
			c.close()
			return nil, err
		}
	}
	ready := make(chan error, len(cpus)+1)
	for k, cpu := range cpus {
		w := &injector{cpu: cpu, n: part, orders: make(chan order)}
		for a := range s.arrays() {
			w.arrays[a] = c.bufs[a].floats(k*part*8, part)
		}
		c.workers = append(c.workers, w)
		go c.inject(w, ready)
	}
	go c.follow(p, chaseCPU, c.bufs[s.arrays()], ready)
	for range len(cpus) + 1 {
		if e := <-ready; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// close ends the crew's threads (closing a channel no thread was started
// on is harmless) and frees its buffers.
func (c *crew) close() {
	for _, w := range c.workers {
		close(w.orders)
	}
	close(c.chaser)
	for _, b := range c.bufs {
		if b != nil {
			b.free()
		}
	}
}

// injectors are the crew's threads but the one on the chasing CPU.
func (c *crew) injectors(chaseCPU int) []*injector {
	var inj []*injector
	for _, w := range c.workers {
		if w.cpu != chaseCPU {
			inj = append(inj, w)
		}
	}
	return inj
}

// pieceTime runs an uncounted full-rate step of loads dependent loads and
// returns the time one piece takes an injector at full rate, in ns: the
// unit of the delays.
func (c *crew) pieceTime(inj []*injector, loads int) (float64, error) {
	full := c.run(inj, 0, peakEvery, c.chaser, order{chase: loads})
	if full.pieces == 0 {
		return 0, fmt.Errorf("the injectors finished no piece while %d loads were chased: give a bigger --size", loads)
	}
	return float64(full.dt.Nanoseconds()) * float64(len(inj)) / float64(full.pieces), nil
}

// pace turns a step's delay factor into the injectors' orders: the time
// a piece takes at full rate (ns) and the spin loop's speed.
type pace struct{ pieceNS, turnsPerNS float64 }

// calibrate times the crew's pieces, over an uncounted full-rate step of
// loads dependent loads, and the spin loop (once per run).
func (p *plan) calibrate(c *crew, inj []*injector, loads int) (pace, error) {
	pieceNS, err := c.pieceTime(inj, loads)
	if err != nil {
		return pace{}, err
	}
	rate, err := p.spinRate()
	return pace{pieceNS, rate}, err
}

// at is the delay in spin turns after each piece for a delay of factor
// times a piece's time, and the pieces between two publishes.
func (pc pace) at(factor float64) (turns, every int) {
	return delayTurns(factor, pc.pieceNS, pc.turnsPerNS), publishEvery(pc.pieceNS, factor)
}

// step measures once: the chase of loads dependent loads while active
// inject with delay spin turns after each piece, publishing every so many
// pieces (none active: idle). It returns the latency per load and the
// bandwidth the injectors streamed meanwhile.
func (c *crew) step(active []*injector, delay, every, loads int) (latencyNS, bandwidthMBs float64) {
	m := c.run(active, delay, every, c.chaser, order{chase: loads})
	return float64(m.dt.Nanoseconds()) / float64(loads), mbs(m.bytes, m.dt)
}

// curve measures the loaded-latency steps of a pair: idle, then each of
// loadedFactors, Repeat times each, after an uncounted full-rate step that
// calibrates the delays.
func (p *plan) curve(c *crew, inj []*injector, lp *LoadedPair, status func(string)) error {
	steps := p.loads()
	status("loaded latency: calibrating")
	pc, err := p.calibrate(c, inj, steps)
	if err != nil {
		return err
	}
	n := len(loadedFactors) + 1
	for k := range n {
		status(fmt.Sprintf("loaded latency: step %d/%d", k+1, n))
		var lat, bw []float64
		var delay *float64
		turns, every := 0, 1
		active := inj
		if k == 0 {
			active = nil // idle
		} else {
			f := loadedFactors[k-1]
			turns, every = pc.at(f)
			d := f * pc.pieceNS
			delay = &d
		}
		for range p.opt.Repeat {
			l, b := c.step(active, turns, every, steps)
			lat = append(lat, l)
			bw = append(bw, b)
		}
		sort.Float64s(lat)
		sort.Float64s(bw)
		lp.LatencyNS = append(lp.LatencyNS, median(lat))
		lp.LatencyMinNS = append(lp.LatencyMinNS, lat[0])
		lp.LatencyMaxNS = append(lp.LatencyMaxNS, lat[len(lat)-1])
		lp.BandwidthMBs = append(lp.BandwidthMBs, median(bw))
		lp.DelayNS = append(lp.DelayNS, delay)
	}
	lp.NotMonotonic = checkMonotonic(lp)
	mono := lp.NotMonotonic == ""
	lp.Monotonic = &mono
	return nil
}

// spinRate calibrates spin once per run.
func (p *plan) spinRate() (float64, error) {
	if p.turnsPerNS == 0 {
		r, err := calibrateSpin(spin, time.Now)
		if err != nil {
			return 0, err
		}
		p.turnsPerNS = r
	}
	return p.turnsPerNS, nil
}

// delayFactors is Loaded.DelayFactors: null (idle), then loadedFactors.
func delayFactors() []*float64 {
	out := []*float64{nil}
	for _, f := range loadedFactors {
		out = append(out, &f)
	}
	return out
}

// measureFunc is Run's measure: it runs one measurement per pair, filling
// m and the placement, or records why a pair was skipped.
type measureFunc func(kind string, m *Matrix, run func(r, t int) ([]float64, []Pair, float64, error))

// measureLoaded measures peak injection and loaded latency for every pair
// into res. A pair whose initiator has no CPU left to inject has a peak
// but no curve: its arrays are null, and the reason is in the pair and in
// res.Skipped.
func (p *plan) measureLoaded(res *Result, measure measureFunc, status func(string)) {
	arrays := uint64(p.stream.arrays())
	peak := p.newMatrix(p.stream.Name())
	peak.CPUs = p.bwCPUs
	peak.SizeBytes = arrays * p.bwPerArray
	peak.Method = peakMethod
	res.PeakInjection = peak
	l := &Loaded{Kernel: p.stream.Name(), Mix: p.stream.MixName(), SizeBytes: p.latSize, InjectBytes: arrays * p.bwPerArray,
		Loads: p.loads(), Chain: p.opt.Chain.String(), Repeat: p.opt.Repeat, DelayFactors: delayFactors(), Pairs: []LoadedPair{}}
	got := map[[2]int]*LoadedPair{}
	measure("loaded", peak, func(r, t int) ([]float64, []Pair, float64, error) {
		lp := &LoadedPair{Initiator: p.initiators[r], Target: t}
		samples, pl, huge, err := p.loaded(r, t, lp, status)
		if err == nil {
			got[[2]int{r, t}] = lp
		}
		return samples, pl, huge, err
	})
	cpus := usableCPUs(p.opt.Topology)
	for r, i := range p.initiators {
		for _, t := range p.targets {
			lp, ok := got[[2]int{r, t}]
			switch {
			case !ok:
				lp = &LoadedPair{Initiator: i, Target: t, CPU: cpus[i][0], Injectors: []int{}, Reason: "not measured"}
				for _, s := range res.Skipped {
					if s.Kind == "loaded" && s.Initiator == i && s.Target == t {
						lp.Reason = s.Reason
					}
				}
			case lp.Reason != "":
				res.Skipped = append(res.Skipped, Skip{"loaded", i, t, lp.Reason})
			}
			l.Pairs = append(l.Pairs, *lp)
		}
	}
	res.Loaded = l
}
