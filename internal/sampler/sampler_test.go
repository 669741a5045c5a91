package sampler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sensor"
)

// stepSensor is a deterministic sensor for testing the sampler's arithmetic:
// each Read advances counter event i at source s by step[i][s], modulo the
// event's width, and gauges hold level[i][s]. It is a test double for the
// kernel, not for the sampler: the code under test is the real loop.
type stepSensor struct {
	sources []string
	events  []sensor.Event
	step    [][]int64
	level   [][]int64
	raw     [][]int64
	enabled []int
	failAt  int // Read number that fails (1-based), 0 = never
	reads   int
	mu      sync.Mutex
}

func (s *stepSensor) Name() string           { return "step" }
func (s *stepSensor) Open(sensor.Env) error  { return nil }
func (s *stepSensor) Sources() []string      { return s.sources }
func (s *stepSensor) Events() []sensor.Event { return s.events }
func (s *stepSensor) Close() error           { return nil }
func (s *stepSensor) Enable(ev []int) error {
	s.enabled = ev
	s.raw = make([][]int64, len(s.events))
	for i := range s.raw {
		s.raw[i] = make([]int64, len(s.sources))
	}
	return nil
}
func (s *stepSensor) Read(dst []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.reads == s.failAt {
		return errors.New("injected failure")
	}
	n := len(s.sources)
	for k, ev := range s.enabled {
		for src := 0; src < n; src++ {
			if s.events[ev].Kind == sensor.Gauge {
				dst[k*n+src] = s.level[ev][src]
				continue
			}
			v := s.raw[ev][src] + s.step[ev][src]
			if b := s.events[ev].Bits; b > 0 && b < 64 {
				v &= 1<<b - 1
			}
			s.raw[ev][src] = v
			dst[k*n+src] = v
		}
	}
	return nil
}

func newStepCatalog() (*Catalog, *stepSensor) {
	s := &stepSensor{
		sources: []string{"0", "1"},
		events: []sensor.Event{
			{Name: "hits", Unit: "pages", Kind: sensor.Counter},
			{Name: "wrap", Unit: "events", Kind: sensor.Counter, Bits: 8},
			{Name: "free", Unit: "bytes", Kind: sensor.Gauge},
			{Name: "busy", Unit: "%", Kind: sensor.Counter, Max: []float64{200, 200}},
		},
		step:  [][]int64{{10, 30}, {100, 100}, {0, 0}, {100, 300}},
		level: [][]int64{nil, nil, {5, 7}, nil},
	}
	e := &Entry{Name: "step", Sensor: s, Sources: s.sources, Events: s.events}
	return &Catalog{Entries: []*Entry{e}}, s
}

func TestSelect(t *testing.T) {
	c, _ := newStepCatalog()
	cols, err := c.Select([]string{"hits", "step.*.free", "step.busy"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range cols {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "step.hits,step.0.free,step.1.free,step.busy" {
		t.Errorf("columns = %s", got)
	}
	if cols[3].Max != 400 {
		t.Errorf("summed Max = %v, want 400", cols[3].Max)
	}
	if cols[1].Heading() != "free/0" || cols[0].Heading() != "hits" {
		t.Errorf("headings %q %q", cols[1].Heading(), cols[0].Heading())
	}
	cols, err = c.Select([]string{"h*"}, true)
	if err != nil || len(cols) != 2 || cols[1].Name != "step.1.hits" {
		t.Errorf("discrete select: %v %v", cols, err)
	}

	_, err = c.Select([]string{"hitz"}, false)
	if err == nil || !strings.Contains(err.Error(), "did you mean step.hits") {
		t.Errorf("unknown event error = %v", err)
	}
	if _, err = c.Select([]string{"a.b.c.d"}, false); err == nil {
		t.Error("want error for four-part name")
	}
	if _, err = c.Select([]string{"[x"}, false); err == nil {
		t.Error("want error for bad glob")
	}
	// A bare name shared by two sensors selects the first one's only;
	// qualified names still reach the second.
	other := &stepSensor{sources: []string{""}, events: []sensor.Event{{Name: "hits", Kind: sensor.Counter}}}
	c.Entries = append(c.Entries, &Entry{Name: "zother", Sensor: other, Sources: other.sources, Events: other.events})
	if cols, err = c.Select([]string{"hits"}, false); err != nil || len(cols) != 1 || cols[0].Name != "step.hits" {
		t.Errorf("bare shared name: %v %v", cols, err)
	}
	if cols, err = c.Select([]string{"*.hits"}, false); err != nil || len(cols) != 2 || cols[1].Name != "zother.hits" {
		t.Errorf("qualified glob: %v %v", cols, err)
	}
	// Unavailable events: skipped by globs, an error with the reason when named.
	other.events = append(other.events, sensor.Event{Name: "hw", Kind: sensor.Counter, Unavailable: "no PMU; give the guest one"})
	c.Entries[len(c.Entries)-1].Events = other.events
	if cols, err = c.Select([]string{"zother.*"}, false); err != nil || len(cols) != 1 {
		t.Errorf("glob over an unavailable event: %v %v", cols, err)
	}
	if _, err = c.Select([]string{"zother.hw"}, false); err == nil || !strings.Contains(err.Error(), "no PMU; give the guest one") {
		t.Errorf("exact unavailable event: %v", err)
	}
	c.Entries = append(c.Entries, &Entry{Name: "gone", Err: errors.New("no such hardware")})
	if _, err = c.Select([]string{"gone.x"}, false); err == nil || !strings.Contains(err.Error(), "no such hardware") {
		t.Errorf("absent sensor error = %v", err)
	}
}

// TestSelectOneSource: on a machine with one node the name selected is the
// name returned (issue 30): node.0.X stays node.0.X, --discrete gives
// node.0.X, and only a sensor whose one source has no name (vmstat) has no
// per-source column.
func TestSelectOneSource(t *testing.T) {
	one := &stepSensor{sources: []string{"0"}, events: []sensor.Event{{Name: "hits", Kind: sensor.Counter}}}
	flat := &stepSensor{sources: []string{""}, events: []sensor.Event{{Name: "faults", Kind: sensor.Counter}}}
	c := &Catalog{Entries: []*Entry{
		{Name: "node", Sensor: one, Sources: one.sources, Events: one.events},
		{Name: "vmstat", Sensor: flat, Sources: flat.sources, Events: flat.events},
	}}
	for _, tc := range []struct {
		pats     []string
		discrete bool
		want     string
		heading  string
	}{
		{[]string{"node.0.hits"}, false, "node.0.hits", "hits/0"},
		{[]string{"node.0.hits"}, true, "node.0.hits", "hits/0"},
		{[]string{"node.*.hits"}, false, "node.0.hits", "hits/0"},
		{[]string{"hits"}, true, "node.0.hits", "hits/0"},
		{[]string{"hits"}, false, "node.hits", "hits"},
		{[]string{"node.hits"}, false, "node.hits", "hits"},
		{[]string{"vmstat.faults"}, true, "vmstat.faults", "faults"},
		{[]string{"faults"}, false, "vmstat.faults", "faults"},
	} {
		cols, err := c.Select(tc.pats, tc.discrete)
		if err != nil || len(cols) != 1 || cols[0].Name != tc.want || cols[0].Heading() != tc.heading {
			t.Errorf("Select(%q, discrete %v) = %v, %v; want one column %s (heading %s)", tc.pats, tc.discrete, cols, err, tc.want, tc.heading)
			continue
		}
		if per := cols[0].PerSource(); per != (strings.Count(tc.want, ".") == 2) {
			t.Errorf("%s: PerSource %v", tc.want, per)
		}
	}
}

// TestSharesStayShares: an event that is a share of another (cpu.user of
// cpu.ticks) is 100 * its increase / the whole's increase over the same
// sources, whatever the interval, and null when the whole did not move; a
// rate over wall time would give 110% when eleven 10 ms ticks fall in 100 ms.
func TestSharesStayShares(t *testing.T) {
	st := &stepSensor{
		sources: []string{"0", "1"},
		events: []sensor.Event{
			{Name: "busy", Unit: "%", Kind: sensor.Counter, Max: []float64{100, 100}, ShareOf: "ticks"},
			{Name: "idle", Unit: "%", Kind: sensor.Counter, Max: []float64{100, 100}, ShareOf: "ticks"},
			{Name: "ticks", Unit: "ticks", Kind: sensor.Counter, Max: []float64{100, 100}},
		},
		// Eleven ticks in a "100 ms" sample on node 0, nine on node 1.
		step: [][]int64{{4, 9}, {7, 0}, {11, 9}},
	}
	c := &Catalog{Entries: []*Entry{{Name: "cpu", Sensor: st, Sources: st.sources, Events: st.events}}}
	cols, err := c.Select([]string{"cpu.busy", "cpu.idle", "cpu.*.busy"}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cols, Config{Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Sample(100 * time.Millisecond)
	v := s.Sample(100 * time.Millisecond)
	want := []float64{100 * 13.0 / 20, 100 * 7.0 / 20, 100 * 4.0 / 11, 100}
	for i := range want {
		if math.Abs(v[i]-want[i]) > 1e-9 {
			t.Errorf("%s = %v, want %v (a share of the ticks, not of 100 ms)", cols[i].Name, v[i], want[i])
		}
	}
	// No tick in the interval (a final sample a few ms long): unknown, not 0.
	st.step = [][]int64{{0, 0}, {0, 0}, {0, 0}}
	v = s.Sample(3 * time.Millisecond)
	for i := range v {
		if !math.IsNaN(v[i]) {
			t.Errorf("%s = %v over an interval with no tick, want NaN (null)", cols[i].Name, v[i])
		}
	}
}

func TestComputeRatesSumsWrapAndPercent(t *testing.T) {
	c, _ := newStepCatalog()
	cols, err := c.Select([]string{"step.hits", "step.*.hits", "step.wrap", "step.free", "step.busy", "step.1.busy"}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cols, Config{Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.Sample(time.Second) // prime
	// 8-bit counters wrap every 2.56 steps of 100; the rate must stay 100+100 per read.
	for i := 0; i < 5; i++ {
		v := s.Sample(500 * time.Millisecond)
		want := []float64{80, 20, 60, 400, 12, 100 * 800 / 400.0, 100 * 600 / 200.0}
		for j := range want {
			if math.Abs(v[j]-want[j]) > 1e-9 {
				t.Fatalf("read %d column %s = %v, want %v", i, cols[j].Name, v[j], want[j])
			}
		}
	}
}

func TestReadErrorMakesValuesMissing(t *testing.T) {
	c, st := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits", "step.free"}, false)
	var got []error
	s, err := New(cols, Config{Interval: time.Second, Errors: func(e error) { got = append(got, e) },
		Notices: func(m string) { got = append(got, errors.New(m)) }})
	if err != nil {
		t.Fatal(err)
	}
	st.failAt = 2
	s.Sample(time.Second)
	v := s.Sample(time.Second) // fails: no value is made up, neither a 0 rate nor a stale level
	if !math.IsNaN(v[0]) || !math.IsNaN(v[1]) {
		t.Errorf("after failed read: %v, want NaN NaN", v)
	}
	v = s.Sample(time.Second) // the level is back; the rate needs a second good read
	if !math.IsNaN(v[0]) || v[1] != 12 {
		t.Errorf("first read after recovery: %v, want NaN 12", v)
	}
	v = s.Sample(time.Second)
	if v[0] != 40 || v[1] != 12 {
		t.Errorf("second read after recovery: %v, want 40 12 (one read's worth, no burst)", v)
	}
	if len(got) != 2 || !strings.Contains(got[0].Error(), "injected failure") || !strings.Contains(got[1].Error(), "works again") {
		t.Errorf("errors reported: %v", got)
	}
	if s.Stats().ReadErrors != 1 {
		t.Errorf("ReadErrors = %d", s.Stats().ReadErrors)
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"hits", "wrap", "free", "busy"}, true)
	s, err := New(cols, Config{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	k := s.AddSink("test", 4)
	allocs := testing.AllocsPerRun(1000, func() {
		s.Sample(time.Millisecond)
		s.publish(time.Millisecond, 0, 0)
		r := <-k.queue
		k.Release(r)
	})
	if allocs != 0 {
		t.Errorf("sampling and publishing allocate %v times per sample", allocs)
	}
}

func TestRunDeliversInOrderAndCountsDrops(t *testing.T) {
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: time.Millisecond, Count: 200})
	if err != nil {
		t.Fatal(err)
	}
	fast := s.AddSink("fast", 1000)
	slow := s.AddSink("slow", 2) // never read until the end: must not stall sampling
	s.Label("start")
	done := make(chan error)
	go func() { done <- s.Run(context.Background()) }()

	var samples int
	var labels []string
	var end *Record
	for r := range fast.Records() {
		switch r.Kind {
		case KindSample:
			samples++
			if r.Values[0] <= 0 {
				t.Errorf("sample %d: non-positive rate %v", samples, r.Values[0])
			}
		case KindLabel:
			labels = append(labels, r.Text)
		case KindEnd:
			end = r
		}
		fast.Release(r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if samples != 200 || len(labels) != 1 || labels[0] != "start" || end == nil {
		t.Fatalf("fast sink: %d samples, labels %v, end %v", samples, labels, end)
	}
	if end.Stats.Samples != 200 || end.Dropped != 0 {
		t.Errorf("end record: %+v", end)
	}
	var slowSamples int
	var slowEnd *Record
	for r := range slow.Records() {
		if r.Kind == KindSample {
			slowSamples++
		}
		if r.Kind == KindEnd {
			slowEnd = r
		}
		slow.Release(r)
	}
	if slowSamples != 2 || slowEnd == nil || slowEnd.Dropped != 198 {
		t.Errorf("slow sink got %d samples, end %+v; want 2 and 198 dropped", slowSamples, slowEnd)
	}
}

func TestRunControls(t *testing.T) {
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	k := s.AddSink("t", 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Run(ctx) }()

	var kinds []RecordKind
	wait := func(kind RecordKind) *Record {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, open := nextRecord(k, time.Until(deadline))
			switch {
			case !open:
				t.Fatalf("queue closed while waiting for %v", kind)
			case r == nil:
				t.Fatalf("no %v record", kind)
			}
			kinds = append(kinds, r.Kind)
			if r.Kind == kind {
				return r
			}
			k.Release(r)
		}
	}
	wait(KindSample)
	s.Pause()
	wait(KindPause)
	s.Resume()
	wait(KindResume)
	if err := s.SetInterval(0); err == nil {
		t.Error("SetInterval(0) accepted")
	}
	if err := s.SetInterval(2 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if r := wait(KindInterval); r.Interval != 2*time.Millisecond || s.Interval() != 2*time.Millisecond {
		t.Errorf("interval record %v, Interval() %v", r.Interval, s.Interval())
	}
	s.Rotate("/tmp/x")
	if r := wait(KindRotate); r.Text != "/tmp/x" {
		t.Errorf("rotate text %q", r.Text)
	}
	wait(KindSample)
	s.Stop()
	wait(KindEnd)
	// Between pause and resume no sample may arrive.
	for i, kd := range kinds {
		if kd == KindPause {
			if kinds[i+1] != KindResume {
				t.Errorf("record after pause: %v (all: %v)", kinds[i+1], kinds)
			}
		}
	}
	s.Label("after stop") // must not block
}

func TestMissedDeadlinesAreCounted(t *testing.T) {
	c, st := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: time.Millisecond, Count: 5})
	if err != nil {
		t.Fatal(err)
	}
	// A read that takes 10 ms makes the 1 ms sampler miss about 9 deadlines per sample.
	slow := &slowSensor{stepSensor: st, delay: 10 * time.Millisecond}
	s.groups[0].entry = &Entry{Name: "step", Sensor: slow, Sources: st.sources, Events: st.events}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := s.Stats().MissedDeadlines; m < 20 {
		t.Errorf("missed deadlines = %d, want at least 20 for 5 samples of 10 ms at 1 ms", m)
	}
}

type slowSensor struct {
	*stepSensor
	delay time.Duration
}

func (s *slowSensor) Read(dst []int64) error {
	time.Sleep(s.delay)
	return s.stepSensor.Read(dst)
}

func TestRunHonoursInterval(t *testing.T) {
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, Config{Interval: 20 * time.Millisecond, Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	k := s.AddSink("t", 100)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	var ts []time.Duration
	for r := range k.Records() {
		if r.Kind == KindSample {
			ts = append(ts, r.T)
		}
		k.Release(r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Absolute deadlines: sample i lands at or after (i+1)*20ms and, on a
	// quiet machine, well before the next; we only assert the count, the
	// ordering and the lower bound, which no scheduling noise can break.
	if len(ts) != 10 {
		t.Fatalf("%d samples, want the 10 of Count", len(ts))
	}
	for i, tt := range ts {
		if i > 0 && tt <= ts[i-1] {
			t.Errorf("sample %d at %v, not after sample %d at %v", i, tt, i-1, ts[i-1])
		}
		if tt < time.Duration(i+1)*20*time.Millisecond {
			t.Errorf("sample %d at %v, before its deadline", i, tt)
		}
	}
}

// TestRunPinsTheProcess checks that with PinCPUs every thread of the
// process, those the runtime starts later included, runs with the requested
// affinity, at a short interval and a long one (the sampler is run by
// whichever thread wakes from the poller). It reads each thread's
// Cpus_allowed_list from /proc in a child process, which it may pin.
func TestRunPinsTheProcess(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil || all.Count() < 2 {
		t.Skip("needs at least two usable CPUs to tell a pinned thread apart")
	}
	target := -1
	for c := 1; c < 1024; c++ {
		if all.IsSet(c) {
			target = c
			break
		}
	}
	for _, iv := range []string{"1ms", "100ms"} {
		t.Run(iv, func(t *testing.T) {
			pid := startChild(t, "pin", iv, strconv.Itoa(target))
			time.Sleep(300 * time.Millisecond) // a few samples, consumers run
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
			pinned := 0
			for _, st := range tasks {
				b, err := os.ReadFile(st)
				if err != nil {
					continue
				}
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
						if strings.TrimSpace(v) != strconv.Itoa(target) {
							t.Errorf("%s: %s, want %d", st, line, target)
						} else {
							pinned++
						}
					}
				}
			}
			if pinned < 2 {
				t.Errorf("%d of %d threads pinned", pinned, len(tasks))
			}
		})
	}
}

func TestPerUnitOfAnotherCounter(t *testing.T) {
	c, st := newStepCatalog()
	st.step[3] = []int64{100, 600} // busy, the divisor
	cols, err := c.Select([]string{"step.hits", "step.*.hits", "step.free", "step.busy"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Per(cols, "step.busy"); err != nil {
		t.Fatal(err)
	}
	if cols[0].Name != "step.hits_per_busy" || cols[0].Event.Unit != "pages/%" || cols[3].Per != nil || cols[4].Per != nil {
		t.Errorf("columns after Per: %s %s, gauge per %v, %% per %v", cols[0].Name, cols[0].Event.Unit, cols[3].Per, cols[4].Per)
	}
	s, err := New(cols, Config{Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.Sample(time.Second)
	v := s.Sample(time.Second)
	// Summed: 40 hits per 700 busy; per source: 10/100 and 30/600.
	want := []float64{40.0 / 700, 10.0 / 100, 30.0 / 600, 12}
	for i, w := range want {
		if math.Abs(v[i]-w) > 1e-12 {
			t.Errorf("%s = %v, want %v", cols[i].Name, v[i], w)
		}
	}

	// A divisor that does not move gives no value, not infinity.
	cols, _ = c.Select([]string{"step.hits"}, false)
	st.step[1] = []int64{0, 0}
	if err := c.Per(cols, "step.wrap"); err != nil {
		t.Fatal(err)
	}
	s, _ = New(cols, Config{Interval: time.Second})
	s.Sample(time.Second)
	if v := s.Sample(time.Second); !math.IsNaN(v[0]) {
		t.Errorf("hits per a still divisor = %v, want NaN", v[0])
	}

	for _, bad := range []string{"busy", "step.*", "step.free", "step.nope", "x.y"} {
		cols, _ = c.Select([]string{"step.hits"}, false)
		if err := c.Per(cols, bad); err == nil {
			t.Errorf("Per(%q) accepted", bad)
		}
	}
}
