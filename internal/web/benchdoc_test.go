package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/bench"
)

// fixtureBench is a synthetic 2 × 3 bench document (node 2 CPU-less, one
// pair not measured) with the topology, rated values and the loaded
// section numascope bench does not write yet; testdata/bench/view/README.md.
var fixtureBench = filepath.Join("..", "..", "testdata", "bench", "view", "2x3-loaded.json")

func startBench(t *testing.T, opt Options, file string, body []byte) *Bench {
	t.Helper()
	if opt.Listen == "" {
		opt.Listen = "127.0.0.1:0"
	}
	b, err := NewBench(opt, file, body)
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, b)
	return b
}

// benchResult is what numascope bench writes for a 2 × 2 run with one pair
// skipped, built from internal/bench's own types so that view keeps
// accepting what bench writes.
func benchResult() []byte {
	f := func(v float64) *float64 { return &v }
	m := &bench.Matrix{
		Initiators: []int{0, 1}, Targets: []int{0, 3},
		Matrix:  [][]*float64{{f(90), nil}, {f(140), f(300)}},
		Samples: [][][]float64{{{89, 90, 91}, {}}, {{139, 140, 150}, {300, 300, 301}}},
		CPUs:    [][]int{{0}, {1}}, Repeat: 3,
	}
	m.Median, m.Min, m.Max = m.Matrix, m.Matrix, m.Matrix
	res := bench.Result{
		Latency: m, Rated: &bench.Rated{Initiators: []int{0, 1}, Targets: []int{0, 3}, NotReported: "no HMAT <here>"},
		Conditions: bench.Conditions{CPUModel: `<img src=x onerror="alert(1)">`, THP: "madvise"},
		Skipped:    []bench.Skip{{Kind: "latency", Initiator: 0, Target: 3, Reason: "node 3 is outside this process's cpuset"}},
		Notes:      []string{"a & b < c"},
	}
	// Names with < and & as they are (a file need not escape them).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestBenchServesTheDocumentInHello(t *testing.T) {
	body := benchResult()
	b := startBench(t, Options{}, "bench.json", body)
	for i := 0; i < 2; i++ {
		c := dial(t, b.Server, "")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, raw, err := c.Conn.Read(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		// Names reach the client as the file has them: no HTML escaping
		// (it would grow a hostile file sixfold), and JSON.parse reads them.
		if !bytes.Contains(raw, []byte(`"cpu_model":"<img src=x onerror=\"alert(1)\">"`)) || !bytes.Contains(raw, []byte(`"a & b < c"`)) {
			t.Fatalf("hello does not carry the names as they are: %.400s", raw)
		}
		var h struct {
			Type, Mode, File string
			Bench            json.RawMessage
		}
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		if h.Type != "hello" || h.Mode != "bench" || h.File != "bench.json" {
			t.Fatalf("hello %.300s", raw)
		}
		var got, want any
		_ = json.Unmarshal(h.Bench, &got)
		_ = json.Unmarshal(body, &want)
		if g, w := MustJSON(got), MustJSON(want); !bytes.Equal(g, w) {
			t.Fatalf("bench in hello:\n%s\nwant\n%s", g, w)
		}
		// Nothing to ask for: an error reply naming the request, and the connection stays.
		c.Send(`{"type":"range","id":7}`)
		e := c.Next("error", typeIs("error"))
		if !strings.Contains(e["error"].(string), "a bench document answers no requests") || e["id"].(float64) != 7 {
			t.Fatalf("error %v", e)
		}
		c.Send(`{"type":"source","file":"/etc/shadow"}`)
		c.Next("error", typeIs("error"))
	}
}

// TestBenchTokenRules: a bench document is served under the same token
// rules as everything else: none, a wrong or a truncated token is a 401.
func TestBenchTokenRules(t *testing.T) {
	b := startBench(t, Options{}, "bench.json", benchResult())
	if !b.GeneratedToken || len(b.Token()) < 32 || !strings.Contains(b.URL(), "?token="+b.Token()) {
		t.Fatalf("token %q, URL %s", b.Token(), b.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tok := range []string{"", "wrong", b.Token()[:len(b.Token())-1]} {
		_, resp, err := websocket.Dial(ctx, wsURL(b.Server, tok), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: err %v, resp %v; want 401", tok, err, resp)
		}
	}
	dial(t, b.Server, "").Next("hello", typeIs("hello"))
}

func TestBenchFixtureLoads(t *testing.T) {
	body, err := ReadBench(fixtureBench)
	if err != nil {
		t.Fatal(err)
	}
	b := startBench(t, Options{}, fixtureBench, body)
	h := dial(t, b.Server, "").Next("hello", typeIs("hello"))
	doc := h["bench"].(map[string]any)
	pairs := doc["loaded"].(map[string]any)["pairs"].([]any)
	if len(pairs) != 6 || len(doc["latency_ns"].(map[string]any)["matrix"].([]any)) != 2 {
		t.Fatalf("fixture in hello: %d loaded pairs", len(pairs))
	}
}

// TestNewBenchRefusesMalformed: what the page could not draw is an error
// naming the file and what is wrong, before anything is served.
func TestNewBenchRefusesMalformed(t *testing.T) {
	for body, want := range map[string]string{
		``:                  "not valid JSON",
		`{"latency_ns": {`:  "not valid JSON",
		`[1, 2]`:            "want one JSON object",
		`{"placement": {}}`: `none of "latency_ns", "bandwidth_mbs", "loaded" and "c2c_ns"`,
		`{"c2c_ns": {"cpus": [0, 1], "matrix": [[null, 1]]}}`:      "c2c_ns: the matrix has 1 rows for 2 CPUs",
		`{"c2c_ns": {"cpus": [0, 1], "matrix": [[null, 1], [1]]}}`: "c2c_ns: row 1 (CPU 1) has 1 values for 2 CPUs",
		`{"c2c_ns": {"cpus": ["<b>0</b>"], "matrix": [[null]]}}`:   "c2c_ns: json: cannot unmarshal string",
		`{"latency_ns": null}`: `none of "latency_ns"`,
		`{"latency_ns": [1]}`:  "latency_ns: json: cannot unmarshal array",
		`{"latency_ns": {"initiators": [0, 1], "targets": [0], "matrix": [[1]]}}`:                            "latency_ns: the matrix has 1 rows for 2 initiators",
		`{"bandwidth_mbs": {"initiators": [0], "targets": [0, 1], "matrix": [[1]]}}`:                         "bandwidth_mbs: row 0 (initiator 0) has 1 values for 2 targets",
		`{"latency_ns": {"initiators": ["<b>0</b>"], "targets": [0], "matrix": [[1]]}}`:                      "latency_ns: json: cannot unmarshal string",
		`{"latency_ns": {"initiators": [0], "targets": [0], "matrix": [["fast"]]}}`:                          "latency_ns: json: cannot unmarshal string",
		`{"loaded": {"pairs": [{"initiator": 0, "target": 1, "bandwidth_mbs": [1, 2], "latency_ns": [3]}]}}`: "loaded: pair 0 (node 0 -> node 1) has 2 bandwidths for 1 latencies",
		`{"loaded": {"pairs": [{"bandwidth_mbs": [], "latency_ns": []}]}}`:                                   "loaded: pair 0 names no initiator or target",
	} {
		_, err := NewBench(Options{}, "b.json", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "b.json: ") {
			t.Errorf("%s: err %v, want %q", body, err, want)
		}
	}
	if _, err := NewBench(Options{}, "b.json", make([]byte, MaxBenchFileBytes+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("over the limit: %v", err)
	}
}

// TestReadBenchBounded: a file over MaxBenchFileBytes is refused with a clear
// error without being read (a 4 GiB sparse file costs no memory), and a
// FIFO that never ends is read no further than the bound.
func TestReadBenchBounded(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadBench(huge)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s: over the %d MiB limit for a bench document", huge, MaxBenchFileBytes>>20)) {
		t.Fatalf("huge file: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing a 4 GiB file allocated %d bytes", grew)
	}
	if _, err := ReadBench(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("a missing file is no error")
	}

	fifo := filepath.Join(dir, "fifo.json")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		chunk := bytes.Repeat([]byte(" "), 1<<16)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()
	runtime.ReadMemStats(&before)
	_, err = ReadBench(fifo)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over the %d MiB limit", MaxBenchFileBytes>>20)) {
		t.Fatalf("endless FIFO: %v", err)
	}
	// The file is streamed: what is allocated is the decoder's buffer,
	// not the FIFO's contents.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("reading an endless FIFO allocated %d MiB", grew>>20)
	}
}
