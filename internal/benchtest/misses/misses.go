// Package misses finds out why a periodic sampler missed its deadlines, from
// a scheduler trace of the run.
//
// A count of missed deadlines says that a sampler was late, not why: its own
// work, a thread of its own that took the CPU, another process, the runtime
// handing the work from thread to thread, or a timer interrupt that came
// late (in a virtual machine, a vCPU the host did not run). scripts/bench-misses
// records the kernel's scheduler events (ftrace: sched_switch, sched_waking,
// sched_wakeup and sys_enter_pread64, trace_clock mono, record-tgid) while a
// sampler runs, and this package reads that trace back:
//
//   - every sample is one pread(2) of the sampled file by the sampler's
//     process, so the pread instants are the samples;
//   - the deadlines are a grid of one interval from the priming read, the
//     first, which both samplers take as soon as they have read their base
//     time;
//   - a deadline with no sample before the next one is missed, and the time
//     from it to the sample that came instead is split by what the sampling
//     thread was doing and, while it waited for a CPU, by who held that CPU.
//
// The reconstruction counts misses as the samplers do (a sample serves the
// latest deadline passed), so its count can be checked against theirs.
package misses

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An event is one line of an ftrace text trace, the fields this package
// reads.
type event struct {
	ts    int64 // µs, trace_clock mono
	cpu   int
	pid   int // the task that was running when the event was recorded
	tgid  int
	comm  string
	hard  bool // recorded in hard interrupt context (a timer's wake-up)
	kind  kind
	other int    // sched_switch: next_pid; sched_waking/wakeup: the woken pid
	ocomm string // sched_switch: next_comm
	state string // sched_switch: prev_state
	tcpu  int    // sched_waking/wakeup: target_cpu
	fd    int    // sys_pread64: the descriptor
}

type kind uint8

const (
	kSwitch kind = iota + 1
	kWaking
	kWakeup
	kPread
)

// parseLine reads one trace line, "comm-pid (tgid) [cpu] flags ts: name: fields".
// Lines it does not know (comments, other events) give ok false.
func parseLine(line string) (e event, ok bool) {
	if strings.HasPrefix(line, "#") {
		return e, false
	}
	open := strings.Index(line, "(")
	cpuOpen := strings.Index(line, "[")
	if open < 0 || cpuOpen < open {
		return e, false
	}
	task := strings.TrimSpace(line[:open])
	dash := strings.LastIndexByte(task, '-')
	if dash < 0 {
		return e, false
	}
	var err error
	e.comm = task[:dash]
	if e.pid, err = strconv.Atoi(task[dash+1:]); err != nil {
		return e, false
	}
	closeP := strings.Index(line[open:], ")")
	if closeP < 0 {
		return e, false
	}
	tg := strings.TrimSpace(line[open+1 : open+closeP])
	if tg == "-------" { // the tgid of a task that exited before it was recorded
		e.tgid = -1
	} else if e.tgid, err = strconv.Atoi(tg); err != nil {
		return e, false
	}
	rest := line[cpuOpen+1:]
	cpuClose := strings.IndexByte(rest, ']')
	if cpuClose < 0 {
		return e, false
	}
	if e.cpu, err = strconv.Atoi(rest[:cpuClose]); err != nil {
		return e, false
	}
	f := strings.Fields(rest[cpuClose+1:])
	if len(f) < 3 {
		return e, false
	}
	flags := f[0]
	e.hard = len(flags) >= 3 && (flags[2] == 'h' || flags[2] == 'H')
	ts := strings.TrimSuffix(f[1], ":")
	dot := strings.IndexByte(ts, '.')
	if dot < 0 {
		return e, false
	}
	sec, err1 := strconv.ParseInt(ts[:dot], 10, 64)
	usec, err2 := strconv.ParseInt(ts[dot+1:], 10, 64)
	if err1 != nil || err2 != nil || len(ts)-dot-1 != 6 {
		return e, false
	}
	e.ts = sec*1_000_000 + usec
	name := strings.TrimSuffix(f[2], ":")
	kv := func(key string) string {
		for _, x := range f[3:] {
			if v, ok := strings.CutPrefix(x, key+"="); ok {
				return v
			}
		}
		return ""
	}
	switch {
	case name == "sched_switch":
		e.kind = kSwitch
		e.state = kv("prev_state")
		e.ocomm = kv("next_comm")
		e.other, err = strconv.Atoi(kv("next_pid"))
	case name == "sched_waking" || name == "sched_wakeup":
		e.kind = kWaking
		if name == "sched_wakeup" {
			e.kind = kWakeup
		}
		e.other, err = strconv.Atoi(kv("pid"))
		if err == nil {
			e.tcpu, err = strconv.Atoi(kv("target_cpu"))
		}
	case strings.HasPrefix(name, "sys_pread64("):
		e.kind = kPread
		if len(f) < 4 {
			return e, false
		}
		e.fd, err = strconv.Atoi(strings.TrimSuffix(f[3], ","))
	default:
		return e, false
	}
	return e, err == nil
}

// Cause is what a missed deadline's lateness was spent on.
type Cause string

// The causes, in the order a table shows them.
const (
	// TimerLate: the sampler slept past the deadline: the timer's wake-up
	// came late (in a VM, the host had not run the vCPU; or interrupts were
	// off). Nothing in the process can shorten it.
	TimerLate Cause = "timer late"
	// WaitOther: woken (or preempted), the sampling thread waited for a CPU
	// that another process held.
	WaitOther Cause = "waited: other process"
	// WaitOwn: it waited for a CPU that another thread of its own process
	// held (a consumer, the runtime's monitor...).
	WaitOwn Cause = "waited: own thread"
	// WaitIdle: it waited with the CPU idle: the wake-up's interrupt or IPI
	// was slow to land (in a VM, a halted vCPU the host had to run).
	WaitIdle Cause = "waited: idle CPU"
	// HandOff: the sampling thread slept past the deadline until another
	// thread of its process woke it: the sampler's work was passed between
	// threads (a Go runtime hand-off).
	HandOff Cause = "hand-off between threads"
	// Running: the sampling thread was on a CPU: its own work overran.
	Running Cause = "own work"
)

// Causes lists every Cause in table order.
var Causes = []Cause{TimerLate, WaitOther, WaitOwn, WaitIdle, HandOff, Running}

// Result is the analysis of one run.
type Result struct {
	Interval int64 // µs
	Samples  int   // preads of the process in the trace
	Missed   int   // deadlines missed, reconstructed
	// ByCause counts the missed deadlines by the cause that took most of
	// their lateness; TimeByCause is the lateness (µs) spent on each cause
	// over all of them.
	ByCause     map[Cause]int
	TimeByCause map[Cause]int64
	// Holders is the time (µs) other tasks held the CPU the sampling thread
	// waited for, by command name, in missed deadlines.
	Holders map[string]int64
	// Late is every sample's delay (µs): its pread after the first deadline
	// that followed the sample before it, missed deadlines included.
	Late []int64
}

// Analyze reads an ftrace text trace and attributes the missed deadlines of
// the process tgid, sampling every interval µs.
func Analyze(r io.Reader, tgid int, interval int64) (*Result, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("misses: interval must be positive, not %d µs", interval)
	}
	var evs []event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if e, ok := parseLine(sc.Text()); ok {
			evs = append(evs, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("misses: reading the trace: %w", err)
	}
	// Per-CPU buffers are merged by time in the text output already; keep
	// the order stable for equal stamps.
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.ts, b.ts) })
	return analyze(evs, tgid, interval)
}

func analyze(evs []event, tgid int, interval int64) (*Result, error) {
	// The samples are the preads of the sampled file: the descriptor the
	// process preads most (start-up reads other files once).
	own := map[int]bool{}
	fds := map[int]int{}
	for _, e := range evs {
		if e.tgid == tgid {
			own[e.pid] = true
			if e.kind == kPread {
				fds[e.fd]++
			}
		}
	}
	fd, most := -1, 0
	for d, n := range fds {
		if n > most || n == most && d < fd {
			fd, most = d, n
		}
	}
	var samples []int // indices of the sampled file's preads
	for i, e := range evs {
		if e.tgid == tgid && e.kind == kPread && e.fd == fd {
			samples = append(samples, i)
		}
	}
	if len(samples) < 3 {
		return nil, fmt.Errorf("misses: only %d samples (preads) of process %d in the trace: was it traced with sys_enter_pread64 and record-tgid?", len(samples), tgid)
	}
	phase := gridPhase(evs, samples, interval)
	res := &Result{
		Interval: interval, Samples: len(samples),
		ByCause: map[Cause]int{}, TimeByCause: map[Cause]int64{}, Holders: map[string]int64{},
	}
	k := func(ts int64) int64 { return floorDiv(ts-phase, interval) }
	st := newTracker(own)
	next := 0 // the next event to feed the tracker
	for n := 1; n < len(samples); n++ {
		prev, cur := evs[samples[n-1]], evs[samples[n]]
		kp, kc := k(prev.ts), k(cur.ts)
		// The first deadline after the previous sample: this sample's, unless
		// it was missed.
		first := phase + (kp+1)*interval
		res.Late = append(res.Late, cur.ts-first)
		for ; next < len(evs) && evs[next].ts <= first; next++ {
			st.feed(evs[next])
		}
		if kc-kp <= 1 {
			continue
		}
		res.Missed += int(kc - kp - 1)
		// Split [first, cur.ts] by the sampling thread's state, the thread
		// that takes the sample that ends the gap.
		span := map[Cause]int64{}
		x := cur.pid
		t := first
		var asleep int64 // time x slept in the gap, until what woke it is known
		for ; next < len(evs) && evs[next].ts <= cur.ts; next++ {
			e := evs[next]
			asleep += st.account(x, t, e.ts, span, res.Holders)
			t = e.ts
			if asleep > 0 && (e.kind == kWaking || e.kind == kWakeup) && e.other == x {
				span[st.wokenBy(e)] += asleep
				asleep = 0
			}
			st.feed(e)
		}
		asleep += st.account(x, t, cur.ts, span, res.Holders)
		span[TimerLate] += asleep // not seen woken: a trace that began asleep
		top, topT := Running, int64(-1)
		for _, c := range Causes {
			res.TimeByCause[c] += span[c]
			if span[c] > topT {
				top, topT = c, span[c]
			}
		}
		res.ByCause[top] += int(kc - kp - 1)
	}
	return res, nil
}

// gridPhase finds the deadlines' phase. Both samplers read the clock, make
// it their base, and take a priming read at once; the deadlines are the base
// plus whole intervals. The priming read is the first sample in the trace,
// a microsecond or two after the base (the trace's clock has microseconds):
// the phase is put 1 µs before it. A sample is never that close to a later
// deadline (a wake-up from a timer takes longer), so no sample is counted
// against the wrong deadline.
func gridPhase(evs []event, samples []int, interval int64) int64 {
	t := evs[samples[0]].ts - 1
	return t - floorDiv(t, interval)*interval
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// tracker follows every CPU's running task and every task's state.
type tracker struct {
	own   map[int]bool
	onCPU map[int]int // cpu -> pid running
	comm  map[int]string
	state map[int]byte // pid -> 'R' running, 'W' runnable, 'S' sleeping
	cpuOf map[int]int  // pid -> the CPU it runs or waits on
}

func newTracker(own map[int]bool) *tracker {
	return &tracker{own: own, onCPU: map[int]int{}, comm: map[int]string{}, state: map[int]byte{},
		cpuOf: map[int]int{}}
}

func (t *tracker) feed(e event) {
	t.comm[e.pid] = e.comm
	switch e.kind {
	case kSwitch:
		if e.state == "R" || e.state == "R+" {
			t.state[e.pid] = 'W'
		} else {
			t.state[e.pid] = 'S'
		}
		t.onCPU[e.cpu] = e.other
		t.comm[e.other] = e.ocomm
		t.state[e.other] = 'R'
		t.cpuOf[e.other] = e.cpu
	case kWaking, kWakeup:
		if t.state[e.other] != 'R' {
			t.state[e.other] = 'W'
		}
		t.cpuOf[e.other] = e.tcpu
	}
}

// account adds the time [from, to) to the cause the sampling thread x's
// state gives it. Time x sleeps is returned instead: what it was waiting
// for is known only when it is woken (see wokenBy).
func (t *tracker) account(x int, from, to int64, span map[Cause]int64, holders map[string]int64) (asleep int64) {
	d := to - from
	if d <= 0 {
		return 0
	}
	switch t.state[x] {
	case 'R':
		span[Running] += d
	case 'W':
		holder, ok := t.onCPU[t.cpuOf[x]]
		switch {
		case !ok || holder == 0:
			span[WaitIdle] += d
		case t.own[holder]:
			span[WaitOwn] += d
			holders[t.comm[holder]+" (own)"] += d
		default:
			span[WaitOther] += d
			holders[t.comm[holder]] += d
		}
	default:
		return d
	}
	return 0
}

// wokenBy says what a sleep past a deadline was waiting for, from the event
// that ended it: a hard interrupt (the timer), a thread of the process
// itself (a hand-off), or another task (counted as the timer: a wake-up the
// sampler did not ask for from its own threads).
func (t *tracker) wokenBy(e event) Cause {
	if !e.hard && t.own[e.pid] {
		return HandOff
	}
	return TimerLate
}

// Percentile returns the p-th percentile (0-100) of the samples' delays.
func (r *Result) Percentile(p float64) int64 {
	if len(r.Late) == 0 {
		return 0
	}
	s := slices.Clone(r.Late)
	slices.Sort(s)
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

// Printable returns a task's command name fit for a terminal and a Markdown
// table: any user can name a process (prctl PR_SET_NAME) with escape
// sequences, and scripts/bench-misses runs as root and prints the names of
// the tasks that held the sampler's CPU. Control characters, DEL, the
// C1 controls, invalid UTF-8 and the separators of missattr's output and of
// a table ('|', ',', ':') become '?'.
func Printable(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == utf8.RuneError, r < 0x20, r >= 0x7f && r < 0xa0, r == '|', r == ',', r == ':':
			b.WriteByte('?')
		case r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			b.WriteByte('?') // line separators and bidi overrides
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
