// Package live serves numascope's web client: `numascope live` streams
// samples to browsers over a websocket as they are taken, and `numascope
// view` serves a recording to the same client. The client is embedded in
// the binary, so nothing needs installing on the monitored machine.
//
// The wire protocol is JSON over one websocket per browser tab, versioned
// by ProtocolVersion and documented in docs/live-protocol.md.
//
// The sampler never waits for a browser: the live engine drains one
// sampler sink, encodes each batch once and hands it to every client's
// bounded queue; a client whose queue is full is dropped with a message.
package live

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
)

//go:embed dist
var distFS embed.FS

// Options tune a Server.
type Options struct {
	// Listen is the address to bind, e.g. "127.0.0.1:8080". Port 0 picks one.
	Listen string
	// Token, when set, must be presented by every client (?token= on the
	// page and websocket URL). It is required for a non-loopback Listen;
	// Listen generates one when it is missing there.
	Token string
	// Batch is how often samples are sent to clients (default 400ms).
	Batch time.Duration
	// Queue is how many messages may wait for a client before it is
	// dropped (default 64, about 25 s of batches).
	Queue int
	// WriteTimeout drops a client whose socket takes longer than this to
	// accept one message (default 10s).
	WriteTimeout time.Duration
	// SendBuffer, when > 0, sets SO_SNDBUF of accepted connections, which
	// bounds how much a stalled client can buffer in the kernel before the
	// queue notices it.
	SendBuffer int
	// Log receives one-line notices (dropped clients, protocol errors).
	Log func(string)
}

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
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = func(string) {}
	}
}

// csp allows exactly the client's inline script (by hash) and nothing
// from elsewhere: the built client is one self-contained HTML file.
var csp = func() string {
	b, err := distFS.ReadFile("dist/index.html")
	if err != nil {
		panic("live: the embedded client is missing dist/index.html: run scripts/web-build")
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
}()

// backend is what a connection talks to: the live engine or a recording.
type backend interface {
	// attach registers a new client and queues its hello.
	attach(c *client)
	// detach forgets a client (it may already be dropped).
	detach(c *client)
	// request handles one parsed client message.
	request(c *client, r *request)
}

// Server is the HTTP and websocket server.
type Server struct {
	opt      Options
	be       backend
	ln       net.Listener
	srv      *http.Server
	loopback bool
	// GeneratedToken is true when Listen made up the token.
	GeneratedToken bool
	nextID         atomic.Int64
	wg             sync.WaitGroup
}

// IsLoopback reports whether a listen address binds only loopback
// interfaces: "localhost", 127.0.0.0/8 or ::1. An empty host binds all.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newServer(opt Options, be backend) *Server {
	opt.defaults()
	return &Server{opt: opt, be: be}
}

// Listen binds the address. A non-loopback address without a token gets a
// generated one (GeneratedToken is then true; URL includes it).
func (s *Server) Listen() error {
	if _, _, err := net.SplitHostPort(s.opt.Listen); err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8080", s.opt.Listen)
	}
	s.loopback = IsLoopback(s.opt.Listen)
	if !s.loopback && s.opt.Token == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("generating a token: %w", err)
		}
		s.opt.Token = hex.EncodeToString(b[:])
		s.GeneratedToken = true
	}
	lc := net.ListenConfig{}
	ln, err := lc.Listen(context.Background(), "tcp", s.opt.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w (pick another port with --listen 127.0.0.1:PORT)", s.opt.Listen, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, valid after Listen.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Token is the token clients must present, "" when none is needed.
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

// Serve serves until ctx is done, then closes every connection.
func (s *Server) Serve(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext: func(c context.Context, nc net.Conn) context.Context {
			if tc, ok := nc.(*net.TCPConn); ok && s.opt.SendBuffer > 0 {
				_ = tc.SetWriteBuffer(s.opt.SendBuffer)
			}
			return c
		},
	}
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
	s.wg.Wait()
	return nil
}

// Handler serves the embedded client on / and the protocol on /ws.
func (s *Server) Handler() http.Handler {
	sub, err := fs.Sub(distFS, "dist")
	if err != nil {
		panic(err)
	}
	static := http.FileServer(http.FS(sub))
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serveWS)
	mux.Handle("/", static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			http.Error(w, "numascope: this server answers only to localhost names (DNS rebinding protection); use http://127.0.0.1:PORT/", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", csp)
		h.Set("Cache-Control", "no-cache")
		mux.ServeHTTP(w, r)
	})
}

// hostAllowed protects a token-less loopback server from DNS rebinding: a
// page on evil.example resolved to 127.0.0.1 sends Host: evil.example.
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

func (s *Server) tokenOK(r *http.Request) bool {
	if s.opt.Token == "" {
		return true
	}
	got := r.URL.Query().Get("token")
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.opt.Token)) == 1
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !s.tokenOK(r) {
		http.Error(w, "numascope: missing or wrong token: open the URL numascope printed (it ends in ?token=...)", http.StatusUnauthorized)
		return
	}
	// Accept checks that Origin matches Host (same origin); a page from
	// another site cannot open the stream.
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.opt.Log(fmt.Sprintf("websocket from %s refused: %v", r.RemoteAddr, err))
		return
	}
	conn.SetReadLimit(hardReadLimit)
	s.wg.Add(1)
	defer s.wg.Done()
	c := &client{
		id:   s.nextID.Add(1),
		conn: conn,
		send: make(chan []byte, s.opt.Queue),
		done: make(chan struct{}),
		srv:  s,
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go c.writeLoop(ctx)
	s.be.attach(c)
	defer s.be.detach(c)
	c.readLoop(ctx)
	c.drop(websocket.StatusNormalClosure, "")
}

// client is one websocket connection.
type client struct {
	id   int64
	conn *websocket.Conn
	send chan []byte
	done chan struct{}
	once sync.Once
	srv  *Server
}

// enqueue queues a message without blocking; a client whose queue is full
// has fallen behind and is dropped.
func (c *client) enqueue(b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.send <- b:
		return true
	default:
		c.srv.opt.Log(fmt.Sprintf("client %d fell behind (%d messages queued): disconnected", c.id, cap(c.send)))
		c.drop(websocket.StatusPolicyViolation, "numascope: this client fell behind the stream and was disconnected; reload to reconnect")
		return false
	}
}

func (c *client) drop(code websocket.StatusCode, reason string) {
	c.once.Do(func() {
		close(c.done)
		go func() { _ = c.conn.Close(code, reason) }()
	})
}

func (c *client) dropped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *client) writeLoop(ctx context.Context) {
	for {
		select {
		case <-c.done:
			return
		case <-ctx.Done():
			return
		case b := <-c.send:
			wctx, cancel := context.WithTimeout(ctx, c.srv.opt.WriteTimeout)
			err := c.conn.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				if !c.dropped() {
					c.srv.opt.Log(fmt.Sprintf("client %d: %v: disconnected", c.id, err))
				}
				c.drop(websocket.StatusPolicyViolation, "numascope: writing to this client failed or timed out")
				return
			}
		}
	}
}

func (c *client) readLoop(ctx context.Context) {
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
			c.reply(errorMsg{Type: "error", Error: fmt.Sprintf("message too large: the limit is %d bytes", MaxMessage)})
			continue
		}
		if typ != websocket.MessageText {
			c.reply(errorMsg{Type: "error", Error: "binary message: the protocol is JSON text"})
			continue
		}
		req, err := parseRequest(buf[:n])
		if err != nil {
			c.reply(errorMsg{Type: "error", Error: err.Error()})
			continue
		}
		c.srv.be.request(c, req)
	}
}

// reply queues a message for this client only.
func (c *client) reply(v any) { c.enqueue(mustJSON(v)) }

func (c *client) fail(id any, err error) {
	c.reply(errorMsg{Type: "error", ID: id, Error: err.Error()})
}
