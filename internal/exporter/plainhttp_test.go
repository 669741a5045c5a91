package exporter

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servePlain starts x's plain server on a free loopback port, with
// tune (may be nil) applied to it before it serves, and returns its
// address.
func servePlain(t *testing.T, x *Exporter, cfg ServeConfig, tune func(*plainServer)) string {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	srv, err := x.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if srv.plain == nil {
		t.Fatal("no plain server without a web configuration file")
	}
	if tune != nil {
		tune(srv.plain)
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
	return srv.Addr().String()
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
// within a few seconds, with nothing more sent).
func (rc *rawConn) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rc.r.ReadByte()
	return err != nil && !isTimeout(err)
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

// TestPlainKeepAliveAndNegotiation: several requests on one connection,
// pipelined too, each negotiated as net/http's handler negotiates it (the
// same Content-Type and bytes), HEAD with the headers and no body, and
// Connection: close honoured.
func TestPlainKeepAliveAndNegotiation(t *testing.T) {
	x := newTestExporter(t, twoNode)
	for _, compress := range []bool{false, true} {
		addr := servePlain(t, x, ServeConfig{Compress: compress}, nil)
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

// TestPlainHTTP10: an HTTP/1.0 client gets its answer and the connection
// closed, unless it asks for keep-alive.
func TestPlainHTTP10(t *testing.T) {
	addr := servePlain(t, newTestExporter(t, twoNode), ServeConfig{}, nil)
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

// TestPlainErrors: each kind of bad request gets its status, and a
// malformed one (the server cannot know where the next request starts)
// closes the connection; a well-formed request for something else keeps
// it.
func TestPlainErrors(t *testing.T) {
	addr := servePlain(t, newTestExporter(t, twoNode), ServeConfig{}, nil)
	for _, c := range []struct {
		name, req string
		status    int
		closes    bool
	}{
		{"unknown path", "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404, false},
		{"POST", "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 405, false},
		{"DELETE /", "DELETE / HTTP/1.1\r\nHost: x\r\n\r\n", 405, false},
		{"no Host", "GET /metrics HTTP/1.1\r\n\r\n", 400, true},
		{"garbage", "hello\r\n\r\n", 400, true},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, true},
		{"a body", "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", 413, true},
		{"long line", "GET /" + strings.Repeat("m", maxRequestLine) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, true},
		{"big headers", "GET /metrics HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 100)+"\r\n", 90) + "\r\n", 431, true},
		{"big headers, never ended", "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 2*maxHeaderBytes), 431, true},
	} {
		rc := dialRaw(t, addr)
		rc.send(c.req)
		resp, body := rc.response("GET")
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || body == "" {
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

// TestPlainSlowClients: clients that send half a request and stall
// (slowloris), or connect and send nothing, hold no scrape slot: an
// honest scrape is answered at once meanwhile, and the server closes
// their connections after the header timeout.
func TestPlainSlowClients(t *testing.T) {
	addr := servePlain(t, newTestExporter(t, twoNode), ServeConfig{}, func(s *plainServer) { s.headerTimeout = 500 * time.Millisecond })
	var stalled []*rawConn
	for i := range 2 * maxInFlight {
		rc := dialRaw(t, addr)
		if i%2 == 0 {
			rc.send("GET /metrics HTTP/1.1\r\nHo")
		}
		stalled = append(stalled, rc)
	}
	start := time.Now()
	rc := dialRaw(t, addr)
	rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("an honest scrape beside %d stalled clients: %d", len(stalled), resp.StatusCode)
	}
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Errorf("an honest scrape beside %d stalled clients took %v", len(stalled), took)
	}
	for i, s := range stalled {
		if !s.closed() {
			t.Errorf("stalled client %d still connected after the header timeout", i)
		}
	}
	// The honest client's kept-alive connection is idle now, under the
	// idle timeout (2 min), not the header timeout: it still serves.
	time.Sleep(600 * time.Millisecond)
	rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 200 {
		t.Errorf("a kept-alive connection idle for longer than the header timeout: %d", resp.StatusCode)
	}
}

// TestPlainIdleTimeout: a kept-alive connection with no request for the
// idle timeout is closed.
func TestPlainIdleTimeout(t *testing.T) {
	addr := servePlain(t, newTestExporter(t, twoNode), ServeConfig{}, func(s *plainServer) { s.idleTimeout = 300 * time.Millisecond })
	rc := dialRaw(t, addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.response("GET")
	start := time.Now()
	if !rc.closed() {
		t.Fatal("an idle connection stays open")
	}
	// deadlineSlack may bring it up to a second earlier, never later.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("an idle connection closed after %v (idle timeout 300 ms)", took)
	}
}

// TestPlainConnectionLimit: past maxConns open connections, the next one
// is answered 503 and closed; once one closes, new ones are served again.
func TestPlainConnectionLimit(t *testing.T) {
	x := newTestExporter(t, twoNode)
	var ps *plainServer
	addr := servePlain(t, x, ServeConfig{}, func(s *plainServer) { ps = s })
	var conns []net.Conn
	for range maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ps.mu.Lock()
		n := len(ps.conns)
		ps.mu.Unlock()
		if n == maxConns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", n, maxConns)
		}
	}
	rc := dialRaw(t, addr)
	resp, body := rc.response("GET")
	if resp.StatusCode != 503 || !strings.Contains(body, strconv.Itoa(maxConns)) {
		t.Errorf("connection %d: %d %q, want 503", maxConns+1, resp.StatusCode, body)
	}
	conns[0].Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rc := dialRaw(t, addr)
		rc.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, _ := rc.response("GET"); resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served 10 s after one of the open ones closed")
		}
	}
}

// TestPlainShutdown: ending Serve's context closes idle kept-alive
// connections and Serve returns (servePlain's clean-up checks it does).
func TestPlainShutdown(t *testing.T) {
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

// TestPlainScrapeAllocations: the plain server adds no allocation to a
// read's: a scrape over a kept-alive connection allocates what x.Read
// does (its bookkeeping), the client here allocating nothing.
func TestPlainScrapeAllocations(t *testing.T) {
	x := newTestExporter(t, twoNode)
	addr := servePlain(t, x, ServeConfig{}, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: " + omAccept + "\r\n\r\n")
	buf := make([]byte, 1<<20)
	scrape := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		// Read the header, then as much body as its Content-Length says.
		got, end, length := 0, -1, 0
		for end < 0 || got < end+length {
			k, err := c.Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += k
			if end < 0 {
				if end = bytes.Index(buf[:got], []byte("\r\n\r\n")); end >= 0 {
					end += 4
					i := bytes.Index(buf[:end], []byte("Content-Length: ")) + len("Content-Length: ")
					for ; buf[i] >= '0' && buf[i] <= '9'; i++ {
						length = 10*length + int(buf[i]-'0')
					}
				}
			}
		}
		if got != end+length || !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 OK\r\n")) {
			t.Fatalf("%d bytes for a response of %d: %q", got, end+length, buf[:min(got, 100)])
		}
	}
	scrape()
	read := testing.AllocsPerRun(50, func() { x.Read() })
	if a := testing.AllocsPerRun(50, scrape); a > read {
		t.Errorf("a scrape over the plain server allocates %v times, a read alone %v", a, read)
	}
}
