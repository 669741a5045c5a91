// Package cli implements numascope's command line: one cobra command per
// file, each a thin layer over the internal packages.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/topology"
)

// exitError carries a specific exit status (e.g. a recorded command's) up to Main.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// reported is an error the user was already told of on stderr as it
// happened (a recording that stopped): returned as it is, Main exits 1
// without repeating it; wrapped in more context, it is printed.
type reported struct{ error }

func (r reported) Unwrap() error { return r.error }

// commandGroups is every command, by group, in the order the root help
// lists them: the one place a command is registered, so that the help
// cannot leave one out. Adding a command is its file and one entry here
// (perf, which issue 15 does not name, is with events in observe).
var commandGroups = []struct {
	id, title string
	commands  []func(*globals) *cobra.Command
}{
	{"observe", "Observe:", []func(*globals) *cobra.Command{newTopologyCmd, newEventsCmd, newPerfCmd, newStatCmd, newRecordCmd, newLiveCmd, newExporterCmd, newTopCmd}},
	{"analyse", "Analyse:", []func(*globals) *cobra.Command{newConvertCmd, newViewCmd, newReportCmd, newStatsCmd}},
	{"act", "Act:", []func(*globals) *cobra.Command{newRunCmd, newExperimentCmd, newProfileCmd, newBenchCmd}},
	{"control", "Control:", []func(*globals) *cobra.Command{newCtlCmd, newVersionCmd}},
}

// globals are the flags every command shares.
type globals struct {
	root string
	perf sensor.PerfOptions // --perf-events, --presets, --perf-per-cpu
}

// Main runs the command line and returns the process exit status.
func Main(args []string) int {
	// NUMASCOPE_CPUPROFILE=FILE writes a Go CPU profile of numascope itself
	// (go tool pprof): for finding where numascope's own time goes, e.g.
	// in the NUMA VM where no debugger runs.
	if path := os.Getenv("NUMASCOPE_CPUPROFILE"); path != "" {
		// Created as every output is: through no other user's symbolic link.
		if f, err := beneath.CreateOutput(path, true, 0o600); err != nil {
			fmt.Fprintf(os.Stderr, "numascope: NUMASCOPE_CPUPROFILE: %v\n", beneath.OutputError("the CPU profile", path, err))
		} else if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "numascope: NUMASCOPE_CPUPROFILE: %v\n", err)
		} else {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	root := newRoot()
	root.SetArgs(args)
	// The commands whose steady work is a sampler run on the one P they
	// sample on from the start (sampler.SamplingProcess).
	if cmd, _, err := root.Find(args); err == nil && samplesFromStart[cmd.Name()] {
		sampler.SamplingProcess()
	}
	return exitStatus(root.Execute(), os.Stderr)
}

// samplesFromStart names the commands whose steady work is a sampler, which
// runs the process on one P while it samples (sampler.useProcs): stat and
// record; live, whose web server and process table share that P already
// while it samples; experiment, which samples each run and between runs only
// starts commands and sums their results. On any other P count their
// start-up would pay a garbage-collection worker thread per CPU for nothing.
var samplesFromStart = map[string]bool{"stat": true, "record": true, "live": true, "experiment": true}

// exitStatus is the process exit status for a command's error, which it
// prints on stderr unless it was said already.
func exitStatus(err error, stderr io.Writer) int {
	var ee exitError
	_, said := err.(reported)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case said:
		return 1
	default:
		// Errors quote names from files and clients (a level, a label,
		// a path): cleaned like every text that reaches a terminal.
		fmt.Fprintf(stderr, "numascope: %s\n", term.CleanLines(err.Error()))
		return 1
	}
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "numascope",
		Short: "NUMA observability: where memory lives, who touches it, and what that costs",
		Long: `numascope shows a Linux machine as a NUMA engineer sees it and samples the kernel's
NUMA events at high rate with low overhead.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version (and -v) prints what `numascope version` prints.
		Version: readBuildInfo(debug.ReadBuildInfo).String(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.PersistentFlags().StringVar(&g.root, "root", os.Getenv("NUMASCOPE_ROOT"),
		"read DIR/sys and DIR/proc instead of /sys and /proc (env NUMASCOPE_ROOT)")
	root.PersistentFlags().StringArrayVar(&g.perf.Events, "perf-events", nil,
		"perf events to offer besides the defaults, e.g. 'cpu/event=0xd3,umask=0x01,name=local_dram/' (docs/perf.md)")
	root.PersistentFlags().StringArrayVar(&g.perf.PresetFiles, "presets", nil, "add a perf preset FILE (docs/perf.md)")
	root.PersistentFlags().BoolVar(&g.perf.PerCPU, "perf-per-cpu", false, "perf sensor: one source per CPU instead of per node")
	// The help lists each group's commands in the order above (observe
	// before analyse before act), not sorted by name.
	cobra.EnableCommandSorting = false
	for _, grp := range commandGroups {
		root.AddGroup(&cobra.Group{ID: grp.id, Title: grp.title})
		for _, newCmd := range grp.commands {
			cmd := newCmd(g)
			cmd.GroupID = grp.id
			root.AddCommand(cmd)
		}
	}
	return root
}

// fs returns the filesystem root to read.
func (g *globals) fs() (sysfs.FS, error) {
	if g.root != "" {
		st, err := os.Stat(g.root)
		if err != nil {
			return sysfs.FS{}, fmt.Errorf("--root %s: %w", g.root, err)
		}
		if !st.IsDir() {
			return sysfs.FS{}, fmt.Errorf("--root %s: not a directory", g.root)
		}
	}
	return sysfs.New(g.root), nil
}

// open discovers the topology and opens every sensor against it, the perf
// and uncore sensors with the perf flags. Topology warnings go to stderr;
// they never stop the tool. The caller closes the catalog.
func (g *globals) open() (sensor.Env, *sampler.Catalog, error) {
	env, err := g.env()
	if err != nil {
		return sensor.Env{}, nil, err
	}
	var specs []string
	for _, v := range g.perf.Events {
		specs = append(specs, sensor.SplitPerfSpecs(v)...)
	}
	perf := g.perf
	perf.Events = specs
	return env, sampler.OpenWith(env, sensor.Options{Perf: perf}), nil
}

// env discovers the topology and returns what sensors need.
func (g *globals) env() (sensor.Env, error) {
	fs, topo, err := g.discover()
	if err != nil {
		return sensor.Env{}, err
	}
	return sensor.Env{FS: fs, Topology: topo}, nil
}

// discover discovers the topology under --root.
func (g *globals) discover() (sysfs.FS, *topology.Topology, error) {
	fs, err := g.fs()
	if err != nil {
		return sysfs.FS{}, nil, err
	}
	topo, err := topology.Discover(fs)
	if err != nil {
		return sysfs.FS{}, nil, fmt.Errorf("discovering the topology: %w", err)
	}
	return fs, topo, nil
}
