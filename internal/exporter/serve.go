package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/numascope/numascope/internal/connlimit"
)

// DefaultListen is the exporter's address unless told otherwise: loopback
// only, on the port numascope registered in Prometheus's list of default
// exporter ports' neighbourhood (node_exporter has 9100).
const DefaultListen = "127.0.0.1:9864"

// maxInFlight bounds the scrapes served at once; more get HTTP 503. They
// share one read and its encoding.
const maxInFlight = 16

// Handler serves the exporter's metrics in the text format or, to a client
// that asks for it (Prometheus does), OpenMetrics, uncompressed. It needs no
// token: the metrics are read-only and are what any local user can read in
// /proc and /sys already (docs/exporter.md, Security).
func (e *Exporter) Handler() http.Handler { return e.handler(false, DefaultWriteTimeout) }

// handler is Handler, with gzip offered when compress is set. Compression
// is off by default: it costs a scrape more CPU than everything else
// together (docs/performance.md), to save some 60 KB per scrape on a
// machine whose network is rarely the bottleneck.
//
// It behaves as promhttp's handler did (HandlerForTransactional with
// OpenMetrics enabled, errors ignored, at most maxInFlight at once): the
// format is negotiated from Accept by prometheus/common (OpenMetrics when
// asked for, the text format otherwise, protobuf to a client that prefers
// it), gzip as promhttp negotiates it, and name[]=NAME keeps only the
// families named. But the text formats are written by the exporter itself
// (encode.go), once per read whatever the number of scrapes sharing it,
// and sent in one write with a Content-Length.
//
// A scrape's answer must be written within writeTimeout: a client that
// stops reading would otherwise hold its slot for ever, and maxInFlight
// such clients (no token is needed) would shut every scraper out. The
// deadline is set here, where the slot is held, so that live's server,
// which serves this handler beside its websockets, has it too; 0 leaves
// it to the server (the exporter's own sets http.Server.WriteTimeout,
// which bounds every answer, and a second deadline would cost a timer
// operation per scrape for nothing).
func (e *Exporter) handler(compress bool, writeTimeout time.Duration) http.Handler {
	sem := make(chan struct{}, maxInFlight)
	var neg negotiator
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", maxInFlight), http.StatusServiceUnavailable)
			return
		}
		if writeTimeout > 0 {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
		}
		var query string
		if req.URL != nil {
			query = req.URL.RawQuery
		}
		format, enc := neg.negotiate(req.Header.Get("Accept"))
		gz := compress && acceptsGzip(req.Header.Get("Accept-Encoding"))
		sc := e.scrape(format, enc, gz, query)
		defer sc.done()
		h := w.Header()
		h.Add("Vary", "Accept")
		if compress {
			h.Add("Vary", "Accept-Encoding")
		}
		h.Set("Content-Type", sc.ctype)
		if sc.gz {
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(len(sc.body)))
		w.Write(sc.body) // an error is the client's going away: nothing to do
	})
}

// scraped is the answer to a scrape: its Content-Type, whether it is
// gzipped, and its body, which belongs to a read and is valid until done.
type scraped struct {
	ctype string
	gz    bool
	body  []byte
	x     *Exporter
	r     *read
}

// done releases the read the body belongs to.
func (s *scraped) done() { s.x.release(s.r) }

// scrape makes or joins a read and encodes it in format (as negotiated),
// gzipped when gz is set, with only the families named by name[]=NAME in
// the raw query, if any.
func (e *Exporter) scrape(format string, enc int, gz bool, query string) scraped {
	var names []string
	if query != "" {
		q, _ := url.ParseQuery(query) // as url.URL.Query: what parses
		names = q["name[]"]
	}
	r := e.acquire()
	var body []byte
	switch {
	case enc < 0:
		body = protoBody(r.b.dtoFamilies(), expfmt.Format(format), names, gz)
	case names != nil:
		body = r.encode(enc).filter(r.b.spans, names, enc == encOM)
		if gz {
			body = new(gzipper).compress(nil, body)
		}
	case gz:
		body = r.encode(enc + encTextGz).body
	default:
		body = r.encode(enc).body
	}
	return scraped{ctype: format, gz: gz, body: body, x: e, r: r}
}

// filter returns a new body with only the families named in names, and
// OpenMetrics' # EOF when om is set.
func (e *encoded) filter(spans []span, names []string, om bool) []byte {
	var body []byte
	for i, s := range spans {
		if slices.Contains(names, s.f.name) {
			body = append(body, e.body[e.offs[i]:e.offs[i+1]]...)
		}
	}
	if om {
		body = append(body, "# EOF\n"...)
	}
	return body
}

// protoBody encodes fams (those in names, or all when names is nil) in a
// protobuf format with prometheus/common, gzipped when gz is set.
func protoBody(fams []*dto.MetricFamily, format expfmt.Format, names []string, gz bool) []byte {
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	enc := expfmt.NewEncoder(w, format)
	for _, f := range fams {
		if names == nil || slices.Contains(names, f.GetName()) {
			enc.Encode(f) // writes to memory; the families are valid
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		c.Close()
	}
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

// acceptedFormats are the formats offered, in promhttp's order of
// preference with OpenMetrics enabled.
var acceptedFormats = expfmt.DefaultOpenMetricsAcceptedFormats()

// negotiator negotiates the format from an Accept header with
// prometheus/common, remembering the last header's answer: a Prometheus
// server sends the same header at every scrape, and the negotiation
// allocates.
type negotiator struct {
	last atomic.Pointer[negotiated]
}

type negotiated struct {
	accept, format string
	enc            int // encText, encOM, or -1 for a protobuf format
}

// negotiate returns the Content-Type to answer accept with, and its
// encoding.
func (n *negotiator) negotiate(accept string) (string, int) {
	if l := n.last.Load(); l != nil && l.accept == accept {
		return l.format, l.enc
	}
	f := expfmt.NegotiateAccept(http.Header{"Accept": {accept}}, acceptedFormats...)
	l := &negotiated{accept: accept, format: string(f), enc: -1}
	switch f.FormatType() {
	case expfmt.TypeTextPlain:
		l.enc = encText
	case expfmt.TypeOpenMetrics:
		l.enc = encOM // 1.0.0 or 0.0.1, which read the same; 2.0 is not offered
	}
	n.last.Store(l)
	return l.format, l.enc
}

// acceptsGzip says whether gzip is the content coding to answer
// Accept-Encoding with, as promhttp chose between identity and gzip: the
// one with the highest q, identity on a tie, none when the best q is 0.
func acceptsGzip(header string) bool {
	best, bestQ := "identity", -1.0
	for _, offer := range []string{"identity", "gzip"} {
		for rest := header; rest != ""; {
			var spec string
			spec, rest, _ = strings.Cut(rest, ",")
			value, params, _ := strings.Cut(spec, ";")
			value = strings.TrimSpace(value)
			q := 1.0
			if k, v, ok := strings.Cut(params, "="); ok && strings.TrimSpace(k) == "q" {
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					continue
				}
			}
			if q > bestQ && (value == "*" || strings.EqualFold(value, offer)) {
				best, bestQ = offer, q
			}
		}
	}
	return best == "gzip" && bestQ != 0
}

// ServeConfig is where and how to serve.
type ServeConfig struct {
	// Listen is HOST:PORT; port 0 picks a free one.
	Listen string
	// WebConfigFile is exporter-toolkit's web configuration (TLS, basic
	// auth), "" for plain HTTP.
	WebConfigFile string
	// Compress offers gzip to clients that accept it (Prometheus does).
	Compress bool
	// Logger receives exporter-toolkit's messages; nil discards them.
	Logger *slog.Logger
	// WriteTimeout bounds the writing of an answer (0:
	// DefaultWriteTimeout). A client that stops reading holds one of the
	// maxInFlight scrape slots, and its connection, until then, not for
	// ever.
	WriteTimeout time.Duration

	// Tests shorten these; 0 is the default.
	headerTimeout, idleTimeout time.Duration
	maxConns                   int
}

// DefaultWriteTimeout is Prometheus's default scrape timeout: a scraper
// has given up by then anyway.
const DefaultWriteTimeout = 10 * time.Second

// HeaderTimeout bounds the wait for a request's headers: from a new
// connection's accept (and its TLS handshake), or from a kept-alive
// connection's next first byte. A client that sends half a request and
// stalls (slowloris) is closed then.
const HeaderTimeout = 10 * time.Second

// IdleTimeout closes a kept-alive connection with no request for this
// long, so that idle connections do not pile up. Prometheus, scraping
// every 15 s by default, keeps its connection.
const IdleTimeout = 2 * time.Minute

// Server serves an exporter's /metrics.
type Server struct {
	cfg  ServeConfig
	ln   net.Listener
	http *http.Server
	lim  *connlimit.Limiter
}

// Listen checks the web configuration file and binds the address, so that
// both problems show before anything is served. One server answers, with
// or without a web configuration file: net/http, with exporter-toolkit
// adding TLS and basic auth when the file asks for them, as in
// node_exporter.
//
// Nothing is authenticated before a request's headers are read, so the
// connections are bounded before that (issue 28): headers must come within
// HeaderTimeout, kept-alive connections close after IdleTimeout, and at
// most connlimit.Max() are open, the longest idle one closed to make room
// for a newcomer (internal/connlimit). A scraper's connection sends its
// request at once and is never the longest idle, so it gets through
// however many idle connections a local user holds.
func (e *Exporter) Listen(cfg ServeConfig) (*Server, error) {
	if cfg.WebConfigFile != "" {
		if err := web.Validate(cfg.WebConfigFile); err != nil {
			return nil, fmt.Errorf("--web.config.file %s: %w", cfg.WebConfigFile, err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	wt := cfg.WriteTimeout
	if wt <= 0 {
		wt = DefaultWriteTimeout
	}
	mux := http.NewServeMux()
	// GET patterns answer HEAD too, and other methods 405 with Allow.
	mux.Handle("GET /metrics", e.handler(cfg.Compress, 0)) // srv.WriteTimeout bounds it
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "numascope exporter: metrics are at /metrics (docs/exporter.md)\n")
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
	// HTTP/1.1 only, over TLS too: connlimit sees when a request is being
	// served through net/http's connection states, which HTTP/2 does not
	// report, so an HTTP/2 connection would count as idle while it serves.
	// A scrape is one request at a time; HTTP/2 would bring it nothing.
	var protos http.Protocols
	protos.SetHTTP1(true)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: or(cfg.headerTimeout, HeaderTimeout),
		IdleTimeout:       or(cfg.idleTimeout, IdleTimeout),
		// Every answer (a 404, a 503, a scrape) is written within wt: a
		// connection serving a request is not idle and is not evicted,
		// so a client that stops reading must lose it.
		WriteTimeout:   wt,
		MaxHeaderBytes: 8 << 10, // a scraper sends a few hundred bytes
		Protocols:      &protos,
		ErrorLog:       slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn), // failed TLS handshakes, say
	}
	maxConns := cfg.maxConns
	if maxConns <= 0 {
		maxConns = connlimit.Max()
	}
	lim := connlimit.New(maxConns)
	lim.Install(srv)
	return &Server{cfg: cfg, ln: ln, http: srv, lim: lim}, nil
}

// or is d, or def when d is 0.
func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then closes the idle connections and lets
// the answers being written finish (5 s at most).
func (s *Server) Serve(ctx context.Context) error {
	done := make(chan error, 1)
	go func() {
		cfgFile := s.cfg.WebConfigFile
		done <- web.Serve(s.ln, s.http, &web.FlagConfig{WebConfigFile: &cfgFile}, s.cfg.Logger)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
