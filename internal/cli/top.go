package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/top"
)

// topConfig is top's command line, parsed.
type topConfig struct {
	interval  time.Duration
	batch     bool
	count     int // -n: frames to print, 0 for no end
	format    string
	sort      top.SortKey
	filter    string
	cgroups   bool
	cgDepth   int
	detailed  int
	mapsEvery time.Duration
	rows      int
	noEvents  bool
}

func newTopCmd(g *globals) *cobra.Command {
	var cfg topConfig
	var sortKey string
	cmd := &cobra.Command{
		Use:   "top [-b] [-n COUNT] [-d INTERVAL] [--format text|json] [--sort KEY] [--cgroup]",
		Short: "Which processes (and containers) pay for remote memory, refreshed live",
		Long: `Show every process with its CPU%, resident memory per node, the nodes its threads run on,
its preferred node, its NUMA hinting faults on local and on remote memory per second and the
pages NUMA balancing migrated for it; a node view; a drill-down into one process's threads and
memory areas; and, with --cgroup, the same per cgroup (container).

The fault and migration rates come from a kprobe on the kernel's task_numa_fault and the
migrate:mm_migrate_pages tracepoint (root, a kernel with kprobe events). Where the kernel or
the permissions withhold them, the screen says which figure is missing and why, and shows what
/proc gives. numa_maps (memory per node) is read only for the processes shown, every
--maps-every. docs/top.md says where each number comes from.

Interactive on a terminal; -b prints frames as text (like top -b), --format json one JSON object
per frame and line, for scripts.`,
		Example: `  numascope top
  numascope top -b -n 5 -d 2s
  numascope top -b -n 1 --format json | jq '.processes[0]'
  numascope top --cgroup --sort remote`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := top.ParseSortKey(sortKey)
			if err != nil {
				return fmt.Errorf("--sort: %w", err)
			}
			cfg.sort = k
			if cfg.interval < 100*time.Millisecond {
				return fmt.Errorf("-d %s: the interval must be at least 100ms", cfg.interval)
			}
			if cfg.cgDepth < 1 || cfg.cgDepth > top.MaxCgroupDepth {
				return fmt.Errorf("--cgroup-depth %d: give 1 (the root's children) to %d", cfg.cgDepth, top.MaxCgroupDepth)
			}
			if cfg.count < 0 {
				return fmt.Errorf("-n %d: give a count of frames, or 0 for no end", cfg.count)
			}
			switch cfg.format {
			case "text", "json":
			default:
				return fmt.Errorf("--format %q: one of text, json", cfg.format)
			}
			if cfg.format == "json" {
				cfg.batch = true
			}
			return runTop(cmd.Context(), g, cfg)
		},
	}
	fl := cmd.Flags()
	fl.DurationVarP(&cfg.interval, "delay", "d", time.Second, "refresh interval")
	fl.BoolVarP(&cfg.batch, "batch", "b", false, "batch mode: print frames to stdout instead of the interactive view")
	fl.IntVarP(&cfg.count, "iterations", "n", 0, "stop after COUNT frames (0: until interrupted)")
	fl.StringVar(&cfg.format, "format", "text", "batch output: text or json (json implies -b)")
	fl.StringVar(&sortKey, "sort", string(top.SortRemote), "sort key: remote, local, cpu, memory, migrated, pid")
	fl.StringVar(&cfg.filter, "filter", "", "keep only processes whose command contains TEXT, or whose PID is TEXT")
	fl.BoolVar(&cfg.cgroups, "cgroup", false, "group by cgroup (containers, pods, Slurm jobs): each cgroup with everything below it; cgroup v2, or v1's memory hierarchy on a hybrid machine")
	fl.IntVar(&cfg.cgDepth, "cgroup-depth", top.DefaultCgroupDepth, "with --cgroup: the rows go this many levels below the root; deeper cgroups count in their ancestor")
	fl.IntVar(&cfg.detailed, "detailed", top.DefaultDetailed, "read the first N processes in full (threads' nodes, preferred node, numa_maps)")
	fl.DurationVar(&cfg.mapsEvery, "maps-every", top.DefaultMapsEvery, "how often numa_maps of a shown process is read again")
	fl.IntVar(&cfg.rows, "rows", 0, "batch text: print at most N processes per frame (0: all)")
	fl.BoolVar(&cfg.noEvents, "no-events", false, "do not open the kernel event sources (kprobe, tracepoint): /proc only")
	return cmd
}

// runTop builds the collector and runs the batch loop or the TUI.
func runTop(ctx context.Context, g *globals, cfg topConfig) error {
	fs, err := g.fs()
	if err != nil {
		return err
	}
	opts := top.Options{
		Sort: cfg.sort, Filter: cfg.filter, Cgroups: cfg.cgroups, CgroupDepth: cfg.cgDepth,
		Detailed: cfg.detailed, MapsEvery: cfg.mapsEvery,
	}
	if cfg.noEvents {
		opts.EventsMissing = []string{"fault and migration rates: not read (--no-events)"}
	} else {
		opts.Events, opts.EventsMissing = openTopEvents(fs, g.perf.PresetFiles)
	}
	c, err := top.NewCollector(fs, opts)
	if err != nil {
		if opts.Events != nil {
			opts.Events.Close()
		}
		return err
	}
	defer c.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !cfg.batch {
		if !term.IsTerminal(os.Stdout) || !term.IsTerminal(os.Stdin) {
			return errors.New("the interactive view needs a terminal: use -b (text) or --format json for a pipe or a file")
		}
		return runTopTUI(ctx, c, cfg)
	}
	return topBatch(ctx, c, cfg, os.Stdout)
}

// topBatch prints cfg.count frames (0: until ctx ends). The first frame
// comes one interval after a silent first read, so that its rates cover an
// interval.
func topBatch(ctx context.Context, feed top.Feed, cfg topConfig, w io.Writer) error {
	if _, err := feed.Refresh(); err != nil {
		return err
	}
	tick := time.NewTicker(cfg.interval)
	defer tick.Stop()
	for n := 0; cfg.count == 0 || n < cfg.count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		f, err := feed.Refresh()
		if err != nil {
			return err
		}
		if cfg.format == "json" {
			err = top.WriteJSON(w, f)
		} else {
			err = top.WriteText(w, f, cfg.rows, cfg.cgroups)
		}
		if err != nil {
			return fmt.Errorf("writing frame %d: %w", n+1, err)
		}
	}
	return nil
}
