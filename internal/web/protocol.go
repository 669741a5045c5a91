package web

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/topology"
)

// ProtocolVersion is the version of the websocket protocol described in
// docs/live-protocol.md. It goes up when a change would break a client.
const ProtocolVersion = 1

// MaxMessage is the largest client message the protocol accepts; a larger
// one gets an error reply and the connection stays open.
const MaxMessage = 16 << 10

// hardReadLimit is where the websocket layer gives up on a message and
// closes the connection, so that a client cannot make the server read an
// unbounded message.
const hardReadLimit = 1 << 20

// SensorCatalog is one sensor with its events, for the client's event
// picker: sampler.Catalog.Describe's description, the same that `numascope
// events --format json` prints, except that an event's max is summed over
// the sensor's sources.
type SensorCatalog struct {
	sampler.SensorDesc
	Events []EventInfo `json:"events"`
}

// EventInfo is one event of the catalog. Max, the highest value of the
// event summed over all sources, shadows the description's per-source list.
type EventInfo struct {
	sampler.EventDesc
	Max float64 `json:"max,omitempty"`
}

// CatalogOf builds the hello's catalog from sensor descriptions.
func CatalogOf(descs []sampler.SensorDesc) []SensorCatalog {
	out := make([]SensorCatalog, 0, len(descs))
	for _, d := range descs {
		sc := SensorCatalog{SensorDesc: d, Events: make([]EventInfo, 0, len(d.Events))}
		for _, ev := range d.Events {
			sc.Events = append(sc.Events, EventInfo{EventDesc: ev, Max: ev.MaxSum()})
		}
		out = append(out, sc)
	}
	return out
}

// State is what every client shares and sees change.
type State struct {
	Interval  float64  `json:"interval_s"`
	Paused    bool     `json:"paused"`
	Discrete  bool     `json:"discrete"`
	Events    []string `json:"events"`
	Recording string   `json:"recording"`
}

// Hello is the first message on every connection.
type Hello struct {
	Type     string             `json:"type"`
	Protocol int                `json:"protocol"`
	Mode     string             `json:"mode"` // "live", "view", "experiment", "profile", "bench" or "hosts"
	Host     string             `json:"host"`
	Kernel   string             `json:"kernel"`
	Start    time.Time          `json:"start,omitzero"`
	Topology *topology.Topology `json:"topology,omitempty"`
	Catalog  []SensorCatalog    `json:"catalog,omitempty"`
	Columns  []recording.Column `json:"columns"`
	State    State              `json:"state"`
	BatchMS  float64            `json:"batch_ms,omitempty"`
	File     string             `json:"file,omitempty"`
	Duration float64            `json:"duration_s,omitempty"`
	Samples  int                `json:"samples,omitempty"`
	Marks    []MarkMsg          `json:"marks,omitempty"`
	Skipped  []string           `json:"skipped,omitempty"`
	Legacy   bool               `json:"legacy,omitempty"`
	// Experiment is an experiment's report (mode "experiment"): its
	// analysis and runs, as `numascope experiment --web` serves them.
	Experiment json.RawMessage `json:"experiment,omitempty"`
	// Profile is a profile (mode "profile"): the document numascope
	// profile wrote (docs/profile.md), as it is in the file.
	Profile json.RawMessage `json:"profile,omitempty"`
	// Hints are the profile's plain-language conclusions, the same as
	// numascope report prints (mode "profile").
	Hints []string `json:"hints,omitempty"`
	// Bench is a bench document (mode "bench"): what numascope bench
	// --format json wrote (docs/bench.md), compacted.
	Bench json.RawMessage `json:"bench,omitempty"`
	// SourcePath are the directories where source files are looked up
	// (mode "profile", --source-path).
	SourcePath []string `json:"source_path,omitempty"`
	// Hosts are several hosts' recordings on one time axis (mode
	// "hosts"): Start is then the earliest start.
	Hosts []hostEntry `json:"hosts,omitempty"`
}

// MarkMsg is a label, interval change, pause or resume.
type MarkMsg struct {
	Type     string  `json:"type"` // "mark"
	Mark     string  `json:"mark"` // recording.Mark* names
	T        float64 `json:"t"`
	Text     string  `json:"text,omitempty"`
	Interval float64 `json:"interval_s,omitempty"`
}

// ColumnsMsg announces a new column set from time T on.
type ColumnsMsg struct {
	Type    string             `json:"type"` // "columns"
	T       float64            `json:"t"`
	Columns []recording.Column `json:"columns"`
	State   State              `json:"state"`
}

// StateMsg tells every client the shared state after it changed.
type StateMsg struct {
	Type  string `json:"type"` // "state"
	State State  `json:"state"`
}

// ErrorMsg is the error reply to a client's message, or news of a failure.
type ErrorMsg struct {
	Type  string `json:"type"` // "error"
	ID    any    `json:"id,omitempty"`
	Error string `json:"error"`
}

// OKMsg is the reply to a client's message that was carried out.
type OKMsg struct {
	Type string `json:"type"` // "ok"
	ID   any    `json:"id,omitempty"`
	Op   string `json:"op"`
	// Path is the absolute path of the file a record request created.
	Path string `json:"path,omitempty"`
}

// Request is any client message. Only the fields its type uses are set.
type Request struct {
	Type     string   `json:"type"`
	ID       any      `json:"id,omitempty"`
	Interval string   `json:"interval,omitempty"`
	Text     string   `json:"text,omitempty"`
	Event    string   `json:"event,omitempty"`
	Events   []string `json:"events,omitempty"`
	Discrete *bool    `json:"discrete,omitempty"`
	Path     string   `json:"path,omitempty"`
	T0       *float64 `json:"t0,omitempty"`
	T1       *float64 `json:"t1,omitempty"`
	Points   int      `json:"points,omitempty"`
	// Sums asks a totals request for sums over columns as well (view).
	Sums []sumRequest `json:"sums,omitempty"`
	// File is the source file a source request asks for (profile), as
	// the profile names it.
	File string `json:"file,omitempty"`
}

// sumRequest names a sum over columns, e.g. one event over all nodes, as the
// client plots it in the summed view.
type sumRequest struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
}

// The client message types each server answers, for error messages.
const (
	LiveTypes    = "interval, pause, resume, label, events, enable, disable, discrete, record, record_stop"
	viewTypes    = "range, totals"
	profileTypes = "source"
	// RequestTypes are every server's, for a message without a type.
	RequestTypes = LiveTypes + ", " + viewTypes + ", " + profileTypes
)

// UnknownType is the error for a message type a server does not know; it
// lists what that server answers, which never includes typ.
func UnknownType(typ, server, valid string) error {
	return fmt.Errorf("unknown message type %q (%s answers %s)", clip(typ), server, valid)
}

// parseRequest decodes one client message. Unknown fields are an error, so
// that a typo does not silently do nothing.
func parseRequest(b []byte) (*Request, error) {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var r Request
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("malformed message: %v (send one JSON object with a \"type\")", clip(err.Error()))
	}
	if d.More() {
		return nil, fmt.Errorf("malformed message: more than one JSON value")
	}
	if r.Type == "" {
		return nil, fmt.Errorf("message without \"type\" (one of %s)", RequestTypes)
	}
	switch r.ID.(type) {
	case nil, string, float64:
	default:
		return nil, fmt.Errorf("\"id\" must be a string or a number")
	}
	return &r, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// AppendNumber appends v as JSON: NaN and infinities as null.
func AppendNumber(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', 9, 64)
}

// AppendTime appends a time in seconds with microsecond resolution.
func AppendTime(b []byte, t time.Duration) []byte {
	return strconv.AppendFloat(b, math.Round(t.Seconds()*1e6)/1e6, 'f', -1, 64)
}

// MustJSON encodes a message, which cannot fail for the message types.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("web: encoding %T: %v", v, err))
	}
	return b
}
