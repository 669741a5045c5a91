package sampler

import (
	"strings"

	"github.com/numascope/numascope/internal/sensor"
)

// SensorDesc is how numascope shows one sensor of a catalog to the outside:
// `numascope events --format json` prints it, the live protocol's hello
// carries it and recording headers keep its sensor-level part. Building it in
// one place keeps the three from drifting apart (an unavailable event that
// one of them forgets to mark is an event a user picks and gets an error for).
// The JSON keys are a public contract (docs/recording-format.md,
// docs/live-protocol.md): add, never rename.
type SensorDesc struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
	// Reason says why an absent sensor is absent (missing files,
	// permissions, no hardware) and what to do.
	Reason string `json:"reason,omitempty"`
	// Sources names the sensor's sources (node IDs, CPUs), never nil.
	Sources []string `json:"sources"`
	// Events lists every event of a present sensor (empty when absent),
	// never nil.
	Events []EventDesc `json:"events"`
}

// EventDesc describes one event of a sensor.
type EventDesc struct {
	Name string `json:"name"`
	Desc string `json:"desc"`
	Unit string `json:"unit"`
	Kind string `json:"kind"` // "counter" or "gauge"
	// Max holds per source the highest rate or value, when known.
	Max []float64 `json:"max,omitempty"`
	// Unavailable, set only when the event is listed but cannot be counted
	// here, is the one-line message: the reason and, when there is one,
	// "; fix: " and what to do. Reason and Fix are its two parts, for a
	// client that shows them apart (the web client's event picker).
	Unavailable string `json:"unavailable,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Fix         string `json:"fix,omitempty"`
}

// Available reports whether the event can be counted here.
func (d *EventDesc) Available() bool { return d.Unavailable == "" }

// MaxSum is the highest value of the event summed over all sources (what a
// summed column of it can reach), 0 when unknown.
func (d *EventDesc) MaxSum() float64 {
	var s float64
	for _, m := range d.Max {
		s += m
	}
	return s
}

// fixSep separates the reason from the fix in sensor.Event.Unavailable.
const fixSep = "; fix: "

// Describe describes every sensor of the catalog, in catalog order.
func (c *Catalog) Describe() []SensorDesc {
	out := make([]SensorDesc, 0, len(c.Entries))
	for _, e := range c.Entries {
		out = append(out, e.Describe())
	}
	return out
}

// Describe describes the sensor and its events.
func (e *Entry) Describe() SensorDesc {
	d := SensorDesc{Name: e.Name, Present: e.Present(), Sources: e.Sources, Events: make([]EventDesc, 0, len(e.Events))}
	if d.Sources == nil {
		d.Sources = []string{}
	}
	if e.Err != nil {
		d.Reason = e.Err.Error()
	}
	for i := range e.Events {
		d.Events = append(d.Events, DescribeEvent(&e.Events[i]))
	}
	return d
}

// DescribeEvent describes one event; an unavailable event's message is
// split into its reason and fix at the "; fix: " that sensors put between
// them (see sensor.Event.Unavailable).
func DescribeEvent(ev *sensor.Event) EventDesc {
	d := EventDesc{Name: ev.Name, Desc: ev.Desc, Unit: ev.Unit, Kind: ev.Kind.String(), Max: ev.Max, Unavailable: ev.Unavailable}
	if ev.Unavailable != "" {
		d.Reason, d.Fix, _ = strings.Cut(ev.Unavailable, fixSep)
	}
	return d
}
