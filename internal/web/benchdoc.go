package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/numascope/numascope/internal/recording"
)

// A bench document reaches the page in two steps, each bounded. ReadBench
// streams the file (at most MaxBenchFileBytes) through slimBench, which
// keeps what the page draws, compact, and at most MaxBenchBytes of it: the
// whole kept document travels in the hello, which counts against a
// client's queue (DefaultQueueBytes).
//
// The biggest document bench writes is --kind c2c --pairs all on many
// CPUs: per pair of CPUs an entry with every repeat's sample, indented.
// On 300 CPUs (44850 pairs) with --repeat bench.MaxRepeat it is about
// 120 MiB, of which the per-pair samples are most; the page shows of them
// only how many there were. So rather than making the user shrink the file
// (or making every browser parse 120 MiB), view keeps what the page draws
// and drops the samples of c2c pairs as it reads, replacing each list with
// its length ("repeats"): the file costs memory for what is kept, about
// 7 MiB on 300 CPUs whatever --repeat was, not for what it holds. What is
// kept grows as the square of the CPUs: --pairs all passes MaxBenchBytes
// past about 420 CPUs, where a --pairs sample is the way.
// TestBenchWorstCase builds that document from bench's own types and
// holds both bounds to it with margin.
const (
	// MaxBenchFileBytes bounds the file: the largest document bench
	// writes (300 CPUs, --pairs all, --repeat bench.MaxRepeat, indented)
	// with room to spare. A longer file, or a FIFO, is read no further.
	MaxBenchFileBytes = 192 << 20
	// MaxBenchBytes bounds what is kept of it and sent in the hello: the
	// same worst case kept is about 7 MiB; the hello's other fields are
	// a few hundred bytes, so it stays below DefaultQueueBytes.
	MaxBenchBytes = 14 << 20
	// maxBenchDepth bounds the nesting slimBench follows (a real document
	// nests 6 deep), so that a hostile [[[[... costs no deep recursion.
	maxBenchDepth = 32
)

// Bench serves the document `numascope bench --format json` writes
// (`numascope view bench.json`, docs/bench.md): the hello carries what the
// page draws of the document (slimBench): the latency and bandwidth
// heatmaps, the core-to-core latency, the conditions and, when present,
// the loaded-latency curves. There is
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

// ReadBench reads the bench document at path and returns what the page
// draws of it, compact (slimBench). A file over MaxBenchFileBytes is
// refused before it is read, and one that grows while it is read (or a
// FIFO) is read no further than that bound; the file is streamed, never
// held whole, so memory stays bounded by what is kept.
func ReadBench(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxBenchFileBytes {
		return nil, benchTooBig(path)
	}
	r := &countingReader{r: io.LimitReader(f, MaxBenchFileBytes+1)}
	body, err := slimBench(r)
	if r.n > MaxBenchFileBytes {
		return nil, benchTooBig(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return body, nil
}

// benchTooBig is the error of a file over MaxBenchFileBytes.
func benchTooBig(path string) error {
	return fmt.Errorf("%s: over the %d MiB limit for a bench document (numascope bench --kind c2c --pairs all on 300 CPUs with --repeat %d writes about 120 MiB); is it one?",
		path, MaxBenchFileBytes>>20, maxBenchRepeat)
}

// maxBenchRepeat is bench.MaxRepeat, which the error of a file too big
// names; package web does not import bench (TestBenchWorstCase checks
// that the two agree).
const maxBenchRepeat = 100

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errBenchKept is slimBench's error when what the page draws is over
// MaxBenchBytes.
var errBenchKept = fmt.Errorf("what the page draws of it is over the %d MiB limit (a --kind c2c --pairs all run on over about 420 CPUs?): measure a sample of the pairs (--pairs \"sample 2000\") or fewer nodes (--from)", MaxBenchBytes>>20)

// slimBench reads one JSON document from r, token by token, and writes it
// back compact, without HTML escaping, less what the page does not draw.
// Of a c2c_ns pair it keeps what hovering its cell shows (class, line
// node, min_ns and max_ns) and the count of its samples, "repeats", in
// place of the samples; its median_ns (the matrix's cell) and round_trips
// go. The placement entries of c2c pairs go too: the page draws the
// memory pairs' placement, and of c2c's only the worst fraction, which
// placement.min_fraction_on_target has. Everything else is kept as the
// file has it, numbers in their own digits. At most MaxBenchBytes are
// kept and maxBenchDepth levels followed, so memory is bounded by the
// kept output and one token, whatever r holds.
func slimBench(r io.Reader) ([]byte, error) {
	dec := json.NewDecoder(&squeezer{r: bufio.NewReader(r)})
	dec.UseNumber()
	s := &slimmer{dec: dec}
	s.enc = json.NewEncoder(&s.out)
	s.enc.SetEscapeHTML(false)
	if err := s.value(nil); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err == errBenchKept {
			return nil, err
		}
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not valid JSON: more than one value")
	}
	return s.out.Bytes(), nil
}

// squeezer passes JSON through with each run of whitespace outside strings
// made one space, and refuses a token (a string, a number) longer than
// MaxBenchBytes, which could not be kept anyway. json.Decoder holds a run
// of whitespace in its buffer until the next token, rescanning it on each
// read: a FIFO of spaces would cost memory as long as the run and time as
// its square. With the squeezer its buffer holds at most one token.
type squeezer struct {
	r                  *bufio.Reader
	inStr, esc, spaced bool
	tok                int
}

func (s *squeezer) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c, err := s.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		switch {
		case s.inStr:
			s.tok++
			if s.esc {
				s.esc = false
			} else if c == '\\' {
				s.esc = true
			} else if c == '"' {
				s.inStr = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.tok = 0
			if s.spaced {
				continue
			}
			s.spaced, c = true, ' '
		case c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':':
			s.tok, s.spaced = 0, false
		default:
			s.tok++
			s.spaced = false
			s.inStr = c == '"'
		}
		if s.tok > MaxBenchBytes {
			return n, fmt.Errorf("a value of over %d MiB", MaxBenchBytes>>20)
		}
		p[n] = c
		n++
	}
	return n, nil
}

type slimmer struct {
	dec *json.Decoder
	out bytes.Buffer
	enc *json.Encoder
}

// at says whether path is want ("" matching an element of an array).
func at(path []string, want ...string) bool {
	if len(path) != len(want) {
		return false
	}
	for i := range want {
		if path[i] != want[i] {
			return false
		}
	}
	return true
}

// value copies one value; path is the keys above it ("" for an element of
// an array).
func (s *slimmer) value(path []string) error {
	if len(path) > maxBenchDepth {
		return fmt.Errorf("nested deeper than %d levels", maxBenchDepth)
	}
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			s.out.WriteByte('{')
			pair := at(path, "c2c_ns", "pairs", "")
			for n := 0; s.dec.More(); {
				k, err := s.dec.Token()
				if err != nil {
					return err
				}
				key, ok := k.(string)
				if !ok {
					return fmt.Errorf("an object key is %v", k)
				}
				if pair && (key == "median_ns" || key == "round_trips") {
					if err := s.skip(len(path)); err != nil {
						return err
					}
					continue
				}
				if n++; n > 1 {
					s.out.WriteByte(',')
				}
				if pair && key == "samples" {
					s.out.WriteString(`"repeats":`)
					if err := s.count(); err != nil {
						return fmt.Errorf("c2c_ns: a pair's samples: %v", err)
					}
					continue
				}
				if err := s.str(key); err != nil {
					return err
				}
				s.out.WriteByte(':')
				if err := s.value(append(path, key)); err != nil {
					return err
				}
			}
			s.out.WriteByte('}')
		case '[':
			s.out.WriteByte('[')
			placement := at(path, "placement", "pairs")
			for n := 0; s.dec.More(); {
				start := s.out.Len()
				if n > 0 {
					s.out.WriteByte(',')
				}
				if err := s.value(append(path, "")); err != nil {
					return err
				}
				if placement {
					var p struct {
						Kind string `json:"kind"`
					}
					if json.Unmarshal(s.out.Bytes()[start+min(n, 1):], &p) == nil && p.Kind == "c2c" {
						s.out.Truncate(start)
						continue
					}
				}
				n++
			}
			s.out.WriteByte(']')
		}
		// The closing delimiter: Token checks it matches.
		if _, err := s.dec.Token(); err != nil {
			return err
		}
	case string:
		if err := s.str(t); err != nil {
			return err
		}
	case json.Number:
		s.out.WriteString(string(t))
	case bool:
		s.out.WriteString(strconv.FormatBool(t))
	case nil:
		s.out.WriteString("null")
	}
	if s.out.Len() > MaxBenchBytes {
		return errBenchKept
	}
	return nil
}

// skip reads one value and writes nothing; depth is how deep it is.
func (s *slimmer) skip(depth int) error {
	if depth > maxBenchDepth {
		return fmt.Errorf("nested deeper than %d levels", maxBenchDepth)
	}
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		for s.dec.More() {
			if d == '{' {
				if _, err := s.dec.Token(); err != nil {
					return err
				}
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
		_, err = s.dec.Token()
	}
	return err
}

// str writes a string as JSON.
func (s *slimmer) str(v string) error {
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	s.out.Truncate(s.out.Len() - 1) // Encode's newline
	return nil
}

// count reads a list of numbers and writes how many there are.
func (s *slimmer) count() error {
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("want a list of numbers, not %v", tok)
	}
	n := 0
	for s.dec.More() {
		tok, err := s.dec.Token()
		if err != nil {
			return err
		}
		if _, ok := tok.(json.Number); !ok {
			return fmt.Errorf("want numbers, not %v", tok)
		}
		n++
	}
	if _, err := s.dec.Token(); err != nil {
		return err
	}
	s.out.WriteString(strconv.Itoa(n))
	return nil
}

// NewBench prepares serving the bench document body, read from file. The
// body goes through slimBench (a no-op on ReadBench's output), then it
// checks what the client draws from: one JSON object with a latency_ns or
// bandwidth_mbs matrix (integer node ids; a row per initiator, a number or
// null per target), a loaded section (per pair, a latency for every
// bandwidth) or a c2c_ns matrix (a row and a column per CPU), so that a
// broken file is a clear error here rather than an empty page. Names and
// other fields are sent as the file has them; the client shows them as
// text.
func NewBench(opt Options, file string, body []byte) (*Bench, error) {
	if len(body) > MaxBenchFileBytes {
		return nil, benchTooBig(file)
	}
	slim, err := slimBench(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := checkBench(slim); err != nil {
		return nil, fmt.Errorf("%s: not a numascope bench document: %w", file, err)
	}
	b := &Bench{file: file, body: slim}
	b.Server = NewServer(opt, b)
	return b, nil
}

// checkBench checks a bench document's shape.
func checkBench(body []byte) error {
	var doc struct {
		Latency   json.RawMessage `json:"latency_ns"`
		Bandwidth json.RawMessage `json:"bandwidth_mbs"`
		Loaded    json.RawMessage `json:"loaded"`
		C2C       json.RawMessage `json:"c2c_ns"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return errors.New("want one JSON object")
		}
		return err
	}
	present := func(r json.RawMessage) bool { return len(r) > 0 && string(r) != "null" }
	if !present(doc.Latency) && !present(doc.Bandwidth) && !present(doc.Loaded) && !present(doc.C2C) {
		return errors.New(`it has none of "latency_ns", "bandwidth_mbs", "loaded" and "c2c_ns"`)
	}
	if present(doc.C2C) {
		// The CPU x CPU heatmap: a row and a column per CPU.
		var c struct {
			CPUs   []int        `json:"cpus"`
			Matrix [][]*float64 `json:"matrix"`
		}
		if err := json.Unmarshal(doc.C2C, &c); err != nil {
			return fmt.Errorf("c2c_ns: %v", err)
		}
		if len(c.Matrix) != len(c.CPUs) {
			return fmt.Errorf("c2c_ns: the matrix has %d rows for %d CPUs", len(c.Matrix), len(c.CPUs))
		}
		for i, row := range c.Matrix {
			if len(row) != len(c.CPUs) {
				return fmt.Errorf("c2c_ns: row %d (CPU %d) has %d values for %d CPUs", i, c.CPUs[i], len(row), len(c.CPUs))
			}
		}
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
