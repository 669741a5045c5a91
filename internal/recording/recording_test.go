package recording

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/topology"
)

// testHeader is the header of the recordings the tests write: two nodes'
// numa_miss and a summed gauge.
func testHeader() *Header {
	return &Header{
		Host:     "testhost",
		Kernel:   "6.1.0-test",
		Start:    time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC),
		Interval: 0.1,
		Topology: &topology.Topology{
			Nodes: []topology.Node{
				{ID: 0, CPUs: []int{0, 1}, Distances: map[string]int{"0": 10, "1": 21}, Allowed: true},
				{ID: 1, CPUs: []int{2, 3}, Distances: map[string]int{"0": 21, "1": 10}, Allowed: true},
			},
			NUMA: true,
		},
		Sensors: []SensorInfo{
			{Name: "node", Present: true, Sources: []string{"0", "1"}},
			{Name: "perf", Present: false, Reason: "no PMU access", Sources: []string{}},
		},
		Columns: []Column{
			{Name: "node.0.numa_miss", Sensor: "node", Event: "numa_miss", Sources: []string{"0"}, Unit: "pages", Kind: Counter, Desc: "allocations that missed"},
			{Sensor: "node", Event: "numa_miss", Sources: []string{"1"}, Unit: "pages", Kind: Counter, Desc: "allocations that missed"},
			{Name: "node.MemFree", Sensor: "node", Event: "MemFree", Sources: []string{"0", "1"}, Unit: "bytes", Kind: Gauge, Max: 2 << 30},
		},
		Command: []string{"stream", "-n", "4"},
	}
}

var secondColumns = []Column{
	{Name: "node.MemFree", Sensor: "node", Event: "MemFree", Sources: []string{"0", "1"}, Unit: "bytes", Kind: Gauge},
	{Name: "node.1.numa_miss", Sensor: "node", Event: "numa_miss", Sources: []string{"1"}, Unit: "pages", Kind: Counter},
	{Name: "node.cpu_busy", Sensor: "node", Event: "cpu_busy", Sources: []string{"0", "1"}, Unit: "%", Kind: Gauge, Max: 100},
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// writeTest writes the test recording: 3 samples, marks, a column change,
// 2 samples with the new set, and a clean end.
func writeTest(t testing.TB, w *Writer) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteHeader(testHeader()))
	must(w.WriteSample(ms(100), []float64{1, 2.5, 1073741824}))
	must(w.WriteLabel(ms(150), "phase \"2\"\n<b>"))
	must(w.WriteSample(ms(200), []float64{0, math.NaN(), 1.5e-7}))
	must(w.WriteInterval(ms(250), time.Millisecond))
	must(w.WritePause(ms(260)))
	must(w.WriteResume(ms(270)))
	must(w.WriteSample(ms(300), []float64{-3, 123456789012, 0.333333333}))
	must(w.WriteColumns(ms(350), secondColumns))
	must(w.WriteSample(ms(400), []float64{5e8, 7, 99.5}))
	must(w.WriteSample(ms(500), []float64{math.NaN(), 8, 12.25}))
	must(w.Close(End{Samples: 5, MissedDeadlines: 1, Dropped: 2}))
}

var nan = math.NaN()

// wantSamples are the samples of writeTest as read back, aligned with the
// union node.0.numa_miss, node.1.numa_miss, node.MemFree, node.cpu_busy.
var wantSamples = []Sample{
	{0.1, []float64{1, 2.5, 1073741824, nan}}, // integers stay exact
	{0.2, []float64{0, nan, 1.5e-7, nan}},
	{0.3, []float64{-3, 123456789012, 0.333333333, nan}},
	{0.4, []float64{nan, 7, 5e8, 99.5}},
	{0.5, []float64{nan, 8, nan, 12.25}},
}

// wantMarks is what Load returns for writeTest's marks: the label written
// with a line break reads back cleaned, as every label read from a file is.
var wantMarks = []Mark{
	{Type: MarkLabel, T: 0.15, Text: "phase \"2\" <b>"},
	{Type: MarkInterval, T: 0.25, Interval: 0.001},
	{Type: MarkPause, T: 0.26},
	{Type: MarkResume, T: 0.27},
	{Type: MarkColumns, T: 0.35},
}

func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

func checkSamples(t *testing.T, got, want []Sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].T != want[i].T || len(got[i].V) != len(want[i].V) {
			t.Fatalf("sample %d = %v, want %v", i, got[i], want[i])
		}
		for k := range want[i].V {
			if !sameFloat(got[i].V[k], want[i].V[k]) {
				t.Fatalf("sample %d value %d = %v, want %v", i, k, got[i].V[k], want[i].V[k])
			}
		}
	}
}

func checkTestRecording(t *testing.T, rec *Recording) {
	t.Helper()
	if len(rec.Skipped) != 0 {
		t.Errorf("Skipped = %q, want none", rec.Skipped)
	}
	h := rec.Header
	want := testHeader()
	if h.Format != "numascope" || h.Version != 1 || h.Host != want.Host || h.Kernel != want.Kernel ||
		!h.Start.Equal(want.Start) || h.Interval != 0.1 || !reflect.DeepEqual(h.Command, want.Command) ||
		!reflect.DeepEqual(h.Sensors, want.Sensors) || !reflect.DeepEqual(h.Topology, want.Topology) {
		t.Errorf("header = %+v\nwant %+v", h, want)
	}
	if len(h.Columns) != 3 || h.Columns[1].Name != "node.1.numa_miss" || h.Columns[2].Max != 2<<30 {
		t.Errorf("header columns = %+v", h.Columns)
	}
	var names []string
	for _, c := range rec.Columns {
		names = append(names, c.Name)
	}
	wantNames := []string{"node.0.numa_miss", "node.1.numa_miss", "node.MemFree", "node.cpu_busy"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("union columns = %q, want %q", names, wantNames)
	}
	if rec.Columns[3].Unit != "%" || rec.Columns[3].Max != 100 || rec.Columns[2].Kind != Gauge {
		t.Errorf("union column metadata = %+v", rec.Columns)
	}
	checkSamples(t, rec.Samples, wantSamples)
	if !reflect.DeepEqual(rec.Marks, wantMarks) {
		t.Errorf("marks = %+v\nwant %+v", rec.Marks, wantMarks)
	}
	if rec.End == nil || *rec.End != (End{Samples: 5, MissedDeadlines: 1, Dropped: 2}) {
		t.Errorf("End = %+v", rec.End)
	}
	if rec.Legacy {
		t.Error("Legacy set for a current recording")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"rec.jsonl", "rec.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path, false)
			if err != nil {
				t.Fatal(err)
			}
			if w.Path() != path {
				t.Errorf("Path() = %q, want %q", w.Path(), path)
			}
			writeTest(t, w)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if isZstd := bytes.HasPrefix(raw, zstdMagic); isZstd != strings.HasSuffix(name, ".zst") {
				t.Fatalf("zstd magic present = %v for %s", isZstd, name)
			}
			rec, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			checkTestRecording(t, rec)
		})
	}
}

// The exact text matters: other tools parse it.
func TestWireFormat(t *testing.T) {
	var buf bytes.Buffer
	writeTest(t, NewWriter(&buf, false))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], `{"type":"header","format":"numascope","version":1,"host":"testhost","kernel":"6.1.0-test","start":"2025-03-01T12:00:00.123456789Z","interval_s":0.1,"topology":{`) {
		t.Errorf("header line starts %.200s", lines[0])
	}
	for _, frag := range []string{
		`"sensors":[{"name":"node","present":true,"reason":"","sources":["0","1"]},{"name":"perf","present":false,"reason":"no PMU access","sources":[]}]`,
		`{"name":"node.1.numa_miss","sensor":"node","event":"numa_miss","sources":["1"],"unit":"pages","kind":"counter","desc":"allocations that missed"}`,
		`"max":2147483648}`,
		`"command":["stream","-n","4"]}`,
	} {
		if !strings.Contains(lines[0], frag) {
			t.Errorf("header line lacks %s", frag)
		}
	}
	want := []string{
		`[0.1,1,2.5,1073741824]`,
		`{"type":"label","t":0.15,"text":"phase \"2\"\n\u003cb\u003e"}`,
		`[0.2,0,null,1.5e-7]`,
		`{"type":"interval","t":0.25,"interval_s":0.001}`,
		`{"type":"pause","t":0.26}`,
		`{"type":"resume","t":0.27}`,
		`[0.3,-3,123456789012,0.333333333]`,
		`{"type":"columns","t":0.35,"columns":[{"name":"node.MemFree","sensor":"node","event":"MemFree","sources":["0","1"],"unit":"bytes","kind":"gauge","desc":""},{"name":"node.1.numa_miss","sensor":"node","event":"numa_miss","sources":["1"],"unit":"pages","kind":"counter","desc":""},{"name":"node.cpu_busy","sensor":"node","event":"cpu_busy","sources":["0","1"],"unit":"%","kind":"gauge","desc":"","max":100}]}`,
		`[0.4,500000000,7,99.5]`,
		`[0.5,null,8,12.25]`,
		`{"type":"end","t":0.5,"samples":5,"missed_deadlines":1,"dropped":2}`,
	}
	if !reflect.DeepEqual(lines[1:], want) {
		t.Errorf("lines after the header:\n%s\nwant\n%s", strings.Join(lines[1:], "\n"), strings.Join(want, "\n"))
	}
}

func TestWriterMisuse(t *testing.T) {
	w := NewWriter(io.Discard, false)
	if err := w.WriteSample(0, nil); err == nil || !strings.Contains(err.Error(), "before WriteHeader") {
		t.Errorf("WriteSample before header: %v", err)
	}
	h := testHeader()
	h.Columns = append(h.Columns, h.Columns[0])
	if err := w.WriteHeader(h); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate column: %v", err)
	}
	if err := w.WriteHeader(testHeader()); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSample(0, []float64{1}); err == nil || !strings.Contains(err.Error(), "1 values for 3 columns") {
		t.Errorf("short sample: %v", err)
	}
	if err := w.Close(End{}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteLabel(0, "late"); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("label after Close: %v", err)
	}
	if err := w.Close(End{}); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, syscall.ENOSPC
	}
	f.n--
	return len(p), nil
}

func TestWriterErrorIsSticky(t *testing.T) {
	w := NewWriter(&failWriter{n: 0}, false)
	if err := w.WriteHeader(testHeader()); err != nil {
		t.Fatal(err) // buffered
	}
	if err := w.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush = %v, want ENOSPC", err)
	}
	if err := w.WriteSample(0, []float64{1, 2, 3}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("WriteSample after failure = %v", err)
	}
	if err := w.Close(End{}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close after failure = %v", err)
	}
}

func TestCreate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.jsonl")
	w, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	writeTest(t, w)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}

	t.Run("existing", func(t *testing.T) {
		_, err := Create(path, false)
		if err == nil {
			t.Fatal("Create overwrote an existing file")
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "use --force to overwrite") || !errors.Is(err, fs.ErrExist) {
			t.Errorf("error %q should name the file and suggest --force", err)
		}
		if rec, err := Load(path); err != nil || len(rec.Samples) != 5 {
			t.Errorf("refused Create damaged the file: %v", err)
		}
	})
	t.Run("force", func(t *testing.T) {
		w, err := Create(path, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteHeader(testHeader()); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(End{}); err != nil {
			t.Fatal(err)
		}
		rec, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Samples) != 0 || rec.End == nil {
			t.Errorf("forced Create did not truncate: %d samples", len(rec.Samples))
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		// A path under a regular file fails even for root.
		bad := filepath.Join(path, "sub", "rec.jsonl")
		_, err := Create(bad, false)
		if err == nil {
			t.Fatal("Create succeeded under a regular file")
		}
		if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a directory") || !strings.Contains(err.Error(), "check that its directory exists") {
			t.Errorf("unclear error: %q", err)
		}
		if strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("error is not one line: %q", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		for _, force := range []bool{true, false} {
			_, err := Create(dir, force)
			if err == nil || !strings.Contains(err.Error(), "is a directory; give a file name") || strings.Contains(err.Error(), "--force") {
				t.Errorf("Create on a directory (force %v): %v", force, err)
			}
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "nope.jsonl"))
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "nope.jsonl") {
			t.Errorf("Load of a missing file: %v", err)
		}
	})
}
