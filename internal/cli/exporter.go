package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/exporter"
	"github.com/numascope/numascope/internal/loopback"
	"github.com/numascope/numascope/internal/sampler"
)

// exporterConfig is the exporter's command line, parsed.
type exporterConfig struct {
	listen    string
	events    []string // perf and uncore event patterns (-e), nil for none
	webConfig string
	compress  bool
	cgroups   *exporter.CgroupConfig // nil without --cgroups
}

// cgroupFlags are the --cgroup* flags as given.
type cgroupFlags struct {
	on               bool
	depth, maxSeries int
	include, exclude string
	faults           bool
}

// config checks the flags and compiles the regexes, anchored at both ends
// as Prometheus's relabelling regexes are.
func (f cgroupFlags) config(changed func(string) bool) (*exporter.CgroupConfig, error) {
	if !f.on {
		for _, n := range []string{"cgroup-depth", "cgroup-include", "cgroup-exclude", "cgroup-max-series", "cgroup-faults"} {
			if changed(n) {
				return nil, fmt.Errorf("--%s needs --cgroups", n)
			}
		}
		return nil, nil
	}
	c := &exporter.CgroupConfig{Depth: f.depth, MaxSeries: f.maxSeries, Faults: f.faults}
	for _, r := range []struct {
		flag, expr string
		dst        **regexp.Regexp
	}{{"cgroup-include", f.include, &c.Include}, {"cgroup-exclude", f.exclude, &c.Exclude}} {
		if r.expr == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + r.expr + ")$")
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %v: give a Go regular expression matching whole cgroup paths, e.g. '/kubepods.slice/.*'", r.flag, r.expr, err)
		}
		*r.dst = re
	}
	return c, nil
}

func newExporterCmd(g *globals) *cobra.Command {
	var cfg exporterConfig
	var events []string
	var cg cgroupFlags
	cmd := &cobra.Command{
		Use:   "exporter [--listen 127.0.0.1:9864] [-e EVENTS] [--web.config.file FILE] [--cgroups]",
		Short: "Serve NUMA counters to Prometheus on /metrics",
		Long: `Serve per-node numastat, meminfo and vmstat, /proc/vmstat and the NUMA topology on
/metrics, for Prometheus to scrape (text or OpenMetrics, by content negotiation). Files are read
when a scrape comes, never in the background; scrapes that arrive together share one read.

-e adds perf or uncore events (the patterns of stat -e, e.g. perf.page-faults,
'perf.migrate:mm_migrate_pages' or @numa-traffic), exported per node (per CPU with
--perf-per-cpu): they need a low enough kernel.perf_event_paranoid, or root.

/metrics needs no token: it is read-only and holds only counters every local user can read in
/proc and /sys. It binds loopback by default; --web.config.file takes exporter-toolkit's web
configuration (TLS, basic auth), as node_exporter does. Responses are not compressed unless
--compress is given (gzip triples the CPU a scrape costs).

--cgroups adds per-cgroup series: memory per node by type (memory.numa_stat), NUMA balancing
and tiering counters (memory.stat), the cpuset's CPUs and nodes and, with --cgroup-faults, the
threads' local and remote NUMA faults (/proc/TID/sched). On cgroup v2; on a hybrid machine whose
memory controller is on cgroup v1, its memory hierarchy (memory per node and faults only). --cgroup-depth, --cgroup-include and
--cgroup-exclude (regexes over the whole path, e.g. '/kubepods.slice/.*') choose the cgroups;
--cgroup-max-series caps their series, and numascope_cgroups_left_out counts what it left out. Names, labels and a scrape
configuration: docs/exporter.md. live serves the same /metrics on its own port.`,
		Example: `  numascope exporter
  numascope exporter --listen 0.0.0.0:9864 --web.config.file web.yml
  numascope exporter -e 'perf.page-faults,perf.migrate:mm_migrate_pages'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.events = splitPatterns(events)
			if len(cfg.events) == 0 && cmd.Flags().Changed("events") {
				return fmt.Errorf("-e: no event given; name perf events, e.g. -e perf.page-faults, or leave -e out")
			}
			var err error
			if cfg.cgroups, err = cg.config(cmd.Flags().Changed); err != nil {
				return err
			}
			return runExporter(cmd.Context(), g, cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.listen, "listen", exporter.DefaultListen, "HOST:PORT to serve /metrics on (0.0.0.0:PORT: every interface)")
	fl.StringSliceVarP(&events, "events", "e", nil, "perf or uncore events to export besides the kernel files, e.g. perf.page-faults or @numa-traffic")
	fl.StringVar(&cfg.webConfig, "web.config.file", "", "exporter-toolkit web configuration: TLS and basic auth (docs/exporter.md)")
	fl.BoolVar(&cfg.compress, "compress", false, "gzip responses for clients that accept it: about 8x smaller, at about 3x the CPU per scrape (docs/performance.md)")
	fl.BoolVar(&cg.on, "cgroups", false, "export per-cgroup NUMA series (cgroup v2, or v1's memory hierarchy): memory per node, NUMA balancing, cpuset (docs/exporter.md)")
	fl.IntVar(&cg.depth, "cgroup-depth", exporter.DefaultCgroupDepth, "with --cgroups, export cgroups down to this many levels below the root")
	fl.StringVar(&cg.include, "cgroup-include", "", "with --cgroups, export only the cgroups whose whole path (/a/b) matches this regex")
	fl.StringVar(&cg.exclude, "cgroup-exclude", "", "with --cgroups, leave out the cgroups whose whole path matches this regex")
	fl.IntVar(&cg.maxSeries, "cgroup-max-series", exporter.DefaultCgroupMaxSeries, "with --cgroups, at most this many per-cgroup series per scrape; cgroups past it are left out and counted")
	fl.BoolVar(&cg.faults, "cgroup-faults", false, "with --cgroups, also sum the NUMA faults of /proc/TID/sched over each cgroup's threads (one file per thread per scrape)")
	return cmd
}

// runExporter opens the collectors, binds and serves until SIGINT or
// SIGTERM.
func runExporter(ctx context.Context, g *globals, cfg exporterConfig) error {
	stderr := &lockedWriter{w: os.Stderr}
	xcfg, closeCat, err := exporterSetup(g, cfg.events)
	if err != nil {
		return err
	}
	defer closeCat()
	xcfg.Log = func(s string) { stderr.printf("%s", s) }
	xcfg.Cgroups = cfg.cgroups
	x, err := exporter.New(xcfg)
	if err != nil {
		return err
	}
	defer x.Close()
	srv, err := x.Listen(exporter.ServeConfig{
		Listen: cfg.listen, WebConfigFile: cfg.webConfig, Compress: cfg.compress,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if !loopback.Only(srv.Addr().String()) && cfg.webConfig == "" {
		stderr.printf("listening on %s, which is not loopback, without --web.config.file: anyone who can reach it can read the metrics (they hold no secret; docs/exporter.md)", srv.Addr())
	}
	scheme := "http"
	if cfg.webConfig != "" {
		scheme = "http(s), as " + cfg.webConfig + " says,"
	}
	fmt.Fprintf(os.Stdout, "numascope: serving metrics on %s://%s/metrics (Ctrl-C stops)\n", scheme, srv.Addr())
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Serve(ctx)
}

// exporterSetup discovers the topology and, when -e names events, opens
// the catalog and resolves them to perf and uncore sensors; an unknown
// event, or one the kernel refuses, is an error here, before anything is
// served. The returned function closes the catalog.
func exporterSetup(g *globals, patterns []string) (exporter.Config, func(), error) {
	if len(patterns) == 0 {
		env, err := g.env()
		return exporter.Config{Env: env}, func() {}, err
	}
	env, cat, err := g.open()
	if err != nil {
		return exporter.Config{}, func() {}, err
	}
	closeCat := func() { cat.Close() }
	perf, err := perfSelection(cat, patterns)
	if err != nil {
		closeCat()
		return exporter.Config{}, func() {}, err
	}
	return exporter.Config{Env: env, Perf: perf}, closeCat, nil
}

// perfSelection resolves -e patterns to events of the perf and uncore
// sensors. The kernel files are always exported, so a pattern that selects
// anything else is an error that says so.
func perfSelection(cat *sampler.Catalog, patterns []string) ([]exporter.PerfEvents, error) {
	patterns, err := cat.ExpandPresets(patterns)
	if err != nil {
		return nil, err
	}
	cols, err := cat.Select(patterns, false)
	if err != nil {
		return nil, err
	}
	var out []exporter.PerfEvents
	at := map[string]int{}
	for _, c := range cols {
		if c.Sensor != "perf" && c.Sensor != "uncore" {
			return nil, fmt.Errorf("-e %s: the exporter always exports the kernel files (numastat, meminfo, vmstat); -e adds perf and uncore events only", c.Name)
		}
		e := cat.Entry(c.Sensor)
		i, ok := at[c.Sensor]
		if !ok {
			i = len(out)
			at[c.Sensor] = i
			out = append(out, exporter.PerfEvents{Sensor: e.Sensor})
		}
		for k, ev := range e.Events {
			if ev.Name == c.Event.Name && !slices.Contains(out[i].Events, k) {
				out[i].Events = append(out[i].Events, k)
			}
		}
	}
	return out, nil
}
