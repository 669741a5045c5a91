package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/live"
	"github.com/numascope/numascope/internal/recording"
)

func init() { extraCommands = append(extraCommands, newViewCmd) }

func newViewCmd(g *globals) *cobra.Command {
	var w webFlags
	cmd := &cobra.Command{
		Use:   "view FILE [--listen 127.0.0.1:8080]",
		Short: "Serve the web client on a recording",
		Long: `Load a recording (JSON Lines, plain or .zst, or the original NUMAscope JSON-array format:
everything convert reads) and serve the web client on it (open the printed URL). The server
decimates with min/max to the browser's resolution, so long high-rate recordings stay fast.
The same security rules as live apply: loopback only unless a token is given.`,
		Example: `  numascope view run.jsonl.zst
  numascope view numaconnect-trace.json --listen 127.0.0.1:9000`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := &lockedWriter{w: os.Stderr}
			rec, err := recording.Load(args[0])
			if err != nil {
				return err
			}
			for _, s := range rec.Skipped {
				stderr.printf("%s: %s", args[0], s)
			}
			if len(rec.Samples) == 0 {
				stderr.printf("%s: the recording holds no samples", args[0])
			}
			return serveUntilSignal(stderr, live.NewView(w.options(stderr), rec, args[0]).Server)
		},
	}
	w.register(cmd)
	return cmd
}

// serveUntilSignal binds srv, prints the URL to open and serves until SIGINT
// or SIGTERM: what view and experiment --web share.
func serveUntilSignal(stderr *lockedWriter, srv *live.Server) error {
	if err := srv.Listen(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	announce(stderr, srv)
	if err := srv.Serve(ctx); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}
