package benchtest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/term"
)

// events are the counters scripts/bench samples.
var events = []string{"pgfault", "pgalloc_normal", "pgfree", "numa_local"}

var binDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "benchtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtest:", err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// build compiles testdata/bench/NAME.c as scripts/bench does and returns the
// binary. A missing compiler or library is a failure, not a skip: CI installs
// them with scripts/install-test-deps.
func build(t *testing.T, name string, libs ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc not found: run scripts/install-test-deps (it installs gcc, libc6-dev and libzstd-dev)")
	}
	out := filepath.Join(binDir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	src := filepath.Join("..", "..", "testdata", "bench", name+".c")
	args := append([]string{"-O2", "-static", "-pthread", "-Wall", "-Werror", "-o", out, src}, libs...)
	args = append(args, "-lm")
	if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		hint := ""
		if bytes.Contains(msg, []byte("zstd")) {
			hint = " (libzstd's static library is missing: run scripts/install-test-deps)"
		}
		t.Fatalf("gcc %s: %v%s\n%s", strings.Join(args, " "), err, hint, msg)
	}
	return out
}

// sinkTo listens on a loopback port and copies the first connection to
// the file path; it returns the address and a wait for the copy to end.
func sinkTo(t *testing.T, path string) (string, func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		if _, err := io.Copy(f, c); err != nil {
			f.Close()
			done <- err
			return
		}
		done <- f.Close()
	}()
	return ln.Addr().String(), func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no end of stream within 10 s")
		}
	}
}

func bareSampler(t *testing.T) string { return build(t, "baresampler", "-lzstd") }

// run runs the bare sampler and returns its stdout; it checks the summary
// line on stderr and returns the samples it reports.
func run(t *testing.T, args ...string) ([]byte, uint64) {
	t.Helper()
	cmd := exec.Command(bareSampler(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("baresampler %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes(), summary(t, stderr.String())
}

// summary parses "baresampler: N samples, M missed deadlines".
func summary(t *testing.T, stderr string) uint64 {
	t.Helper()
	var n, missed uint64
	if _, err := fmt.Sscanf(stderr, "baresampler: %d samples, %d missed deadlines\n", &n, &missed); err != nil {
		t.Fatalf("baresampler's summary line %q: %v", stderr, err)
	}
	return n
}

// TestBareSamplerTerm checks the terminal mode: a heading and one line per
// sample, laid out byte for byte as numascope stat prints to a file or pipe
// (internal/term, raw numbers), with non-negative rates.
func TestBareSamplerTerm(t *testing.T) {
	const n = 20
	out, got := run(t, append([]string{"-i", "10ms", "-n", strconv.Itoa(n), "-m", "term"}, events...)...)
	if got != n {
		t.Errorf("summary says %d samples, want %d", got, n)
	}
	lines := strings.SplitAfter(string(out), "\n")
	if last := lines[len(lines)-1]; last != "" {
		t.Fatalf("output does not end with a newline: %q", last)
	}
	lines = lines[:len(lines)-1]
	if len(lines) != n+1 {
		t.Fatalf("%d lines, want a heading and %d samples:\n%s", len(lines), n, out)
	}
	var cols []term.Column
	for _, e := range events {
		cols = append(cols, term.Column{Heading: e, Unit: "pages"})
	}
	// Print the same numbers with numascope's printer: the bytes must match.
	var want bytes.Buffer
	p := term.NewPrinter(&want, cols, term.Options{})
	prev := -1.0
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 1+len(events) {
			t.Fatalf("line %d has %d fields, want %d: %q", i+2, len(f), 1+len(events), l)
		}
		sec, err := strconv.ParseFloat(f[0], 64)
		// Not strictly after: a late sample and the next one can print the
		// same millisecond.
		if err != nil || sec < prev {
			t.Fatalf("line %d: time %q is not a number from %v on", i+2, f[0], prev)
		}
		prev = sec
		vals := make([]float64, len(events))
		for k, s := range f[1:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				t.Fatalf("line %d: rate %q is not a non-negative number", i+2, s)
			}
			vals[k] = v
		}
		if err := p.Sample(time.Duration(math.Round(sec*1e3))*time.Millisecond, vals); err != nil {
			t.Fatal(err)
		}
	}
	if want.String() != string(out) {
		t.Errorf("the layout differs from numascope stat's:\nbaresampler:\n%s\ninternal/term:\n%s", out, want.Bytes())
	}
}

// TestBareSamplerRecording checks the jsonl and zst modes: the files load
// with numascope's reader without a skipped line, hold every sample with
// non-negative rates and a clean end, and their sample lines are byte for
// byte what internal/recording writes for the same numbers.
func TestBareSamplerRecording(t *testing.T) {
	// tcp: -m jsonl -o tcp:ADDR, the floor live is measured against, sends
	// the same lines through a socket (here to a listener that keeps them
	// in a file).
	for _, mode := range []string{"jsonl", "zst", "tcp"} {
		t.Run(mode, func(t *testing.T) {
			const n = 20
			path := filepath.Join(t.TempDir(), "bare.jsonl")
			out, flag, received := path, mode, func() error { return nil }
			switch mode {
			case "zst":
				path += ".zst"
				out = path
			case "tcp":
				out, received = sinkTo(t, path)
				out, flag = "tcp:"+out, "jsonl"
			}
			_, got := run(t, append([]string{"-i", "10ms", "-n", strconv.Itoa(n), "-m", flag, "-o", out}, events...)...)
			if err := received(); err != nil {
				t.Fatalf("the socket's reader: %v", err)
			}
			if got != n {
				t.Errorf("summary says %d samples, want %d", got, n)
			}
			rec, err := recording.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Skipped) > 0 {
				t.Errorf("numascope's reader skipped: %q", rec.Skipped)
			}
			if len(rec.Samples) != n || rec.End == nil || rec.End.Samples != n {
				t.Fatalf("%d samples, end %+v; want %d and a clean end", len(rec.Samples), rec.End, n)
			}
			if rec.Header.Interval != 0.01 {
				t.Errorf("interval_s %v, want 0.01", rec.Header.Interval)
			}
			for i, e := range events {
				if rec.Columns[i].Name != "vmstat."+e || rec.Columns[i].Kind != "counter" {
					t.Errorf("column %d is %+v, want counter vmstat.%s", i, rec.Columns[i], e)
				}
			}
			prev := 0.0
			for i, s := range rec.Samples {
				if s.T < prev || s.T <= 0 {
					t.Errorf("sample %d at %v, before %v", i, s.T, prev)
				}
				prev = s.T
				for k, v := range s.V {
					if !(v >= 0) || math.IsInf(v, 0) {
						t.Errorf("sample %d, %s: rate %v is not a non-negative number", i, events[k], v)
					}
				}
			}
			// numascope's writer, given the numbers read back, must write
			// the same sample lines.
			var enc bytes.Buffer
			w := recording.NewWriter(&enc, false)
			if err := rec.Encode(w); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(*rec.End); err != nil {
				t.Fatal(err)
			}
			raw := decompressed(t, path)
			if a, b := sampleLines(raw), sampleLines(enc.Bytes()); a != b {
				t.Errorf("sample lines differ from internal/recording's:\nbaresampler:\n%s\ninternal/recording:\n%s", a, b)
			}
			if a, b := lastLine(raw), lastLine(enc.Bytes()); a != b {
				t.Errorf("end line %q, internal/recording writes %q", a, b)
			}
		})
	}
}

// decompressed returns the file's lines, through zstd when it is compressed.
func decompressed(t *testing.T, path string) []byte {
	t.Helper()
	if !strings.HasSuffix(path, ".zst") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Decode with numascope's reader and write back plain: recording.Load
	// has checked the stream; here only the lines matter.
	rec, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := recording.NewWriter(&b, false)
	if err := rec.Encode(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(*rec.End); err != nil {
		t.Fatal(err)
	}
	// That proves nothing about the compressed bytes themselves; compare
	// with the zstd tool when present, which must give the same lines.
	if zstd, err := exec.LookPath("zstd"); err == nil {
		out, err := exec.Command(zstd, "-dc", path).Output()
		if err != nil {
			t.Fatalf("zstd -dc %s: %v", path, err)
		}
		return out
	}
	return b.Bytes()
}

func sampleLines(b []byte) string {
	var sb strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "[") {
			sb.WriteString(sc.Text())
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

func lastLine(b []byte) string {
	s := strings.TrimSuffix(string(b), "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestBareSamplerNumbers checks the number formatting on values a quiet run
// never produces: exponents, big and tiny rates, negative zero, NaN.
func TestBareSamplerNumbers(t *testing.T) {
	in := []string{"0", "-0", "1", "1.5", "0.1234567891", "99999.95", "100000.5", "123456789012.5",
		"2.5e15", "1e-7", "-0.00001234", "0.0001", "7.77777777777", "1e9", "1234567890.123", "nan", "inf"}
	out, err := exec.Command(bareSampler(t), append([]string{"-F"}, in...)...).Output()
	if err != nil {
		t.Fatalf("baresampler -F: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(in) {
		t.Fatalf("%d lines for %d numbers:\n%s", len(lines), len(in), out)
	}
	for i, s := range in {
		v, _ := strconv.ParseFloat(s, 64)
		f := strings.Split(lines[i], "\t")
		if len(f) != 3 {
			t.Fatalf("line %q: want 3 tab-separated fields", lines[i])
		}
		// The recording: a one-column sample line [t,v].
		var b bytes.Buffer
		w := recording.NewWriter(&b, false)
		if err := w.WriteHeader(&recording.Header{Columns: []recording.Column{{Sensor: "vmstat", Event: "x"}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteSample(0, []float64{v}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		line := lastLine(b.Bytes())
		want := line[len("[0,") : len(line)-1]
		if f[0] != want {
			t.Errorf("%s in a recording: baresampler writes %s, internal/recording %s", s, f[0], want)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue // the terminal prints "-" before formatting
		}
		var tb bytes.Buffer
		p := term.NewPrinter(&tb, []term.Column{{Heading: "x"}}, term.Options{})
		if err := p.Sample(0, []float64{v}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(lastLine(tb.Bytes()))[1]; f[1] != got {
			t.Errorf("%s on the terminal: baresampler writes %s, internal/term %s", s, f[1], got)
		}
		if v >= 0 && v < 1e6 {
			var sb bytes.Buffer
			w := recording.NewWriter(&sb, false)
			_ = w.WriteHeader(&recording.Header{Columns: []recording.Column{{Sensor: "vmstat", Event: "x"}}})
			_ = w.WriteSample(time.Duration(math.Round(v*1e9)), []float64{0})
			_ = w.Flush()
			l := lastLine(sb.Bytes())
			if want := l[1:strings.IndexByte(l, ',')]; f[2] != want {
				t.Errorf("time %s s in a recording: baresampler writes %s, internal/recording %s", s, f[2], want)
			}
		}
	}
}

// TestBareSamplerMarksAndStop checks what scripts/bench relies on to count the
// samples of a window: SIGUSR1 writes labels m1, m2 in order with the
// samples, and SIGTERM stops with a final sample and a clean end.
func TestBareSamplerMarksAndStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "marks.jsonl")
	cmd := exec.Command(bareSampler(t), append([]string{"-i", "10ms", "-m", "jsonl", "-o", path}, events...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait for the file to hold n lines (the sampler writes out once per
	// 50 ms batch, and at once after a mark) and, when given, text.
	waitFor := func(n int, text string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			b, _ := os.ReadFile(path)
			if bytes.Count(b, []byte("\n")) >= n && bytes.Contains(b, []byte(text)) {
				return
			}
		}
		t.Fatalf("%s did not reach %d lines with %q", path, n, text)
	}
	waitFor(4, "") // header, 3 samples
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// Two signals close together are one mark, so wait for m1 and for
	// samples after it before the second.
	waitFor(8, `"m1"`)
	b, _ := os.ReadFile(path)
	waitFor(bytes.Count(b, []byte("\n"))+3, `"m1"`)
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	waitFor(bytes.Count(b, []byte("\n"))+3, `"m2"`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		errors.As(err, &ee)
		t.Fatalf("baresampler after SIGTERM: %v\n%s", err, stderr.Bytes())
	}
	n := summary(t, stderr.String())
	rec, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Skipped) > 0 || rec.End == nil || uint64(len(rec.Samples)) != n || rec.End.Samples != n {
		t.Fatalf("skipped %q, end %+v, %d samples; the summary said %d", rec.Skipped, rec.End, len(rec.Samples), n)
	}
	labels := rec.Labels()
	if len(labels) != 2 || labels[0].Text != "m1" || labels[1].Text != "m2" {
		t.Fatalf("labels %+v, want m1 and m2", labels)
	}
	between := 0
	for _, s := range rec.Samples {
		if s.T > labels[0].T && s.T <= labels[1].T {
			between++
		}
	}
	if between < 1 || labels[0].T <= rec.Samples[0].T || labels[1].T >= rec.Samples[len(rec.Samples)-1].T {
		t.Errorf("labels at %v and %v, %d samples between, samples from %v to %v", labels[0].T, labels[1].T,
			between, rec.Samples[0].T, rec.Samples[len(rec.Samples)-1].T)
	}
}

// nasClassS are the annuli counts of NAS EP class S (2^24 pairs), as the NAS
// Parallel Benchmarks print them.
var nasClassS = [10]uint64{6140517, 5865300, 1100361, 68546, 1648, 17, 0, 0, 0, 0}

// epCounts is ep.c's arithmetic in Go, serially: the generator runs through
// every pair in order, with no block jumps, so it also checks ep's jumps.
func epCounts(npairs int) [10]uint64 {
	const mask = 1<<46 - 1
	const a = 1220703125
	scale := 1.0 / float64(1<<46)
	x := uint64(271828183)
	var q [10]uint64
	for i := 0; i < npairs; i++ {
		x = x * a & mask
		u := float64(2*float64(x)*scale) - 1
		x = x * a & mask
		v := float64(2*float64(x)*scale) - 1
		t := float64(u*u) + float64(v*v)
		if t <= 1 && t > 0 {
			f := math.Sqrt(float64(-2*math.Log(t)) / t)
			gx, gy := math.Abs(float64(u*f)), math.Abs(float64(v*f))
			if l := int(max(gx, gy)); l < 10 {
				q[l]++
			}
		}
	}
	return q
}

func runEP(t *testing.T, args ...string) [10]uint64 {
	t.Helper()
	out, err := exec.Command(build(t, "ep"), args...).Output()
	if err != nil {
		t.Fatalf("ep %s: %v", strings.Join(args, " "), err)
	}
	var q [10]uint64
	line := strings.TrimSpace(string(out))
	_, counts, ok := strings.Cut(line, " counts=")
	if !ok || !strings.Contains(line, " wall_s=") {
		t.Fatalf("ep printed %q, want ... wall_s=W ... counts=q0,...,q9", line)
	}
	f := strings.Split(counts, ",")
	if len(f) != 10 {
		t.Fatalf("ep printed %d counts: %q", len(f), line)
	}
	var acc uint64
	for i, s := range f {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ep count %q: %v", s, err)
		}
		q[i] = n
		acc += n
	}
	if !strings.Contains(line, " accepted="+strconv.FormatUint(acc, 10)+" ") {
		t.Errorf("ep's accepted count is not the sum of its counts: %q", line)
	}
	return q
}

// TestEPChecksum checks ep's annuli counts: against NAS EP class S, and
// against epCounts for sizes that end inside a block, with one thread and
// with more threads than blocks are evenly split over.
func TestEPChecksum(t *testing.T) {
	if q := runEP(t, "-n", "16M", "-t", "2"); q != nasClassS {
		t.Errorf("ep -n 16M: counts %v, NAS EP class S has %v", q, nasClassS)
	}
	for _, n := range []int{1 << 20, 1000001} {
		want := epCounts(n)
		for _, threads := range []string{"1", "3"} {
			if q := runEP(t, "-n", strconv.Itoa(n), "-t", threads); q != want {
				t.Errorf("ep -n %d -t %s: counts %v, the same arithmetic in Go gives %v", n, threads, q, want)
			}
		}
	}
}

// TestBareTop: the floor of bench-top reads every process each round
// through stat files it holds open between rounds, and lets go of the
// files of processes that exited.
func TestBareTop(t *testing.T) {
	bin := build(t, "baretop")
	var sleepers []*exec.Cmd
	for range 20 {
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		sleepers = append(sleepers, c)
	}
	kill := func(cs []*exec.Cmd) {
		for _, c := range cs {
			c.Process.Kill()
			c.Wait()
		}
	}
	defer func() { kill(sleepers) }()

	cmd := exec.Command(bin, "3", "1500", "5", "2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	// heldPIDs are the processes whose stat file baretop holds open.
	heldPIDs := func() map[int]bool {
		held := map[int]bool{}
		dir := fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			var pid int
			if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
				if _, err := fmt.Sscanf(l, "/proc/%d/stat", &pid); err == nil {
					held[pid] = true
				}
			}
		}
		return held
	}
	// The machine's other processes come and go (other tests run beside
	// this one): only the sleeps' files are checked.
	for i := range 3 {
		if !sc.Scan() {
			t.Fatalf("baretop printed %d rounds, want 3: %v", i, sc.Err())
		}
		var r struct{ Round, Processes int }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Round != i {
			t.Fatalf("round %d: %q: %v", i, sc.Text(), err)
		}
		if r.Processes < 20 {
			t.Errorf("round %d read %d processes, fewer than the 20 sleeps", i, r.Processes)
		}
		switch i {
		case 0:
			held := heldPIDs()
			for _, s := range sleepers {
				if !held[s.Process.Pid] {
					t.Errorf("after round 0 the stat file of sleep %d is not held", s.Process.Pid)
				}
			}
			kill(sleepers[:10]) // gone before the next round
		case 1:
			held := heldPIDs()
			for j, s := range sleepers {
				if held[s.Process.Pid] != (j >= 10) {
					t.Errorf("after round 1 sleep %d (exited: %v) has its stat file held: %v", s.Process.Pid, j < 10, held[s.Process.Pid])
				}
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("baretop: %v", err)
	}
}

// TestPlainSampler checks scripts/bench-scale's independent floors, the C
// sampler (testdata/bench/plainsampler.c) and the same job in Go
// (testdata/bench/gofloor): one line per sample of the time and each
// counter's change, the labels SIGUSR1 asks for, and as many samples between
// them as the time between the signals holds at its interval.
func TestPlainSampler(t *testing.T) {
	t.Run("c", func(t *testing.T) { checkPlainSampler(t, build(t, "plainsampler")) })
	t.Run("go", func(t *testing.T) {
		bin := filepath.Join(binDir, "gofloor")
		cmd := exec.Command("go", "build", "-o", bin, "../../testdata/bench/gofloor")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build gofloor: %v\n%s", err, out)
		}
		checkPlainSampler(t, bin)
	})
}

func checkPlainSampler(t *testing.T, bin string) {
	cmd := exec.Command(bin, append([]string{"10000000"}, events...)...) // 10 ms
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(600 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	span := time.Since(t0)
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s after SIGTERM: %v\n%s", filepath.Base(bin), err, stderr.Bytes())
	}
	marks, between := 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if strings.HasPrefix(line, "# label: m") {
			marks++
			if line != fmt.Sprintf("# label: m%d", marks) {
				t.Fatalf("label line %q, want m%d", line, marks)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) != 1+len(events) {
			t.Fatalf("sample line %q: want the time and %d counters", line, len(events))
		}
		for _, v := range f {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				t.Fatalf("sample line %q: %v", line, err)
			}
		}
		if marks == 1 {
			between++
		}
	}
	if marks != 2 {
		t.Fatalf("%d labels, want 2:\n%s", marks, stdout.String())
	}
	// At 10 ms the span holds span/10ms samples; a loaded machine wakes it
	// late (a late wake-up starts again from now), never early.
	if want := int(span / (10 * time.Millisecond)); between > want+2 || between < want/3 {
		t.Errorf("%d samples between the labels %v apart, want about %d", between, span, want)
	}
}

// TestPageCost checks what scripts/bench-pages relies on in
// testdata/bench/pagecost.c: built with -DALIGN=4096 its 256 functions lie
// on 256 pages, one each; with -DALIGN=64 the same functions lie 64 bytes
// apart, on 4 or 5 pages (as many cache lines, a 64th of the pages); and a run
// prints its one line of results.
func TestPageCost(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc not found: run scripts/install-test-deps")
	}
	for _, c := range []struct {
		align, minPages, maxPages int
	}{{4096, 256, 256}, {64, 4, 5}} { // 64: 16 KiB from wherever the first begins
		bin := filepath.Join(binDir, fmt.Sprintf("pagecost-%d", c.align))
		src := filepath.Join("..", "..", "testdata", "bench", "pagecost.c")
		if msg, err := exec.Command(gcc, "-O2", "-static", "-Wall", "-Werror", fmt.Sprintf("-DALIGN=%d", c.align), "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc pagecost.c -DALIGN=%d: %v\n%s", c.align, err, msg)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.Symbols()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var addrs []uint64
		for _, s := range syms {
			if len(s.Name) == 5 && s.Name[0] == 'f' && strings.Trim(s.Name[1:], "0123") == "" && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				addrs = append(addrs, s.Value)
			}
		}
		slices.Sort(addrs)
		if len(addrs) != 256 {
			t.Fatalf("ALIGN=%d: %d functions f0000..f3333, want 256", c.align, len(addrs))
		}
		pages := map[uint64]bool{}
		for i, a := range addrs {
			pages[a/4096] = true
			if i > 0 && a-addrs[i-1] != uint64(c.align) {
				t.Fatalf("ALIGN=%d: functions %#x and %#x are %d bytes apart, want %d", c.align, addrs[i-1], a, a-addrs[i-1], c.align)
			}
		}
		if len(pages) < c.minPages || len(pages) > c.maxPages {
			t.Errorf("ALIGN=%d: the functions lie on %d pages, want %d to %d", c.align, len(pages), c.minPages, c.maxPages)
		}
		out, err := exec.Command(bin, "100", "50", "1", "5").Output()
		if err != nil {
			t.Fatalf("pagecost-%d: %v", c.align, err)
		}
		want := fmt.Sprintf("align=%d code=100 data=50 interval_ms=1 wakes=5 cpu_ns_per_wake=", c.align)
		line := strings.TrimSpace(string(out))
		if ns, ok := strings.CutPrefix(line, want); !ok {
			t.Errorf("pagecost-%d printed %q, want %q followed by a number", c.align, line, want)
		} else if v, err := strconv.ParseFloat(ns, 64); err != nil || v <= 0 {
			t.Errorf("pagecost-%d: CPU per wake-up %q, want a positive number", c.align, ns)
		}
	}
	if err := exec.Command(filepath.Join(binDir, "pagecost-64"), "257", "0", "1", "1").Run(); err == nil {
		t.Errorf("pagecost with 257 functions (it has 256) did not fail")
	}
}
