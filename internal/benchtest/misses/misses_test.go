package misses

import (
	"fmt"
	"strings"
	"testing"
)

// These lines are as Linux 6.18's ftrace wrote them (record-tgid, trace_clock mono).
const realLines = `            bare-14268   (  14268) [001] .....   214.678445: sys_pread64(fd: 4, buf: 0x4e4540, count: 0x3ffff, pos: 0)
            bare-14268   (  14268) [001] d..2.   214.678493: sched_switch: prev_comm=bare prev_pid=14268 prev_prio=120 prev_state=S ==> next_comm=compile next_pid=14260 next_prio=120
         compile-14260   (  14260) [001] d.h2.   214.678595: sched_waking: comm=bare pid=14268 prio=120 target_cpu=001
         compile-14260   (  14260) [001] dNh3.   214.678600: sched_wakeup: comm=bare pid=14268 prio=120 target_cpu=001
         compile-14260   (  14260) [001] d..2.   214.678608: sched_switch: prev_comm=compile prev_pid=14260 prev_prio=120 prev_state=R ==> next_comm=bare next_pid=14268 next_prio=120`

func TestParseRealLines(t *testing.T) {
	want := []event{
		{ts: 214678445, cpu: 1, pid: 14268, tgid: 14268, comm: "bare", kind: kPread, fd: 4},
		{ts: 214678493, cpu: 1, pid: 14268, tgid: 14268, comm: "bare", kind: kSwitch, other: 14260, ocomm: "compile", state: "S"},
		{ts: 214678595, cpu: 1, pid: 14260, tgid: 14260, comm: "compile", hard: true, kind: kWaking, other: 14268, tcpu: 1},
		{ts: 214678600, cpu: 1, pid: 14260, tgid: 14260, comm: "compile", hard: true, kind: kWakeup, other: 14268, tcpu: 1},
		{ts: 214678608, cpu: 1, pid: 14260, tgid: 14260, comm: "compile", kind: kSwitch, other: 14268, ocomm: "bare", state: "R"},
	}
	lines := strings.Split(realLines, "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		e, ok := parseLine(l)
		if !ok || e != want[i] {
			t.Errorf("line %d: got %+v (ok %v), want %+v", i, e, ok, want[i])
		}
	}
	for _, l := range []string{"# tracer: nop", "", "garbage", "  x-1 (1) [000] ..... 1.5: sched_switch: prev_state=S"} {
		if _, ok := parseLine(l); ok {
			t.Errorf("%q parsed", l)
		}
	}
}

// traceBuilder writes a synthetic trace: a sampler, process 100, with
// deadlines every 100 µs from t = 1 s; thread 101 is another of its
// threads, 200 another process's.
type traceBuilder struct{ b strings.Builder }

func (tb *traceBuilder) line(us int64, cpu, pid, tgid int, comm, flags, body string) {
	fmt.Fprintf(&tb.b, "%16s-%-5d (%7d) [%03d] %s %6d.%06d: %s\n", comm, pid, tgid, cpu, flags, us/1e6, us%1e6, body)
}

func comm(pid int) string {
	switch pid {
	case 0:
		return "<idle>"
	case 100, 101:
		return "sampler"
	}
	return "hog"
}

func tgid(pid int) int {
	if pid == 101 {
		return 100
	}
	return pid
}

// switchTo records CPU cpu switching from prev (in state) to next.
func (tb *traceBuilder) switchTo(us int64, cpu, prev int, state string, next int) {
	tb.line(us, cpu, prev, tgid(prev), comm(prev), "d..2.",
		fmt.Sprintf("sched_switch: prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%s ==> next_comm=%s next_pid=%d next_prio=120", comm(prev), prev, state, comm(next), next))
}

// wake records pid woken onto cpu by the task running there, from a hard
// interrupt (a timer) or not.
func (tb *traceBuilder) wake(us int64, cpu, running, pid int, hard bool) {
	flags := "d..2."
	if hard {
		flags = "d.h2."
	}
	tb.line(us, cpu, running, tgid(running), comm(running), flags,
		fmt.Sprintf("sched_waking: comm=%s pid=%d prio=120 target_cpu=%03d", comm(pid), pid, cpu))
}

func (tb *traceBuilder) pread(us int64, cpu, pid int) {
	tb.line(us, cpu, pid, 100, "sampler", ".....", "sys_pread64(fd: 4, buf: 0x4e4540, count: 0x3ffff, pos: 0)")
}

// syntheticRun is a run with two missed deadlines for each cause.
func syntheticRun() string {
	var tb traceBuilder
	const t0 = 1_000_000 // µs
	d := func(k int64) int64 { return t0 + 100*k }
	// A start-up read of another file is not a sample.
	tb.line(d(0)-500, 0, 100, 100, "sampler", ".....", "sys_pread64(fd: 3, buf: 0x4e4540, count: 0x40, pos: 0)")
	// The priming read, 1 µs after the base time, then samples 1 and 2 on
	// time, 2 µs after their deadlines, on CPU 0.
	tb.switchTo(d(0)-50, 0, 0, "R", 100)
	tb.pread(d(0)+1, 0, 100)
	for k := int64(1); k <= 2; k++ {
		tb.switchTo(d(k-1)+10, 0, 100, "S", 0)
		tb.wake(d(k)+1, 0, 0, 100, true)
		tb.switchTo(d(k)+1, 0, 0, "R", 100)
		tb.pread(d(k)+2, 0, 100)
	}
	// Timer late: asleep until 205 µs after deadline 3 (misses 3, 4).
	tb.switchTo(d(2)+10, 0, 100, "S", 0)
	tb.wake(d(5)+5, 0, 0, 100, true)
	tb.switchTo(d(5)+6, 0, 0, "R", 100)
	tb.pread(d(5)+7, 0, 100)
	// Waited for another process: woken on time, the hog keeps CPU 0
	// (misses 6, 7).
	tb.switchTo(d(5)+10, 0, 100, "S", 200)
	tb.wake(d(6)+1, 0, 200, 100, true)
	tb.switchTo(d(8)+50, 0, 200, "R", 100)
	tb.pread(d(8)+51, 0, 100)
	// Hand-off: thread 101 sleeps until thread 100 wakes it (misses 9, 10).
	tb.switchTo(d(8)+60, 1, 0, "R", 101)
	tb.switchTo(d(8)+70, 1, 101, "S", 0)
	tb.wake(d(11)+50, 1, 100, 101, false)
	tb.switchTo(d(11)+51, 1, 0, "R", 101)
	tb.pread(d(11)+52, 1, 101)
	// Own work: thread 101 runs on for three intervals (misses 12, 13).
	tb.pread(d(14)+53, 1, 101)
	// Waited for its own thread: 101 is woken on CPU 0, where thread 100
	// runs (misses 16, 17: 15 is served on time).
	tb.switchTo(d(14)+60, 1, 101, "S", 0)
	tb.wake(d(15)+1, 1, 0, 101, true)
	tb.switchTo(d(15)+1, 1, 0, "R", 101)
	tb.pread(d(15)+2, 1, 101)
	tb.switchTo(d(15)+10, 1, 101, "S", 0)
	tb.wake(d(16)+1, 0, 100, 101, true)
	tb.switchTo(d(18)+40, 0, 100, "R", 101)
	tb.pread(d(18)+41, 0, 101)
	// Waited with the CPU idle (misses 19, 20).
	tb.switchTo(d(18)+50, 0, 101, "S", 0)
	tb.wake(d(19)+1, 0, 0, 101, true)
	tb.switchTo(d(21)+30, 0, 0, "R", 101)
	tb.pread(d(21)+31, 0, 101)
	return tb.b.String()
}

// TestAttribution checks that each pair of syntheticRun's missed deadlines
// is put under its cause.
func TestAttribution(t *testing.T) {
	r, err := Analyze(strings.NewReader(syntheticRun()), 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.Samples != 10 || r.Missed != 12 {
		t.Fatalf("samples %d, missed %d; want 10 and 12", r.Samples, r.Missed)
	}
	for _, c := range Causes {
		if r.ByCause[c] != 2 {
			t.Errorf("%s: %d missed deadlines, want 2 (all: %v)", c, r.ByCause[c], r.ByCause)
		}
	}
	if r.Holders["hog"] != 249 || r.Holders["sampler (own)"] != 239 {
		t.Errorf("holders %v, want hog 249 µs and sampler (own) 239 µs", r.Holders)
	}
	// Delays from the first deadline after the sample before: 2 µs for the
	// three on time, 207 to 253 µs for the six that came after misses.
	if p := r.Percentile(30); p != 2 {
		t.Errorf("30th percentile delay %d µs, want 2", p)
	}
	if p, q := r.Percentile(50), r.Percentile(100); p != 231 || q != 253 {
		t.Errorf("median and largest delay %d and %d µs, want 231 and 253 (the own work)", p, q)
	}
}

func TestTooFewSamples(t *testing.T) {
	if _, err := Analyze(strings.NewReader(realLines), 14268, 100); err == nil || !strings.Contains(err.Error(), "only 1 samples") {
		t.Errorf("error %v, want one naming the 1 sample", err)
	}
	if _, err := Analyze(strings.NewReader(realLines), 1, 0); err == nil {
		t.Error("interval 0 accepted")
	}
}

// FuzzAnalyze: any text gives an error or a result whose causes account for
// every missed deadline.
func FuzzAnalyze(f *testing.F) {
	f.Add(realLines, 14268, int64(100))
	f.Add(syntheticRun(), 100, int64(100))
	f.Add(realLines+"\n"+strings.ReplaceAll(realLines, "214.", "215."), 14268, int64(7))
	f.Fuzz(func(t *testing.T, trace string, tgid int, interval int64) {
		r, err := Analyze(strings.NewReader(trace), tgid, interval)
		if err != nil {
			return
		}
		n := 0
		for _, c := range Causes {
			n += r.ByCause[c]
		}
		if n != r.Missed || r.Missed < 0 {
			t.Fatalf("causes count %d misses, the total is %d", n, r.Missed)
		}
	})
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"kworker/0:1":      "kworker/0?1",
		"\x1b]0;pwned\x07": "?]0;pwned?",
		"a|b,c":            "a?b?c",
		"caf\xe9":          "caf?",
		"x\u202ey":         "x?y",
		"\u0085next":       "?next",
		"numascope (own)":  "numascope (own)",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
