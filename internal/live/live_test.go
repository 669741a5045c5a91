package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/numascope/numascope/internal/ctl"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
	"github.com/numascope/numascope/internal/web"
)

// twonode is a real capture of a two-node machine's /sys and /proc.
const twonode = "../sensor/testdata/twonode"

type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logBuf) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func startLive(t *testing.T, opt web.Options, cfg sampling.Config) (*Live, *logBuf) {
	t.Helper()
	l, logs, _ := runLive(t, opt, cfg)
	return l, logs
}

// runLive starts a live server; stop ends it (and waits), as cleanup does.
func runLive(t *testing.T, opt web.Options, cfg sampling.Config) (*Live, *logBuf, func()) {
	t.Helper()
	// The two-node capture, unless the caller gave a catalog (and the
	// topology it was opened on).
	topo := cfg.Header.Topology
	if cfg.Catalog == nil {
		fs := sysfs.New(twonode)
		var err error
		if topo, err = topology.Discover(fs); err != nil {
			t.Fatal(err)
		}
		cat := sampler.Open(sensor.Env{FS: fs, Topology: topo})
		t.Cleanup(func() { cat.Close() })
		cfg.Catalog = cat
	}
	if cfg.Events == nil {
		cfg.Events = []string{"node.numa_hit", "node.numa_miss", "vmstat.pgfault"}
	}
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Millisecond
	}
	cfg.Header = recording.Header{Host: "fixture", Topology: topo}
	logs := &logBuf{}
	cfg.Errors = func(err error) { logs.add(err.Error()) }
	cfg.Notices = logs.add
	if opt.Listen == "" {
		opt.Listen = "127.0.0.1:0"
	}
	if opt.Batch == 0 {
		opt.Batch = 50 * time.Millisecond
	}
	opt.Log = logs.add
	l, err := NewLive(opt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return l, logs, stop
}

func columnNames(v any) []string {
	var out []string
	for _, c := range v.([]any) {
		out = append(out, c.(map[string]any)["name"].(string))
	}
	return out
}

func TestHelloAndBatches(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	c := dial(t, l.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if h["protocol"].(float64) != web.ProtocolVersion || h["mode"] != "live" {
		t.Fatalf("hello = %v", h)
	}
	if got := columnNames(h["columns"]); strings.Join(got, ",") != "node.numa_hit,node.numa_miss,vmstat.pgfault" {
		t.Fatalf("columns = %v", got)
	}
	if topo := h["topology"].(map[string]any); len(topo["nodes"].([]any)) != 2 {
		t.Fatalf("topology has %d nodes, want 2", len(topo["nodes"].([]any)))
	}
	b := c.Next("batch", typeIs("batch"))
	rows := b["samples"].([]any)
	if len(rows) == 0 {
		t.Fatal("empty batch")
	}
	row := rows[0].([]any)
	if len(row) != 4 {
		t.Fatalf("sample row %v: want t and 3 values", row)
	}
	if _, ok := row[0].(float64); !ok {
		t.Fatalf("time %v is not a number", row[0])
	}
}

func TestSeveralClientsShareInterval(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{Interval: 20 * time.Millisecond})
	var cs []*wsClient
	for i := 0; i < 3; i++ {
		c := dial(t, l.Server, "")
		h := c.Next("hello", typeIs("hello"))
		if iv := h["state"].(map[string]any)["interval_s"].(float64); iv != 0.02 {
			t.Fatalf("client %d: interval %v, want 0.02", i, iv)
		}
		cs = append(cs, c)
	}
	cs[1].Send(`{"type":"interval","interval":"5ms","id":7}`)
	ok := cs[1].Next("ok", func(m map[string]any) bool { return m["type"] == "ok" || m["type"] == "error" })
	if ok["type"] != "ok" || ok["id"].(float64) != 7 {
		t.Fatalf("reply = %v", ok)
	}
	for i, c := range cs {
		m := c.Next("interval mark", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "interval" })
		if m["interval_s"].(float64) != 0.005 {
			t.Fatalf("client %d: mark %v", i, m)
		}
		st := c.Next("state", typeIs("state"))
		if st["state"].(map[string]any)["interval_s"].(float64) != 0.005 {
			t.Fatalf("client %d: state %v", i, st)
		}
		// Samples after the change are 5 ms apart: the closest two of a
		// batch, since on a busy machine the sampler may be preempted past
		// a deadline or two (it then skips them: a gap is never shorter
		// than the interval), as a run of CI beside four busy loops showed
		// (one gap of 36 ms). At the old 20 ms no two are closer than 20.
		b := c.Next("batch", func(m map[string]any) bool { return m["type"] == "batch" && len(m["samples"].([]any)) >= 4 })
		rows := b["samples"].([]any)
		closest := math.Inf(1)
		for k := 1; k < len(rows); k++ {
			closest = min(closest, rows[k].([]any)[0].(float64)-rows[k-1].([]any)[0].(float64))
		}
		if closest > 0.015 {
			t.Fatalf("client %d: the closest of %d samples %v s apart after switching to 5ms", i, len(rows), closest)
		}
	}
	if got := l.smp.Interval(); got != 5*time.Millisecond {
		t.Fatalf("sampler interval %v", got)
	}
}

func TestMalformedMessagesKeepConnection(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	cases := []struct{ msg, want string }{
		{`not json`, "malformed message"},
		{`{"type":"interval","interval":"1y"}`, "interval"},
		{`{"type":"bogus"}`, `unknown message type "bogus"`},
		{`{"interval":"1s"}`, `without "type"`},
		{`{"type":"label","txet":"x"}`, "unknown field"},
		{`{"type":"label"} {"type":"pause"}`, "more than one"},
		{`{"type":"enable","event":"nosuch_event_x"}`, "unknown event"},
		{`{"type":"disable","event":"node.numa_foreign"}`, "not enabled"},
		{`{"type":"record","path":"../escape.jsonl"}`, "no absolute paths"},
		{`{"type":"record","path":"/tmp/abs.jsonl"}`, "no absolute paths"},
		{`{"type":"label","text":"` + strings.Repeat("x", web.MaxMessage) + `"}`, "message too large"},
	}
	for _, tc := range cases {
		c.Send(tc.msg)
		m := c.Next("error", func(m map[string]any) bool { return m["type"] == "error" || m["type"] == "ok" })
		if m["type"] != "error" || !strings.Contains(m["error"].(string), tc.want) {
			t.Errorf("%.60q: reply %v, want an error containing %q", tc.msg, m, tc.want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Conn.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if m := c.Next("error", typeIs("error")); !strings.Contains(m["error"].(string), "binary") {
		t.Errorf("binary message: %v", m)
	}
	// The connection still works.
	c.Send(`{"type":"label","text":"still here","id":"x"}`)
	m := c.Next("label", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "label" })
	if m["text"] != "still here" {
		t.Fatalf("label mark %v", m)
	}
	// Columns unchanged by the rejected enable.
	if got := strings.Join(columnNames(mustCols(l)), ","); got != "node.numa_hit,node.numa_miss,vmstat.pgfault" {
		t.Fatalf("columns after errors: %s", got)
	}
}

func mustCols(l *Live) any {
	var v any
	_ = json.Unmarshal(web.MustJSON(l.cols), &v)
	return v
}

// slowConn opens a websocket by hand with a tiny receive buffer and never
// reads from it: a browser tab that hangs.
func slowConn(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /ws?token=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", token, addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %s", resp.Status)
	}
	return conn
}

func TestSlowClientIsDropped(t *testing.T) {
	l, logs := startLive(t, web.Options{Queue: 4, SendBuffer: 8192, Batch: 20 * time.Millisecond, WriteTimeout: time.Second},
		sampling.Config{Interval: time.Millisecond, Events: []string{"node.*", "vmstat.*"}, Discrete: true})
	fast := dial(t, l.Server, "")
	fast.Next("hello", typeIs("hello"))
	slowConn(t, l.Addr().String(), l.Token())
	before := l.smp.Stats().Samples
	deadline := time.Now().Add(20 * time.Second)
	for !logs.has("fell behind") && !logs.has("disconnected") {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled client was not dropped; log: %v", logs.lines)
		}
		// The healthy client keeps getting batches meanwhile.
		fast.Next("batch", typeIs("batch"))
	}
	// Sampling went on at full rate: the fast client still gets fresh batches.
	b := fast.Next("batch", typeIs("batch"))
	if len(b["samples"].([]any)) == 0 {
		t.Fatal("empty batch after the drop")
	}
	if after := l.smp.Stats().Samples; after <= before {
		t.Fatalf("sampling stalled: %d samples before, %d after", before, after)
	}
	if d := l.sink.Dropped(); d != 0 {
		t.Errorf("the hub lost %d samples while a client stalled", d)
	}
}

func TestTokenRequiredOffLoopback(t *testing.T) {
	l, _ := startLive(t, web.Options{Listen: "0.0.0.0:0"}, sampling.Config{})
	if !l.GeneratedToken || len(l.Token()) < 32 {
		t.Fatalf("binding 0.0.0.0 generated no token (%q)", l.Token())
	}
	if !strings.Contains(l.URL(), "?token="+l.Token()) {
		t.Fatalf("URL %s lacks the token", l.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tok := range []string{"", "wrong"} {
		_, resp, err := websocket.Dial(ctx, wsURL(l.Server, tok), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: err %v, resp %v; want 401", tok, err, resp)
		}
	}
	c := dial(t, l.Server, l.Token())
	c.Next("hello", typeIs("hello"))
}

// TestTokenRequiredOnLoopback: other local users reach 127.0.0.1 too, so a
// loopback server generates a token and refuses a websocket without it or
// with a wrong one; the printed URL carries it.
func TestTokenRequiredOnLoopback(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	if !l.GeneratedToken || len(l.Token()) < 32 || !strings.Contains(l.URL(), "?token="+l.Token()) {
		t.Fatalf("loopback server: token %q, URL %s", l.Token(), l.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tok := range []string{"", "wrong", l.Token()[:len(l.Token())-1]} {
		_, resp, err := websocket.Dial(ctx, wsURL(l.Server, tok), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: err %v, resp %v; want 401", tok, err, resp)
		}
	}
	// A plain HTTP request to /ws without the token: 401 too.
	r, err := http.Get("http://" + l.Addr().String() + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /ws without a token: %s", r.Status)
	}
	dial(t, l.Server, "").Next("hello", typeIs("hello"))
}

// TestNoTokenCookie (issue 28, finding 1): cookies are per host, not per
// port, so a cookie holding the token reached every other server on
// 127.0.0.1, another local user's included. No response sets a cookie
// holding anything, and a request is never authenticated by one: the token
// in a cookie, under the old name or any other, gets 401.
func TestNoTokenCookie(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	_, port, _ := net.SplitHostPort(l.Addr().String())
	base := "http://" + l.Addr().String()
	tok := l.Token()
	bearer := http.Header{"Authorization": {"Bearer " + tok}}
	for _, c := range []struct {
		path string
		h    http.Header
	}{
		{"/", nil}, {"/?token=" + tok, nil}, {"/index.html?token=" + tok, nil}, {"/", bearer},
		{"/ws?token=" + tok, nil}, {"/ws", bearer}, {"/ws", nil}, {"/api/processes?token=" + tok, nil},
	} {
		req, _ := http.NewRequest("GET", base+c.path, nil)
		if c.h != nil {
			req.Header = c.h
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("GET %s (headers %v): Set-Cookie %q; no response may set a cookie", c.path, c.h, sc)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range []string{"numascope-token-" + port, "numascope-token", "token"} {
		h := http.Header{"Cookie": {(&http.Cookie{Name: name, Value: tok}).String()}}
		_, resp, err := websocket.Dial(ctx, wsURL(l.Server, ""), &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("websocket with the token in cookie %s: err %v resp %v; want 401", name, err, resp)
		}
	}
	// The cookie an older numascope set is expired, not renewed: the
	// browser would keep sending it to every port of the host.
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.AddCookie(&http.Cookie{Name: "numascope-token-" + port, Value: tok})
	req.AddCookie(&http.Cookie{Name: "numascope-token-9999", Value: "x"})
	req.AddCookie(&http.Cookie{Name: "other-app", Value: "y"})
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	got := map[string]bool{}
	for _, c := range r.Cookies() {
		if c.Value != "" || c.MaxAge >= 0 {
			t.Errorf("a page load with an old token cookie set %q; want only expiries", c.String())
		}
		got[c.Name] = true
	}
	if !got["numascope-token-"+port] || !got["numascope-token-9999"] || got["other-app"] || len(got) != 2 {
		t.Errorf("expired %v; want the two numascope-token-PORT cookies and nothing else", got)
	}
}

// TestTokenInHeaderAndSubprotocol: the page sends the token as a websocket
// subprotocol (browsers cannot set headers on a websocket) and as
// "Authorization: Bearer" on fetches; the server echoes only the plain
// subprotocol, never the token; a wrong token is refused either way.
func TestTokenInHeaderAndSubprotocol(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tok := l.Token()
	conn, resp, err := websocket.Dial(ctx, wsURL(l.Server, ""), &websocket.DialOptions{Subprotocols: []string{web.Subprotocol, web.TokenSubprotocolPrefix + tok}})
	if err != nil {
		t.Fatalf("websocket with the token's subprotocol: %v", err)
	}
	if got := resp.Header.Values("Sec-WebSocket-Protocol"); conn.Subprotocol() != web.Subprotocol || len(got) != 1 || got[0] != web.Subprotocol {
		t.Fatalf("chosen subprotocol %q (header %q); want %q alone", conn.Subprotocol(), got, web.Subprotocol)
	}
	conn.SetReadLimit(64 << 20)
	(&wsClient{T: t, Conn: conn}).Next("hello", typeIs("hello"))
	conn.CloseNow()
	conn, _, err = websocket.Dial(ctx, wsURL(l.Server, ""), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatalf("websocket with Authorization: Bearer: %v", err)
	}
	conn.SetReadLimit(64 << 20)
	(&wsClient{T: t, Conn: conn}).Next("hello", typeIs("hello"))
	conn.CloseNow()
	for _, o := range []*websocket.DialOptions{
		{Subprotocols: []string{web.Subprotocol, web.TokenSubprotocolPrefix + "wrong"}},
		{Subprotocols: []string{web.Subprotocol, web.TokenSubprotocolPrefix + tok[1:]}},
		{Subprotocols: []string{web.Subprotocol, web.TokenSubprotocolPrefix}},
		{Subprotocols: []string{web.Subprotocol, tok}},
		{HTTPHeader: http.Header{"Authorization": {"Bearer wrong"}}},
		{HTTPHeader: http.Header{"Authorization": {"Bearer "}}},
		{HTTPHeader: http.Header{"Authorization": {"Basic " + tok}}},
		{HTTPHeader: http.Header{"Authorization": {tok}}},
	} {
		_, resp, err := websocket.Dial(ctx, wsURL(l.Server, ""), o)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%+v: err %v resp %v; want 401", o, err, resp)
		}
	}
}

func TestExplicitTokenOnLoopback(t *testing.T) {
	l, _ := startLive(t, web.Options{Token: "s3cret"}, sampling.Config{})
	if l.GeneratedToken {
		t.Fatal("generated a token although one was given")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, wsURL(l.Server, ""), nil); err == nil || resp.StatusCode != 401 {
		t.Fatalf("no token: err %v", err)
	}
	dial(t, l.Server, "s3cret").Next("hello", typeIs("hello"))
}

// TestNoToken: --no-token serves without a token on loopback (with the
// DNS-rebinding Host check), and is refused on any other bind.
func TestNoToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		s := web.NewServer(web.Options{Listen: addr, NoToken: true}, &web.Report{})
		err := s.Listen()
		if err == nil {
			t.Fatalf("--no-token on %s accepted", addr)
		}
		if !strings.Contains(err.Error(), "--no-token") || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--no-token on %s: %v", addr, err)
		}
	}
	if err := web.NewServer(web.Options{Listen: "127.0.0.1:0", NoToken: true, Token: "x"}, &web.Report{}).Listen(); err == nil {
		t.Error("--no-token with a token accepted")
	}
	if err := web.NewServer(web.Options{Listen: "127.0.0.1:0", Token: "a b"}, &web.Report{}).Listen(); err == nil || !strings.Contains(err.Error(), "letters, digits") {
		t.Errorf("a token with a space: %v", err)
	}
	l, _ := startLive(t, web.Options{NoToken: true}, sampling.Config{})
	if l.Token() != "" || strings.Contains(l.URL(), "token") {
		t.Fatalf("--no-token: token %q, URL %s", l.Token(), l.URL())
	}
	dial(t, l.Server, "").Next("hello", typeIs("hello"))
	// The page offers the subprotocol without a token part: it is echoed.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(l.Server, ""), &websocket.DialOptions{Subprotocols: []string{web.Subprotocol}})
	if err != nil || conn.Subprotocol() != web.Subprotocol {
		t.Fatalf("--no-token, subprotocol %q offered: %v", web.Subprotocol, err)
	}
	conn.CloseNow()
	// DNS rebinding: a foreign Host name is refused without a token.
	req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/", nil)
	req.Host = "evil.example"
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Fatalf("Host evil.example: %s, want 403", r.Status)
	}
}

func TestOriginAndHostChecked(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{"Origin": {"http://evil.example"}}
	_, resp, err := websocket.Dial(ctx, wsURL(l.Server, l.Token()), &websocket.DialOptions{HTTPHeader: h})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin websocket: err %v resp %v; want 403", err, resp)
	}
	same := http.Header{"Origin": {"http://" + l.Addr().String()}}
	conn, _, err := websocket.Dial(ctx, wsURL(l.Server, l.Token()), &websocket.DialOptions{HTTPHeader: same})
	if err != nil {
		t.Fatalf("same-origin websocket refused: %v", err)
	}
	conn.CloseNow()
	r, err := http.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 || r.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /: %s, CSP %q", r.Status, r.Header.Get("Content-Security-Policy"))
	}
}

func TestEventsDiscreteAndRecording(t *testing.T) {
	dir := t.TempDir()
	l, _ := startLive(t, web.Options{RecordDir: dir}, sampling.Config{})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	c.Send(`{"type":"record","path":"r.jsonl"}`)
	c.Next("recording state", func(m map[string]any) bool {
		return m["type"] == "state" && m["state"].(map[string]any)["recording"] == filepath.Join(dir, "r.jsonl")
	})
	c.Next("batch", typeIs("batch"))
	c.Send(`{"type":"disable","event":"node.numa_miss"}`)
	m := c.Next("columns", typeIs("columns"))
	if got := strings.Join(columnNames(m["columns"]), ","); got != "node.numa_hit,vmstat.pgfault" {
		t.Fatalf("after disable: %s", got)
	}
	c.Send(`{"type":"discrete","discrete":true}`)
	m = c.Next("columns", typeIs("columns"))
	if got := strings.Join(columnNames(m["columns"]), ","); got != "node.0.numa_hit,node.1.numa_hit,vmstat.pgfault" {
		t.Fatalf("discrete: %s", got)
	}
	if !m["state"].(map[string]any)["discrete"].(bool) {
		t.Fatal("state.discrete not set")
	}
	b := c.Next("batch", typeIs("batch"))
	if n := len(b["samples"].([]any)[0].([]any)); n != 4 {
		t.Fatalf("discrete sample has %d fields, want 4", n)
	}
	c.Send(`{"type":"label","text":"phase 2"}`)
	c.Next("label", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "label" })
	c.Send(`{"type":"pause"}`)
	c.Next("pause", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "pause" })
	c.Send(`{"type":"resume"}`)
	c.Next("resume", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "resume" })
	c.Next("batch", typeIs("batch"))
	c.Send(`{"type":"record_stop"}`)
	c.Next("stopped", func(m map[string]any) bool {
		return m["type"] == "state" && m["state"].(map[string]any)["recording"] == ""
	})
	rec, err := recording.Load(filepath.Join(dir, "r.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.End == nil {
		t.Fatal("recording not closed cleanly")
	}
	var names []string
	for _, col := range rec.Columns {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "node.numa_hit,node.numa_miss,vmstat.pgfault,node.0.numa_hit,node.1.numa_hit" {
		t.Fatalf("recorded columns %s", got)
	}
	if ls := rec.Labels(); len(ls) != 1 || ls[0].Text != "phase 2" {
		t.Fatalf("labels %v", ls)
	}
	var types []string
	for _, m := range rec.Marks {
		types = append(types, m.Type)
	}
	if got := strings.Join(types, ","); got != "columns,columns,label,pause,resume" {
		t.Fatalf("marks %s", got)
	}
	last := rec.Samples[len(rec.Samples)-1]
	if !math.IsNaN(last.V[1]) || math.IsNaN(last.V[3]) {
		t.Fatalf("last sample %v: want numa_miss absent and node.0.numa_hit present", last.V)
	}
	for i := 1; i < len(rec.Samples); i++ {
		if rec.Samples[i].T < rec.Samples[i-1].T {
			t.Fatalf("time goes back at sample %d: %v after %v", i, rec.Samples[i].T, rec.Samples[i-1].T)
		}
	}
}

func TestFIFOCommandsReachEveryClient(t *testing.T) {
	dir := t.TempDir()
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	fifo, _ := controlFIFO(t, l)
	a, b := dial(t, l.Server, ""), dial(t, l.Server, "")
	a.Next("hello", typeIs("hello"))
	b.Next("hello", typeIs("hello"))
	path := filepath.Join(dir, "fifo.jsonl.zst")
	for _, line := range []string{"label from the fifo", "record " + path} {
		if err := ctl.Send(fifo, line); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*wsClient{a, b} {
		// The label comes back from the sampler, the state at once: any order.
		var label, rec bool
		for !label || !rec {
			c.Next("label and recording state", func(m map[string]any) bool {
				switch {
				case m["type"] == "mark" && m["mark"] == "label" && m["text"] == "from the fifo":
					label = true
				case m["type"] == "state" && m["state"].(map[string]any)["recording"] == path:
					rec = true
				default:
					return false
				}
				return true
			})
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientGetsRecentHistory(t *testing.T) {
	l, _ := startLive(t, web.Options{Batch: 20 * time.Millisecond}, sampling.Config{Interval: 5 * time.Millisecond})
	a := dial(t, l.Server, "")
	a.Next("hello", typeIs("hello"))
	a.Send(`{"type":"label","text":"before b"}`)
	a.Next("label", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "label" })
	var last float64
	for last < 0.3 {
		rows := a.Next("batch", typeIs("batch"))["samples"].([]any)
		last = rows[len(rows)-1].([]any)[0].(float64)
	}
	b := dial(t, l.Server, "")
	b.Next("hello", typeIs("hello"))
	// The history is the replay batch, encoded once when a first client
	// connected (a may have come before any sample, or after a few), the
	// batches since, then the marks: every row before the first mark.
	var hist []any
	m := b.Next("history", func(m map[string]any) bool { return m["type"] == "batch" || m["type"] == "mark" })
	for ; m["type"] == "batch"; m = b.Next("history", func(m map[string]any) bool { return m["type"] == "batch" || m["type"] == "mark" }) {
		hist = append(hist, m["samples"].([]any)...)
	}
	if len(hist) < 20 || hist[0].([]any)[0].(float64) > 0.1 {
		t.Fatalf("history of %d rows, the first %v; want the samples from the start", len(hist), hist[:min(len(hist), 1)])
	}
	if m["text"] != "before b" {
		t.Fatalf("history mark %v", m)
	}
}

func TestAbortRemovesEmptyRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	fs := sysfs.New(twonode)
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	cat := sampler.Open(sensor.Env{FS: fs, Topology: topo})
	defer cat.Close()
	l, err := NewLive(web.Options{Listen: "127.0.0.1:0"}, sampling.Config{
		Catalog: cat, Events: []string{"node.numa_hit"}, Interval: time.Hour, Record: path,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("-o file not created at start: %v", err)
	}
	l.Abort()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the empty recording is still there (%v)", err)
	}
	// An existing file is never overwritten.
	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLive(web.Options{}, sampling.Config{Catalog: cat, Events: []string{"node.numa_hit"}, Interval: time.Hour, Record: path}); err == nil {
		t.Fatal("NewLive overwrote an existing recording")
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Fatalf("existing file changed to %q", b)
	}
}

// TestNewClientGetsFullHistoryAfterChanges: a client that connects after
// the event set changed gets each current column's whole past (a column
// that was there from the start from the start, one added later from when
// it was added), not the removed column, and the same values the first
// client saw.
func TestNewClientGetsFullHistoryAfterChanges(t *testing.T) {
	l, _ := startLive(t, web.Options{Batch: 20 * time.Millisecond}, sampling.Config{Interval: 5 * time.Millisecond})
	a := dial(t, l.Server, "")
	h := a.Next("hello", typeIs("hello"))
	names := columnNames(h["columns"])
	seen := map[string]map[float64]any{} // column -> t -> value, as client a got them
	var last float64
	readBatch := func(m map[string]any) {
		for _, r := range m["samples"].([]any) {
			row := r.([]any)
			last = row[0].(float64)
			for i, name := range names {
				if seen[name] == nil {
					seen[name] = map[float64]any{}
				}
				seen[name][last] = row[i+1]
			}
		}
	}
	until := func(what string, done func() bool) {
		for !done() {
			m := a.Next(what, func(m map[string]any) bool { return m["type"] == "batch" || m["type"] == "columns" })
			if m["type"] == "columns" {
				names = columnNames(m["columns"])
				continue
			}
			readBatch(m)
		}
	}
	until("samples", func() bool { return last > 0.3 })
	a.Send(`{"type":"enable","event":"node.MemFree"}`)
	until("the new column", func() bool { return len(names) == 4 })
	a.Send(`{"type":"disable","event":"node.numa_miss"}`)
	until("numa_miss removed", func() bool { return len(names) == 3 })
	changed := last
	until("samples after the changes", func() bool { return last > changed+0.2 })

	b := dial(t, l.Server, "")
	hb := b.Next("hello", typeIs("hello"))
	if got := strings.Join(columnNames(hb["columns"]), ","); got != "node.numa_hit,vmstat.pgfault,node.MemFree" {
		t.Fatalf("hello columns %s", got)
	}
	rows := b.Next("history", typeIs("batch"))["samples"].([]any)
	first := rows[0].([]any)
	if len(first) != 4 {
		t.Fatalf("history row %v: want t and the 3 current columns (not the removed one)", first)
	}
	if t0 := first[0].(float64); t0 > 0.1 {
		t.Fatalf("history starts at %v s; want the samples from the start", t0)
	}
	cur := []string{"node.numa_hit", "vmstat.pgfault", "node.MemFree"}
	var memFreeFrom, prev float64 = -1, -1
	matched := 0
	for _, r := range rows {
		row := r.([]any)
		tr := row[0].(float64)
		if tr < prev {
			t.Fatalf("history goes back in time: %v after %v", tr, prev)
		}
		prev = tr
		if row[3] != nil && memFreeFrom < 0 {
			memFreeFrom = tr
		}
		if row[3] == nil && memFreeFrom >= 0 {
			t.Fatalf("node.MemFree has no value at %v s after it had one at %v s", tr, memFreeFrom)
		}
		for i, name := range cur {
			want, ok := seen[name][tr]
			if !ok {
				continue
			}
			if i == 0 {
				matched++
			}
			if fmt.Sprint(want) != fmt.Sprint(row[i+1]) {
				t.Fatalf("%s at %v s: new client got %v, first client %v", name, tr, row[i+1], want)
			}
		}
	}
	if memFreeFrom < 0 || memFreeFrom < first[0].(float64)+0.2 {
		t.Fatalf("node.MemFree has values from %v s; want from when it was enabled (after %v s)", memFreeFrom, first[0])
	}
	// Every sample client a got of the old column up to the connect is there.
	var before int
	for tr := range seen["node.numa_hit"] {
		if tr <= last {
			before++
		}
	}
	if matched < before {
		t.Fatalf("history has %d of the %d samples of node.numa_hit client a got", matched, before)
	}
	cm := b.Next("columns mark", typeIs("mark"))
	if cm["mark"] != recording.MarkColumns || cm["t"].(float64) > memFreeFrom {
		t.Fatalf("first replayed mark %v: want the columns change before %v s", cm, memFreeFrom)
	}
}

// TestCompressedRecordingIsReadableWithinTheFlushBound records to .zst
// while the batch tick is 10 s: the recording is flushed by the recorder's
// bound (250 ms for zstd), not by when browsers get their batches, so a
// reader following the file sees samples a few hundred ms old, not 10 s.
func TestCompressedRecordingIsReadableWithinTheFlushBound(t *testing.T) {
	const interval = 10 * time.Millisecond
	path := filepath.Join(t.TempDir(), "live.jsonl.zst")
	_, logs, stop := runLive(t, web.Options{Batch: 10 * time.Second}, sampling.Config{Interval: interval, Record: path})
	time.Sleep(1200 * time.Millisecond)
	readAt := time.Now()
	r, _ := recording.Load(path) // still being written: the frame is open
	if r == nil || len(r.Samples) == 0 {
		t.Fatalf("after 1.2 s of recording at %v the file shows no sample (log %v)", interval, logs.lines)
	}
	last := time.Duration(r.Samples[len(r.Samples)-1].T * float64(time.Second))
	// 250 ms bound, one interval, and slack for a loaded test machine.
	if lag, bound := readAt.Sub(r.Header.Start)-last, 250*time.Millisecond+interval+450*time.Millisecond; lag > bound {
		t.Errorf("the newest sample in the file is %v old, want at most %v", lag, bound)
	}
	stop()
	loadCounted(t, path)
}

// TestLiveRecordingSwitch switches a live recording from -o to a client's
// file: the new file's t=0 is the last sample before the switch, each end
// line counts the samples its file holds, and no sample is lost between
// the two.
func TestLiveRecordingSwitch(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.jsonl")
	l, logs, stop := runLive(t, web.Options{RecordDir: dir}, sampling.Config{Interval: 5 * time.Millisecond, Record: a})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	time.Sleep(150 * time.Millisecond)
	c.Send(`{"type":"record","id":1,"path":"b.jsonl.zst"}`)
	b := filepath.Join(dir, "b.jsonl.zst")
	if m := c.Next("record reply", func(m map[string]any) bool { return m["id"] == float64(1) }); m["type"] != "ok" || m["path"] != b {
		t.Fatalf("record: %v", m)
	}
	time.Sleep(150 * time.Millisecond)
	stop()
	stopped := time.Now()
	// Each file ends cleanly, its end line counting the samples it holds.
	ra, rb := loadCounted(t, a), loadCounted(t, b)
	if len(ra.Samples) < 5 || len(rb.Samples) < 5 {
		t.Fatalf("%d and %d samples (log %v)", len(ra.Samples), len(rb.Samples), logs.lines)
	}
	lastA := ra.Header.Start.Add(time.Duration(ra.Samples[len(ra.Samples)-1].T * 1e9))
	if d := rb.Header.Start.Sub(lastA); d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("b starts %v after a's last sample, want at it", d)
	}
	// The next sample after the switch: after t=0 (about one interval
	// later, less when the sample at t=0 was itself late: deadlines are
	// absolute, CI saw 2.4 ms; more on a loaded machine). b's t=0 is the
	// last sample the hub had handled when the request came, so b may hold
	// samples taken before the request (those still queued for the hub's
	// next batch). What must hold: placed by b's own clock (header Start +
	// T), b's last sample lies before the stop; a b that went on with a's
	// clock would place it 150 ms or more past it. Causality, which load
	// cannot break, where "the first at most 0.1 s in" could be (a loaded
	// run saw a first sample 110 ms after a switch in the recorder's test);
	// 2 ms for the wall clock against the monotonic one.
	if first := rb.Samples[0].T; first <= 0 {
		t.Errorf("b's first sample at t=%v, want the next sample after its t=0", first)
	}
	last := rb.Samples[len(rb.Samples)-1]
	if at := rb.Header.Start.Add(time.Duration(last.T * 1e9)); at.After(stopped.Add(2 * time.Millisecond)) {
		t.Errorf("b's last sample at t=%v places itself at %s, after the stop at %s",
			last.T, at.Format("15:04:05.000000"), stopped.Format("15:04:05.000000"))
	}
	if s := strings.Join(logs.lines, "\n"); strings.Contains(s, "recording stopped") {
		t.Errorf("log: %s", s)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
}

// loadCounted loads a recording that must have ended cleanly with an end
// line that counts the samples the file holds.
func loadCounted(t *testing.T, path string) *recording.Recording {
	t.Helper()
	r, err := recording.Load(path)
	switch {
	case err != nil:
		t.Fatal(err)
	case r.End == nil || r.End.Samples != uint64(len(r.Samples)):
		t.Fatalf("%s: end %+v, %d samples in the file", path, r.End, len(r.Samples))
	}
	return r
}

// TestRunEndsWhenTheSamplerEnds: a sampler that ends on its own (here its
// Count; in use, an error of its timer) ends Run with an error, and Run
// returns: the hub took the sampler's result from runDone, and the
// shutdown that followed waited on runDone a second time, for ever.
func TestRunEndsWhenTheSamplerEnds(t *testing.T) {
	fs := sysfs.New(twonode)
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	cat := sampler.Open(sensor.Env{FS: fs, Topology: topo})
	defer cat.Close()
	l, err := NewLive(web.Options{Listen: "127.0.0.1:0"}, sampling.Config{
		Catalog: cat, Events: []string{"node.numa_hit"}, Interval: 10 * time.Millisecond, Count: 3,
		Header: recording.Header{Host: "fixture", Topology: topo},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "sampling stopped") {
			t.Fatalf("Run: %v, want the sampler's end as an error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return 20 s after its sampler ended")
	}
}
