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

	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/web"
)

func newViewCmd(g *globals) *cobra.Command {
	var w webFlags
	var sourcePath []string
	cmd := &cobra.Command{
		Use:   "view FILE [FILE...] [--listen 127.0.0.1:8080] [--source-path DIR[:DIR...]]",
		Short: "Serve the web client on a recording, a profile or a bench document",
		Long: `Load a recording (JSON Lines, plain or .zst, or the original NUMAscope JSON-array format:
everything convert reads) and serve the web client on it (open the printed URL). The server
decimates with min/max to the browser's resolution, so long high-rate recordings stay fast.

A profile written by numascope profile (a JSON object with an "access_matrix") opens the
profile pages instead: summary and hints, the access matrix as a heatmap, threads with their
pinning logs, functions and lines sorted by any metric, and the source annotated line by line.
Source files are read from disk only beneath the --source-path directories you name: only
those the profile names, only as regular files, never through a symbolic link, by the recorded
path's suffixes (for /build/src/a.c, DIR/build/src/a.c, DIR/src/a.c, DIR/a.c). Without
--source-path no source is served: a profile's paths and compilation directories come from
debug info anyone can forge, so they never choose what is read.

A bench document written by numascope bench --format json (a JSON object with "latency_ns",
"bandwidth_mbs", "loaded" or "c2c_ns") opens the bench page: both matrices as heatmaps with their
spread, the distances and memory tiers where the document has them, the placement and the
conditions of the run, the loaded-latency curves and the core-to-core latency (a CPU x CPU
heatmap sorted by node, LLC and core) when present.

Several recordings (numascope view a.jsonl.zst b.jsonl.zst ..., e.g. the hosts of one MPI job,
recorded with -o run.%h.jsonl.zst) open one page of small multiples, a plot per recording
labelled with its host, on one time axis: each recording is placed by its wall-clock start
(the header's start), so that what happened at the same moment lines up. An event picker
chooses what every plot shows.

` + webSecurityHelp,
		Example: `  numascope view run.jsonl.zst
  numascope view numaconnect-trace.json --listen 127.0.0.1:9000
  numascope view numascope-profile.json --source-path ~/src/solver
  numascope view bench.json
  numascope view run.node1.jsonl.zst run.node2.jsonl.zst`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := &lockedWriter{w: os.Stderr}
			if err := w.check(); err != nil {
				return err
			}
			for _, a := range args {
				if err := viewableFile(a); err != nil {
					return err
				}
			}
			if len(args) > 1 {
				if len(sourcePath) > 0 {
					stderr.printf("several recordings: --source-path does not apply")
				}
				srv, err := newHostsServer(w.options(stderr), stderr, args)
				if err != nil {
					return err
				}
				return serveUntilSignal(stderr, srv.Server)
			}
			kind, err := documentKindOf(args[0])
			if err != nil {
				return err
			}
			if kind == docBench {
				if len(sourcePath) > 0 {
					stderr.printf("%s is a bench document, not a profile: --source-path does not apply", args[0])
				}
				srv, err := newBenchServer(w.options(stderr), args[0])
				if err != nil {
					return err
				}
				return serveUntilSignal(stderr, srv.Server)
			}
			if kind == docProfile {
				search, err := sourceDirs(sourcePath)
				if err != nil {
					return err
				}
				if len(search) == 0 {
					stderr.printf("%s: no source served: restart view with --source-path DIR to see the annotated source", args[0])
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
			return serveUntilSignal(stderr, web.NewView(w.options(stderr), rec, args[0]).Server)
		},
	}
	w.register(cmd)
	cmd.Flags().StringArrayVar(&sourcePath, "source-path", nil,
		"directories (separated by ':', or the flag repeated) beneath which a profile's source files are looked up; without it no source is served")
	return cmd
}

// newProfileServer loads the profile at file and prepares serving it.
func newProfileServer(opt web.Options, file string, search []string) (*web.Profile, error) {
	p, err := profile.Load(file)
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return web.NewProfile(opt, file, body, p, search)
}

// newHostsServer loads several hosts' recordings for one page. Each file
// must be a recording: profiles of ranks are merged by numascope report.
func newHostsServer(opt web.Options, stderr *lockedWriter, files []string) (*web.Hosts, error) {
	if len(files) > web.MaxHosts {
		return nil, fmt.Errorf("%d recordings, at most %d on one page; view fewer at a time", len(files), web.MaxHosts)
	}
	recs := make([]*recording.Recording, len(files))
	for i, f := range files {
		kind, err := documentKindOf(f)
		if err != nil {
			return nil, err
		}
		if kind != docRecording {
			return nil, fmt.Errorf("%s is a %s document: view shows several files only when all are recordings (numascope report FILE... merges profiles)", f, kind)
		}
		rec, err := recording.Load(f)
		if err != nil {
			return nil, err
		}
		for _, s := range rec.Skipped {
			stderr.printf("%s: %s", f, s)
		}
		if len(rec.Samples) == 0 {
			stderr.printf("%s: the recording holds no samples", f)
		}
		recs[i] = rec
	}
	return web.NewHosts(opt, recs, files)
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

// newBenchServer reads the bench document at file (at most
// web.MaxBenchFileBytes, of which it keeps what the page draws) and
// prepares serving it.
func newBenchServer(opt web.Options, file string) (*web.Bench, error) {
	body, err := web.ReadBench(file)
	if err != nil {
		return nil, err
	}
	return web.NewBench(opt, file, body)
}

// The kinds of JSON document view tells apart by their keys; anything
// else is a recording.
const (
	docRecording = ""
	docProfile   = "profile"
	docBench     = "bench"
)

// maxDetect bounds what documentKind reads: the keys that tell a
// document come first (a profile's access_matrix follows a few small
// fields, a bench document starts with its matrices, a recording with
// "type"), so a file whose first values outgrow it is none of them, and
// detection never holds more than this in memory.
const maxDetect = 16 << 20

// isProfileFile tells a profile from everything else (documentKindOf).
func isProfileFile(path string) (bool, error) {
	k, err := documentKindOf(path)
	return k == docProfile, err
}

// viewableFile refuses, before anything opens it, a path that is not a
// regular file: view opens a file twice (to tell a recording from a profile
// or a bench document, then to load it), and opening a named pipe blocks
// until someone writes to it, so view would wait silently forever. A
// missing file is left to the loaders, which say so.
func viewableFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s: view reads a recording, profile or bench document from a file; save what it carries to a file and view that", path, what)
}

// documentKindOf tells a profile (one JSON object with an "access_matrix"
// key, docs/profile.md) and a bench document (one JSON object with a
// "latency_ns", "bandwidth_mbs", "loaded" or "c2c_ns" key, docs/bench.md) from a
// recording (JSON Lines starting with a header object, zstd-compressed or
// not, or a JSON array). Only the first JSON value's top-level keys are
// read, so a large recording is not decoded twice.
func documentKindOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return docRecording, err
	}
	defer f.Close()
	return documentKind(f)
}

func isProfile(r io.Reader) (bool, error) {
	k, err := documentKind(r)
	return k == docProfile, err
}

func documentKind(r io.Reader) (string, error) {
	br := bufio.NewReader(io.LimitReader(r, maxDetect))
	// Skip white space; anything but an object (zstd magic, '[') is a recording.
	for {
		b, err := br.ReadByte()
		if err != nil {
			return docRecording, nil // empty: recording.Load says what is wrong
		}
		if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			continue
		}
		if b != '{' {
			return docRecording, nil
		}
		if err := br.UnreadByte(); err != nil {
			return docRecording, err
		}
		break
	}
	d := json.NewDecoder(br)
	if _, err := d.Token(); err != nil { // {
		return docRecording, nil
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return docRecording, nil
		}
		key, _ := tok.(string)
		switch key {
		case "access_matrix":
			return docProfile, nil
		case "latency_ns", "bandwidth_mbs", "loaded", "c2c_ns":
			return docBench, nil
		case "type":
			// A recording's records all have a "type"; a profile or bench document has none.
			return docRecording, nil
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return docRecording, nil
		}
	}
	return docRecording, nil
}

// serveUntilSignal binds srv, prints the URL to open and serves until SIGINT
// or SIGTERM: what view and experiment --web share.
func serveUntilSignal(stderr *lockedWriter, srv *web.Server) error {
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
