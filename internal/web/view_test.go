package web

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// writeRecording writes n samples 1 ms apart of two columns: a ramp and a
// flat line with one spike up and one down.
func writeRecording(t testing.TB, path string, n int) {
	t.Helper()
	w, err := recording.Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	h := recording.Header{Host: "h", Interval: 0.001, Columns: []recording.Column{
		{Name: "a.ramp", Sensor: "a", Event: "ramp", Kind: "gauge"},
		{Name: "a.spiky", Sensor: "a", Event: "spiky", Kind: "counter", Max: 1000},
	}}
	if err := w.WriteHeader(&h); err != nil {
		t.Fatal(err)
	}
	v := make([]float64, 2)
	for i := 0; i < n; i++ {
		v[0], v[1] = float64(i), 10
		switch i {
		case 4321:
			v[1] = 999
		case 7777:
			v[1] = -5
		}
		if err := w.WriteSample(time.Duration(i)*time.Millisecond, v); err != nil {
			t.Fatal(err)
		}
		if i == 5000 {
			_ = w.WriteLabel(time.Duration(i)*time.Millisecond, "half")
		}
	}
	if err := w.Close(recording.End{Samples: uint64(n)}); err != nil {
		t.Fatal(err)
	}
}

func startView(t *testing.T, path string) *View {
	rec, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	v := NewView(Options{Listen: "127.0.0.1:0"}, rec, path)
	serveUntilCleanup(t, v)
	return v
}

func TestViewDecimatesKeepingPeaks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl.zst")
	writeRecording(t, path, 10000)
	v := startView(t, path)
	c := dial(t, v.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if h["mode"] != "view" || h["samples"].(float64) != 10000 || h["duration_s"].(float64) != 9.999 {
		t.Fatalf("hello %v", h)
	}
	if marks := h["marks"].([]any); len(marks) != 1 || marks[0].(map[string]any)["text"] != "half" {
		t.Fatalf("marks %v", marks)
	}
	c.Send(`{"type":"range","id":1,"points":200}`)
	m := c.Next("range", typeIs("range"))
	rows := m["samples"].([]any)
	if !m["decimated"].(bool) || len(rows) > 200 || len(rows) < 150 {
		t.Fatalf("whole range at 200 points: decimated %v, %d rows", m["decimated"], len(rows))
	}
	mn, mx := 1e9, -1e9
	prev := -1.0
	for _, r := range rows {
		row := r.([]any)
		if tt := row[0].(float64); tt < prev {
			t.Fatalf("times not ascending: %v after %v", tt, prev)
		} else {
			prev = tt
		}
		x := row[2].(float64)
		mn, mx = min(mn, x), max(mx, x)
	}
	if mn != -5 || mx != 999 {
		t.Fatalf("decimation lost the spikes: min %v max %v", mn, mx)
	}
	if first, last := rows[0].([]any), rows[len(rows)-1].([]any); first[1].(float64) != 0 || last[1].(float64) != 9999 {
		t.Fatalf("ends %v .. %v", first, last)
	}
	// A narrow window comes back at full resolution, with one sample either side.
	c.Send(`{"type":"range","id":2,"t0":4.3,"t1":4.35,"points":1000}`)
	m = c.Next("range", typeIs("range"))
	rows = m["samples"].([]any)
	if m["decimated"].(bool) || len(rows) != 53 {
		t.Fatalf("narrow window: decimated %v, %d rows (want 53)", m["decimated"], len(rows))
	}
	// Totals at full resolution: 1001 samples of 10/s, 1 ms each, one of them 999/s.
	c.Send(`{"type":"totals","t0":4,"t1":5}`)
	m = c.Next("totals", typeIs("totals"))
	spiky := m["columns"].([]any)[1].(map[string]any)
	if spiky["n"].(float64) != 1001 || spiky["max"].(float64) != 999 {
		t.Fatalf("totals %v", spiky)
	}
	if got, want := spiky["count"].(float64), 1001*10*0.001+0.989; math.Abs(got-want) > 1e-6 {
		t.Fatalf("count %v, want %v", got, want)
	}
	if ramp := m["columns"].([]any)[0].(map[string]any); ramp["count"] != nil || ramp["mean"].(float64) != 4500 {
		t.Fatalf("gauge totals %v", ramp)
	}
	// A sum over columns (the summed view's traces) is totalled sample by
	// sample: its max is 4321+999 at t=4.321, not the sum of the maxima.
	c.Send(`{"type":"totals","t0":4,"t1":5,"sums":[{"name":"a.both","columns":["a.spiky","a.ramp"]}]}`)
	m = c.Next("totals with sums", typeIs("totals"))
	sums, _ := m["sums"].([]any)
	if len(sums) != 1 {
		t.Fatalf("sums %v", m["sums"])
	}
	both := sums[0].(map[string]any)
	if both["name"] != "a.both" || both["n"].(float64) != 1001 || both["max"].(float64) != 4321+999 {
		t.Fatalf("sum totals %v", both)
	}
	// Counter (the first column's kind): the mean rate is the integral over the time covered.
	if got, want := both["mean"].(float64), spiky["mean"].(float64)+4500; math.Abs(got-want) > 1e-6 {
		t.Fatalf("sum mean %v, want %v", got, want)
	}
	c.Send(`{"type":"totals","t0":4,"t1":5,"sums":[{"name":"x","columns":["a.nope"]}]}`)
	if e := c.Next("error", typeIs("error")); !strings.Contains(e["error"].(string), `no column "a.nope"`) {
		t.Fatalf("unknown column in a sum: %v", e)
	}
	c.Send(`{"type":"range","t0":5,"t1":4}`)
	if e := c.Next("error", typeIs("error")); e["error"] == nil {
		t.Fatal("no error for t1 < t0")
	}
	c.Send(`{"type":"label","text":"x"}`)
	if e := c.Next("error", typeIs("error")); e["error"] == nil {
		t.Fatal("label accepted in view mode")
	}
}

func TestViewLegacyRecording(t *testing.T) {
	src := "../recording/testdata/legacy-numaconnect2.json"
	if _, err := os.Stat(src); err != nil {
		t.Fatal(err) // a fixture of this repository: its absence is a failure, not a reason to skip
	}
	v := startView(t, src)
	c := dial(t, v.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if !h["legacy"].(bool) || len(h["columns"].([]any)) == 0 {
		t.Fatalf("legacy hello %v", h)
	}
	c.Send(`{"type":"range"}`)
	if rows := c.Next("range", typeIs("range"))["samples"].([]any); len(rows) == 0 {
		t.Fatal("no samples")
	}
}

func BenchmarkViewRange(b *testing.B) {
	// 10 minutes at 1 kHz of 2 columns; the range cost scales with samples × columns.
	path := filepath.Join(b.TempDir(), "r.jsonl")
	writeRecording(b, path, 600000)
	rec, err := recording.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	v := NewView(Options{}, rec, path)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = v.encodeRange(nil, 0, len(v.t), 2000)
	}
}

// serveUntilCleanup listens and serves srv until the test ends.
func serveUntilCleanup(t *testing.T, srv interface {
	Listen() error
	Serve(context.Context) error
}) {
	t.Helper()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
