// Package sampling builds a sampling session: the events selected from the
// catalog, the sampler, the sink its records leave through and the
// recorder that writes them. Every command that samples (stat, record,
// experiment's runs, live) builds it here, so that all of them resolve
// events, pin the sampler and attach the recorder the same way.
package sampling

import (
	"time"

	"github.com/numascope/numascope/internal/recorder"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// Config is what a session samples and records, typed: a command builds it
// once from its flags or its spec, so that nothing is formatted into a flag
// string to be parsed again.
type Config struct {
	Catalog *sampler.Catalog
	// Events are patterns for Catalog.Select, with @PRESETs; none: the
	// default events that this machine has (New fills them in).
	Events   []string
	Discrete bool   // one column per source instead of sums
	Per      string // the counter every column is divided by (--per), or ""
	Interval time.Duration
	Count    uint64 // samples to take; 0: until stopped
	PinCPUs  []int  // where the sampler runs; nil: anywhere
	// Sink names the sink the recorder reads (sampler.Stats names it).
	Sink string
	// Header is the template of every recording's header: host, kernel,
	// topology, sensors, command. Columns, Start and Interval are filled in.
	Header recording.Header
	// Record is created at once (-o), so that an existing or unwritable file
	// is reported before anything runs; Force overwrites it, and the files
	// of later switches (`ctl record`).
	Record string
	Force  bool
	// Errors receives sampler and recording problems; Notices, their news
	// that is not a problem (see sampler.Config). Either may be nil.
	Errors  func(error)
	Notices func(string)
}

// Session is a sampler with its sink and the recorder that reads it. The
// recorder stays when Replace puts another sampler in place (live's event
// changes): it keeps one timeline and the current file.
type Session struct {
	cfg      Config
	Sampler  *sampler.Sampler
	Sink     *sampler.Sink
	Recorder *recorder.Recorder
	// Columns are the sampler's columns, as recordings and clients name them.
	Columns []recording.Column
}

// New selects cfg's events and prepares the sampler and the recorder; the
// recording cfg.Record, if any, is created. Nothing runs yet: the caller
// runs Sampler and Recorder (or reads Sink itself). On error nothing needs
// undoing but the catalog, which stays the caller's.
func New(cfg Config) (*Session, error) {
	if cfg.Errors == nil {
		cfg.Errors = func(error) {}
	}
	if cfg.Notices == nil {
		cfg.Notices = func(string) {}
	}
	if len(cfg.Events) == 0 {
		cfg.Events = cfg.Catalog.Available(sampler.DefaultEvents)
	}
	s := &Session{cfg: cfg}
	if err := s.start(cfg.Events, cfg.Discrete, cfg.Interval); err != nil {
		return nil, err
	}
	h := cfg.Header
	h.Columns = s.Columns
	s.Recorder = recorder.New(s.Sampler, s.Sink, h, cfg.Force, cfg.Errors, cfg.Notices)
	if cfg.Record != "" {
		if err := s.Recorder.Create(cfg.Record); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Events are the patterns the session was built with, the default events
// filled in.
func (s *Session) Events() []string { return s.cfg.Events }

// Select resolves patterns (presets expanded) to the columns a sampler
// would sample, divided by the Per counter when the session has one.
func (s *Session) Select(patterns []string, discrete bool) ([]*sampler.Column, error) {
	cat := s.cfg.Catalog
	patterns, err := cat.ExpandPresets(patterns)
	if err != nil {
		return nil, err
	}
	cols, err := cat.Select(patterns, discrete)
	if err == nil && s.cfg.Per != "" {
		err = cat.Per(cols, s.cfg.Per)
	}
	return cols, err
}

// Replace puts a new sampler, for patterns at interval, in place of the
// current one, which must have ended (its KindEnd handled by the
// recorder); the recorder goes on with the new one on the same timeline.
// On error the session is as it was, its sampler ended.
func (s *Session) Replace(patterns []string, discrete bool, interval time.Duration) error {
	old := *s
	if err := s.start(patterns, discrete, interval); err != nil {
		*s = old
		return err
	}
	s.Recorder.Attach(s.Sampler, s.Sink)
	return nil
}

// start makes the sampler for patterns and the sink of its recorder.
func (s *Session) start(patterns []string, discrete bool, interval time.Duration) error {
	cols, err := s.Select(patterns, discrete)
	if err != nil {
		return err
	}
	smp, err := sampler.New(cols, sampler.Config{
		Interval: interval,
		Count:    s.cfg.Count,
		PinCPUs:  s.cfg.PinCPUs,
		Errors:   s.cfg.Errors,
		Notices:  s.cfg.Notices,
	})
	if err != nil {
		return err
	}
	s.Sampler, s.Sink, s.Columns = smp, smp.AddSink(s.cfg.Sink, sampler.SinkDepth(interval)), recorder.Columns(cols)
	return nil
}
