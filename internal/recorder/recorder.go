// Package recorder is numascope's one recording path: stat/record, experiment
// and live all hand it their sampler records. It owns the policy around the
// file format: when to flush so that a file can be read while it is written
// (and, compressed, how seldom, so that zstd blocks stay large), how a switch
// to a new file loses no sample, how labels, pauses, interval and column
// changes are written in order with the samples, what a file's end line
// counts, and what a failing write stops (the recording, never sampling).
//
// A Recorder is fed either by Run, which drains one sink until sampling ends
// (stat, record, experiment), or synchronously by its owner calling Handle
// for each record and Flush when idle (live's hub, which restarts its sampler
// when the event set changes and keeps one timeline across samplers).
package recorder

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// Recorder writes the records of one timeline to the current file, if any.
// Its methods are called from one goroutine: Run's, or its owner's. Under
// Run, the sampling goroutine may also write a sample (take).
type Recorder struct {
	// mu is held, under Run, by whichever of Run's goroutine and take
	// writes; derr is a write error take met, for Run to report.
	mu      sync.Mutex
	derr    error
	directN uint64 // samples take wrote, for tests

	header recording.Header // template: everything but Start and Interval
	force  bool
	report func(error)
	notice func(string)
	onStop func(error)

	// The source: the sampler whose records arrive now, through sink.
	smp   *sampler.Sampler
	sink  *sampler.Sink
	ended bool          // its KindEnd was handled
	based bool          // base is known: a record of it arrived
	base  time.Duration // timeline time of its t=0
	// start is the wall clock of the timeline's t=0: the first source's
	// start, zero until its first record.
	start    time.Time
	interval time.Duration // the current interval, for headers
	// Counts of the sources that ended (live restarts its sampler).
	missed, dropped uint64

	w          *recording.Writer
	pending    *recording.Writer // created, header not yet written
	offset     time.Duration     // timeline time of the current file's t=0
	fixOffset  bool              // the file began before the timeline: offset = wStart - start
	wStart     time.Time         // the current file's header Start
	compressed bool
	dirty      bool // written since the last flush
	lastFlush  time.Time
	lastSample time.Duration // timeline time of the latest sample
	closedN    uint64        // samples in the files already closed
	files      []string
	err        error // the first error that stopped a recording
}

// New returns a recorder for the records of smp that arrive through sink.
// header is the template for every file's header (columns included);
// force lets Create and `ctl record` overwrite a file; report receives
// problems worth a line on stderr, and notice news that is not a problem
// (a switch to another file).
func New(smp *sampler.Sampler, sink *sampler.Sink, header recording.Header, force bool, report func(error), notice func(string)) *Recorder {
	r := &Recorder{header: header, force: force, report: report, notice: notice}
	r.Attach(smp, sink)
	return r
}

// Columns converts a sampler's columns to the recording's: every recording
// header, columns mark and live client describes a column this way.
func Columns(cols []*sampler.Column) []recording.Column {
	out := make([]recording.Column, 0, len(cols))
	for _, c := range cols {
		out = append(out, recording.Column{
			Name: c.Name, Sensor: c.Sensor, Event: c.Event.Name, Sources: c.Sources,
			Unit: c.Event.Unit, Kind: recording.ValueKind(c.Event.Kind.String()), Desc: c.Event.Desc, Max: c.Max,
		})
	}
	return out
}

// OnStop sets f to be called when a write fails and the recording stops
// (after the report): live tells its clients.
func (r *Recorder) OnStop(f func(err error)) { r.onStop = f }

// Attach makes smp, whose records arrive through sink, the source of the
// records that follow, on the same timeline: its t=0 is placed where its
// start falls after the first source's. Call it once the previous source's
// KindEnd was handled, so that its counts are kept.
func (r *Recorder) Attach(smp *sampler.Sampler, sink *sampler.Sink) {
	r.smp, r.sink = smp, sink
	r.ended, r.based = false, false
	r.interval = smp.Interval()
}

// SetColumns changes the column set at timeline time t: later files'
// headers carry cols, and the current file gets a columns mark.
func (r *Recorder) SetColumns(t time.Duration, cols []recording.Column) {
	r.header.Columns = cols
	if r.w != nil {
		r.wrote(r.w.WriteColumns(t-r.offset, cols))
	}
}

// Create opens path for the first recording. It fails at once, before any
// sampling, when the file exists (without force) or cannot be written. The
// header follows with the first record: the file's t=0 is when sampling
// began.
func (r *Recorder) Create(path string) error {
	w, err := recording.Create(path, r.force)
	if err != nil {
		return err
	}
	r.pending = w
	return nil
}

// Start is the wall clock of the timeline's t=0; zero before the first
// record.
func (r *Recorder) Start() time.Time { return r.start }

// Path is the file recorded to now, "" when none.
func (r *Recorder) Path() string {
	switch {
	case r.w != nil:
		return r.w.Path()
	case r.pending != nil:
		return r.pending.Path()
	}
	return ""
}

// Dropped is the number of samples lost because writing fell behind.
func (r *Recorder) Dropped() uint64 { return r.end().Dropped }

// Files lists the files written, in order.
func (r *Recorder) Files() []string { return r.files }

// Written is the number of samples that reached the files, all of them
// together: what they hold, not what was sampled (a full disk loses the
// rest).
func (r *Recorder) Written() uint64 {
	n := r.closedN
	if r.w != nil {
		n += r.w.Written()
	}
	return n
}

// Err is the first error that stopped a recording.
func (r *Recorder) Err() error { return r.err }

// end is what an end line reports: the counts since sampling began.
func (r *Recorder) end() recording.End {
	e := recording.End{MissedDeadlines: r.missed, Dropped: r.dropped}
	if !r.ended {
		e.MissedDeadlines += r.smp.Stats().MissedDeadlines
		e.Dropped += r.sink.Dropped()
	}
	return e
}

// zstdFlushEvery bounds how often a compressed file is flushed: each flush
// ends a zstd block, and tiny blocks compress badly. It is also how long a
// written line may wait before a reader of the file sees it.
const zstdFlushEvery = 250 * time.Millisecond

// Run drains the sink until sampling ends, then closes the file. It returns
// the first error that stopped a recording. While it runs, samples that
// arrive one batch at a time may be written on the sampling goroutine
// instead (take).
func (r *Recorder) Run() error {
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	r.sink.SetDirect(r.take)
	defer r.sink.SetDirect(nil)
	for {
		select {
		case <-r.sink.Ready():
			if !r.drain(flush) {
				return r.err
			}
		case <-flush.C:
			r.mu.Lock()
			r.FlushLater(flush)
			r.mu.Unlock()
		}
	}
}

// drain handles what the sink holds, under mu; false when sampling ended
// and the recording was closed.
func (r *Recorder) drain(flush *time.Timer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.derr != nil {
		// take's write failed: the recording stops here, off the
		// sampling goroutine, and the sample it declined, queued behind
		// this, finds no file.
		if r.w != nil {
			r.fail(r.derr)
		}
		r.derr = nil
	}
	for {
		rec, open := r.sink.Next()
		if rec == nil {
			if !open {
				r.Stop()
				return false
			}
			// Caught up: one flush per batch, not per sample.
			r.FlushLater(flush)
			// Without a file, samples can wait until a switch (a
			// mark, which always wakes this loop) needs them.
			r.sink.SetQuiet(r.w == nil && r.pending == nil)
			return true
		}
		end := rec.Kind == sampler.KindEnd
		r.Handle(rec)
		r.sink.Release(rec)
		if end {
			r.Stop()
		}
	}
}

// take writes a sample on the sampling goroutine (a sampler.Direct),
// sparing it the hand-off to Run's goroutine: only when Run is not writing,
// the current file is begun, and writing it out now cannot wait on
// anything but the kernel (recording.Writer.RawNow). A compressed file is
// taken only when its flush is due (at intervals of zstdFlushEvery or
// more, every sample), so that its held-back flushes stay with Run's timer.
// A failed write is declined and left to Run, which reports it and stops
// the recording; take never reports, rotates or stops anything itself, as
// those may wait. (A raw write the kernel holds, under another process's
// writeback, delays sampling wherever it is made on the one P the process
// samples on; with more Ps, from a GOMAXPROCS in the environment, only when
// made here. Either way rawio then writes the ordinary way for a while, and
// take declines.)
func (r *Recorder) take(t time.Duration, values []float64) bool {
	if !r.mu.TryLock() {
		return false
	}
	defer r.mu.Unlock()
	if r.derr != nil || r.w == nil || r.pending != nil || !r.based || r.fixOffset || !r.w.RawNow() {
		return false
	}
	var now time.Time
	if r.compressed {
		if now = time.Now(); now.Sub(r.lastFlush) < zstdFlushEvery {
			return false
		}
	}
	t += r.base
	err := r.w.WriteSample(t-r.offset, values)
	if err == nil {
		err = r.w.Flush()
	}
	if err != nil {
		r.derr = err
		return false
	}
	r.lastSample, r.dirty = t, false
	if r.compressed {
		r.lastFlush = now
	}
	r.directN++
	return true
}

// FlushLater flushes and, when a compressed file's flush is held back,
// arms t for when it is due: what a loop that feeds a Recorder calls when
// no record is waiting, and when t fires. t is only armed while something
// waits to be flushed, so an idle recorder wakes nobody.
func (r *Recorder) FlushLater(t *time.Timer) {
	if d := r.Flush(); d > 0 {
		t.Reset(d)
	}
}

// Handle writes one record to the current file and returns its time on the
// timeline. A file created but not begun begins with the first record. A
// KindRotate switches files (reported on failure); a KindEnd ends the
// source (its counts are kept) but not the file: Run, or the owner, calls
// Stop when nothing more will come. It does not release rec.
func (r *Recorder) Handle(rec *sampler.Record) time.Duration {
	if !r.based {
		if r.start.IsZero() {
			r.start = r.smp.Start() // set before the first record was queued
		}
		r.base = r.smp.Start().Sub(r.start)
		r.based = true
		if r.fixOffset {
			r.offset = min(r.wStart.Sub(r.start), r.base+rec.T)
			r.fixOffset = false
		}
	}
	t := r.base + rec.T
	if rec.Kind != sampler.KindSample && r.sink != nil {
		// Samples passed over while this recorder had no file (a quiet
		// sink) still end the time before a switch's new file.
		if st, ok := r.sink.LastSkipped(); ok && r.base+st > r.lastSample {
			r.lastSample = r.base + st
		}
	}
	if r.pending != nil {
		r.beginPending()
	}
	switch rec.Kind {
	case sampler.KindSample:
		r.lastSample = t
		if r.w != nil {
			r.wrote(r.w.WriteSample(t-r.offset, rec.Values))
		}
	case sampler.KindLabel:
		if r.w != nil {
			r.wrote(r.w.WriteLabel(t-r.offset, rec.Text))
		}
	case sampler.KindInterval:
		r.interval = rec.Interval
		if r.w != nil {
			r.wrote(r.w.WriteInterval(t-r.offset, rec.Interval))
		}
	case sampler.KindPause:
		if r.w != nil {
			r.wrote(r.w.WritePause(t - r.offset))
		}
	case sampler.KindResume:
		if r.w != nil {
			r.wrote(r.w.WriteResume(t - r.offset))
		}
	case sampler.KindRotate:
		r.rotate(rec.Text)
	case sampler.KindEnd:
		r.missed += rec.Stats.MissedDeadlines
		r.dropped += rec.Dropped
		r.ended = true
	}
	return t
}

// wrote notes a write: a failure stops the recording.
func (r *Recorder) wrote(err error) {
	if err != nil {
		r.fail(err)
		return
	}
	r.dirty = true
}

// Flush makes what was written readable in the file: at once for a plain
// file; a compressed one at most every zstdFlushEvery. It returns how long
// until a flush held back is due (0: none is): call it again then.
func (r *Recorder) Flush() time.Duration {
	if r.w == nil || !r.dirty {
		return 0
	}
	if r.compressed {
		now := time.Now()
		if d := zstdFlushEvery - now.Sub(r.lastFlush); d > 0 {
			return d
		}
		r.lastFlush = now
	}
	r.dirty = false
	if err := r.w.Flush(); err != nil {
		r.fail(err)
	}
	return 0
}

// Stop ends the recording: a file not begun yet begins (a valid recording
// without samples), and the current file gets its end line and is closed.
// A later Switch starts another.
func (r *Recorder) Stop() {
	if r.pending != nil {
		r.beginPending()
	}
	r.closeFile()
}

// fail stops the recording after a write failed: the file keeps what
// reached it, without an end line; sampling goes on.
func (r *Recorder) fail(err error) {
	w := r.w
	r.w = nil
	_ = w.Close(recording.End{}) // writes nothing more after an error
	r.closedN += w.Written()
	r.stopped(fmt.Errorf("recording stopped (%s holds %d samples): %w", w.Path(), w.Written(), err), err)
}

func (r *Recorder) stopped(msg, err error) {
	if r.err == nil {
		r.err = err
	}
	r.report(msg)
	if r.onStop != nil {
		r.onStop(err)
	}
}

// closeFile writes the current file's end line and closes it.
func (r *Recorder) closeFile() {
	if r.w == nil {
		return
	}
	w := r.w
	r.w = nil
	if err := w.Close(r.end()); err != nil {
		r.stopped(fmt.Errorf("closing %s: %w", w.Path(), err), err)
	}
	r.closedN += w.Written()
}

// beginPending makes the pending file the current one, from the last
// sample on: for the first file, when sampling began.
func (r *Recorder) beginPending() {
	w := r.pending
	r.pending = nil
	start, err := r.writeHeader(w, r.lastSample)
	if err != nil {
		_ = w.Close(recording.End{})
		r.stopped(fmt.Errorf("recording stopped (%s holds no header): %w", w.Path(), err), err)
		return
	}
	r.use(w, r.lastSample, start)
}

// writeHeader writes w's header, making timeline time t its time zero, and
// flushes it: a file that cannot take its header is found out at once.
// Before the first record the timeline has no wall clock yet: the header
// says now, and the offset is fixed up when the first record arrives.
func (r *Recorder) writeHeader(w *recording.Writer, t time.Duration) (time.Time, error) {
	h := r.header
	if r.start.IsZero() {
		h.Start = time.Now()
	} else {
		h.Start = r.start.Add(t)
	}
	h.Interval = r.interval.Seconds()
	if err := w.WriteHeader(&h); err != nil {
		return h.Start, err
	}
	return h.Start, w.Flush()
}

// use makes w, whose header is written, the current file from timeline
// time t on.
func (r *Recorder) use(w *recording.Writer, t time.Duration, start time.Time) {
	r.w, r.offset, r.wStart = w, t, start
	r.fixOffset = r.start.IsZero()
	r.compressed = strings.HasSuffix(w.Path(), ".zst")
	r.dirty, r.lastFlush = false, time.Time{}
	r.files = append(r.files, w.Path())
}

// rotate carries out `ctl record FILE`, which arrives in order with the
// samples: reported, whether it worked or not.
func (r *Recorder) rotate(path string) {
	old, before := r.Path(), r.closedN
	if _, err := r.Switch(Dest{Path: path, Force: r.force}); err != nil {
		r.report(fmt.Errorf("ctl record: %w; still recording to %s", err, cmp.Or(r.Path(), "no file")))
		return
	}
	if old != "" {
		r.notice(fmt.Sprintf("closed %s (%d samples); now recording to %s", old, r.closedN-before, path))
	}
}

// Dest names the file of a new recording.
type Dest struct {
	// Path is the file: absolute or relative to the working directory,
	// or, with Dir, relative to Dir (empty, with Dir: defaultName).
	Path string
	// Dir, when set, confines Path beneath it (a server's recording
	// directory, absolute with symlinks resolved, see ResolveDir): Path
	// may not be absolute or hold "..", and the file is created as a new
	// file (O_CREAT|O_EXCL|O_NOFOLLOW) through no symlinked component, so
	// that a link another user planted in the directory cannot make
	// numascope (often root) write elsewhere.
	Dir string
	// Force overwrites an existing file (not with Dir).
	Force bool
}

// Switch makes the file d names the current recording at once and returns
// its real path. The file is created and its header written and flushed
// before the current file is closed; if any of that fails, the new file is
// removed and recording goes on in the current one: nothing recorded is
// lost to a failed switch.
//
// The new file's t=0 is the instant of the last sample before the switch,
// not the switch itself: its first sample's rates cover the time since that
// sample, which then all lies within the new file.
func (r *Recorder) Switch(d Dest) (string, error) {
	w, path, done, err := d.create()
	if err != nil {
		return "", err
	}
	if r.pending != nil {
		r.beginPending() // closed below as a recording without samples
	}
	t := r.lastSample
	start, err := r.writeHeader(w, t)
	if err != nil {
		_ = w.Close(recording.End{})
		done(true)
		return "", fmt.Errorf("%w; removed it", err)
	}
	done(false)
	r.closeFile()
	r.use(w, t, start)
	return path, nil
}

// create creates d's file. done(failed) must be called once: with true it
// removes the file again (a failed switch), with false it keeps it.
//
// The file is removed relative to its directory, held open since the file
// was created, and only if the name there is still the file created: a
// path removed by name (os.Remove) would follow whatever a user who can
// write a directory on the way renamed into it meanwhile (their own
// directory swapped for a link to /etc), and remove a file of root's.
func (d Dest) create() (w *recording.Writer, path string, done func(failed bool), err error) {
	if d.Dir == "" {
		w, err := recording.Create(d.Path, d.Force)
		if err != nil {
			return nil, "", nil, err
		}
		dir, base := filepath.Split(d.Path)
		held, err := beneath.OpenOutputDir(dir)
		if err != nil {
			_ = w.Close(recording.End{})
			return nil, "", nil, fmt.Errorf("cannot create recording %s: its directory changed while it was created (%v); it may hold an empty recording: check, and try again", d.Path, err)
		}
		st, ok, _ := held.Lstat(base)
		return w, d.Path, func(failed bool) {
			defer held.Close()
			if !failed || !ok {
				return
			}
			if now, still, _ := held.Lstat(base); still && now.Dev == st.Dev && now.Ino == st.Ino {
				_ = held.Remove(base)
			}
		}, nil
	}
	p := d.Path
	if p == "" {
		p = defaultName(time.Now())
	}
	outside := fmt.Errorf("%q: give a file name relative to the server's recording directory %s (no absolute paths, no ..)", clip(p), d.Dir)
	if filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return nil, "", nil, outside
	}
	if !strings.HasSuffix(p, ".jsonl") && !strings.HasSuffix(p, ".jsonl.zst") {
		return nil, "", nil, fmt.Errorf("%q: the name must end in .jsonl or .jsonl.zst", clip(p))
	}
	name := filepath.Clean(p)
	path = filepath.Join(d.Dir, name)
	f, err := beneath.Create(d.Dir, name, 0o644)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return nil, "", nil, fmt.Errorf("%s already exists; give another name", path)
	case errors.Is(err, beneath.ErrSymlink):
		return nil, "", nil, fmt.Errorf("%s: a symbolic link is on the way, which is refused; give a path of real directories beneath %s", path, d.Dir)
	case errors.Is(err, beneath.ErrOutside):
		return nil, "", nil, outside
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
		return nil, "", nil, fmt.Errorf("%s: its directory does not exist beneath %s; create it first", path, d.Dir)
	default:
		return nil, "", nil, fmt.Errorf("cannot create %s: %v", path, unwrapPathErr(err))
	}
	return recording.FromFile(f, path), path, func(failed bool) {
		if failed {
			_ = beneath.Remove(d.Dir, name) // beneath d.Dir, following no link
		}
	}, nil
}

// defaultName is the name of a recording a client starts without naming
// one: the time, for sorting, and 48 random bits. A name from the time
// alone is predictable, so another user who can write the recording
// directory could plant the coming minutes' names and make every Record
// click fail with "already exists" (issue 28, finding 9).
func defaultName(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "numascope-" + now.Format("20060102-150405") + "-" + hex.EncodeToString(b[:]) + ".jsonl.zst"
}

// ResolveDir makes dir (default: the working directory) absolute with its
// symlinks resolved, for Dest.Dir: the operator's directory is trusted as
// named, what lies beneath it is not. It must be an existing directory.
func ResolveDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		// Named by the operator, but reached only through symbolic links
		// owned by root or the caller, as -o is (another user's
		// /tmp/x -> /etc is refused).
		var d *beneath.OutDir
		if d, err = beneath.OpenOutputDir(abs); err == nil {
			d.Close()
			abs, err = filepath.EvalSymlinks(abs)
		}
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(abs); err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return "", unwrapPathErr(err)
	}
	return abs, nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// clip shortens a name a client sent for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
