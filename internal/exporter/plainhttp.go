package exporter

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The plain HTTP server: what `numascope exporter` serves with when no
// --web.config.file asks for TLS or basic auth. A scrape is one request on
// a kept-alive connection, and net/http's machinery around it (a request
// and header maps per request, a background reader goroutine, deadlines
// reset at every request, exporter-toolkit's wrapper) cost a scrape about
// as much as the read of the files it serves (docs/performance.md, The
// Prometheus exporter). This server does only what a scraper needs, with
// nothing allocated per request: one goroutine per connection reads the
// requests into a fixed buffer and answers them in turn; it parses the
// request line and the few headers it uses (Accept, Accept-Encoding,
// Connection, Host and the body's), answers /metrics as the net/http
// handler does (same negotiation, same bytes, the same slots shared with
// no other server) and writes each answer with one writev(2) of its header
// and body. Everything else gets the status net/http would give it, and
// malformed or oversized requests are answered and the connection closed.

// Limits of the plain server. A request's line and headers must fit
// maxHeaderBytes (431 otherwise), its line maxRequestLine (414); it may
// have no body (413). At most maxConns connections are open at once (the
// next get 503 and are closed); each holds maxHeaderBytes of buffer.
const (
	maxHeaderBytes = 8 << 10
	maxRequestLine = 4 << 10
	maxConns       = 256
	// headerTimeout bounds the wait for a request's headers once its
	// first byte came, and for a new connection's first request, as
	// net/http's ReadHeaderTimeout did.
	headerTimeout = 10 * time.Second
	// deadlineSlack is how much earlier than asked a kept-alive
	// connection's idle deadline may fall: the deadline is moved (a timer
	// operation, which can wake a thread) at most once per slack, not at
	// every request.
	deadlineSlack = time.Second
)

// plainServer serves an exporter's /metrics over plain HTTP/1.1.
type plainServer struct {
	x                                        *Exporter
	ln                                       net.Listener
	compress                                 bool
	writeTimeout, headerTimeout, idleTimeout time.Duration
	sem                                      chan struct{} // scrape slots (maxInFlight)
	neg                                      negotiator

	mu      sync.Mutex
	conns   map[*plainConn]struct{}
	closing bool
	wg      sync.WaitGroup
}

func newPlainServer(x *Exporter, ln net.Listener, compress bool, writeTimeout time.Duration) *plainServer {
	return &plainServer{
		x: x, ln: ln, compress: compress,
		writeTimeout: writeTimeout, headerTimeout: headerTimeout, idleTimeout: idleTimeout,
		sem: make(chan struct{}, maxInFlight), conns: map[*plainConn]struct{}{},
	}
}

// serve accepts connections until ctx ends, then closes the listener and
// the idle connections, lets the answers being written finish (5 s at
// most, as the net/http server's Shutdown was given) and returns.
func (s *plainServer) serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.shutdown)
	defer stop()
	var errAccept error
	backoff := 5 * time.Millisecond
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
				errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) {
				// Out of descriptors or memory for a while: wait as
				// net/http does, rather than spin or give up.
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			errAccept = err
			s.shutdown()
			break
		}
		backoff = 5 * time.Millisecond
		s.mu.Lock()
		switch {
		case s.closing:
			s.mu.Unlock()
			nc.Close()
			continue
		case len(s.conns) >= maxConns:
			s.mu.Unlock()
			refuse(nc)
			continue
		}
		c, err := newPlainConn(s, nc)
		if err != nil {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
	}
	return errAccept
}

// shutdown stops accepting and closes the connections waiting for a
// request; the others close once their answer is written.
func (s *plainServer) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.closing = true
	s.ln.Close()
	for c := range s.conns {
		if c.idle {
			c.nc.Close()
		}
	}
}

// refuse answers a connection over maxConns with 503 and closes it. The
// connection is new, so its socket's send buffer is empty and the short
// answer does not block.
func refuse(nc net.Conn) {
	body := "Limit of open connections reached (" + strconv.Itoa(maxConns) + "), try again later.\n"
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(appendStatus(nil, http.StatusServiceUnavailable, "text/plain; charset=utf-8", len(body), true, nil, body))
	nc.Close()
}

// plainConn is one connection and its buffers, reused from request to
// request.
type plainConn struct {
	s    *plainServer
	nc   net.Conn
	rc   syscall.RawConn
	idle bool // waiting for a request (under s.mu)

	buf []byte // maxHeaderBytes: requests as read
	n   int    // bytes of buf read and not yet parsed
	rdl time.Time

	head   []byte        // the answer's status line and headers
	iov    [2]unix.Iovec // head and body, for writev
	niov   int           // iovecs in use
	nio    int           // what the last read or writev did
	errno  syscall.Errno // its error
	read   func(fd uintptr) bool
	writev func(fd uintptr) bool
}

func newPlainConn(s *plainServer, nc net.Conn) (*plainConn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &plainConn{s: s, nc: nc, rc: rc, buf: make([]byte, maxHeaderBytes)}
	// The socket's reads and writes are raw system calls: they do not
	// block (the socket is non-blocking, and the runtime's poller waits
	// for it to be ready) and take microseconds, and a raw call spares
	// the runtime's bookkeeping around a system call, which wakes its
	// monitor thread (sysmon) at every request of an otherwise idle
	// process; sysmon then polls every 20 µs while the scrape runs,
	// about a tenth of a scrape's CPU (docs/performance.md).
	c.read = func(fd uintptr) bool {
		for {
			b := c.buf[c.n:]
			n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				c.nio, c.errno = int(n), 0
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait until readable
			}
			c.nio, c.errno = 0, e
			return true
		}
	}
	c.writev = func(fd uintptr) bool {
		for {
			n, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&c.iov[0])), uintptr(c.niov))
			if e == unix.EINTR {
				continue
			}
			c.nio, c.errno = int(n), e
			return true // one try: send finishes a short write with a deadline
		}
	}
	return c, nil
}

// serve answers the connection's requests in turn until it closes, fails,
// times out, sends a malformed request, or asks to close.
func (c *plainConn) serve() {
	defer func() {
		c.nc.Close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		c.s.wg.Done()
	}()
	first := true
	var req request
	for {
		if !c.setIdle(true) {
			return
		}
		n, status, ok := c.readRequest(&req, first)
		if !ok {
			return
		}
		first = false
		if !c.setIdle(false) {
			return
		}
		if status != 0 { // malformed: answer, then close as net/http does
			_ = c.sendStatus(status, true, nil, "")
			return
		}
		if err := c.answer(&req); err != nil || req.close {
			return
		}
		copy(c.buf, c.buf[n:c.n])
		c.n -= n
	}
}

// setIdle marks the connection waiting for a request or not; false when
// the server is shutting down and the connection should close.
func (c *plainConn) setIdle(idle bool) bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.idle = idle
	return !c.s.closing
}

// readRequest reads until buf holds a whole request line and headers and
// parses them into req: the request's length in buf, and the status to
// answer when it is malformed (0 when not). ok is false when the
// connection failed, closed or timed out first.
func (c *plainConn) readRequest(req *request, first bool) (n, status int, ok bool) {
	var started time.Time // when the request's first bytes came
	for {
		if c.n > 0 {
			if n, status = parseRequest(c.buf[:c.n], req); n > 0 || status != 0 {
				return n, status, true
			}
			if c.n == len(c.buf) {
				return 0, http.StatusRequestHeaderFieldsTooLarge, true
			}
		}
		now := time.Now()
		switch {
		case c.n > 0: // a request begun: its headers within headerTimeout
			if started.IsZero() {
				started = now
			}
			c.setReadDeadline(started.Add(c.s.headerTimeout), false)
		case first:
			c.setReadDeadline(now.Add(c.s.headerTimeout), false)
		default:
			c.setReadDeadline(now.Add(c.s.idleTimeout), true)
		}
		if err := c.rc.Read(c.read); err != nil || c.errno != 0 || c.nio == 0 {
			return 0, 0, false // closed, timed out or failed
		}
		c.n += c.nio
	}
}

// setReadDeadline sets the read deadline to t; when slack is set it may
// leave an earlier one, up to deadlineSlack earlier, in place.
func (c *plainConn) setReadDeadline(t time.Time, slack bool) {
	if !c.rdl.IsZero() && !t.Before(c.rdl) && (slack && t.Sub(c.rdl) < deadlineSlack || t.Equal(c.rdl)) {
		return
	}
	c.rdl = t
	_ = c.nc.SetReadDeadline(t)
}

// answer answers a well-formed request.
func (c *plainConn) answer(req *request) error {
	path, query := req.target, []byte(nil)
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	get := string(req.method) == "GET" || string(req.method) == "HEAD"
	switch string(path) {
	case "/metrics":
	case "/":
		if !get {
			return c.sendStatus(http.StatusMethodNotAllowed, req.close, req, "")
		}
		return c.sendStatus(http.StatusOK, req.close, req, "numascope exporter: metrics are at /metrics (docs/exporter.md)\n")
	default:
		return c.sendStatus(http.StatusNotFound, req.close, req, "")
	}
	if !get {
		return c.sendStatus(http.StatusMethodNotAllowed, req.close, req, "")
	}
	select {
	case c.s.sem <- struct{}{}:
		defer func() { <-c.s.sem }()
	default:
		return c.sendStatus(http.StatusServiceUnavailable, req.close, req,
			"Limit of concurrent requests reached ("+strconv.Itoa(maxInFlight)+"), try again later.\n")
	}
	format, enc := c.s.neg.negotiateBytes(req.accept)
	gz := c.s.compress && acceptsGzip(string(req.acceptEncoding))
	var q string
	if len(query) > 0 {
		q = string(query)
	}
	sc := c.s.x.scrape(format, enc, gz, q)
	defer sc.done()

	h := append(c.head[:0], "HTTP/1.1 200 OK\r\nContent-Type: "...)
	h = append(h, sc.ctype...)
	h = append(h, "\r\nContent-Length: "...)
	h = strconv.AppendInt(h, int64(len(sc.body)), 10)
	h = append(h, "\r\nVary: Accept\r\n"...)
	if c.s.compress {
		h = append(h, "Vary: Accept-Encoding\r\n"...)
		if sc.gz {
			h = append(h, "Content-Encoding: gzip\r\n"...)
		}
	}
	h = appendCommon(h, req.close, req.http10)
	c.head = h
	body := sc.body
	if string(req.method) == "HEAD" {
		body = nil
	}
	return c.send(h, body)
}

// sendStatus answers with status and a text body (net/http's text for the
// status when body is ""), closing the connection after it when close is
// set. req is nil for a malformed request; a HEAD request gets no body.
func (c *plainConn) sendStatus(status int, close bool, req *request, body string) error {
	if body == "" {
		body = statusBody(status)
	}
	c.head = appendStatus(c.head[:0], status, "text/plain; charset=utf-8", len(body), close, req, "")
	if req != nil && string(req.method) == "HEAD" {
		return c.send(c.head, nil)
	}
	return c.send(c.head, []byte(body))
}

// statusBody is net/http's text for an error status.
func statusBody(status int) string {
	switch status {
	case http.StatusNotFound:
		return "404 page not found\n"
	case http.StatusRequestHeaderFieldsTooLarge:
		return "431 Request Header Fields Too Large\n"
	}
	return strconv.Itoa(status) + " " + http.StatusText(status) + "\n"
}

// appendStatus appends a status line and headers for a text answer of
// length n, and body.
func appendStatus(h []byte, status int, ctype string, n int, close bool, req *request, body string) []byte {
	h = append(h, "HTTP/1.1 "...)
	h = strconv.AppendInt(h, int64(status), 10)
	h = append(h, ' ')
	h = append(h, http.StatusText(status)...)
	h = append(h, "\r\nContent-Type: "...)
	h = append(h, ctype...)
	h = append(h, "\r\nContent-Length: "...)
	h = strconv.AppendInt(h, int64(n), 10)
	h = append(h, "\r\n"...)
	if status == http.StatusMethodNotAllowed {
		h = append(h, "Allow: GET, HEAD\r\n"...)
	}
	h = appendCommon(h, close, req != nil && req.http10)
	return append(h, body...)
}

// appendCommon appends the headers every answer has, and the blank line
// that ends them.
func appendCommon(h []byte, close, http10 bool) []byte {
	h = append(h, "X-Content-Type-Options: nosniff\r\nDate: "...)
	h = time.Now().UTC().AppendFormat(h, http.TimeFormat)
	switch {
	case close:
		h = append(h, "\r\nConnection: close"...)
	case http10:
		h = append(h, "\r\nConnection: keep-alive"...)
	}
	return append(h, "\r\n\r\n"...)
}

// send writes head and body in one writev. When the socket cannot take it
// all at once (a client reading slowly), the rest is written under the
// write deadline: a client that stops reading loses its connection after
// writeTimeout, and with it the scrape slot it held. The deadline is set
// only then, so that the usual answer, written at once, costs no timer.
func (c *plainConn) send(head, body []byte) error {
	c.iov[0].Base, c.niov = &head[0], 1
	c.iov[0].SetLen(len(head))
	if len(body) > 0 {
		c.iov[1].Base, c.niov = &body[0], 2
		c.iov[1].SetLen(len(body))
	}
	err := c.rc.Write(c.writev)
	c.iov = [2]unix.Iovec{} // no pointer kept to a read's body
	if err != nil {
		return err
	}
	done := c.nio
	switch c.errno {
	case 0:
	case unix.EAGAIN:
		done = 0
	default:
		return c.errno
	}
	if done == len(head)+len(body) {
		return nil
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.s.writeTimeout)); err != nil {
		return err
	}
	if done < len(head) {
		if _, err := c.nc.Write(head[done:]); err != nil {
			return err
		}
		done = len(head)
	}
	if _, err := c.nc.Write(body[done-len(head):]); err != nil {
		return err
	}
	return c.nc.SetWriteDeadline(time.Time{})
}
