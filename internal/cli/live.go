package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/ctl"
	"github.com/numascope/numascope/internal/live"
	"github.com/numascope/numascope/internal/sampler"
)

func init() { extraCommands = append(extraCommands, newLiveCmd) }

// webFlags are the flags of the commands that serve the web client.
type webFlags struct {
	listen string
	token  string
	batch  time.Duration
}

func (w *webFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&w.listen, "listen", "127.0.0.1:8080", "HOST:PORT to serve on; a non-loopback address needs a token")
	fl.StringVar(&w.token, "token", "", "token clients must present (?token=...); generated and printed when binding a non-loopback address without one")
}

func (w *webFlags) options(stderr *lockedWriter) live.Options {
	return live.Options{
		Listen: w.listen, Token: w.token, Batch: w.batch,
		Log: func(s string) { stderr.printf("%s", s) },
	}
}

// announce prints where to point a browser.
func announce(stderr *lockedWriter, srv *live.Server) {
	if srv.GeneratedToken {
		stderr.printf("listening on %s, which is not loopback: clients need the generated token %s", srv.Addr(), srv.Token())
	}
	fmt.Fprintf(os.Stdout, "numascope: open %s in a browser (Ctrl-C stops)\n", srv.URL())
}

func newLiveCmd(g *globals) *cobra.Command {
	var f sampleFlags
	var w webFlags
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "live [--listen 127.0.0.1:8080] [-e EVENTS] [-i INTERVAL] [--discrete] [-o FILE]",
		Short: "Serve the web client with a live stream of samples",
		Long: `Sample the selected events and stream them to the web client, which this command serves
(open the printed URL). Every browser shares one sampling interval; events, per-node or summed
columns, the interval, pause/resume, labels and recording can be changed from any of them and
through the control FIFO. With -o, samples are also recorded to FILE.

The server binds loopback only by default. Binding another address (e.g. --listen 0.0.0.0:8080)
needs a token: give --token, or numascope generates one and prints the URL with it. The websocket
protocol is documented in docs/live-protocol.md.`,
		Example: `  numascope live
  numascope live -i 100ms --discrete -o session.jsonl.zst
  numascope live --listen 0.0.0.0:8080     # prints a URL with a generated token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.count != 0 {
				return fmt.Errorf("live samples until interrupted; -n does not apply (use record -n)")
			}
			patterns, err := f.eventPatterns()
			if err != nil {
				return err
			}
			interval, err := sampler.ParseInterval(f.interval)
			if err != nil {
				return fmt.Errorf("-i: %w", err)
			}
			if w.batch < 10*time.Millisecond || w.batch > 10*time.Second {
				return fmt.Errorf("--batch %v: give 10ms to 10s", w.batch)
			}
			env, err := g.env()
			if err != nil {
				return err
			}
			stderr := &lockedWriter{w: os.Stderr}
			cat := sampler.Open(env)
			defer cat.Close()
			if len(patterns) == 0 {
				patterns = cat.Available(sampler.DefaultEvents)
			}
			pin, err := pinCPUs(env, f.samplerNode, g.root != "")
			if err != nil {
				return err
			}
			h := baseHeader(env.Topology, cat, nil)
			srv, err := live.NewLive(w.options(stderr), live.LiveConfig{
				Catalog: cat, Events: patterns, Discrete: f.discrete, Interval: interval, PinCPUs: pin,
				Header: h, Record: out, Force: force,
				Errors: func(err error) { stderr.printf("%v", err) },
			})
			if err != nil {
				return err
			}
			if err := srv.Listen(); err != nil {
				srv.Abort()
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if fifo := openFIFO(stderr, f.ctl); fifo != nil {
				defer fifo.Close()
				go func() {
					for c := range fifo.Commands() {
						switch c.Op {
						case ctl.OpRecord:
							srv.Record(c.Arg)
						case ctl.OpLabel:
							srv.Label(c.Arg)
						case ctl.OpPause:
							srv.Pause()
						case ctl.OpResume:
							srv.Resume()
						case ctl.OpInterval:
							srv.SetInterval(c.Interval)
						}
					}
				}()
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
	return cmd
}

// openFIFO opens the control FIFO like the other sampling commands: a path
// given with --ctl must work, the default is best effort.
func openFIFO(stderr *lockedWriter, path string) *ctl.Server {
	explicit := path != ""
	if !explicit {
		var err error
		if path, err = ctl.DefaultPath(); err != nil {
			stderr.printf("control FIFO disabled: %v", err)
			return nil
		}
	}
	srv, err := ctl.Listen(path, func(err error) { stderr.printf("control FIFO: %v", err) })
	if err != nil {
		stderr.printf("control FIFO disabled: %v", err)
		return nil
	}
	return srv
}
