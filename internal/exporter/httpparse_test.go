package exporter

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseRequest: the plain server's request parser on well-formed
// requests, incomplete ones, and each malformed kind with the status it
// is answered with.
func TestParseRequest(t *testing.T) {
	long := strings.Repeat("a", maxRequestLine)
	for _, c := range []struct {
		name, in       string
		complete       bool // a whole request (status 0)
		status         int
		method, target string
		accept, enc    string
		close          bool
	}{
		{name: "scrape", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\nAccept-Encoding: gzip\r\n\r\n",
			complete: true, method: "GET", target: "/metrics", accept: "application/openmetrics-text", enc: "gzip"},
		{name: "LF line ends", in: "GET /metrics HTTP/1.1\nHost: x\n\n", complete: true, method: "GET", target: "/metrics"},
		{name: "names in any case, values trimmed, first Accept kept", in: "HEAD /metrics?name[]=a HTTP/1.1\r\nhOsT: x\r\nACCEPT: \t text/plain \r\naccept: other\r\n\r\n",
			complete: true, method: "HEAD", target: "/metrics?name[]=a", accept: "text/plain"},
		{name: "Connection: close", in: "GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n", complete: true, method: "GET", target: "/", close: true},
		{name: "HTTP/1.0 closes", in: "GET /metrics HTTP/1.0\r\n\r\n", complete: true, method: "GET", target: "/metrics", close: true},
		{name: "HTTP/1.0 keep-alive", in: "GET /metrics HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", complete: true, method: "GET", target: "/metrics"},
		{name: "absolute form", in: "GET http://h:1/metrics?x=1 HTTP/1.1\r\nHost: h:1\r\n\r\n", complete: true, method: "GET", target: "/metrics?x=1"},
		{name: "absolute form, no path", in: "GET https://h HTTP/1.1\r\nHost: h\r\n\r\n", complete: true, method: "GET", target: "/"},
		{name: "Content-Length 0", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", complete: true, method: "GET", target: "/metrics"},
		{name: "a POST", in: "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", complete: true, method: "POST", target: "/metrics"},

		{name: "empty", in: ""},
		{name: "request line only", in: "GET /metrics HTTP/1.1\r\n"},
		{name: "headers not ended", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n"},
		{name: "half a line", in: "GET /met"},

		{name: "no version", in: "GET /metrics\r\nHost: x\r\n\r\n", status: 400},
		{name: "two spaces", in: "GET  /metrics HTTP/1.1\r\nHost: x\r\n\r\n", status: 400},
		{name: "method not a token", in: "G(T /metrics HTTP/1.1\r\nHost: x\r\n\r\n", status: 400},
		{name: "control character in the target", in: "GET /met\x01rics HTTP/1.1\r\nHost: x\r\n\r\n", status: 400},
		{name: "asterisk form", in: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", status: 400},
		{name: "not HTTP", in: "GET /metrics FTP/1.1\r\nHost: x\r\n\r\n", status: 400},
		{name: "HTTP/2 preface", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 505},
		{name: "HTTP/1.2", in: "GET /metrics HTTP/1.2\r\nHost: x\r\n\r\n", status: 505},
		{name: "no Host", in: "GET /metrics HTTP/1.1\r\n\r\n", status: 400},
		{name: "two Hosts", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", status: 400},
		{name: "folded header", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: a,\r\n b\r\n\r\n", status: 400},
		{name: "no colon", in: "GET /metrics HTTP/1.1\r\nHost x\r\n\r\n", status: 400},
		{name: "space before the colon", in: "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", status: 400},
		{name: "bare CR in a value", in: "GET /metrics HTTP/1.1\r\nHost: x\rAccept: y\r\n\r\n", status: 400},
		{name: "NUL in a value", in: "GET /metrics HTTP/1.1\r\nHost: x\x00\r\n\r\n", status: 400},
		{name: "a body", in: "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", status: 413},
		{name: "a chunked body", in: "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 413},
		{name: "request line too long", in: "GET /" + long + " HTTP/1.1\r\nHost: x\r\n\r\n", status: 414},
		{name: "request line too long, not ended", in: "GET /" + long, status: 414},
		{name: "request line at the limit, not ended", in: ("GET /" + long)[:maxRequestLine] + "\r"},
		{name: "headers too long", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("b", maxHeaderBytes) + "\r\n\r\n", status: 431},
		{name: "headers too long, not ended", in: "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("b", maxHeaderBytes), status: 431},
		{name: "too many short headers", in: "GET /metrics HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: y\r\n", maxHeaderBytes/6) + "\r\n", status: 431},
	} {
		var req request
		n, status := parseRequest([]byte(c.in), &req)
		switch {
		case status != c.status:
			t.Errorf("%s: status %d, want %d", c.name, status, c.status)
		case !c.complete && n != 0:
			t.Errorf("%s: a request of %d bytes, want none", c.name, n)
		case c.complete && n != len(strings.TrimSuffix(c.in, "abc")):
			t.Errorf("%s: a request of %d bytes, want %d", c.name, n, len(c.in))
		case c.complete && (string(req.method) != c.method || string(req.target) != c.target || string(req.accept) != c.accept ||
			string(req.acceptEncoding) != c.enc || req.close != c.close):
			t.Errorf("%s: %q %q Accept %q Accept-Encoding %q close %v, want %q %q %q %q %v", c.name,
				req.method, req.target, req.accept, req.acceptEncoding, req.close, c.method, c.target, c.accept, c.enc, c.close)
		}
	}
}

// TestParsePipelined: a buffer holding a request and the start of the
// next parses as the first only, and the rest parses on its own.
func TestParsePipelined(t *testing.T) {
	one := "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
	buf := []byte(one + "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /x HT")
	var req request
	n, status := parseRequest(buf, &req)
	if n != len(one) || status != 0 || string(req.method) != "GET" {
		t.Fatalf("first: %d %d %q", n, status, req.method)
	}
	buf = buf[n:]
	n, status = parseRequest(buf, &req)
	if status != 0 || string(req.method) != "HEAD" || string(req.target) != "/" {
		t.Fatalf("second: %d %d %q %q", n, status, req.method, req.target)
	}
	if n, status = parseRequest(buf[n:], &req); n != 0 || status != 0 {
		t.Fatalf("the unfinished third: %d %d", n, status)
	}
}

// FuzzParseRequest: whatever the bytes, the parser does not panic, and
// what it accepts is consistent: a whole request ends with an empty line
// within maxHeaderBytes, has a token method and an origin-form target,
// parses the same with more bytes after it, and nothing before its end is
// a request already; a buffer it waits on is below the limits.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
		"HEAD / HTTP/1.0\nConnection: keep-alive\n\n",
		"GET http://h/metrics?name[]=a HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\n a\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		var req request
		n, status := parseRequest(buf, &req)
		if n < 0 || n > len(buf) || n > maxHeaderBytes || n > 0 && status != 0 {
			t.Fatalf("n %d status %d for %d bytes", n, status, len(buf))
		}
		if status != 0 {
			return
		}
		if n == 0 {
			if len(buf) >= maxHeaderBytes {
				t.Fatalf("waiting for more with %d bytes", len(buf))
			}
			return
		}
		if !bytes.HasSuffix(buf[:n], []byte("\n\n")) && !bytes.HasSuffix(buf[:n], []byte("\n\r\n")) {
			t.Fatalf("request %q does not end with an empty line", buf[:n])
		}
		if !isToken(req.method) || len(req.target) == 0 || req.target[0] != '/' {
			t.Fatalf("method %q target %q", req.method, req.target)
		}
		method, target, accept, close := string(req.method), string(req.target), string(req.accept), req.close
		var again request
		if m, s := parseRequest(append(buf[:n:n], "GET / HTTP/1.1\r\n"...), &again); m != n || s != 0 ||
			string(again.method) != method || string(again.target) != target || string(again.accept) != accept || again.close != close {
			t.Fatalf("with more bytes after it: %d %d, want %d", m, s, n)
		}
		for k := range n {
			if m, s := parseRequest(buf[:k], &again); m != 0 || s != 0 {
				t.Fatalf("the first %d bytes parse as %d, status %d", k, m, s)
			}
		}
	})
}
