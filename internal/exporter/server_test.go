package exporter

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveWith starts x's server on a free loopback port with cfg and
// returns it and its address.
func serveWith(t *testing.T, x *Exporter, cfg ServeConfig) (*Server, string) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	srv, err := x.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return 10 s after its context ended")
		}
	})
	return srv, srv.Addr().String()
}

// rawConn is a client connection that writes bytes as given and reads
// responses with net/http's parser.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

// response reads one response to a request with method and returns it
// with its body.
func (rc *rawConn) response(method string) (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.r, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("reading a response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("reading a response's body: %v", err)
	}
	return resp, string(b)
}

// closed says whether the server closed the connection (EOF or a reset
// within a few seconds, after any last answer, such as net/http's 400 to
// a request cut by the header timeout).
func (rc *rawConn) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, rc.r)
	return !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

const omAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// withoutReadStats drops the lines that change from read to read (the
// reads' count and durations), so that two reads of the capture compare.
func withoutReadStats(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "numascope_scrape_reads_total") && !strings.HasPrefix(l, "numascope_scrape_collector_duration_seconds{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestKeepAliveAndNegotiation: several requests on one connection,
// pipelined too, each negotiated as the handler negotiates it (the same
// Content-Type and bytes), HEAD with the headers and no body, and
// Connection: close honoured.
func TestKeepAliveAndNegotiation(t *testing.T) {
	x := newTestExporter(t, twoNode)
	for _, compress := range []bool{false, true} {
		_, addr := serveWith(t, x, ServeConfig{Compress: compress})
		rc := dialRaw(t, addr)
		for _, accept := range []string{omAccept, "", "text/plain;version=0.0.4", "application/openmetrics-text;version=0.0.1", "*/*",
			"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;q=0.3"} {
			hdr := ""
			if accept != "" {
				hdr = "Accept: " + accept + "\r\n"
			}
			rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n" + hdr + "\r\n")
			resp, body := rc.response("GET")

			req := httptest.NewRequest("GET", "/metrics", nil)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			rec := httptest.NewRecorder()
			x.handler(compress, DefaultWriteTimeout).ServeHTTP(rec, req)
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("compress %v, Accept %q: no X-Content-Type-Options: nosniff", compress, accept)
			}
			for _, h := range []string{"Content-Type", "Content-Encoding"} {
				if got, want := resp.Header.Get(h), rec.Header().Get(h); got != want {
					t.Errorf("compress %v, Accept %q: %s %q, the handler's %q", compress, accept, h, got, want)
				}
			}
			if got, want := resp.Header.Values("Vary"), rec.Header().Values("Vary"); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("compress %v, Accept %q: Vary %q, the handler's %q", compress, accept, got, want)
			}
			if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || resp.Header.Get("Date") == "" {
				t.Errorf("compress %v, Accept %q: %d, Content-Length %d for %d bytes, Date %q", compress, accept,
					resp.StatusCode, resp.ContentLength, len(body), resp.Header.Get("Date"))
			}
			if !strings.Contains(resp.Header.Get("Content-Type"), "protobuf") && withoutReadStats(body) != withoutReadStats(rec.Body.String()) {
				t.Errorf("compress %v, Accept %q: the body differs from the handler's", compress, accept)
			}
		}
		// Pipelined: a GET and a HEAD in one write, answered in order.
		rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: " + omAccept + "\r\n\r\nHEAD /metrics HTTP/1.1\r\nHost: x\r\nAccept: " + omAccept + "\r\n\r\n")
		get, body := rc.response("GET")
		head, hbody := rc.response("HEAD")
		// Each its own read, whose count and durations may differ in
		// length by a few bytes.
		if d := head.ContentLength - int64(len(body)); get.StatusCode != 200 || head.StatusCode != 200 || hbody != "" || d < -32 || d > 32 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") || !strings.HasSuffix(body, "# EOF\n") {
			t.Errorf("compress %v: pipelined GET %d (%d bytes), HEAD %d, Content-Length %d, body %q", compress,
				get.StatusCode, len(body), head.StatusCode, head.ContentLength, hbody)
		}
		rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if resp, _ := rc.response("GET"); resp.StatusCode != 200 || !resp.Close {
			t.Errorf("compress %v: Connection: close answered %d, close %v", compress, resp.StatusCode, resp.Close)
		}
		if !rc.closed() {
			t.Errorf("compress %v: the connection stays open after Connection: close", compress)
		}
	}
}

// TestHTTP10: an HTTP/1.0 client gets its answer and the connection
// closed, unless it asks for keep-alive.
func TestHTTP10(t *testing.T) {
	_, addr := serveWith(t, newTestExporter(t, twoNode), ServeConfig{})
	rc := dialRaw(t, addr)
	rc.send("GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	if resp, body := rc.response("GET"); resp.StatusCode != 200 || resp.Close || !strings.Contains(body, "numascope_node_numa_hit_total") {
		t.Errorf("HTTP/1.0 keep-alive: %d, close %v", resp.StatusCode, resp.Close)
	}
	rc.send("GET /metrics HTTP/1.0\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("HTTP/1.0: %d", resp.StatusCode)
	}
	if !rc.closed() {
		t.Error("the connection stays open after an HTTP/1.0 request without keep-alive")
	}
}

// TestErrors: each kind of bad request gets net/http's status, and a
// malformed one (the server cannot know where the next request starts)
// closes the connection; a well-formed request for something else keeps
// it.
func TestErrors(t *testing.T) {
	_, addr := serveWith(t, newTestExporter(t, twoNode), ServeConfig{})
	for _, c := range []struct {
		name, req string
		status    int
		closes    bool
	}{
		{"unknown path", "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404, false},
		{"POST", "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405, false},
		{"DELETE /", "DELETE / HTTP/1.1\r\nHost: x\r\n\r\n", 405, false},
		{"no Host", "GET /metrics HTTP/1.1\r\n\r\n", 400, true},
		{"garbage", "hello\r\n\r\n", 400, true},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, true},
		{"HTTP/2.0", "GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n", 505, true},
		{"big headers", "GET /metrics HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 100)+"\r\n", 200) + "\r\n", 431, true},
		{"big headers, never ended", "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 64<<10), 431, true},
	} {
		rc := dialRaw(t, addr)
		rc.send(c.req)
		resp, body := rc.response("GET")
		if resp.StatusCode != c.status || !c.closes && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("%s: %d %q %q, want %d", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status)
		}
		if c.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow %q", c.name, resp.Header.Get("Allow"))
		}
		if resp.Close != c.closes {
			t.Errorf("%s: Connection: close %v, want %v", c.name, resp.Close, c.closes)
		}
		if c.closes {
			if !rc.closed() {
				t.Errorf("%s: the connection stays open", c.name)
			}
			continue
		}
		rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n") // and the connection still serves
		if resp, body := rc.response("GET"); resp.StatusCode != 200 || !strings.Contains(body, "/metrics") {
			t.Errorf("%s: then GET /: %d %q", c.name, resp.StatusCode, body)
		}
	}
}

// stalledClients connects 2*maxInFlight clients that hold no scrape slot
// honestly: every other one sends half a request and stalls (slowloris),
// the rest connect and send nothing.
func stalledClients(t *testing.T, addr string) []*rawConn {
	var stalled []*rawConn
	for i := range 2 * maxInFlight {
		rc := dialRaw(t, addr)
		if i%2 == 0 {
			rc.send("GET /metrics HTTP/1.1\r\nHo")
		}
		stalled = append(stalled, rc)
	}
	return stalled
}

// open says whether the connection is still open, without waiting: no
// bytes and no end of stream are ready to read. The deadline is in the
// future because with one already past Go fails the read before it asks
// the kernel; with one ahead, the first non-blocking read sees whatever
// the kernel holds (an end of stream, a reset), and only then does it wait.
func (rc *rawConn) open() bool {
	rc.c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := rc.r.Peek(1)
	rc.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return isTimeout(err)
}

// TestSlowClients: clients that send half a request and stall
// (slowloris), or connect and send nothing, hold no scrape slot: an
// honest scrape is answered while they are all still connected, not once
// the server has dropped them. The header timeout is a minute, so a scrape
// that waited for it would fail on the test's 20 s read deadline, and the
// check holds on a machine however slow: it looks at the order of events,
// not at a clock (issue 29: the check "under 400 ms" it replaces saw 400 ms
// beside four busy loops under the race detector).
func TestSlowClients(t *testing.T) {
	_, addr := serveWith(t, newTestExporter(t, twoNode), ServeConfig{headerTimeout: time.Minute})
	stalled := stalledClients(t, addr)
	rc := dialRaw(t, addr)
	rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("an honest scrape beside %d stalled clients: %d", len(stalled), resp.StatusCode)
	}
	for i, s := range stalled {
		if !s.open() {
			t.Errorf("stalled client %d was disconnected before the honest scrape was answered", i)
		}
	}
}

// TestSlowClientsDropped: the server closes the connections of stalled
// clients after the header timeout, and not a kept-alive connection that
// is idle for as long (that one is under the idle timeout, 2 min).
func TestSlowClientsDropped(t *testing.T) {
	const headerTimeout = 300 * time.Millisecond
	_, addr := serveWith(t, newTestExporter(t, twoNode), ServeConfig{headerTimeout: headerTimeout})
	stalled := stalledClients(t, addr)
	rc := dialRaw(t, addr)
	rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("an honest scrape beside %d stalled clients: %d", len(stalled), resp.StatusCode)
	}
	for i, s := range stalled {
		if !s.closed() {
			t.Errorf("stalled client %d still connected 5 s past the header timeout", i)
		}
	}
	time.Sleep(2 * headerTimeout)
	rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("a kept-alive connection idle for longer than the header timeout: %d", resp.StatusCode)
	}
}

// TestIdleTimeout: a kept-alive connection with no request for the idle
// timeout is closed.
func TestIdleTimeout(t *testing.T) {
	_, addr := serveWith(t, newTestExporter(t, twoNode), ServeConfig{idleTimeout: 300 * time.Millisecond})
	rc := dialRaw(t, addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.response("GET")
	start := time.Now()
	if !rc.closed() {
		t.Fatal("an idle connection stays open")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("an idle connection closed after %v (idle timeout 300 ms)", took)
	}
}

// TestShutdown: ending Serve's context closes idle kept-alive
// connections and Serve returns.
func TestShutdown(t *testing.T) {
	x := newTestExporter(t, twoNode)
	srv, err := x.Listen(ServeConfig{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	rc := dialRaw(t, srv.Addr().String())
	rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.response("GET")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve still running 3 s after its context ended, with an idle connection open")
	}
	if !rc.closed() {
		t.Error("the idle connection stays open after shutdown")
	}
	if _, err := net.Dial("tcp", srv.Addr().String()); err == nil {
		t.Error("still accepting after shutdown")
	}
}
