// Package recorder drains a sampler sink into recording files. It owns the
// policy around the file format: when to flush so that a file can be read
// while it is written, how `ctl record FILE` switches files without losing a
// sample, and how labels, pauses and interval changes are written in order
// with the samples.
package recorder

import (
	"fmt"
	"os"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// Recorder writes the records of one sink to the current file, if any.
type Recorder struct {
	sink   *sampler.Sink
	smp    *sampler.Sampler
	header recording.Header // template: everything but Start and Interval
	force  bool
	report func(error)

	w          *recording.Writer
	pending    *recording.Writer // created, header not yet written
	offset     time.Duration     // sampler time of the current file's t=0
	lastSample time.Duration     // sampler time of the latest sample received
	closedN    uint64            // samples in the files already closed
	lastFlush  time.Time
	files      []string
}

// New returns a recorder for sink. header is the template for every file's
// header; report receives problems worth a line on stderr.
func New(smp *sampler.Sampler, sink *sampler.Sink, header recording.Header, force bool, report func(error)) *Recorder {
	return &Recorder{smp: smp, sink: sink, header: header, force: force, report: report}
}

// Create opens path for the first recording. It fails at once, before any
// sampling, when the file exists (without force) or cannot be written.
func (r *Recorder) Create(path string) error {
	w, err := recording.Create(path, r.force)
	if err != nil {
		return err
	}
	r.pending = w
	return nil
}

// Dropped is the number of samples lost because writing fell behind.
func (r *Recorder) Dropped() uint64 { return r.sink.Dropped() }

// Files lists the files written, in order.
func (r *Recorder) Files() []string { return r.files }

// Written is the number of samples that reached the files, all of them
// together: what they hold, not what was sampled (a full disk loses the
// rest). Call it after Run has returned.
func (r *Recorder) Written() uint64 {
	n := r.closedN
	if r.w != nil {
		n += r.w.Written()
	}
	return n
}

// zstdFlushEvery bounds how often a compressed file is flushed: each flush
// ends a zstd block, and tiny blocks compress badly.
const zstdFlushEvery = 250 * time.Millisecond

// Run drains the sink until sampling ends, then closes the file. It returns
// the first error that made it stop writing.
func (r *Recorder) Run() error {
	var werr error
	fail := func(err error) {
		if err != nil && werr == nil {
			werr = err
			r.report(fmt.Errorf("recording stopped: %w", err))
		}
	}
	for rec := range r.sink.Records() {
		if rec.Kind == sampler.KindRotate {
			r.rotate(rec)
			r.sink.Release(rec)
			continue
		}
		if rec.Kind == sampler.KindEnd {
			if r.pending != nil {
				r.begin(0) // sampling ended before any sample: still a valid file
			}
			if r.w != nil {
				fail(r.w.Close(recording.End{MissedDeadlines: rec.Stats.MissedDeadlines, Dropped: rec.Dropped}))
				r.closedN += r.w.Written()
				r.w = nil
			}
			r.sink.Release(rec)
			continue
		}
		if r.pending != nil {
			// The first file begins when sampling began (the priming read),
			// so its first sample sits one interval after t=0.
			r.begin(0)
		}
		if r.w != nil && werr == nil {
			fail(r.write(rec))
		}
		r.sink.Release(rec)
		if r.w != nil && werr == nil && r.sink.Pending() == 0 {
			if !r.compressed() || time.Since(r.lastFlush) >= zstdFlushEvery {
				fail(r.w.Flush())
				r.lastFlush = time.Now()
			}
		}
	}
	return werr
}

func (r *Recorder) compressed() bool {
	p := r.w.Path()
	return len(p) > 4 && p[len(p)-4:] == ".zst"
}

// begin makes the pending file the current one, starting at sampler time t:
// 0 for the first file. A header that cannot be written is reported.
func (r *Recorder) begin(t time.Duration) {
	w := r.pending
	r.pending = nil
	if err := r.writeHeader(w, t); err != nil {
		r.report(fmt.Errorf("recording %s: %w", w.Path(), err))
		_ = w.Close(recording.End{})
		return
	}
	r.w = w
	r.offset = t
	r.files = append(r.files, w.Path())
}

// writeHeader writes w's header, making sampler time t its time zero, and
// flushes it: a file that cannot take its header is found out at once.
func (r *Recorder) writeHeader(w *recording.Writer, t time.Duration) error {
	h := r.header
	h.Start = r.smp.Start().Add(t)
	h.Interval = r.smp.Interval().Seconds()
	if err := w.WriteHeader(&h); err != nil {
		return err
	}
	return w.Flush()
}

func (r *Recorder) write(rec *sampler.Record) error {
	t := rec.T - r.offset
	switch rec.Kind {
	case sampler.KindSample:
		r.lastSample = rec.T
		return r.w.WriteSample(t, rec.Values)
	case sampler.KindLabel:
		return r.w.WriteLabel(t, rec.Text)
	case sampler.KindInterval:
		return r.w.WriteInterval(t, rec.Interval)
	case sampler.KindPause:
		return r.w.WritePause(t)
	case sampler.KindResume:
		return r.w.WriteResume(t)
	}
	return nil
}

// rotate switches to the file named by rec.Text. The new file is created
// and its header written and flushed before the current one is closed; if
// any of that fails, the new file is removed and recording goes on in the
// current one: nothing recorded is lost.
//
// The new file's t=0 is the instant of the last sample before the switch,
// not the switch itself: its first sample's rates cover the time since that
// sample, which then all lies within the new file.
func (r *Recorder) rotate(rec *sampler.Record) {
	w, err := recording.Create(rec.Text, r.force)
	if err != nil {
		r.report(fmt.Errorf("ctl record: %w; still recording to %s", err, r.current()))
		return
	}
	if r.pending != nil {
		// No sample yet: the first file has not begun; it is replaced, and
		// the new one starts with sampling.
		_ = r.pending.Close(recording.End{})
		r.pending = w
		r.begin(0)
		return
	}
	t := r.lastSample
	if err := r.writeHeader(w, t); err != nil {
		_ = w.Close(recording.End{})
		_ = os.Remove(rec.Text)
		r.report(fmt.Errorf("ctl record: cannot write %s: %v; removed it, still recording to %s", rec.Text, err, r.current()))
		return
	}
	if r.w != nil {
		st := r.smp.Stats()
		if err := r.w.Close(recording.End{MissedDeadlines: st.MissedDeadlines, Dropped: r.sink.Dropped()}); err != nil {
			r.report(fmt.Errorf("closing %s: %w", r.w.Path(), err))
		}
		r.closedN += r.w.Written()
		r.report(fmt.Errorf("closed %s (%d samples); now recording to %s", r.w.Path(), r.w.Written(), rec.Text))
	}
	r.w = w
	r.offset = t
	r.files = append(r.files, w.Path())
}

func (r *Recorder) current() string {
	if r.w != nil {
		return r.w.Path()
	}
	return "no file"
}
