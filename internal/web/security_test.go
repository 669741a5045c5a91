package web

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/loopback"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/web/webtest"
)

// TestHelloAlwaysFirst: on every kind of server, a client that sends
// something at once (before reading) still gets the hello first, never
// the reply to its message (the live server's test is internal/live's).
func TestHelloAlwaysFirst(t *testing.T) {
	recFile := filepath.Join(t.TempDir(), "r.jsonl")
	writeRecording(t, recFile, 100)
	v := startView(t, recFile)
	pr := startProfile(t, fixtureProfile, nil)
	rp := startReport(t)
	bn := startBench(t, Options{}, "bench.json", benchResult())
	for name, s := range map[string]*Server{"view": v.Server, "profile": pr.Server, "experiment": rp.Server, "bench": bn.Server} {
		webtest.HelloFirst(t, name, s.Addr().String(), s.Token())
	}
}

func startReport(t *testing.T) *Report {
	t.Helper()
	return serveReport(t, "e.toml", map[string]any{"analysis": map[string]any{}, "runs": []any{}})
}

// serveReport serves an experiment report of payload until the test ends.
func serveReport(t *testing.T, name string, payload map[string]any) *Report {
	t.Helper()
	return serveReportWith(t, Options{}, name, payload)
}

// serveReportWith is serveReport with options: a server whose backend
// sends one hello, for the tests of what every server does.
func serveReportWith(t *testing.T, opt Options, name string, payload map[string]any) *Report {
	t.Helper()
	if opt.Listen == "" {
		opt.Listen = "127.0.0.1:0"
	}
	r, err := NewReport(opt, name, payload)
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, r)
	return r
}

// startServer serves a document until the test ends, for the tests of what
// every server does (tokens, limits, /metrics, the processes page), which
// the live server does alike: its own tests are internal/live's.
func startServer(t *testing.T, opt Options) *Report {
	t.Helper()
	return serveReportWith(t, opt, "e.toml", map[string]any{"analysis": map[string]any{}, "runs": []any{}})
}

// TestUnknownTypeNeverListsItself: the error for a message type a server
// does not answer lists the types it does, never that same type (the live
// server's test is internal/live's).
func TestUnknownTypeNeverListsItself(t *testing.T) {
	recFile := filepath.Join(t.TempDir(), "r.jsonl")
	writeRecording(t, recFile, 100)
	v := startView(t, recFile)
	pr := startProfile(t, fixtureProfile, nil)
	types := append(strings.Split(RequestTypes, ", "), "fifo_record", "bogus", "hello", "batch")
	for name, s := range map[string]*Server{"view": v.Server, "profile": pr.Server} {
		webtest.UnknownTypesNotListed(t, name, dial(t, s, ""), types)
	}
}

// TestViewNonFiniteValues: a recording holding 1e999 (beyond float64) and
// 1e308 (whose sums overflow) loads with the 1e999 values reported as
// skipped, and totals and range requests over it answer, with the
// overflowed sums as null, instead of panicking the handler.
func TestViewNonFiniteValues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "big.jsonl")
	lines := []string{
		`{"type":"header","format":"numascope","version":1,"host":"h","start":"2026-01-01T00:00:00Z","interval_s":1,` +
			`"columns":[{"name":"a.x","sensor":"a","event":"x","kind":"counter"},{"name":"a.y","sensor":"a","event":"y","kind":"gauge"}]}`,
		`[0,1e308,1e308]`,
		`[1,1e308,1e999]`,
		`[2,1e999,5]`,
		`[3,1e308,1e308]`,
		`{"type":"end","samples":4}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := recording.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Header.Version == 0 {
		t.Fatalf("header not read: %+v", rec.Header)
	}
	v := startView(t, file)
	c := dial(t, v.Server, "")
	h := c.Next("hello", typeIs("hello"))
	skipped := fmt.Sprint(h["skipped"])
	for _, want := range []string{"line 3: the value of a.y is out of range", "line 4: the value of a.x is out of range"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("hello skipped %s, want %q", skipped, want)
		}
	}
	c.Send(`{"type":"totals","id":1,"t0":0,"t1":3,"sums":[{"name":"both","columns":["a.x","a.y"]}]}`)
	m := c.Next("totals", func(m map[string]any) bool { return m["id"] == float64(1) })
	if m["type"] != "totals" {
		t.Fatalf("totals: %v", m)
	}
	cols := m["columns"].([]any)
	x := cols[0].(map[string]any)
	if x["n"] != float64(3) || x["count"] != nil || x["overflow"] != true || x["max"] != 1e308 {
		t.Errorf("a.x totals %v: want 3 values, the count (overflowed) null, max 1e308", x)
	}
	sum := m["sums"].([]any)[0].(map[string]any)
	if sum["max"] != nil || sum["overflow"] != true {
		t.Errorf("sum totals %v: 1e308+1e308 overflows, want max null and overflow", sum)
	}
	c.Send(`{"type":"range","id":2}`)
	r := c.Next("range", func(m map[string]any) bool { return m["id"] == float64(2) })
	if r["type"] != "range" || len(r["samples"].([]any)) != 4 {
		t.Errorf("range: %v", r)
	}
}

// TestLoopbackByDefault: a server given no address binds loopback only.
func TestLoopbackByDefault(t *testing.T) {
	var o Options
	o.defaults()
	if !loopback.Only(o.Listen) {
		t.Fatalf("default listen %s is not loopback", o.Listen)
	}
}
