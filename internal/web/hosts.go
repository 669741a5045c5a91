package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// MaxHosts bounds the recordings one page aligns (`numascope view a b ...`):
// a small multiple per host stays readable up to a rack, and the hello that
// carries them all stays well below a client's queue (DefaultQueueBytes).
const MaxHosts = 64

// hostValues bounds the values (points × columns, over every host) the
// hosts hello carries: about 10 bytes each in JSON, so some 10 MiB at most,
// under the 16 MiB a client may have waiting.
const hostValues = 1 << 20

// hostPoints bounds the points per host and column: about two per pixel of
// a wide plot, as view's range replies give.
const hostPoints = 2000

// minHostPoints is the fewest points per host a page is worth drawing
// with; more hosts × columns than the budget allows at this resolution are
// refused.
const minHostPoints = 100

// Hosts serves several hosts' recordings on one time axis (`numascope view
// a.jsonl.zst b.jsonl.zst ...`): one small multiple per host, each
// recording placed by its wall-clock start (the header's "start"), so that
// the ranks of one job, recorded on their own machines, line up. Each
// recording is decimated (min/max, as view's range replies) once, when the
// server starts; the hello carries it all, and nothing is kept but the
// hello, so memory does not grow with the recordings' length. There is
// nothing to fetch: every request gets an error reply.
type Hosts struct {
	*Server
	hello []byte
}

// hostEntry is one host's recording in the hello (docs/live-protocol.md).
type hostEntry struct {
	Host     string             `json:"host"`
	Kernel   string             `json:"kernel"`
	File     string             `json:"file"`
	Start    time.Time          `json:"start"`
	Offset   float64            `json:"offset_s"` // Start minus the earliest start, in seconds
	Duration float64            `json:"duration_s"`
	Samples  int                `json:"samples"`
	Skipped  []string           `json:"skipped,omitempty"`
	Columns  []recording.Column `json:"columns"`
	// Data is a range reply over the whole recording, decimated to the
	// points the budget allows: rows [t, v1, ...] with t in seconds since
	// this recording's start.
	Data json.RawMessage `json:"data"`
}

// NewHosts prepares serving recs (recs[i] loaded from files[i]) aligned on
// their start times. A recording without a wall-clock start cannot be
// placed, so it is an error naming the file, as is asking for more hosts
// or values than a page can carry.
func NewHosts(opt Options, recs []*recording.Recording, files []string) (*Hosts, error) {
	if len(recs) != len(files) || len(recs) == 0 {
		return nil, fmt.Errorf("view: %d recordings for %d files", len(recs), len(files))
	}
	if len(recs) > MaxHosts {
		return nil, fmt.Errorf("view: %d recordings, at most %d on one page; view fewer at a time", len(recs), MaxHosts)
	}
	var earliest time.Time
	cols := 0
	for i, r := range recs {
		if r.Header.Start.IsZero() {
			return nil, fmt.Errorf("%s: the recording has no wall-clock start time (\"start\" in its header), so it cannot be aligned with the others; view it alone", files[i])
		}
		if earliest.IsZero() || r.Header.Start.Before(earliest) {
			earliest = r.Header.Start
		}
		cols += len(r.Columns)
	}
	points := hostPoints
	if cols > 0 {
		points = min(hostPoints, hostValues/cols)
	}
	if points < minHostPoints {
		return nil, fmt.Errorf("view: %d columns over %d recordings are too many for one page (at most %d); record fewer events (-e) or view fewer files at a time", cols, len(recs), hostValues/minHostPoints)
	}
	entries := make([]hostEntry, len(recs))
	for i, r := range recs {
		h := r.Header
		e := hostEntry{Host: h.Host, Kernel: h.Kernel, File: files[i], Start: h.Start,
			Offset: h.Start.Sub(earliest).Seconds(), Samples: len(r.Samples), Skipped: r.Skipped, Columns: r.Columns}
		v := &View{rec: r}
		v.load() // drops r.Samples: only the decimated data is kept
		if n := len(v.t); n > 0 {
			e.Duration = v.t[n-1]
			e.Data = v.encodeRange(nil, 0, n, points)
		} else {
			e.Data = json.RawMessage(`{"type":"range","t0":0,"t1":0,"decimated":false,"samples":[]}`)
		}
		entries[i] = e
	}
	// As for a bench document: no HTML escaping, which would let a
	// hostile host name grow sixfold on the way; the client shows every
	// name as text.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Hello{
		Type: "hello", Protocol: ProtocolVersion, Mode: "hosts", Start: earliest,
		File: fmt.Sprintf("%d recordings", len(recs)), State: State{Events: []string{}}, Columns: []recording.Column{}, Hosts: entries,
	}); err != nil {
		return nil, fmt.Errorf("view: encoding the recordings: %v", err)
	}
	hs := &Hosts{hello: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}
	hs.Server = NewServer(opt, hs)
	return hs, nil
}

// Attach, Detach and Request make several hosts' recordings a Backend.
func (hs *Hosts) Attach(c *Client) { c.Enqueue(hs.hello) }

func (hs *Hosts) Detach(*Client) {}

func (hs *Hosts) Request(c *Client, q *Request) {
	c.Fail(q.ID, fmt.Errorf("%s: recordings of several hosts answer no requests (they are all in the hello message)", clip(q.Type)))
}
