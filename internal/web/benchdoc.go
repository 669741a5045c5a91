package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/numascope/numascope/internal/recording"
)

// MaxBenchBytes bounds a bench document `numascope view` serves: the
// output of `numascope bench --format json` is a few hundred KiB even for
// 64 nodes (two matrices of every statistic, one placement entry per
// measurement). The whole document travels in the hello, which counts
// against a client's queue (DefaultQueueBytes), so the bound stays well
// below that.
const MaxBenchBytes = 8 << 20

// Bench serves the document `numascope bench --format json` writes
// (`numascope view bench.json`, docs/bench.md): the hello carries the whole
// document, from which the client draws the latency and bandwidth heatmaps,
// the conditions and, when present, the loaded-latency curves. There is
// nothing to fetch, so every request gets an error reply.
type Bench struct {
	*Server
	file string
	body json.RawMessage
}

// benchMatrix is what NewBench checks of a matrix: the shape the client
// relies on. Everything else is sent as the file has it.
type benchMatrix struct {
	Initiators []int        `json:"initiators"`
	Targets    []int        `json:"targets"`
	Matrix     [][]*float64 `json:"matrix"`
}

// benchLoaded is what NewBench checks of the loaded-latency section:
// per pair, as many bandwidths as latencies.
type benchLoaded struct {
	Pairs []struct {
		Initiator   *int       `json:"initiator"`
		Target      *int       `json:"target"`
		BandwidthMB []*float64 `json:"bandwidth_mbs"`
		LatencyNS   []*float64 `json:"latency_ns"`
	} `json:"pairs"`
}

// ReadBench reads a bench document of at most MaxBenchBytes from path. A
// bigger file is refused before it is read, and a file that grows while
// it is read (or a FIFO) is read no further than the bound, so memory
// stays bounded whatever the path holds.
func ReadBench(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	too := func() error {
		return fmt.Errorf("%s: over the %d MiB limit for a bench document (numascope bench writes a few hundred KiB); is it one?", path, MaxBenchBytes>>20)
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxBenchBytes {
		return nil, too()
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxBenchBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxBenchBytes {
		return nil, too()
	}
	return b, nil
}

// NewBench prepares serving the bench document body, read from file. It
// checks what the client draws from: one JSON object with a latency_ns or
// bandwidth_mbs matrix (integer node ids; a row per initiator, a number or
// null per target) or a loaded section (per pair, a latency for every
// bandwidth), so that a broken file is a clear error here rather than an
// empty page. Names and other fields are sent as the file has them; the
// client shows them as text.
func NewBench(opt Options, file string, body []byte) (*Bench, error) {
	if len(body) > MaxBenchBytes {
		return nil, fmt.Errorf("%s: over the %d MiB limit for a bench document", file, MaxBenchBytes>>20)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %v", file, err)
	}
	if err := checkBench(compact.Bytes()); err != nil {
		return nil, fmt.Errorf("%s: not a numascope bench document: %w", file, err)
	}
	b := &Bench{file: file, body: compact.Bytes()}
	b.Server = NewServer(opt, b)
	return b, nil
}

// checkBench checks a bench document's shape.
func checkBench(body []byte) error {
	var doc struct {
		Latency   json.RawMessage `json:"latency_ns"`
		Bandwidth json.RawMessage `json:"bandwidth_mbs"`
		Loaded    json.RawMessage `json:"loaded"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return errors.New("want one JSON object")
		}
		return err
	}
	present := func(r json.RawMessage) bool { return len(r) > 0 && string(r) != "null" }
	if !present(doc.Latency) && !present(doc.Bandwidth) && !present(doc.Loaded) {
		return errors.New(`it has none of "latency_ns", "bandwidth_mbs" and "loaded"`)
	}
	for _, m := range []struct {
		key string
		raw json.RawMessage
	}{{"latency_ns", doc.Latency}, {"bandwidth_mbs", doc.Bandwidth}} {
		if !present(m.raw) {
			continue
		}
		var x benchMatrix
		if err := json.Unmarshal(m.raw, &x); err != nil {
			return fmt.Errorf("%s: %v", m.key, err)
		}
		if len(x.Matrix) != len(x.Initiators) {
			return fmt.Errorf("%s: the matrix has %d rows for %d initiators", m.key, len(x.Matrix), len(x.Initiators))
		}
		for i, row := range x.Matrix {
			if len(row) != len(x.Targets) {
				return fmt.Errorf("%s: row %d (initiator %d) has %d values for %d targets", m.key, i, x.Initiators[i], len(row), len(x.Targets))
			}
		}
	}
	if present(doc.Loaded) {
		var l benchLoaded
		if err := json.Unmarshal(doc.Loaded, &l); err != nil {
			return fmt.Errorf("loaded: %v", err)
		}
		for i, p := range l.Pairs {
			if p.Initiator == nil || p.Target == nil {
				return fmt.Errorf("loaded: pair %d names no initiator or target", i)
			}
			if len(p.BandwidthMB) != len(p.LatencyNS) {
				return fmt.Errorf("loaded: pair %d (node %d -> node %d) has %d bandwidths for %d latencies", i, *p.Initiator, *p.Target, len(p.BandwidthMB), len(p.LatencyNS))
			}
		}
	}
	return nil
}

// Attach, Detach and Request make a bench document a Backend.
func (b *Bench) Attach(c *Client) {
	// The document goes as it is, without HTML escaping (json.Marshal
	// would turn each < into six bytes): a hostile file full of them would
	// otherwise outgrow the client's queue. The client reads it with
	// JSON.parse and shows every string as text.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Hello{
		Type: "hello", Protocol: ProtocolVersion, Mode: "bench",
		File: b.file, State: State{Events: []string{}}, Columns: []recording.Column{}, Bench: b.body,
	}); err != nil {
		c.Fail(nil, fmt.Errorf("encoding the bench document: %v", err))
		return
	}
	c.Enqueue(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func (b *Bench) Detach(*Client) {}

func (b *Bench) Request(c *Client, q *Request) {
	c.Fail(q.ID, fmt.Errorf("%s: a bench document answers no requests (it is all in the hello message)", clip(q.Type)))
}
