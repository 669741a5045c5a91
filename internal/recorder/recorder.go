// Package recorder drains a sampler sink into recording files. It owns the
// policy around the file format: when to flush so that a file can be read
// while it is written, how `ctl record FILE` switches files without losing a
// sample, and how labels, pauses and interval changes are written in order
// with the samples.
package recorder

import (
	"fmt"
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

	w         *recording.Writer
	pending   *recording.Writer // created, header not yet written
	offset    time.Duration     // sampler time of the current file's t=0
	samples   uint64
	lastFlush time.Time
	files     []string
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
				fail(r.w.Close(recording.End{Samples: r.samples, MissedDeadlines: rec.Stats.MissedDeadlines, Dropped: rec.Dropped}))
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
		if r.w != nil && werr == nil && len(r.sink.Records()) == 0 {
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

// begin writes the pending file's header, making sampler time t its time
// zero: 0 for the first file, the switch instant for a file begun by ctl record.
func (r *Recorder) begin(t time.Duration) {
	h := r.header
	h.Start = r.smp.Start().Add(t)
	h.Interval = r.smp.Interval().Seconds()
	r.offset = t
	r.samples = 0
	w := r.pending
	r.pending = nil
	if err := w.WriteHeader(&h); err != nil {
		r.report(fmt.Errorf("recording %s: %w", w.Path(), err))
		_ = w.Close(recording.End{})
		return
	}
	r.w = w
	r.files = append(r.files, w.Path())
}

func (r *Recorder) write(rec *sampler.Record) error {
	t := rec.T - r.offset
	switch rec.Kind {
	case sampler.KindSample:
		r.samples++
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

// rotate switches to the file named by rec.Text. If the new file cannot be
// created, the current one stays open: nothing recorded is lost.
func (r *Recorder) rotate(rec *sampler.Record) {
	w, err := recording.Create(rec.Text, r.force)
	if err != nil {
		r.report(fmt.Errorf("ctl record: %w; still recording to %s", err, r.current()))
		return
	}
	if r.w != nil {
		st := r.smp.Stats()
		if err := r.w.Close(recording.End{Samples: r.samples, MissedDeadlines: st.MissedDeadlines, Dropped: r.sink.Dropped()}); err != nil {
			r.report(fmt.Errorf("closing %s: %w", r.w.Path(), err))
		}
		r.report(fmt.Errorf("closed %s (%d samples); now recording to %s", r.w.Path(), r.samples, rec.Text))
		r.w = nil
	}
	if r.pending != nil {
		_ = r.pending.Close(recording.End{})
	}
	r.pending = w
	r.begin(rec.T)
}

func (r *Recorder) current() string {
	if r.w != nil {
		return r.w.Path()
	}
	return "no file"
}
