package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/live"
	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/recording"
)

func newViewCmd(g *globals) *cobra.Command {
	var w webFlags
	var sourcePath []string
	cmd := &cobra.Command{
		Use:   "view FILE [--listen 127.0.0.1:8080] [--source-path DIR[:DIR...]]",
		Short: "Serve the web client on a recording or a profile",
		Long: `Load a recording (JSON Lines, plain or .zst, or the original NUMAscope JSON-array format:
everything convert reads) and serve the web client on it (open the printed URL). The server
decimates with min/max to the browser's resolution, so long high-rate recordings stay fast.

A profile written by numascope profile (a JSON object with an "access_matrix") opens the
profile pages instead: summary and hints, the access matrix as a heatmap, threads with their
pinning logs, functions and lines sorted by any metric, and the source annotated line by line.
Source files are read from disk, only those the profile names, and only as regular files
beneath each --source-path directory or, without --source-path, beneath the compilation
directory the debug info names (never /), never through a symbolic link: by the recorded path's
suffixes (for /build/src/a.c, DIR/build/src/a.c, DIR/src/a.c, DIR/a.c).

` + webSecurityHelp,
		Example: `  numascope view run.jsonl.zst
  numascope view numaconnect-trace.json --listen 127.0.0.1:9000
  numascope view numascope-profile.json --source-path ~/src/solver`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := &lockedWriter{w: os.Stderr}
			if err := w.check(); err != nil {
				return err
			}
			isProf, err := isProfileFile(args[0])
			if err != nil {
				return err
			}
			if isProf {
				search, err := sourceDirs(sourcePath)
				if err != nil {
					return err
				}
				srv, err := newProfileServer(w.options(stderr), args[0], search)
				if err != nil {
					return err
				}
				return serveUntilSignal(stderr, srv.Server)
			}
			if len(sourcePath) > 0 {
				stderr.printf("%s is a recording, not a profile: --source-path does not apply", args[0])
			}
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
	cmd.Flags().StringArrayVar(&sourcePath, "source-path", nil,
		"directories (separated by ':', or the flag repeated) where a profile's source files are looked up when they are not where it says")
	return cmd
}

// newProfileServer loads the profile at file and prepares serving it.
func newProfileServer(opt live.Options, file string, search []string) (*live.Profile, error) {
	p, err := profile.Load(file)
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return live.NewProfile(opt, file, body, p, search)
}

// sourceDirs splits and checks the --source-path values: each entry must
// be a directory, so that a typo is reported now, not as a missing file on
// the source page.
func sourceDirs(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, d := range filepath.SplitList(v) {
			if d == "" {
				continue
			}
			st, err := os.Stat(d)
			if err != nil {
				return nil, fmt.Errorf("--source-path %s: %w", d, unwrapPath(err))
			}
			if !st.IsDir() {
				return nil, fmt.Errorf("--source-path %s: not a directory", d)
			}
			abs, err := filepath.Abs(d)
			if err != nil {
				return nil, fmt.Errorf("--source-path %s: %w", d, err)
			}
			out = append(out, abs)
		}
	}
	return out, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// isProfileFile tells a profile (one JSON object with an "access_matrix"
// key, docs/profile.md) from a recording (JSON Lines starting with a
// header object, zstd-compressed or not, or a JSON array). Only the first
// JSON value's top-level keys are read, so a large recording is not
// decoded twice.
func isProfileFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return isProfile(f)
}

func isProfile(r io.Reader) (bool, error) {
	br := bufio.NewReader(r)
	// Skip white space; anything but an object (zstd magic, '[') is not a profile.
	for {
		b, err := br.ReadByte()
		if err != nil {
			return false, nil // empty: recording.Load says what is wrong
		}
		if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			continue
		}
		if b != '{' {
			return false, nil
		}
		if err := br.UnreadByte(); err != nil {
			return false, err
		}
		break
	}
	d := json.NewDecoder(br)
	if _, err := d.Token(); err != nil { // {
		return false, nil
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return false, nil
		}
		key, _ := tok.(string)
		if key == "access_matrix" {
			return true, nil
		}
		if key == "type" {
			// A recording's records all have a "type"; a profile has none.
			return false, nil
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return false, nil
		}
	}
	return false, nil
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
