// Package live is `numascope live`'s sampling hub: one sampling session
// shared by every browser, served through internal/web. The sampler never
// waits for a browser: the hub drains one sampler sink, encodes each batch
// once and hands it to every client's bounded queue, keeps the recent
// history a new client is sent, and carries out the control commands, the
// FIFO's and the browsers', through ctl.Dispatch.
package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/numascope/numascope/internal/ctl"
	"github.com/numascope/numascope/internal/recorder"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/web"
)

// Live is the `numascope live` server: one sampler shared by every client.
type Live struct {
	*web.Server
	cfg  sampling.Config
	opt  web.Options // the server's, defaults filled in
	cmds chan command
	reg  chan *web.Client
	unr  chan *web.Client
	done chan struct{}

	// Owned by the hub goroutine (run).
	clients map[*web.Client]bool
	// ss is the sampling session; smp, sink, rec and cols are its current
	// sampler, sink, recorder and columns.
	ss      *sampling.Session
	smp     *sampler.Sampler
	sink    *sampler.Sink
	runDone chan error
	cols    []recording.Column
	lastT   time.Duration // time of the latest record
	state   web.State
	batch   []byte
	nbatch  int
	catalog []web.SensorCatalog
	// rec records (when asked to) and keeps the timeline: every sampler
	// the hub starts hands it its records, and its time is the clients'.
	rec      *recorder.Recorder
	recFlush *time.Timer // when a held-back flush of the recording is due
	// batchDue fires when the pending batch is due to the clients; it is
	// armed by a batch's first sample only, so that an idle hub, or one
	// whose samples come a batch apart, wakes for nothing else.
	batchDue *time.Timer

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
	// recDir is web.Options.RecordDir, absolute and with symlinks resolved,
	// beneath which client recordings are created.
	recDir string
}

// batchPrefix starts every batch message.
const batchPrefix = `{"type":"batch","samples":[`

// command is a request for the hub: a client's (c and req set) or the
// control FIFO's (fifo and ctl set).
type command struct {
	c    *web.Client
	req  *web.Request
	fifo *ctl.Server
	ctl  ctl.Command
}

// NewLive prepares a live server sampling as cfg says (its Record is
// recorded from the start, like -o); nothing runs until Run.
func NewLive(opt web.Options, cfg sampling.Config) (*Live, error) {
	if cfg.Errors == nil {
		cfg.Errors = func(error) {}
	}
	if cfg.Notices == nil {
		cfg.Notices = func(string) {}
	}
	cfg.Sink = "web"
	recDir, err := recorder.ResolveDir(opt.RecordDir)
	if err != nil {
		return nil, fmt.Errorf("--record-dir %s: %v (give an existing directory)", cmp.Or(opt.RecordDir, "."), err)
	}
	ss, err := sampling.New(cfg)
	if err != nil {
		return nil, err
	}
	l := &Live{
		cfg:     cfg,
		cmds:    make(chan command, 64),
		reg:     make(chan *web.Client),
		unr:     make(chan *web.Client, 16),
		done:    make(chan struct{}),
		clients: map[*web.Client]bool{},
		recDir:  recDir,
		ss:      ss,
		rec:     ss.Recorder,
	}
	l.recFlush = time.NewTimer(time.Hour)
	l.recFlush.Stop()
	l.batchDue = time.NewTimer(time.Hour)
	l.batchDue.Stop()
	l.Server = web.NewServer(opt, l)
	l.opt = l.Server.Options()
	l.state = web.State{Interval: cfg.Interval.Seconds(), Discrete: cfg.Discrete, Events: append([]string(nil), ss.Events()...), Recording: cfg.Record}
	l.catalog = web.CatalogOf(cfg.Catalog.Describe())
	l.rec.OnStop(l.recordingStopped)
	l.started()
	return l, nil
}

// Control carries out the commands of the control FIFO until it is closed:
// each goes to the hub as it was parsed, in order with the clients'
// requests, and reaches every client like a client's own. A command that
// fails is reported as stat and record report it (fifo.Report).
func (l *Live) Control(fifo *ctl.Server) {
	for c := range fifo.Commands() {
		select {
		case l.cmds <- command{fifo: fifo, ctl: c}:
		case <-l.done:
		}
	}
}

// Attach, Detach and Request make the live hub a web.Backend.
func (l *Live) Attach(c *web.Client) {
	select {
	case l.reg <- c:
	case <-l.done:
		c.Drop(1001, "numascope: the server is shutting down")
		return
	}
	// The hub queues the hello; until then nothing the client sends is
	// read, so no reply can overtake it.
	select {
	case <-c.Ready():
	case <-c.Done():
	case <-l.done:
	}
}

func (l *Live) Detach(c *web.Client) {
	select {
	case l.unr <- c:
	case <-l.done:
	}
}

func (l *Live) Request(c *web.Client, r *web.Request) {
	select {
	case l.cmds <- command{c: c, req: r}:
	case <-l.done:
	}
}

// started takes the session's new sampler as the hub's and runs it.
func (l *Live) started() {
	l.smp, l.sink, l.cols = l.ss.Sampler, l.ss.Sink, l.ss.Columns
	l.hist.setColumns(l.cols)
	l.dropReplay()
	if l.state.Paused {
		l.smp.Pause()
	}
	// runDone gives Run's result once, then is closed: the hub that sees
	// the sampler end on its own takes the result, and the shutdown that
	// follows (or a restart whose sampler could not be replaced) waits on
	// it again and must not wait for ever.
	done := make(chan error, 1)
	l.runDone = done
	smp := l.smp
	go func() {
		done <- smp.Run(context.Background())
		close(done)
	}()
}

// Abort undoes NewLive when Run will not be called (e.g. Listen failed): it
// stops sampling and closes the recording, removing it when it holds no
// sample, so that a failed start leaves no empty file behind.
func (l *Live) Abort() {
	l.smp.Abort()
	l.drain(l.sink)
	<-l.runDone
	path := l.rec.Path()
	l.rec.Stop()
	if path != "" && l.rec.Written() == 0 {
		_ = os.Remove(path)
	}
}

// drain handles what is left in sink once its sampler was told to stop,
// until the sampler closes it.
func (l *Live) drain(sink *sampler.Sink) {
	for r := range sink.Records() {
		l.handle(r)
	}
}

// Run runs the hub and the HTTP server until ctx is done.
func (l *Live) Run(ctx context.Context) error {
	if !l.Listening() {
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
	defer l.batchDue.Stop()
	defer l.recFlush.Stop()
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
				l.rec.FlushLater(l.recFlush) // caught up: make the recording readable
				if l.nbatch > 0 && time.Duration(l.state.Interval*float64(time.Second)) >= l.opt.Batch {
					l.flush() // samples a batch apart: no need to wait for the next
				}
				break
			}
		case <-l.recFlush.C:
			l.rec.FlushLater(l.recFlush)
		case <-l.batchDue.C:
			l.flush()
		case c := <-l.cmds:
			if c.fifo != nil {
				if err := ctl.Dispatch(hubTarget{l}, c.ctl); err != nil {
					c.fifo.Report(err)
				}
				continue
			}
			l.command(c)
		case c := <-l.reg:
			l.flush()
			l.clients[c] = true
			c.Reply(web.Hello{
				Type: "hello", Protocol: web.ProtocolVersion, Mode: "live",
				Host: l.cfg.Header.Host, Kernel: l.cfg.Header.Kernel, Start: l.rec.Start(),
				Topology: l.cfg.Header.Topology, Catalog: l.catalog, Columns: l.cols,
				State: l.state, BatchMS: float64(l.opt.Batch) / 1e6,
			})
			l.replayTo(c)
			c.MarkReady()
		case c := <-l.unr:
			delete(l.clients, c)
		}
	}
}

func (l *Live) shutdown() {
	l.flush()
	l.smp.Stop()
	l.drain(l.sink)
	<-l.runDone
	l.rec.Stop()
	for c := range l.clients {
		c.Drop(1001, "numascope: the server stopped")
	}
}

// handle processes one sampler record: the recorder writes it, samples go
// into the batch, marks go out at once (after the samples before them).
func (l *Live) handle(r *sampler.Record) {
	defer l.sink.Release(r)
	t := l.rec.Handle(r)
	if t > l.lastT {
		l.lastT = t
	}
	switch r.Kind {
	case sampler.KindSample:
		l.appendSample(t, r.Values)
		l.hist.add(t, r.Values)
	case sampler.KindLabel, sampler.KindInterval, sampler.KindPause, sampler.KindResume:
		m := web.MarkMsg{Type: "mark", T: round6(t.Seconds()), Text: r.Text}
		switch r.Kind {
		case sampler.KindLabel:
			m.Mark = recording.MarkLabel
		case sampler.KindInterval:
			m.Mark, m.Interval = recording.MarkInterval, r.Interval.Seconds()
			l.state.Interval = r.Interval.Seconds()
		case sampler.KindPause:
			m.Mark = recording.MarkPause
			l.state.Paused = true
		case sampler.KindResume:
			m.Mark = recording.MarkResume
			l.state.Paused = false
		}
		l.flush()
		mb := web.MustJSON(m)
		l.hist.mark(t, mb)
		l.broadcast(mb)
		if r.Kind != sampler.KindLabel {
			l.broadcastState()
		}
	}
}

// appendSample adds one row to the pending batch. It allocates only when
// the batch buffer grows past its largest size so far.
func (l *Live) appendSample(t time.Duration, values []float64) {
	if l.nbatch == 0 {
		l.batch = append(l.batch[:0], batchPrefix...)
		if l.batchDue != nil {
			l.batchDue.Reset(l.opt.Batch)
		}
	} else {
		l.batch = append(l.batch, ',')
	}
	l.batch = appendRow(l.batch, t, values)
	l.nbatch++
}

// appendRow appends one sample row of a batch: [t, values...].
func appendRow(b []byte, t time.Duration, values []float64) []byte {
	b = append(b, '[')
	b = web.AppendTime(b, t)
	for _, v := range values {
		b = append(b, ',')
		b = web.AppendNumber(b, v)
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
	if l.batchDue != nil {
		// Sent early (samples a batch apart, a new client): a timer left
		// running would wake the process for nothing.
		l.batchDue.Stop()
	}
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
func (l *Live) replayTo(c *web.Client) {
	if l.replay == nil {
		l.replay = l.hist.batch()
		l.since, l.sinceBytes = nil, 0
		l.replayEncodes++
	}
	if l.replay != nil {
		c.EnqueueShared(l.replay)
		for _, b := range l.since {
			c.EnqueueShared(b)
		}
	}
	marks := l.hist.recentMarks()
	for i, m := range marks {
		if len(marks)-i > c.QueueCap()/2 {
			continue // only the latest marks fit the queue
		}
		c.Enqueue(m)
	}
}

func (l *Live) broadcast(msg []byte) {
	for c := range l.clients {
		if !c.Enqueue(msg) {
			delete(l.clients, c)
		}
	}
}

func (l *Live) broadcastState() {
	l.broadcast(web.MustJSON(web.StateMsg{Type: "state", State: l.state}))
}

// command carries out a client's request.
func (l *Live) command(cm command) {
	r := cm.req
	fail := func(err error) { cm.c.Fail(r.ID, err) }
	ok := func() { cm.c.Reply(web.OKMsg{Type: "ok", ID: r.ID, Op: r.Type}) }
	switch r.Type {
	case "interval", "pause", "resume", "label":
		c, err := controlOf(r)
		if err == nil {
			err = ctl.Dispatch(hubTarget{l}, c)
		}
		if err != nil {
			fail(err)
			return
		}
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
			if !slices.Contains(events, r.Event) {
				events = append(events, r.Event)
			}
		case "disable":
			if !slices.Contains(events, r.Event) {
				fail(fmt.Errorf("disable: %q is not enabled (enabled: %s)", r.Event, strings.Join(events, ", ")))
				return
			}
			events = slices.DeleteFunc(events, func(e string) bool { return e == r.Event }) // events is a copy
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
		path, err := l.rec.Switch(recorder.Dest{Path: r.Path, Dir: l.recDir})
		if err != nil {
			fail(fmt.Errorf("record: %w", err))
			return
		}
		l.recordingChanged()
		cm.c.Reply(web.OKMsg{Type: "ok", ID: r.ID, Op: r.Type, Path: path})
	case "record_stop":
		if l.rec.Path() == "" {
			fail(errors.New("record_stop: not recording"))
			return
		}
		l.rec.Stop()
		l.recordingChanged()
		ok()
	case "range", "totals":
		fail(fmt.Errorf("%s: only `numascope view` on a recording serves this; live data arrives in batches", r.Type))
	case "source":
		fail(fmt.Errorf("%s: only `numascope view` on a profile serves this", r.Type))
	default:
		fail(web.UnknownType(r.Type, "numascope live", web.LiveTypes))
	}
}

// controlOf types a client's interval, pause, resume or label request as
// the control command it is, so that both reach the sampler through the
// one ctl.Dispatch. A label is cleaned as every other way a label arrives
// (the FIFO, numascope ctl): no escapes, BEL or bidi controls reach the
// recording, the clients or a terminal.
func controlOf(r *web.Request) (ctl.Command, error) {
	switch r.Type {
	case "interval":
		d, err := sampler.ParseInterval(r.Interval)
		if err != nil {
			return ctl.Command{}, fmt.Errorf("interval: %w", err)
		}
		return ctl.Command{Op: ctl.OpInterval, Interval: d}, nil
	case "pause":
		return ctl.Command{Op: ctl.OpPause}, nil
	case "resume":
		return ctl.Command{Op: ctl.OpResume}, nil
	case "label":
		text, err := recording.CleanLabel(r.Text)
		if err != nil {
			return ctl.Command{}, err // names the label and what is wrong
		}
		return ctl.Command{Op: ctl.OpLabel, Arg: text}, nil
	}
	return ctl.Command{}, web.UnknownType(r.Type, "numascope live", web.LiveTypes)
}

// hubTarget is the hub as the ctl.Target of every control command, the
// FIFO's and a client's: only the hub goroutine uses it. Pause, resume,
// labels and intervals go to the sampler, which puts them in order with
// the samples; the clients learn of them from its marks (handle).
type hubTarget struct{ l *Live }

func (h hubTarget) Label(text string)                 { h.l.smp.Label(text) }
func (h hubTarget) Pause()                            { h.l.smp.Pause() }
func (h hubTarget) Resume()                           { h.l.smp.Resume() }
func (h hubTarget) SetInterval(d time.Duration) error { return h.l.smp.SetInterval(d) }

// Record switches recording to path (an absolute path or relative to the
// working directory, as the FIFO's user typed it; a client's recordings
// go beneath --record-dir and are its "record" request).
func (h hubTarget) Record(path string) {
	if _, err := h.l.rec.Switch(recorder.Dest{Path: path}); err != nil {
		h.l.cfg.Errors(fmt.Errorf("ctl record: %w", err))
		return
	}
	h.l.recordingChanged()
}

// restart replaces the sampler with one for the new event set. Samples
// stop for the moment it takes (the new sampler's first rate needs one
// interval); clients get a columns message and an active recording a
// columns mark. A bad event set leaves the running sampler alone.
func (l *Live) restart(events []string, discrete bool) error {
	if _, err := l.ss.Select(events, discrete); err != nil {
		return err
	}
	old, oldSink, oldDone := l.smp, l.sink, l.runDone
	old.Stop()
	l.drain(oldSink)
	<-oldDone
	l.flush()
	// The columns mark's time is taken before the new sampler starts, so
	// that it precedes the new set's first sample: taken after, on a busy
	// machine the new sampler had already sampled (a client saw the mark
	// 54 µs after the first sample with the new column).
	t := l.lastT
	if start := l.rec.Start(); !start.IsZero() {
		t = max(t, time.Since(start))
	}
	interval := time.Duration(l.state.Interval * float64(time.Second))
	if err := l.ss.Replace(events, discrete, interval); err != nil {
		// Select succeeded above, so this is an Enable failure: go back.
		if err2 := l.ss.Replace(l.state.Events, l.state.Discrete, interval); err2 != nil {
			l.cfg.Errors(fmt.Errorf("cannot restart sampling: %v", err2))
			return err
		}
		l.started()
		return err
	}
	l.started()
	l.state.Events, l.state.Discrete = append([]string(nil), events...), discrete
	// A client that connects later sees where the column set changed.
	l.hist.mark(t, web.MustJSON(web.MarkMsg{Type: "mark", Mark: recording.MarkColumns, T: round6(t.Seconds())}))
	l.rec.SetColumns(t, l.cols)
	l.broadcast(web.MustJSON(web.ColumnsMsg{Type: "columns", T: round6(t.Seconds()), Columns: l.cols, State: l.state}))
	return nil
}

// recordingChanged tells every client what is recorded now.
func (l *Live) recordingChanged() {
	l.state.Recording = l.rec.Path()
	l.broadcastState()
}

// recordingStopped tells every client that a write failed and the
// recording stopped (the recorder has reported it on stderr).
func (l *Live) recordingStopped(err error) {
	l.state.Recording = ""
	l.broadcast(web.MustJSON(web.ErrorMsg{Type: "error", Error: "recording stopped: " + err.Error()}))
	l.broadcastState()
}
