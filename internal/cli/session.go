package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/ctl"
	"github.com/numascope/numascope/internal/recorder"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/topology"
)

// sampleFlags are the flags of every command that samples.
type sampleFlags struct {
	events      []string
	interval    string
	count       uint64
	discrete    bool
	ctl         string
	samplerNode string
	per         string

	fl *pflag.FlagSet // where the flags were registered, to tell -e '' from no -e
}

func (f *sampleFlags) register(fl *pflag.FlagSet) {
	f.fl = fl
	fl.StringSliceVarP(&f.events, "events", "e", nil,
		"events to sample: comma-separated names or globs, e.g. 'numa_*,node.*.numa_miss' (without -e: a NUMA overview; an -e naming no event is an error)")
	fl.StringVarP(&f.interval, "interval", "i", "1s", "sampling interval: 100us to 24h, e.g. 100ms, 1s")
	fl.Uint64VarP(&f.count, "count", "n", 0, "stop after this many samples (0: until interrupted)")
	fl.BoolVar(&f.discrete, "discrete", false, "one column per source (node) instead of sums")
	fl.StringVar(&f.ctl, "ctl", "", "control FIFO path (default /run/numascope-ctl as root, else $XDG_RUNTIME_DIR/numascope-ctl)")
	fl.StringVar(&f.per, "per", "",
		"show counters per unit of this counter instead of per second, e.g. perf.cycles or perf.tsc")
	fl.StringVar(&f.samplerNode, "sampler-node", "auto",
		"pin numascope (the sampler and the threads that write its output) to this node's CPUs: a node ID, auto (the first node) or none")
}

// eventPatterns returns the patterns given with -e, split at commas; nil
// when -e was not given, which means the default events. An -e that names
// no event at all (-e "" or -e ",,,", say from an empty shell variable) is
// an error: silently sampling the defaults instead would record something
// other than what was asked for.
func (f *sampleFlags) eventPatterns() ([]string, error) {
	patterns := splitPatterns(f.events)
	if len(patterns) == 0 && f.fl != nil && f.fl.Changed("events") {
		return nil, fmt.Errorf("-e: no event given; name events, e.g. -e 'numa_*,node.*.MemFree' (numascope events lists them), or leave -e out for the defaults")
	}
	return patterns, nil
}

// session is one sampling run: sensors, the sampler, the control FIFO and
// the recorder, wired together.
type session struct {
	env     sensor.Env
	cat     *sampler.Catalog
	smp     *sampler.Sampler
	rec     *recorder.Recorder
	recDone chan error
	ctlSrv  *ctl.Server
	stderr  *lockedWriter
	wg      sync.WaitGroup
}

// lockedWriter serialises the lines that several goroutines write to stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "numascope: "+format+"\n", args...)
}

// sessionConfig is what a sampling session needs, typed: a command builds
// it once from its flags (sampleFlags.config), experiment from its spec, so
// that nothing is formatted into a flag string to be parsed again. newSession
// resolves it to the sampling.Config that stat, record, experiment and live
// share.
type sessionConfig struct {
	patterns    []string // the events; nil: the default events
	interval    time.Duration
	count       uint64 // samples to take; 0: until stopped
	discrete    bool
	ctl         string // the control FIFO; "": the default path, best effort
	samplerNode string // --sampler-node: a node ID, auto or none
	per         string // --per: the counter to divide by, or ""
	record      string // the recording to create at once, or ""
	force       bool   // overwrite it (and `ctl record` files)
	command     []string
}

// config checks the flags and types them: the events given with -e and
// the interval.
func (f *sampleFlags) config() (sessionConfig, error) {
	patterns, err := f.eventPatterns()
	if err != nil {
		return sessionConfig{}, err
	}
	interval, err := sampler.ParseInterval(f.interval)
	if err != nil {
		return sessionConfig{}, fmt.Errorf("-i: %w", err)
	}
	return sessionConfig{patterns: patterns, interval: interval, count: f.count, discrete: f.discrete,
		ctl: f.ctl, samplerNode: f.samplerNode, per: f.per}, nil
}

// newSession opens the sensors, resolves the events and prepares sampling.
// With cfg.record it creates the recording at once, so that an existing or
// unwritable file is reported before anything runs. Until it returns a
// session, it owns the catalog and closes it on every error; then the
// session does (run).
func newSession(g *globals, cfg sessionConfig) (_ *session, err error) {
	env, cat, err := g.open()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cat.Close()
		}
	}()
	s := &session{env: env, cat: cat, stderr: &lockedWriter{w: os.Stderr}}
	sc, err := cfg.resolve(g, env, cat, s.stderr)
	if err != nil {
		return nil, err
	}
	// The recorder is always attached, so that `ctl record FILE` can start a
	// recording in any sampling mode.
	sc.Sink = "recording"
	ss, err := sampling.New(sc)
	if err != nil {
		return nil, err
	}
	s.smp, s.rec = ss.Sampler, ss.Recorder

	if err := s.listen(cfg.ctl); err != nil {
		return nil, err
	}
	if s.ctlSrv != nil {
		// A recording stopped by a write failure (a full disk) leaves
		// sampling running, so that the user can go on elsewhere.
		path := s.ctlSrv.Path()
		s.rec.OnStop(func(error) {
			s.stderr.printf("sampling goes on without a file: `numascope ctl --ctl %s record FILE` continues in another file; Ctrl-C ends", path)
		})
	}
	return s, nil
}

// resolve makes cfg the sampling.Config of this machine, for newSession
// and for live: the sampler's CPUs from --sampler-node, the header
// template from the topology and the catalog, problems reported on stderr.
func (cfg sessionConfig) resolve(g *globals, env sensor.Env, cat *sampler.Catalog, stderr *lockedWriter) (sampling.Config, error) {
	pin, err := pinCPUs(env, cfg.samplerNode, g.root != "")
	if err != nil {
		return sampling.Config{}, err
	}
	return sampling.Config{
		Catalog: cat, Events: cfg.patterns, Discrete: cfg.discrete, Per: cfg.per,
		Interval: cfg.interval, Count: cfg.count, PinCPUs: pin,
		Header: baseHeader(env.Topology, cat, cfg.command), Record: cfg.record, Force: cfg.force,
		Errors:  func(err error) { stderr.printf("%v", err) },
		Notices: func(m string) { stderr.printf("%s", m) },
	}, nil
}

// pinCPUs resolves --sampler-node to a CPU set. On a captured tree (--root)
// "auto" does not pin: the tree's CPUs are not this machine's.
func pinCPUs(env sensor.Env, spec string, captured bool) ([]int, error) {
	if spec == "none" || (spec == "auto" && captured) {
		return nil, nil
	}
	t := env.Topology
	usable := func(n *topology.Node) []int {
		allowed := map[int]bool{}
		for _, c := range t.CPUs {
			if c.Online && c.Allowed {
				allowed[c.ID] = true
			}
		}
		var out []int
		for _, c := range n.CPUs {
			if allowed[c] {
				out = append(out, c)
			}
		}
		return out
	}
	if spec == "auto" {
		for i := range t.Nodes {
			if cpus := usable(&t.Nodes[i]); len(cpus) > 0 {
				return cpus, nil
			}
		}
		return nil, nil
	}
	id, err := strconv.Atoi(spec)
	if err != nil {
		return nil, fmt.Errorf("--sampler-node %q: give a node ID, auto or none", spec)
	}
	n := t.Node(id)
	if n == nil {
		var ids []string
		for _, n := range t.Nodes {
			ids = append(ids, strconv.Itoa(n.ID))
		}
		return nil, fmt.Errorf("--sampler-node %d: no such node (nodes: %v)", id, ids)
	}
	cpus := usable(n)
	if len(cpus) == 0 {
		return nil, fmt.Errorf("--sampler-node %d: the node has no CPU this process may use; pick another or none", id)
	}
	return cpus, nil
}

// baseHeader is a recording header without columns: this machine, its
// topology and the catalog's sensors, described as sampler.Catalog.Describe
// describes them everywhere else (events --format json, the live hello).
func baseHeader(topo *topology.Topology, cat *sampler.Catalog, command []string) recording.Header {
	h := recording.Header{Topology: topo, Command: command}
	h.Host, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	for _, d := range cat.Describe() {
		h.Sensors = append(h.Sensors, recording.SensorInfo{Name: d.Name, Present: d.Present, Reason: d.Reason, Sources: d.Sources})
	}
	return h
}

// listen opens the control FIFO and serves it: its commands steer the
// session (see Record, Label, ...).
func (s *session) listen(path string) error {
	srv, err := openFIFO(s.stderr, path)
	if err != nil {
		return err
	}
	if srv != nil {
		s.ctlSrv = srv
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.Serve(s)
		}()
	}
	return nil
}

// openFIFO opens the control FIFO of a sampling command. A path given with
// --ctl must work; the default path is best effort and silent (nil, nil
// when it does not work): sampling is useful without it, and the usual
// reason is another numascope holding the default FIFO, which is no news
// to a user who did not ask for a FIFO (numascope ctl names the instance
// it steers).
func openFIFO(stderr *lockedWriter, path string) (*ctl.Server, error) {
	explicit := path != ""
	if !explicit {
		var err error
		if path, err = ctl.DefaultPath(); err != nil {
			return nil, nil
		}
	}
	srv, err := ctl.Listen(path, func(err error) { stderr.printf("control FIFO: %v", err) })
	if err != nil {
		if explicit {
			return nil, fmt.Errorf("--ctl: %w", err)
		}
		return nil, nil
	}
	return srv, nil
}

// The session is the control FIFO's ctl.Target: every command goes to the
// sampler, which puts it in order with the samples.
func (s *session) Record(path string)                { s.smp.Rotate(path) }
func (s *session) Label(text string)                 { s.smp.Label(text) }
func (s *session) Pause()                            { s.smp.Pause() }
func (s *session) Resume()                           { s.smp.Resume() }
func (s *session) SetInterval(d time.Duration) error { return s.smp.SetInterval(d) }

// waitSampling waits, with run going in the background and reporting to
// done, until the sampler has taken the counters' starting values, so that a
// workload started next is counted whole. If run ends first, it returns
// run's error and leaves it in done.
func (s *session) waitSampling(done chan error) error {
	select {
	case <-s.smp.Sampling():
		return nil
	case err := <-done:
		done <- err
		if err == nil {
			err = errors.New("sampling ended before it began")
		}
		return err
	}
}

// run samples until ctx is done, Stop is called or the count is reached, then
// waits for every sink to finish and closes everything.
func (s *session) run(ctx context.Context) error {
	recDone := make(chan error, 1)
	go func() { recDone <- s.rec.Run() }()
	// Start-up (flag parsing, the topology, opening every sensor) leaves
	// garbage that steady-state sampling, which allocates nothing, would
	// never collect: hand it back to the system now (2 MiB of RSS).
	debug.FreeOSMemory()
	err := s.smp.Run(ctx)
	recErr := <-recDone
	if s.ctlSrv != nil {
		_ = s.ctlSrv.Close()
	}
	s.wg.Wait()
	s.cat.Close()
	if err != nil {
		return err
	}
	if recErr != nil {
		return reported{recErr} // the recorder said it when the recording stopped
	}
	return nil
}
