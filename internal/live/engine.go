package live

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// LiveConfig is what `numascope live` samples.
type LiveConfig struct {
	Catalog  *sampler.Catalog
	Events   []string // patterns for Catalog.Select
	Discrete bool
	Interval time.Duration
	PinCPUs  []int
	// Header is the template for recordings: host, kernel, topology,
	// sensors. Columns, Start and Interval are filled in.
	Header recording.Header
	// Record, when set, is recorded from the start (like -o); Force
	// overwrites it if it exists.
	Record string
	Force  bool
	// RecordDir is where client-requested recordings go; client paths are
	// relative to it and may not leave it. Default: the working directory.
	RecordDir string
	// Errors receives sampler and recording problems.
	Errors func(error)
}

// Live is the `numascope live` server: one sampler shared by every client.
type Live struct {
	*Server
	cfg  LiveConfig
	cmds chan command
	reg  chan *client
	unr  chan *client
	done chan struct{}

	// Owned by the hub goroutine (run).
	clients  map[*client]bool
	smp      *sampler.Sampler
	sink     *sampler.Sink
	runDone  chan error
	cols     []recording.Column
	start    time.Time     // wall clock of global t=0
	offset   time.Duration // global time of the current sampler's t=0
	offsetOK bool
	lastT    time.Duration // global time of the latest record
	state    State
	batch    []byte
	nbatch   int
	rec      *recording.Writer
	recOff   time.Duration
	recN     uint64
	recDrop  uint64
	catalog  []SensorCatalog

	// hist is the recent past, replayed to a client that connects.
	hist history
	// replay is hist encoded once for every client that connects until
	// it goes stale, and since the batches sent after it was encoded: a
	// new client gets replay, then since, then the recent marks, all
	// shared, so that clients connecting together cost one encoding and
	// one copy of the history, not one each.
	replay        []byte
	since         [][]byte
	sinceBytes    int
	replayEncodes int // for tests
	// recDir is RecordDir, absolute and with symlinks resolved, beneath
	// which client recordings are created.
	recDir string
}

// batchPrefix starts every batch message.
const batchPrefix = `{"type":"batch","samples":[`

// command is a request for the hub: from a client (c set) or the FIFO.
type command struct {
	c   *client
	req *request
}

// NewLive prepares a live server; nothing runs until Run.
func NewLive(opt Options, cfg LiveConfig) (*Live, error) {
	if cfg.Errors == nil {
		cfg.Errors = func(error) {}
	}
	if cfg.RecordDir == "" {
		cfg.RecordDir = "."
	}
	recDir, err := filepath.Abs(cfg.RecordDir)
	if err == nil {
		recDir, err = filepath.EvalSymlinks(recDir)
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(recDir); err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--record-dir %s: %v (give an existing directory)", cfg.RecordDir, unwrapPathErr(err))
	}
	l := &Live{
		cfg:     cfg,
		cmds:    make(chan command, 64),
		reg:     make(chan *client),
		unr:     make(chan *client, 16),
		done:    make(chan struct{}),
		clients: map[*client]bool{},
		recDir:  recDir,
	}
	l.Server = newServer(opt, l)
	l.state = State{Interval: cfg.Interval.Seconds(), Discrete: cfg.Discrete, Events: append([]string(nil), cfg.Events...)}
	l.catalog = catalogOf(cfg.Catalog.Describe())
	if err := l.startSampler(cfg.Events, cfg.Discrete); err != nil {
		return nil, err
	}
	if cfg.Record != "" {
		if err := l.startRecording(cfg.Record, cfg.Force); err != nil {
			l.smp.Abort()
			for r := range l.sink.Records() {
				l.sink.Release(r)
			}
			<-l.runDone // the caller may close the catalog now
			return nil, err
		}
	}
	return l, nil
}

// Label, Pause, Resume, SetInterval and Record are the control FIFO's
// commands; they reach every client like a client's own.
func (l *Live) Label(text string) { l.post(&request{Type: "label", Text: text}) }
func (l *Live) Pause()            { l.post(&request{Type: "pause"}) }
func (l *Live) Resume()           { l.post(&request{Type: "resume"}) }

// SetInterval changes the shared sampling interval.
func (l *Live) SetInterval(d time.Duration) { l.post(&request{Type: "interval", Interval: d.String()}) }

// Record switches recording to path (an absolute path or relative to the
// working directory, as the FIFO's user typed it).
func (l *Live) Record(path string) { l.post(&request{Type: "fifo_record", Path: path}) }

func (l *Live) post(r *request) {
	select {
	case l.cmds <- command{req: r}:
	case <-l.done:
	}
}

func (l *Live) attach(c *client) {
	select {
	case l.reg <- c:
	case <-l.done:
		c.drop(1001, "numascope: the server is shutting down")
		return
	}
	// The hub queues the hello; until then nothing the client sends is
	// read, so no reply can overtake it.
	select {
	case <-c.ready:
	case <-c.done:
	case <-l.done:
	}
}

func (l *Live) detach(c *client) {
	select {
	case l.unr <- c:
	case <-l.done:
	}
}

func (l *Live) request(c *client, r *request) {
	select {
	case l.cmds <- command{c: c, req: r}:
	case <-l.done:
	}
}

// startSampler creates and starts a sampler for the patterns. Called with
// no sampler running.
func (l *Live) startSampler(patterns []string, discrete bool) error {
	cols, err := l.cfg.Catalog.Select(patterns, discrete)
	if err != nil {
		return err
	}
	interval := time.Duration(l.state.Interval * float64(time.Second))
	smp, err := sampler.New(cols, sampler.Config{
		Interval: interval,
		PinCPUs:  l.cfg.PinCPUs,
		Errors:   l.cfg.Errors,
	})
	if err != nil {
		return err
	}
	depth := min(max(int(2*time.Second/interval)+16, 64), 1<<16)
	l.sink = smp.AddSink("web", depth)
	l.smp = smp
	l.cols = l.cols[:0:0]
	for _, c := range cols {
		l.cols = append(l.cols, recording.Column{
			Name: c.Name, Sensor: c.Sensor, Event: c.Event.Name, Sources: c.Sources,
			Unit: c.Event.Unit, Kind: c.Event.Kind.String(), Desc: c.Event.Desc, Max: c.Max,
		})
	}
	l.hist.setColumns(l.cols)
	l.dropReplay()
	if l.state.Paused {
		smp.Pause()
	}
	l.offsetOK = false
	l.runDone = make(chan error, 1)
	go func() { l.runDone <- smp.Run(context.Background()) }()
	return nil
}

// Abort undoes NewLive when Run will not be called (e.g. Listen failed): it
// stops sampling and closes the recording, removing it when it holds no
// sample, so that a failed start leaves no empty file behind.
func (l *Live) Abort() {
	l.smp.Abort()
	for r := range l.sink.Records() {
		l.handle(r)
	}
	<-l.runDone
	path, n := l.state.Recording, l.recN
	l.stopRecording()
	if path != "" && n == 0 {
		_ = os.Remove(path)
	}
}

// Run runs the hub and the HTTP server until ctx is done.
func (l *Live) Run(ctx context.Context) error {
	if l.ln == nil {
		if err := l.Listen(); err != nil {
			l.Abort()
			return err
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvErr := make(chan error, 1)
	go func() { srvErr <- l.Serve(sctx) }()
	err := l.hub(sctx)
	close(l.done)
	cancel()
	if serr := <-srvErr; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = serr
	}
	return err
}

func (l *Live) hub(ctx context.Context) error {
	tick := time.NewTicker(l.opt.Batch)
	defer tick.Stop()
	defer l.shutdown()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.sink.Ready():
			for {
				r, open := l.sink.Next()
				if r != nil {
					l.handle(r)
					continue
				}
				if !open {
					// The sampler ended on its own (it only does on error).
					err := <-l.runDone
					if err == nil {
						err = errors.New("sampling stopped")
					}
					return err
				}
				break
			}
		case <-tick.C:
			l.flush()
			if l.rec != nil {
				if err := l.rec.Flush(); err != nil {
					l.recordingFailed(err)
				}
			}
		case c := <-l.cmds:
			l.command(c)
		case c := <-l.reg:
			l.flush()
			l.clients[c] = true
			c.reply(hello{
				Type: "hello", Protocol: ProtocolVersion, Mode: "live",
				Host: l.cfg.Header.Host, Kernel: l.cfg.Header.Kernel, Start: l.start,
				Topology: l.cfg.Header.Topology, Catalog: l.catalog, Columns: l.cols,
				State: l.state, BatchMS: float64(l.opt.Batch) / 1e6,
			})
			l.replayTo(c)
			close(c.ready)
		case c := <-l.unr:
			delete(l.clients, c)
		}
	}
}

func (l *Live) shutdown() {
	l.flush()
	l.smp.Stop()
	for r := range l.sink.Records() {
		l.handle(r)
	}
	<-l.runDone
	l.stopRecording()
	for c := range l.clients {
		c.drop(1001, "numascope: the server stopped")
	}
}

// handle processes one sampler record: samples go into the batch and the
// recording, marks go out at once (after the samples before them).
func (l *Live) handle(r *sampler.Record) {
	defer l.sink.Release(r)
	if !l.offsetOK {
		// Start is set before the first record is queued, so reading it
		// after receiving one is race-free.
		if l.start.IsZero() {
			l.start = l.smp.Start()
		}
		l.offset = l.smp.Start().Sub(l.start)
		l.offsetOK = true
	}
	t := l.offset + r.T
	if t > l.lastT {
		l.lastT = t
	}
	switch r.Kind {
	case sampler.KindSample:
		l.appendSample(t, r.Values)
		l.hist.add(t, r.Values)
		if l.rec != nil {
			l.recN++
			if err := l.rec.WriteSample(t-l.recOff, r.Values); err != nil {
				l.recordingFailed(err)
			}
		}
	case sampler.KindLabel, sampler.KindInterval, sampler.KindPause, sampler.KindResume:
		m := markMsg{Type: "mark", T: round6(t.Seconds()), Text: r.Text}
		var err error
		switch r.Kind {
		case sampler.KindLabel:
			m.Mark = recording.MarkLabel
			if l.rec != nil {
				err = l.rec.WriteLabel(t-l.recOff, r.Text)
			}
		case sampler.KindInterval:
			m.Mark, m.Interval = recording.MarkInterval, r.Interval.Seconds()
			l.state.Interval = r.Interval.Seconds()
			if l.rec != nil {
				err = l.rec.WriteInterval(t-l.recOff, r.Interval)
			}
		case sampler.KindPause:
			m.Mark = recording.MarkPause
			l.state.Paused = true
			if l.rec != nil {
				err = l.rec.WritePause(t - l.recOff)
			}
		case sampler.KindResume:
			m.Mark = recording.MarkResume
			l.state.Paused = false
			if l.rec != nil {
				err = l.rec.WriteResume(t - l.recOff)
			}
		}
		if err != nil {
			l.recordingFailed(err)
		}
		l.flush()
		mb := mustJSON(m)
		l.hist.mark(t, mb)
		l.broadcast(mb)
		if r.Kind != sampler.KindLabel {
			l.broadcastState()
		}
	case sampler.KindEnd:
		if l.rec != nil {
			l.recDrop += r.Dropped
		}
	}
}

// appendSample adds one row to the pending batch. It allocates only when
// the batch buffer grows past its largest size so far.
func (l *Live) appendSample(t time.Duration, values []float64) {
	if l.nbatch == 0 {
		l.batch = append(l.batch[:0], batchPrefix...)
	} else {
		l.batch = append(l.batch, ',')
	}
	l.batch = appendRow(l.batch, t, values)
	l.nbatch++
}

// appendRow appends one sample row of a batch: [t, values...].
func appendRow(b []byte, t time.Duration, values []float64) []byte {
	b = append(b, '[')
	b = appendTime(b, t)
	for _, v := range values {
		b = append(b, ',')
		b = appendNumber(b, v)
	}
	return append(b, ']')
}

func round6(s float64) float64 { return math.Round(s*1e6) / 1e6 }

// flush sends the pending batch to every client.
func (l *Live) flush() {
	if l.nbatch == 0 {
		return
	}
	l.batch = append(l.batch, "]}"...)
	msg := append([]byte(nil), l.batch...) // shared by every client's queue
	l.nbatch = 0
	l.broadcast(msg)
	if l.replay != nil {
		l.since = append(l.since, msg)
		l.sinceBytes += len(msg)
		// Stale: encoding the history again is cheaper than replaying
		// many batches after it (and frees them).
		if l.sinceBytes > max(1<<20, len(l.replay)/4) || len(l.since) >= max(l.opt.Queue/4, 1) {
			l.dropReplay()
		}
	}
}

func (l *Live) dropReplay() {
	l.replay, l.since, l.sinceBytes = nil, nil, 0
}

// replayTo sends a new client the recent past: one batch with every
// current column's remembered samples (encoded once for every client that
// connects until it goes stale), the batches since, then the marks.
func (l *Live) replayTo(c *client) {
	if l.replay == nil {
		l.replay = l.hist.batch()
		l.since, l.sinceBytes = nil, 0
		l.replayEncodes++
	}
	if l.replay != nil {
		c.enqueueShared(l.replay)
		for _, b := range l.since {
			c.enqueueShared(b)
		}
	}
	marks := l.hist.recentMarks()
	for i, m := range marks {
		if len(marks)-i > cap(c.send)/2 {
			continue // only the latest marks fit the queue
		}
		c.enqueue(m)
	}
}

func (l *Live) broadcast(msg []byte) {
	for c := range l.clients {
		if !c.enqueue(msg) {
			delete(l.clients, c)
		}
	}
}

func (l *Live) broadcastState() {
	l.broadcast(mustJSON(stateMsg{Type: "state", State: l.state}))
}

// command carries out a client's or the FIFO's request.
func (l *Live) command(cm command) {
	r := cm.req
	fail := func(err error) {
		if cm.c != nil {
			cm.c.fail(r.ID, err)
		} else {
			l.cfg.Errors(err)
		}
	}
	ok := func() {
		if cm.c != nil {
			cm.c.reply(okMsg{Type: "ok", ID: r.ID, Op: r.Type})
		}
	}
	switch r.Type {
	case "interval":
		d, err := sampler.ParseInterval(r.Interval)
		if err != nil {
			fail(fmt.Errorf("interval: %w", err))
			return
		}
		if err := l.smp.SetInterval(d); err != nil {
			fail(fmt.Errorf("interval: %w", err))
			return
		}
		ok()
	case "pause":
		l.smp.Pause()
		ok()
	case "resume":
		l.smp.Resume()
		ok()
	case "label":
		// The same cleaning as every other way a label arrives (the FIFO,
		// numascope ctl): no escapes, BEL or bidi controls reach the
		// recording, the clients or a terminal.
		text, err := recording.CleanLabel(r.Text)
		if err != nil {
			fail(err) // names the label and what is wrong
			return
		}
		l.smp.Label(text)
		ok()
	case "events", "enable", "disable", "discrete":
		events, discrete := append([]string(nil), l.state.Events...), l.state.Discrete
		switch r.Type {
		case "events":
			if len(r.Events) == 0 {
				fail(errors.New("events: give at least one event"))
				return
			}
			events = r.Events
		case "enable":
			if r.Event == "" {
				fail(errors.New("enable: give \"event\""))
				return
			}
			if !contains(events, r.Event) {
				events = append(events, r.Event)
			}
		case "disable":
			if !contains(events, r.Event) {
				fail(fmt.Errorf("disable: %q is not enabled (enabled: %s)", r.Event, strings.Join(events, ", ")))
				return
			}
			events = remove(events, r.Event)
			if len(events) == 0 {
				fail(errors.New("disable: that is the last event; enable another first"))
				return
			}
		case "discrete":
			if r.Discrete == nil {
				fail(errors.New("discrete: give \"discrete\": true or false"))
				return
			}
			discrete = *r.Discrete
		}
		if err := l.restart(events, discrete); err != nil {
			fail(err)
			return
		}
		ok()
	case "record":
		if cm.c == nil {
			return // the FIFO's recordings are fifo_record
		}
		w, path, err := l.createClientRecording(r.Path)
		if err != nil {
			fail(err)
			return
		}
		undo := func() {
			if rel, err := filepath.Rel(l.recDir, path); err == nil {
				_ = beneath.Remove(l.recDir, rel)
			}
		}
		if err := l.switchRecording(w, path, undo); err != nil {
			fail(fmt.Errorf("record: %w", err))
			return
		}
		cm.c.reply(okMsg{Type: "ok", ID: r.ID, Op: r.Type, Path: path})
	case "fifo_record":
		if cm.c != nil {
			fail(unknownType(r.Type, "numascope live", liveTypes))
			return
		}
		if err := l.startRecording(r.Path, false); err != nil {
			fail(fmt.Errorf("ctl record: %w", err))
		}
	case "record_stop":
		if l.rec == nil {
			fail(errors.New("record_stop: not recording"))
			return
		}
		l.stopRecording()
		l.broadcastState()
		ok()
	case "range", "totals":
		fail(fmt.Errorf("%s: only `numascope view` on a recording serves this; live data arrives in batches", r.Type))
	case "source":
		fail(fmt.Errorf("%s: only `numascope view` on a profile serves this", r.Type))
	default:
		fail(unknownType(r.Type, "numascope live", liveTypes))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func remove(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// restart replaces the sampler with one for the new event set. Samples
// stop for the moment it takes (the new sampler's first rate needs one
// interval); clients get a columns message and an active recording a
// columns mark. A bad event set leaves the running sampler alone.
func (l *Live) restart(events []string, discrete bool) error {
	if _, err := l.cfg.Catalog.Select(events, discrete); err != nil {
		return err
	}
	old, oldSink, oldDone := l.smp, l.sink, l.runDone
	old.Stop()
	for r := range oldSink.Records() {
		l.handle(r)
	}
	<-oldDone
	l.flush()
	if err := l.startSampler(events, discrete); err != nil {
		// Select succeeded above, so this is an Enable failure: go back.
		if err2 := l.startSampler(l.state.Events, l.state.Discrete); err2 != nil {
			l.cfg.Errors(fmt.Errorf("cannot restart sampling: %v", err2))
		}
		return err
	}
	l.state.Events, l.state.Discrete = append([]string(nil), events...), discrete
	t := time.Since(l.start)
	if t < l.lastT {
		t = l.lastT
	}
	// A client that connects later sees where the column set changed.
	l.hist.mark(t, mustJSON(markMsg{Type: "mark", Mark: recording.MarkColumns, T: round6(t.Seconds())}))
	if l.rec != nil {
		if err := l.rec.WriteColumns(t-l.recOff, l.cols); err != nil {
			l.recordingFailed(err)
		}
	}
	l.broadcast(mustJSON(columnsMsg{Type: "columns", T: round6(t.Seconds()), Columns: l.cols, State: l.state}))
	return nil
}

// createClientRecording creates the recording a browser asked for: p is
// relative to the record directory, which it may not leave, and is created
// as a new file (O_CREAT|O_EXCL|O_NOFOLLOW) through no symlinked component,
// so that a link another user planted in the directory cannot make the
// server (often root) write elsewhere. path is the file's absolute path.
func (l *Live) createClientRecording(p string) (w *recording.Writer, path string, err error) {
	if p == "" {
		p = "numascope-" + time.Now().Format("20060102-150405") + ".jsonl.zst"
	}
	if filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return nil, "", fmt.Errorf("record: %q: give a file name relative to the server's recording directory %s (no absolute paths, no ..)", clip(p), l.recDir)
	}
	if !strings.HasSuffix(p, ".jsonl") && !strings.HasSuffix(p, ".jsonl.zst") {
		return nil, "", fmt.Errorf("record: %q: the name must end in .jsonl or .jsonl.zst", clip(p))
	}
	name := filepath.Clean(p)
	path = filepath.Join(l.recDir, name)
	f, err := beneath.Create(l.recDir, name, 0o644)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return nil, "", fmt.Errorf("record: %s already exists; give another name", path)
	case errors.Is(err, beneath.ErrSymlink):
		return nil, "", fmt.Errorf("record: %s: a symbolic link is on the way, which is refused; give a path of real directories beneath %s", path, l.recDir)
	case errors.Is(err, beneath.ErrOutside):
		return nil, "", fmt.Errorf("record: %q: give a file name relative to the server's recording directory %s (no absolute paths, no ..)", clip(p), l.recDir)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
		return nil, "", fmt.Errorf("record: %s: its directory does not exist beneath %s; create it first", path, l.recDir)
	default:
		return nil, "", fmt.Errorf("record: cannot create %s: %v", path, unwrapPathErr(err))
	}
	return recording.FromFile(f, path), path, nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// startRecording opens path (never overwriting unless force) and switches
// recording to it; the previous file, if any, is closed cleanly.
func (l *Live) startRecording(path string, force bool) error {
	w, err := recording.Create(path, force)
	if err != nil {
		return err
	}
	return l.switchRecording(w, path, func() { _ = os.Remove(path) })
}

// switchRecording writes the header of the new recording w and flushes it
// to the file before closing the previous one: a file that cannot be
// written (a full disk) is noticed, and undone with remove, while the
// current recording goes on.
func (l *Live) switchRecording(w *recording.Writer, path string, remove func()) error {
	h := l.cfg.Header
	t := l.lastT
	if !l.start.IsZero() {
		h.Start = l.start.Add(t)
	} else {
		h.Start = time.Now()
	}
	h.Interval = l.state.Interval
	h.Columns = l.cols
	err := w.WriteHeader(&h)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		_ = w.Close(recording.End{})
		remove()
		return err
	}
	l.stopRecording()
	l.rec, l.recOff, l.recN, l.recDrop = w, t, 0, 0
	l.state.Recording = path
	l.broadcastState()
	return nil
}

func (l *Live) stopRecording() {
	if l.rec == nil {
		return
	}
	st := l.smp.Stats()
	err := l.rec.Close(recording.End{Samples: l.recN, MissedDeadlines: st.MissedDeadlines, Dropped: l.recDrop + l.sink.Dropped()})
	if err != nil {
		l.cfg.Errors(fmt.Errorf("recording %s: %w", l.rec.Path(), err))
	}
	l.rec = nil
	l.state.Recording = ""
}

func (l *Live) recordingFailed(err error) {
	// Written counts what the file really holds, not what was sampled.
	l.cfg.Errors(fmt.Errorf("recording stopped (%s holds %d samples): %w", l.rec.Path(), l.rec.Written(), err))
	_ = l.rec.Close(recording.End{})
	l.rec = nil
	l.state.Recording = ""
	l.broadcast(mustJSON(errorMsg{Type: "error", Error: "recording stopped: " + err.Error()}))
	l.broadcastState()
}
