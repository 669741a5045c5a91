// Package web serves numascope's web client: the HTTP server, tokens and
// connection limits, the websocket and its messages, and the backends of
// documents (`numascope view` of a recording, a profile, a bench document
// or several hosts, and experiment reports). `numascope live`'s backend is
// the sampling hub in internal/live, which talks to clients through Client
// and the Backend interface. The client is embedded in the binary, so
// nothing needs installing on the monitored machine.
//
// The wire protocol is JSON over one websocket per browser tab, versioned
// by ProtocolVersion and documented in docs/live-protocol.md.
//
// No backend waits for a browser: every message goes to a client's bounded
// queue (Client.Enqueue), and a client whose queue is full is dropped with
// a message.
package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/numascope/numascope/internal/connlimit"
	"github.com/numascope/numascope/internal/loopback"
	"github.com/numascope/numascope/internal/top"
)

//go:embed dist
var distFS embed.FS

// Options tune a Server.
type Options struct {
	// Listen is the address to bind, e.g. "127.0.0.1:8080". Port 0 picks one.
	Listen string
	// Token must be presented by every client, on every bind, loopback
	// included (other local users can reach loopback): in an
	// "Authorization: Bearer" header, in the websocket subprotocol
	// "numascope.token.T" (what browsers can send on a websocket), or in
	// ?token= for scripts. Never in a cookie: cookies are per host, not per
	// port, so every other server on 127.0.0.1 would get it (issue 28).
	// Listen generates one when it is empty (unless NoToken).
	Token string
	// NoToken turns the token off on purpose; allowed only on a loopback
	// bind, where the DNS-rebinding Host check still applies.
	NoToken bool
	// Batch is how often samples are sent to clients (default 400ms).
	Batch time.Duration
	// Queue is how many messages may wait for a client before it is
	// dropped (default 64, about 25 s of batches).
	Queue int
	// QueueBytes bounds the bytes of the messages waiting for one client
	// (default DefaultQueueBytes); a client over it is dropped with a
	// message. The history replay every new client gets is one copy shared
	// by all of them and does not count.
	QueueBytes int
	// MaxClients bounds the clients served at a time (default
	// DefaultMaxClients); one more is refused with HTTP 503.
	MaxClients int
	// WriteTimeout drops a client whose socket takes longer than this to
	// accept one message (default 10s).
	WriteTimeout time.Duration
	// SendBuffer, when > 0, sets SO_SNDBUF of accepted connections, which
	// bounds how much a stalled client can buffer in the kernel before the
	// queue notices it.
	SendBuffer int
	// Log receives one-line notices (dropped clients, protocol errors).
	Log func(string)
	// Metrics, when set, serves /metrics (the Prometheus exporter's
	// handler) without the token: it is read-only and holds only counters
	// every local user can read in /proc and /sys (issue 17). It skips the
	// DNS-rebinding Host check too, for the same reason: a page that reads
	// it learns nothing the machine's users could not.
	Metrics http.Handler
	// Processes, when set, feeds the processes page (issue 18,
	// /api/processes): refreshed at most once per ProcessesEvery (default
	// 1s) for all clients together, and only while a page asks. It needs
	// the token: it shows other users' commands.
	Processes      top.Feed
	ProcessesEvery time.Duration
	// ProcessesReason is what the page says when Processes is nil, such
	// as why the feed could not be built.
	ProcessesReason string
	// RecordDir is where the recordings a live client asks for go; their
	// paths are relative to it and may not leave it. Default: the working
	// directory.
	RecordDir string
	// clock is time.Now unless a test sets it.
	clock func() time.Time
}

// DefaultMaxClients is how many browsers a server serves at a time unless
// told otherwise (--max-clients): each costs the hub a little work per
// batch and memory for its queue.
const DefaultMaxClients = 32

// DefaultQueueBytes bounds what may wait for one client: with
// DefaultMaxClients, at most 512 MiB in all besides the shared history.
const DefaultQueueBytes = 16 << 20

func (o *Options) defaults() {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8080"
	}
	if o.Batch <= 0 {
		o.Batch = 400 * time.Millisecond
	}
	if o.Queue <= 0 {
		o.Queue = 64
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = func(string) {}
	}
	if o.ProcessesEvery <= 0 {
		o.ProcessesEvery = time.Second
	}
}

// csp allows exactly the client's inline script (by hash) and nothing
// from elsewhere: the built client is one self-contained HTML file. It is
// built on the first request, not at package init: every command links
// this package, and hashing the 190 KB page cost `stat` 565 KB of garbage
// at start-up for a header it never sends.
var csp = sync.OnceValue(func() string {
	b, err := distFS.ReadFile("dist/index.html")
	if err != nil {
		panic("web: the embedded client is missing dist/index.html: run scripts/web-build")
	}
	var hashes []string
	for rest := string(b); ; {
		i := strings.Index(rest, "<script")
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		k := strings.Index(rest[i:], "</script>")
		if j < 0 || k < 0 {
			break
		}
		sum := sha256.Sum256([]byte(rest[i+j+1 : i+k]))
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		rest = rest[i+k+len("</script>"):]
	}
	return "default-src 'none'; script-src " + strings.Join(hashes, " ") +
		"; connect-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
})

// Backend is what a connection talks to: the live hub (internal/live) or
// a document (a recording, a profile, a bench or an experiment report).
type Backend interface {
	// Attach registers a new client and queues its hello: when it returns,
	// the hello is the first message in the client's queue, so that no
	// reply to what the client sends can come before it.
	Attach(c *Client)
	// Detach forgets a client (it may already be dropped).
	Detach(c *Client)
	// Request handles one parsed client message.
	Request(c *Client, r *Request)
}

// Server is the HTTP and websocket server.
type Server struct {
	opt      Options
	be       Backend
	procs    *procHub // nil without Options.Processes
	ln       net.Listener
	srv      *http.Server
	loopback bool
	// GeneratedToken is true when Listen made up the token.
	GeneratedToken bool
	nextID         atomic.Int64
	active         atomic.Int64 // clients connected now
	wg             sync.WaitGroup
	mu             sync.Mutex
	closing        bool // set before wg.Wait: no connection is added after

	conns *connlimit.Limiter // the connections srv holds, capped (Serve; under mu)
}

// ConnLimiter is the Limiter of the connections, nil before Serve (the
// idle-connection tests read its counts).
func (s *Server) ConnLimiter() *connlimit.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// NewServer prepares a server whose connections talk to be; nothing is
// bound until Listen.
func NewServer(opt Options, be Backend) *Server {
	opt.defaults()
	s := &Server{opt: opt, be: be}
	if opt.Processes != nil {
		s.procs = newProcHub(opt.Processes, opt.ProcessesEvery, opt.MaxClients)
		if opt.clock != nil {
			s.procs.now = opt.clock
		}
	}
	return s
}

// Options are the server's options, defaults filled in.
func (s *Server) Options() Options { return s.opt }

// Listening reports whether Listen has bound the address.
func (s *Server) Listening() bool { return s.ln != nil }

// Listen binds the address. Without a token one is generated
// (GeneratedToken is then true; URL includes it), unless NoToken, which a
// non-loopback address refuses.
func (s *Server) Listen() error {
	if _, _, err := net.SplitHostPort(s.opt.Listen); err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8080", s.opt.Listen)
	}
	s.loopback = loopback.Only(s.opt.Listen)
	switch {
	case s.opt.NoToken && s.opt.Token != "":
		return errors.New("--no-token and a token (--token or NUMASCOPE_TOKEN) together: give one or the other")
	case s.opt.NoToken && !s.loopback:
		return fmt.Errorf("--no-token: %s is not a loopback address; --no-token is allowed only with --listen 127.0.0.1:PORT (drop it and open the printed URL, which carries the token)", s.opt.Listen)
	case s.opt.NoToken:
	case s.opt.Token == "":
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("generating a token: %w", err)
		}
		s.opt.Token = hex.EncodeToString(b[:])
		s.GeneratedToken = true
	default:
		if err := CheckToken(s.opt.Token); err != nil {
			return err
		}
	}
	lc := net.ListenConfig{}
	ln, err := lc.Listen(context.Background(), "tcp", s.opt.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w (pick another port with --listen 127.0.0.1:PORT)", s.opt.Listen, err)
	}
	s.ln = ln
	return nil
}

// CheckToken checks a token given by the user: it goes into URLs and a
// websocket subprotocol (an HTTP token), so it is limited to characters
// that need no escaping in either.
func CheckToken(tok string) error {
	if tok == "" {
		return errors.New("the token is empty: give one, or leave it out and numascope generates one")
	}
	for _, r := range tok {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
			return fmt.Errorf("the token holds %q: use letters, digits and - . _ ~ only", r)
		}
	}
	return nil
}

// Addr is the bound address, valid after Listen.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Token is the token clients must present, "" with NoToken.
func (s *Server) Token() string { return s.opt.Token }

// URL is the address to open in a browser, with the token if any.
func (s *Server) URL() string {
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Bound to every address: name the machine, which is what a
		// browser elsewhere needs.
		host = "localhost"
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	u := "http://" + net.JoinHostPort(host, port) + "/"
	if s.opt.Token != "" {
		u += "?token=" + url.QueryEscape(s.opt.Token)
	}
	return u
}

// HeaderTimeout bounds the wait for a request's headers, from a new
// connection's accept or a kept-alive one's next first byte: a client that
// sends half a request and stalls is closed then.
const HeaderTimeout = 10 * time.Second

// IdleTimeout closes a kept-alive connection with no request for this
// long.
const IdleTimeout = 2 * time.Minute

// Serve serves until ctx is done, then closes every connection.
func (s *Server) Serve(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		// Every answer but a websocket's (whose hijack clears the
		// deadline, its frames bounded by WriteTimeout each) is written
		// within WriteTimeout: a connection serving a request is never
		// evicted, so a client that stops reading must lose it.
		WriteTimeout: s.opt.WriteTimeout,
		BaseContext:  func(net.Listener) context.Context { return ctx },
		ConnContext: func(c context.Context, nc net.Conn) context.Context {
			if tc, ok := nc.(*net.TCPConn); ok && s.opt.SendBuffer > 0 {
				_ = tc.SetWriteBuffer(s.opt.SendBuffer)
			}
			return c
		},
	}
	// Nothing is authenticated before a request is read: cap the
	// connections, closing the one idle longest for a newcomer (issue 28;
	// internal/connlimit). A token holder's connection sends its request
	// at once, so it gets through however many idle connections another
	// local user holds; its websocket, once hijacked, is not counted
	// (MaxClients bounds those).
	conns := connlimit.New(connlimit.Max())
	conns.Install(s.srv)
	s.mu.Lock()
	s.conns = conns
	s.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// track counts a connection in for Serve to wait for, unless Serve is
// already waiting (a WaitGroup may not grow from zero during Wait).
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

// Handler serves the embedded client on /, the protocol on /ws, the
// processes page's frames on /api/processes (processes.go) and, with
// Options.Metrics, the Prometheus metrics on /metrics.
func (s *Server) Handler() http.Handler {
	sub, err := fs.Sub(distFS, "dist")
	if err != nil {
		panic(err)
	}
	static := http.FileServer(http.FS(sub))
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serveWS)
	mux.HandleFunc("/api/processes", s.serveProcesses)
	mux.HandleFunc("/api/processes/detail", s.serveProcesses)
	mux.Handle("/", static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && s.opt.Metrics != nil {
			w.Header().Set("X-Content-Type-Options", "nosniff")
			s.opt.Metrics.ServeHTTP(w, r)
			return
		}
		if !s.hostAllowed(r.Host) {
			http.Error(w, "numascope: this server answers only to localhost names (DNS rebinding protection); use http://127.0.0.1:PORT/", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", csp())
		h.Set("Cache-Control", "no-cache")
		expireOldCookies(w, r)
		mux.ServeHTTP(w, r)
	})
}

// hostAllowed protects a token-less loopback server (--no-token) from DNS
// rebinding: a page on evil.example resolved to 127.0.0.1 sends Host:
// evil.example. With a token, such a page lacks it: the token lives only in
// the page's sessionStorage, which belongs to the real origin.
func (s *Server) hostAllowed(hostport string) bool {
	if s.opt.Token != "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenRefused is the 401's text.
const tokenRefused = "numascope: missing or wrong token: open the URL numascope printed (it ends in ?token=...), or send the token as \"Authorization: Bearer TOKEN\""

// Subprotocol is the websocket subprotocol of docs/live-protocol.md. A
// browser cannot set headers on a websocket, so the page offers two
// subprotocols: Subprotocol, which the server picks and echoes (a browser
// refuses a handshake whose answer names none of those it offered), and
// TokenSubprotocolPrefix+token, which carries the token and is never echoed.
const Subprotocol = "numascope"

// TokenSubprotocolPrefix starts the subprotocol that carries the token.
const TokenSubprotocolPrefix = "numascope.token."

// oldCookiePrefix names the cookies numascope once kept the token in
// (numascope-token-PORT, before issue 28).
const oldCookiePrefix = "numascope-token-"

// expireOldCookies asks the browser to delete any token cookie an older
// numascope left in it: the browser would otherwise keep sending it to
// every port of the host, other users' servers included. The reply carries
// no token, only the expiry; no request is ever authenticated by a cookie.
func expireOldCookies(w http.ResponseWriter, r *http.Request) {
	for _, c := range r.Cookies() {
		if strings.HasPrefix(c.Name, oldCookiePrefix) {
			http.SetCookie(w, &http.Cookie{Name: c.Name, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
	}
}

// tokenOK reports whether a request carries the token: in an
// "Authorization: Bearer" header (the page's fetches), in the websocket
// subprotocol TokenSubprotocolPrefix+token (the page's websocket), or in
// ?token= (scripts, curl). A cookie is never looked at.
func (s *Server) tokenOK(r *http.Request) bool {
	if s.opt.Token == "" {
		return s.opt.NoToken
	}
	if s.tokenIs(r.URL.Query().Get("token")) {
		return true
	}
	for _, v := range r.Header.Values("Authorization") {
		if scheme, tok, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Bearer") && s.tokenIs(strings.TrimSpace(tok)) {
			return true
		}
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if tok, ok := strings.CutPrefix(strings.TrimSpace(p), TokenSubprotocolPrefix); ok && s.tokenIs(tok) {
				return true
			}
		}
	}
	return false
}

// tokenIs compares got with the token in constant time.
func (s *Server) tokenIs(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.opt.Token)) == 1
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !s.tokenOK(r) {
		http.Error(w, tokenRefused, http.StatusUnauthorized)
		return
	}
	if !s.admit() {
		s.opt.Log(fmt.Sprintf("websocket from %s refused: %d clients connected, the most --max-clients allows", r.RemoteAddr, s.opt.MaxClients))
		http.Error(w, fmt.Sprintf("numascope: %d clients are connected, the most this server serves (--max-clients); close one or restart with a higher --max-clients", s.opt.MaxClients), http.StatusServiceUnavailable)
		return
	}
	defer s.active.Add(-1)
	// Accept checks that Origin matches Host (same origin); a page from
	// another site cannot open the stream. It echoes Subprotocol when the
	// client offers it (the page does), never the token's. Frames go out
	// through net/http's hijacked connection, ordinary writes: at most one
	// per batch (--batch, 400 ms by default), where a raw write would spare
	// the runtime's monitor thread one wake-up, a gain no benchmark
	// resolved (issue 33; docs/performance.md, "Hand-written I/O").
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		s.opt.Log(fmt.Sprintf("websocket from %s refused: %v", r.RemoteAddr, err))
		return
	}
	conn.SetReadLimit(hardReadLimit)
	if !s.track() {
		conn.Close(websocket.StatusGoingAway, "numascope: the server is shutting down")
		return
	}
	defer s.wg.Done()
	c := &Client{
		id:    s.nextID.Add(1),
		conn:  conn,
		send:  make(chan queued, s.opt.Queue),
		done:  make(chan struct{}),
		ready: make(chan struct{}),
		srv:   s,
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go c.writeLoop(ctx)
	s.be.Attach(c) // the hello is queued first: only now are messages read
	defer s.be.Detach(c)
	c.readLoop(ctx)
	c.Drop(websocket.StatusNormalClosure, "")
}

// admit counts a new client in, unless MaxClients are connected.
func (s *Server) admit() bool {
	for {
		n := s.active.Load()
		if n >= int64(s.opt.MaxClients) {
			return false
		}
		if s.active.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Client is one websocket connection.
type Client struct {
	id   int64
	conn *websocket.Conn
	send chan queued
	// bytes is what the messages in send hold, shared ones excepted.
	bytes atomic.Int64
	done  chan struct{}
	// ready is closed by a backend whose hello is queued on another
	// goroutine (the live hub), once it is.
	ready chan struct{}
	once  sync.Once
	srv   *Server
}

// queued is a message waiting for a client; n is the bytes it counts
// against the client's QueueBytes (0 for the shared history replay).
type queued struct {
	b []byte
	n int
}

// Enqueue queues a message without blocking; a client whose queue is full
// (in messages or bytes) has fallen behind and is dropped. It is O(1): the
// hub calls it for every client on every batch.
func (c *Client) Enqueue(b []byte) bool { return c.put(queued{b, len(b)}) }

// EnqueueShared queues a message every client shares one copy of (the
// history replay), which does not count against the bytes bound.
func (c *Client) EnqueueShared(b []byte) bool { return c.put(queued{b, 0}) }

func (c *Client) put(q queued) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	if q.n > 0 && c.bytes.Add(int64(q.n)) > int64(c.srv.opt.QueueBytes) {
		c.bytes.Add(-int64(q.n))
		c.srv.opt.Log(fmt.Sprintf("client %d fell behind (over %d MiB queued): disconnected", c.id, c.srv.opt.QueueBytes>>20))
		c.Drop(websocket.StatusPolicyViolation, "numascope: this client fell behind the stream (too much data queued) and was disconnected; reload to reconnect")
		return false
	}
	select {
	case c.send <- q:
		return true
	default:
		c.bytes.Add(-int64(q.n))
		c.srv.opt.Log(fmt.Sprintf("client %d fell behind (%d messages queued): disconnected", c.id, cap(c.send)))
		c.Drop(websocket.StatusPolicyViolation, "numascope: this client fell behind the stream and was disconnected; reload to reconnect")
		return false
	}
}

// Drop closes the client with code and reason, once.
func (c *Client) Drop(code websocket.StatusCode, reason string) {
	c.once.Do(func() {
		close(c.done)
		go func() { _ = c.conn.Close(code, reason) }()
	})
}

func (c *Client) dropped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *Client) writeLoop(ctx context.Context) {
	for {
		select {
		case <-c.done:
			return
		case <-ctx.Done():
			return
		case q := <-c.send:
			wctx, cancel := context.WithTimeout(ctx, c.srv.opt.WriteTimeout)
			err := c.conn.Write(wctx, websocket.MessageText, q.b)
			cancel()
			c.bytes.Add(-int64(q.n))
			if err != nil {
				if !c.dropped() {
					c.srv.opt.Log(fmt.Sprintf("client %d: %v: disconnected", c.id, err))
				}
				c.Drop(websocket.StatusPolicyViolation, "numascope: writing to this client failed or timed out")
				return
			}
		}
	}
}

func (c *Client) readLoop(ctx context.Context) {
	buf := make([]byte, MaxMessage+1)
	for {
		typ, r, err := c.conn.Reader(ctx)
		if err != nil {
			return
		}
		n, err := io.ReadFull(r, buf)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return
		}
		if n > MaxMessage {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return // over hardReadLimit: the websocket layer closed the connection
			}
			c.Reply(ErrorMsg{Type: "error", Error: fmt.Sprintf("message too large: the limit is %d bytes", MaxMessage)})
			continue
		}
		if typ != websocket.MessageText {
			c.Reply(ErrorMsg{Type: "error", Error: "binary message: the protocol is JSON text"})
			continue
		}
		req, err := parseRequest(buf[:n])
		if err != nil {
			c.Reply(ErrorMsg{Type: "error", Error: err.Error()})
			continue
		}
		c.srv.be.Request(c, req)
	}
}

// MarkReady says that the client's hello is queued, for a backend that
// queues it on another goroutine than Attach's (the live hub): Ready is
// closed, and the client's messages are read from then on.
func (c *Client) MarkReady() { close(c.ready) }

// Ready is closed once the client's hello is queued (MarkReady).
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Done is closed when the client is dropped.
func (c *Client) Done() <-chan struct{} { return c.done }

// QueueCap is how many messages may wait for the client (Options.Queue).
func (c *Client) QueueCap() int { return cap(c.send) }

// Reply queues v, as JSON, for this client only.
func (c *Client) Reply(v any) { c.Enqueue(MustJSON(v)) }

// Fail queues the error reply to the client's message id.
func (c *Client) Fail(id any, err error) {
	c.Reply(ErrorMsg{Type: "error", ID: id, Error: err.Error()})
}
