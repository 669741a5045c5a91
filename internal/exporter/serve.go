package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// DefaultListen is the exporter's address unless told otherwise: loopback
// only, on the port numascope registered in Prometheus's list of default
// exporter ports' neighbourhood (node_exporter has 9100).
const DefaultListen = "127.0.0.1:9864"

// maxInFlight bounds the scrapes served at once; more get HTTP 503. They
// share one read, but each encodes its own response.
const maxInFlight = 16

// Handler serves the exporter's metrics in the text format or, to a client
// that asks for it (Prometheus does), OpenMetrics, uncompressed. It needs no
// token: the metrics are read-only and are what any local user can read in
// /proc and /sys already (docs/exporter.md, Security).
func (e *Exporter) Handler() http.Handler { return e.handler(false) }

// handler is Handler, with gzip offered when compress is set. Compression
// is off by default: it costs a scrape about twice the CPU of everything
// else together (docs/performance.md), to save some 60 KB per scrape on a
// machine whose network is rarely the bottleneck.
func (e *Exporter) handler(compress bool) http.Handler {
	// No Timeout: promhttp would run every scrape in a goroutine of its
	// own and buffer the response; a read takes well under a millisecond.
	return promhttp.HandlerForTransactional(e, promhttp.HandlerOpts{
		EnableOpenMetrics:   true,
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxInFlight,
		DisableCompression:  !compress,
	})
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
}

// Server serves an exporter's /metrics.
type Server struct {
	cfg  ServeConfig
	ln   net.Listener
	http *http.Server
}

// Listen checks the web configuration file and binds the address, so that
// both problems show before anything is served.
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
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.handler(cfg.Compress))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "numascope exporter: metrics are at /metrics (docs/exporter.md)\n")
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)} // failed TLS handshakes, say
	return &Server{cfg: cfg, ln: ln, http: srv}, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends.
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
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
