package web

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/numascope/numascope/internal/recording"
)

// hostRec is a recording of host starting at start, with n samples of
// cols columns every 10 ms.
func hostRec(host string, start time.Time, n, cols int) *recording.Recording {
	r := &recording.Recording{Header: recording.Header{Host: host, Kernel: "6.1", Start: start}}
	for i := 0; i < cols; i++ {
		r.Columns = append(r.Columns, recording.Column{Name: "s.e" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Kind: recording.Gauge})
	}
	for k := 0; k < n; k++ {
		v := make([]float64, cols)
		for i := range v {
			v[i] = float64(k + i)
		}
		r.Samples = append(r.Samples, recording.Sample{T: float64(k+1) * 0.01, V: v})
	}
	return r
}

// TestHostsHello serves two hosts' recordings, the second starting 2.5 s
// after the first: the hello places each at its start's offset, keeps a
// short recording whole and decimates a long one to the page's budget,
// sends a hostile host name as it is (no HTML escaping), answers no
// request, and needs the token like every server.
func TestHostsHello(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 2, 3, 4, 123456789, time.UTC)
	evil := `<img src=x onerror=alert(1)>`
	recs := []*recording.Recording{
		hostRec("late", t0.Add(2500*time.Millisecond), 50, 3),
		hostRec(evil, t0, 100000, 3),
	}
	hs, err := NewHosts(Options{Listen: "127.0.0.1:0"}, recs, []string{"late.jsonl", "early.jsonl.zst"})
	if err != nil {
		t.Fatal(err)
	}
	if recs[1].Samples != nil {
		t.Errorf("the full-resolution samples are still held after decimation")
	}
	if !strings.Contains(string(hs.hello), `"host":"`+evil+`"`) {
		t.Errorf("the host name is not sent as it is: %.300s", hs.hello)
	}
	serveUntilCleanup(t, hs.Server)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := websocket.Dial(ctx, wsURL(hs.Server, "wrong"), nil); err == nil {
		t.Fatal("a client without the token was served")
	}

	c := dial(t, hs.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if h["mode"] != "hosts" || h["start"] != t0.Format(time.RFC3339Nano) {
		t.Fatalf("hello mode %v start %v", h["mode"], h["start"])
	}
	hosts := h["hosts"].([]any)
	if len(hosts) != 2 {
		t.Fatalf("%d hosts", len(hosts))
	}
	late, early := hosts[0].(map[string]any), hosts[1].(map[string]any)
	if late["host"] != "late" || late["offset_s"].(float64) != 2.5 || late["file"] != "late.jsonl" {
		t.Errorf("late host: %v %v %v", late["host"], late["offset_s"], late["file"])
	}
	if early["offset_s"].(float64) != 0 || early["samples"].(float64) != 100000 || math.Abs(early["duration_s"].(float64)-1000) > 1e-9 {
		t.Errorf("early host: offset %v samples %v duration %v", early["offset_s"], early["samples"], early["duration_s"])
	}
	ld, ed := late["data"].(map[string]any), early["data"].(map[string]any)
	if ld["decimated"] != false || len(ld["samples"].([]any)) != 50 {
		t.Errorf("the short recording: decimated %v, %d rows", ld["decimated"], len(ld["samples"].([]any)))
	}
	if rows := ed["samples"].([]any); ed["decimated"] != true || len(rows) > hostPoints || len(rows) < hostPoints/2 {
		t.Errorf("the long recording: decimated %v, %d rows (budget %d)", ed["decimated"], len(rows), hostPoints)
	} else if last := rows[len(rows)-1].([]any); last[0].(float64) != 1000 || last[1].(float64) != 99999 {
		t.Errorf("the last decimated row %v, want the last sample (t 1000, value 99999)", last)
	}

	c.Send(`{"type":"range","id":7,"t0":0,"t1":1}`)
	e := c.Next("error", typeIs("error"))
	if e["id"].(float64) != 7 || !strings.Contains(e["error"].(string), "answer no requests") {
		t.Errorf("range on the hosts page: %v", e)
	}
}

// TestHostsBudget: many columns lower the points per host so that the
// hello stays bounded; beyond the least worth drawing, a clear error.
func TestHostsBudget(t *testing.T) {
	t0 := time.Now()
	recs := []*recording.Recording{hostRec("a", t0, 5000, 200), hostRec("b", t0, 5000, 200)}
	hs, err := NewHosts(Options{}, recs, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs.hello) > 16<<20 {
		t.Errorf("hello of %d bytes, over a client's queue", len(hs.hello))
	}
	many := make([]*recording.Recording, 8)
	files := make([]string, len(many))
	for i := range many {
		many[i] = hostRec("h", t0, 10, 2000)
		files[i] = "f"
	}
	if _, err := NewHosts(Options{}, many, files); err == nil || !strings.Contains(err.Error(), "too many for one page") {
		t.Errorf("8 × 2000 columns: %v", err)
	}
	over := make([]*recording.Recording, MaxHosts+1)
	for i := range over {
		over[i] = hostRec("h", t0, 1, 1)
	}
	if _, err := NewHosts(Options{}, over, make([]string, len(over))); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d recordings: %v", len(over), err)
	}
}

// TestHostsNeedStart: a recording without a wall-clock start cannot be
// placed on the shared axis: a one-line error naming its file.
func TestHostsNeedStart(t *testing.T) {
	recs := []*recording.Recording{hostRec("a", time.Now(), 5, 1), hostRec("b", time.Time{}, 5, 1)}
	_, err := NewHosts(Options{}, recs, []string{"a.jsonl", "old.jsonl"})
	if err == nil || !strings.HasPrefix(err.Error(), "old.jsonl: ") || !strings.Contains(err.Error(), "no wall-clock start") {
		t.Errorf("NewHosts without a start: %v", err)
	}
}
