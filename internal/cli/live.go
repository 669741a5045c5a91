package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/exporter"
	"github.com/numascope/numascope/internal/live"
	"github.com/numascope/numascope/internal/loopback"
	"github.com/numascope/numascope/internal/web"
)

// webFlags are the flags of the commands that serve the web client.
type webFlags struct {
	listen     string
	token      string
	noToken    bool
	maxClients int
	batch      time.Duration
}

// tokenEnv names the environment variable a token may come from: unlike
// --token, it is not shown to every local user in /proc/PID/cmdline.
const tokenEnv = "NUMASCOPE_TOKEN"

// webSecurityHelp is the part of the web commands' --help that says who can
// connect.
const webSecurityHelp = `The server binds loopback only by default (--listen). Every client needs a token, on
loopback too (other local users can reach 127.0.0.1): numascope generates one and prints the
URL with it (?token=...); the page keeps it in the tab's sessionStorage, never in a cookie
(cookies reach every port of the host), so reloading http://127.0.0.1:PORT/ in that tab works
and a new tab asks for it. Scripts send ?token= or "Authorization: Bearer TOKEN". Give your own
in the environment, NUMASCOPE_TOKEN=..., or with --token (but a command line is visible to
every local user in /proc/PID/cmdline).
--no-token turns the token off on purpose, only on a loopback bind. At most --max-clients
browsers are served at a time (default 32); one that stops reading is disconnected once 16 MiB
wait for it.`

func (w *webFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&w.listen, "listen", "127.0.0.1:8080", "HOST:PORT to serve on (0.0.0.0:PORT: every interface)")
	fl.StringVar(&w.token, "token", "", "token clients must present (default: $"+tokenEnv+", else generated and printed in the URL); visible to every local user in /proc/PID/cmdline, so prefer $"+tokenEnv)
	fl.BoolVar(&w.noToken, "no-token", false, "serve without a token (loopback --listen only): any local user can then connect")
	fl.IntVar(&w.maxClients, "max-clients", web.DefaultMaxClients, "browsers served at a time; more are refused with HTTP 503")
}

func (w *webFlags) options(stderr *lockedWriter) web.Options {
	tok := w.token
	if tok == "" {
		tok = os.Getenv(tokenEnv)
	}
	return web.Options{
		Listen: w.listen, Token: tok, NoToken: w.noToken, Batch: w.batch, MaxClients: w.maxClients,
		Log: func(s string) { stderr.printf("%s", s) },
	}
}

// check checks what Listen cannot: a bad --max-clients.
func (w *webFlags) check() error {
	if w.maxClients < 1 {
		return fmt.Errorf("--max-clients %d: give at least 1", w.maxClients)
	}
	return nil
}

// announce prints where to point a browser.
func announce(stderr *lockedWriter, srv *web.Server) {
	if srv.Token() == "" {
		stderr.printf("serving without a token (--no-token): every local user can connect to %s", srv.Addr())
	} else if !loopback.Only(srv.Addr().String()) {
		stderr.printf("listening on %s, which is not loopback: anyone with the URL (it carries the token) can connect", srv.Addr())
	}
	fmt.Fprintf(os.Stdout, "numascope: open %s in a browser (Ctrl-C stops)\n", srv.URL())
}

func newLiveCmd(g *globals) *cobra.Command {
	var f sampleFlags
	var w webFlags
	var out, recordDir string
	var force, processes bool
	cmd := &cobra.Command{
		Use:   "live [--listen 127.0.0.1:8080] [-e EVENTS] [-i INTERVAL] [--discrete] [-o FILE]",
		Short: "Serve the web client with a live stream of samples",
		Long: `Sample the selected events and stream them to the web client, which this command serves
(open the printed URL). Every browser shares one sampling interval; events, per-node or summed
columns, the interval, pause/resume, labels and recording can be changed from any of them and
through the control FIFO. With -o, samples are also recorded to FILE. The port also serves
Prometheus metrics on /metrics, as numascope exporter does, without the token (they are read-only
counters every local user can read; docs/exporter.md).

The Processes tab shows the table of numascope top (docs/top.md): every process's CPU, memory
per node and NUMA faults, refreshed once a second while a page shows it, for all browsers
together. It needs the token like the rest. --processes=false leaves it out.

Recordings started from a browser go beneath --record-dir (default: the working directory), as
new files only, never through a symbolic link.

` + webSecurityHelp + `

The websocket protocol is documented in docs/live-protocol.md.`,
		Example: `  numascope live
  numascope live -i 100ms --discrete -o session.jsonl.zst
  numascope live --listen 0.0.0.0:8080     # prints a URL with a generated token
  NUMASCOPE_TOKEN=$(openssl rand -hex 16) numascope live --record-dir /srv/recordings`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.count != 0 {
				return fmt.Errorf("live samples until interrupted; -n does not apply (use record -n)")
			}
			if f.per != "" {
				return fmt.Errorf("--per does not apply to live: the web client shows rates per second (use stat --per)")
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			cfg.record, cfg.force = out, force
			if err := w.check(); err != nil {
				return err
			}
			if w.batch < 10*time.Millisecond || w.batch > 10*time.Second {
				return fmt.Errorf("--batch %v: give 10ms to 10s", w.batch)
			}
			env, cat, err := g.open()
			if err != nil {
				return err
			}
			stderr := &lockedWriter{w: os.Stderr}
			defer cat.Close()
			sc, err := cfg.resolve(g, env, cat, stderr)
			if err != nil {
				return err
			}
			// The same /metrics as numascope exporter (the kernel files, read
			// at scrape time by sensors of its own, apart from the sampler's).
			// A file it cannot read costs live its /metrics, not the session.
			opts := w.options(stderr)
			if metrics, err := exporter.New(exporter.Config{Env: env, Log: func(s string) { stderr.printf("%s", s) }}); err != nil {
				stderr.printf("no /metrics: %v", err)
			} else {
				defer metrics.Close()
				opts.Metrics = metrics.Handler()
			}
			if processes {
				if feed, err := newTopFeed(env, g.perf.PresetFiles); err != nil {
					opts.ProcessesReason = "no process table: " + err.Error()
					stderr.printf("%s", opts.ProcessesReason)
				} else {
					defer feed.Close()
					opts.Processes = feed
				}
			} else {
				opts.ProcessesReason = "numascope live was started with --processes=false"
			}
			opts.RecordDir = recordDir
			srv, err := live.NewLive(opts, sc)
			if err != nil {
				return err
			}
			if err := srv.Listen(); err != nil {
				srv.Abort()
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fifo, err := openFIFO(stderr, f.ctl)
			if err != nil {
				srv.Abort()
				return err
			}
			if fifo != nil {
				defer fifo.Close()
				go srv.Control(fifo)
			}
			announce(stderr, srv.Server)
			return srv.Run(ctx)
		},
	}
	f.register(cmd.Flags())
	w.register(cmd)
	cmd.Flags().DurationVar(&w.batch, "batch", 400*time.Millisecond, "how often samples are sent to browsers")
	cmd.Flags().StringVarP(&out, "output", "o", "", "also record to FILE (.zst suffix: zstd-compressed)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	cmd.Flags().BoolVar(&processes, "processes", true, "serve the processes page (the table of numascope top) to browsers")
	cmd.Flags().StringVar(&recordDir, "record-dir", "", "directory where recordings started from a browser go (default: the working directory)")
	// stat's -n and --per mean nothing to live, which refuses them: its help
	// does not offer them.
	for _, name := range []string{"count", "per"} {
		_ = cmd.Flags().MarkHidden(name)
	}
	return cmd
}
