// Package recording reads and writes numascope recordings.
//
// A recording is a JSON Lines file (optionally zstd-compressed, by the ".zst"
// suffix): a header object on the first line, then one JSON array per sample
// and an object per mark (label, interval change, pause, resume, column-set
// change, clean end). The format is documented in docs/recording-format.md;
// this package is its reference implementation.
//
// The design follows from how recordings are made and used:
//
//   - The writer sits on the sampling hot path, so WriteSample formats numbers
//     with strconv into a reused buffer and allocates nothing per call.
//   - Recordings are made of long runs that get killed, machines that crash
//     and disks that fill up. One line per sample means a cut-off file loses
//     at most the line being written; the reader keeps everything before the
//     cut and says what it skipped, instead of refusing the whole file.
//   - Live viewers follow a file while it is written, so the reader is a
//     streaming Decoder and the writer can Flush at any time, also for zstd.
//   - Old files must stay readable: unknown line types are skipped (additive
//     format changes keep version 1), and the original NUMAscope's JSON-array
//     recordings are imported (see legacy.go).
package recording

import (
	"time"

	"github.com/numascope/numascope/internal/topology"
)

// Version is the recording format version this package writes. Additive
// changes (new line types, new fields) keep it; readers skip what they do not
// know. Only a change that old readers would misread increments it.
const Version = 1

// FormatName is the value of the header's "format" field.
const FormatName = "numascope"

// ValueKind says what a column's values are, as written in Column.Kind: the
// file's spelling of sensor.ValueKind. (LineKind says what a decoded line is.)
type ValueKind string

// The value kinds.
const (
	Counter ValueKind = "counter" // values are rates per second
	Gauge   ValueKind = "gauge"   // values are levels, as read
)

// Header is the first line of a recording.
type Header struct {
	// Format is always "numascope"; Version is the format version (Version
	// for files this package writes, 0 for imported legacy recordings).
	Format  string `json:"format"`
	Version int    `json:"version"`
	Host    string `json:"host"`
	Kernel  string `json:"kernel"`
	// Start is the wall-clock time at t=0. It is zero (and omitted) when
	// unknown, as in legacy recordings that stored relative times.
	Start time.Time `json:"start,omitzero"`
	// Interval is the sampling interval at the start, in seconds. Interval
	// marks record later changes.
	Interval float64 `json:"interval_s"`
	// Topology is the machine the recording was made on.
	Topology *topology.Topology `json:"topology,omitempty"`
	// Sensors lists every sensor that was asked for, present or not, so a
	// reader can tell "not recorded" from "not available on that machine".
	Sensors []SensorInfo `json:"sensors"`
	// Columns is the initial column set: sample value i belongs to Columns[i].
	Columns []Column `json:"columns"`
	// Command is the command line numascope ran and recorded, if any.
	Command []string `json:"command,omitempty"`
}

// SensorInfo describes one sensor of the recording.
type SensorInfo struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
	// Reason says why an absent sensor is absent (missing files, permissions).
	Reason  string   `json:"reason"`
	Sources []string `json:"sources"`
}

// Column describes one value of every sample.
type Column struct {
	// Name is the qualified name: "sensor.event" for a value summed over
	// Sources, "sensor.SOURCE.event" for a value of a single source. It is
	// unique within a column set and identifies the column across column-set
	// changes.
	Name    string   `json:"name"`
	Sensor  string   `json:"sensor"`
	Event   string   `json:"event"`
	Sources []string `json:"sources"`
	// Unit is the unit of what is counted (counters; their values are Unit
	// per second) or of the level (gauges). "%" columns hold percentages.
	Unit string `json:"unit"`
	// Kind is Counter or Gauge.
	Kind ValueKind `json:"kind"`
	Desc string    `json:"desc"`
	// Max is the highest value the column can reach (a rate for counters), 0
	// when unknown.
	Max float64 `json:"max,omitempty"`
}

// QualifiedName returns the column name for an event of a sensor: with source
// "" it is the summed column "sensor.event", otherwise "sensor.source.event".
func QualifiedName(sensor, source, event string) string {
	if source == "" {
		return sensor + "." + event
	}
	return sensor + "." + source + "." + event
}

// qualified returns c.Name, or a name derived from Sensor, Sources and Event
// when Name is empty.
func (c *Column) qualified() string {
	if c.Name != "" {
		return c.Name
	}
	src := ""
	if len(c.Sources) == 1 {
		src = c.Sources[0]
	}
	return QualifiedName(c.Sensor, src, c.Event)
}

// End is the summary a clean Close writes as the last line.
type End struct {
	// Samples is the number of samples taken.
	Samples uint64 `json:"samples"`
	// MissedDeadlines counts samples taken late because the sampler could not
	// keep up with the interval.
	MissedDeadlines uint64 `json:"missed_deadlines"`
	// Dropped counts samples that were taken but could not be written.
	Dropped uint64 `json:"dropped"`
}

// Sample is one row of values.
type Sample struct {
	// T is the time in seconds since the header's Start.
	T float64
	// V holds one value per Recording.Columns entry; NaN where the value was
	// null (could not be read) or the column was not in the column set the
	// sample was written with.
	V []float64
}

// Mark types.
const (
	MarkLabel    = "label"
	MarkInterval = "interval"
	MarkPause    = "pause"
	MarkResume   = "resume"
	MarkColumns  = "columns"
)

// Mark is a point event in a recording.
type Mark struct {
	// Type is one of MarkLabel, MarkInterval, MarkPause, MarkResume,
	// MarkColumns.
	Type string
	// T is the time in seconds since Start.
	T float64
	// Text is a label's text.
	Text string
	// Interval is the new sampling interval in seconds (MarkInterval).
	Interval float64
}

// Recording is a whole recording in memory.
type Recording struct {
	Header Header
	// Columns is the union of every column set of the recording, in order
	// of first appearance. Sample.V is aligned with it.
	Columns []Column
	Samples []Sample
	Marks   []Mark
	// End is the summary of a cleanly closed recording, nil when the
	// recording was interrupted (or is still being written).
	End *End
	// Skipped says, one entry each, what the reader skipped and why: corrupt
	// lines, unknown line types, a cut-off last line.
	Skipped []string
	// Legacy is true for a recording imported from the original NUMAscope's
	// JSON-array format.
	Legacy bool
}

// Column returns the index of the column with the given qualified name in
// r.Columns, or -1.
func (r *Recording) Column(name string) int {
	for i := range r.Columns {
		if r.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// Labels returns the label marks.
func (r *Recording) Labels() []Mark {
	var out []Mark
	for _, m := range r.Marks {
		if m.Type == MarkLabel {
			out = append(out, m)
		}
	}
	return out
}

// clean makes a string safe to embed in a one-line message: sanitized as
// SanitizeText does (no escapes or bidi controls reach a terminal) and short.
func clean(s string) string {
	s = SanitizeText(s)
	if len(s) > 80 {
		s = truncate(s, 77)
	}
	return s
}
