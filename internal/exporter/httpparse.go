package exporter

import (
	"bytes"
	"net/http"
)

// request is what the plain server (plainhttp.go) uses of an HTTP/1.x
// request; the slices point into the connection's buffer.
type request struct {
	method, target         []byte
	accept, acceptEncoding []byte // the first of each header, nil when absent
	http10                 bool   // HTTP/1.0, not 1.1
	close                  bool   // the connection closes after the answer
}

// parseRequest parses the request line and headers at the start of buf
// into req. It returns the request's length in buf once they are all there
// (0 while they are not), or a status to answer a malformed request with
// (the connection then closes): 400 for a bad request line, header or
// Host, 414 for a request line over maxRequestLine, 431 for headers over
// maxHeaderBytes, 413 for a request with a body (the server reads none),
// 505 for an HTTP version other than 1.0 and 1.1. Line ends are CRLF or,
// as net/http accepts, LF.
func parseRequest(buf []byte, req *request) (n, status int) {
	*req = request{}
	line, rest, ok := cutLine(buf)
	if !ok {
		if len(buf) > maxRequestLine+1 { // room for its CR
			return 0, http.StatusRequestURITooLong
		}
		return 0, 0
	}
	if len(line) > maxRequestLine {
		return 0, http.StatusRequestURITooLong
	}
	if status := req.parseLine(line); status != 0 {
		return 0, status
	}
	hosts, sawClose, sawKeepAlive := 0, false, false
	for {
		var ok bool
		line, rest, ok = cutLine(rest)
		if !ok {
			if len(buf) >= maxHeaderBytes {
				return 0, http.StatusRequestHeaderFieldsTooLarge
			}
			return 0, 0
		}
		if len(buf)-len(rest) > maxHeaderBytes {
			return 0, http.StatusRequestHeaderFieldsTooLarge
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok || !isToken(name) || !validValue(value) {
			return 0, http.StatusBadRequest // obs-fold (a line starting with space) included
		}
		value = trimOWS(value)
		switch {
		case equalFold(name, "host"):
			hosts++
		case equalFold(name, "accept"):
			if req.accept == nil {
				req.accept = value[:len(value):len(value)]
			}
		case equalFold(name, "accept-encoding"):
			if req.acceptEncoding == nil {
				req.acceptEncoding = value[:len(value):len(value)]
			}
		case equalFold(name, "connection"):
			for tok := range bytes.SplitSeq(value, []byte{','}) {
				tok = trimOWS(tok)
				sawClose = sawClose || equalFold(tok, "close")
				sawKeepAlive = sawKeepAlive || equalFold(tok, "keep-alive")
			}
		case equalFold(name, "content-length"):
			if string(value) != "0" {
				return 0, http.StatusRequestEntityTooLarge
			}
		case equalFold(name, "transfer-encoding"):
			return 0, http.StatusRequestEntityTooLarge
		}
	}
	if hosts > 1 || hosts == 0 && !req.http10 {
		return 0, http.StatusBadRequest // as net/http: HTTP/1.1 needs one Host
	}
	// HTTP/1.1 keeps the connection unless told to close it, HTTP/1.0
	// closes it unless told to keep it.
	req.close = sawClose || req.http10 && !sawKeepAlive
	return len(buf) - len(rest), 0
}

// parseLine parses "METHOD TARGET HTTP/1.x".
func (req *request) parseLine(line []byte) int {
	method, rest, ok1 := bytes.Cut(line, []byte{' '})
	target, version, ok2 := bytes.Cut(rest, []byte{' '})
	if !ok1 || !ok2 || !isToken(method) || len(target) == 0 {
		return http.StatusBadRequest
	}
	for _, b := range target {
		if b <= ' ' || b == 0x7f {
			return http.StatusBadRequest
		}
	}
	switch string(version) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		req.http10 = true
	default:
		if len(version) == 8 && string(version[:5]) == "HTTP/" && isDigit(version[5]) && version[6] == '.' && isDigit(version[7]) {
			return http.StatusHTTPVersionNotSupported
		}
		return http.StatusBadRequest
	}
	if target[0] != '/' {
		// The absolute form (http://host/path) a proxy would send; an
		// origin server must accept it. Anything else (*, authority) is
		// not for this server.
		rest, ok := bytes.CutPrefix(target, []byte("http://"))
		if !ok {
			if rest, ok = bytes.CutPrefix(target, []byte("https://")); !ok {
				return http.StatusBadRequest
			}
		}
		i := bytes.IndexAny(rest, "/?")
		switch {
		case i < 0:
			target = []byte{'/'}
		case rest[i] == '?':
			target = append([]byte{'/'}, rest[i:]...)
		default:
			target = rest[i:]
		}
	}
	req.method, req.target = method, target
	return 0
}

// cutLine cuts buf at its first line end (LF or CRLF); ok is false when
// there is none yet.
func cutLine(buf []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return nil, buf, false
	}
	line, rest = buf[:i], buf[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest, true
}

// isToken says whether b is a non-empty RFC 9110 token (a method, a
// header name).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c >= 0x80 || !tokenChars[c] {
			return false
		}
	}
	return true
}

var tokenChars = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validValue says whether a header value has no control character but
// horizontal tab (a bare CR included), as net/http requires.
func validValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// equalFold compares b to lower-case ASCII s, ignoring b's case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
