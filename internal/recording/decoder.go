package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// LineKind says what a Line is. (The sampler's records have sampler.RecordKind;
// a column's values, ValueKind.)
type LineKind int

const (
	KindHeader   LineKind = iota + 1 // Line.Header
	KindSample                       // Line.T, Line.Values
	KindLabel                        // Line.T, Line.Text
	KindInterval                     // Line.T, Line.Interval
	KindPause                        // Line.T
	KindResume                       // Line.T
	KindColumns                      // Line.T, Line.Columns
	KindEnd                          // Line.T, Line.End
	// KindSkipped is a line the decoder could not use: corrupt, of an
	// unknown type (Line.Type), or inconsistent. Line.Reason says why.
	KindSkipped
)

var kindNames = [...]string{"", "header", "sample", "label", "interval", "pause", "resume", "columns", "end", "skipped"}

func (k LineKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "LineKind(" + strconv.Itoa(int(k)) + ")"
}

// Line is one decoded line of a recording.
type Line struct {
	Kind LineKind
	// No is the line number, counting from 1.
	No       int
	Header   *Header
	T        float64   // seconds since Start
	Values   []float64 // one per column of the current set; NaN for null
	Text     string
	Interval float64 // seconds
	Columns  []Column
	End      *End
	// Type is the "type" field of an object line, also for unknown types.
	Type string
	// Reason says why a KindSkipped line was skipped.
	Reason string
}

// ErrNoHeader means the input does not start with a numascope header line.
var ErrNoHeader = errors.New("not a numascope recording")

// maxLine bounds the memory one line may take. Real lines are far shorter:
// a header with the topology of a large machine is a few megabytes.
// (A variable so that tests can lower it.)
var maxLine = 64 << 20

// Decoder reads a recording line by line. It checks each sample against the
// column set in force, so a consumer can trust Values' length.
//
// A Decoder can follow a file that is being written: Next returns io.EOF at
// the end of the data, or io.ErrUnexpectedEOF when the data ends inside a
// line; calling Next again after more data was appended resumes where it
// stopped, the partial line included. (For zstd input, which cannot resume,
// reopen instead.)
type Decoder struct {
	r          *bufio.Reader
	pending    []byte // a line being assembled across reads
	no         int    // lines consumed
	header     bool
	ncols      int
	discarding bool // skipping the rest of an over-long line
	// owesNewline is set after a line was returned without its newline
	// (at the end of the data), so that the newline does not count as a
	// line of its own when it arrives.
	owesNewline bool
	err         error
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &Decoder{r: br}
}

// LineNumber returns the number of lines consumed so far.
func (d *Decoder) LineNumber() int { return d.no }

// Next returns the next line. Blank lines are passed over. The first line
// must be a header: otherwise Next returns an error wrapping ErrNoHeader.
// Corrupt and unknown lines come back as KindSkipped, not as errors; errors
// are io.EOF, io.ErrUnexpectedEOF (see Decoder), a missing or unusable header
// and read errors.
func (d *Decoder) Next() (Line, error) {
	if d.err != nil {
		return Line{}, d.err
	}
	for {
		frag, err := d.r.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if !d.discarding {
				d.pending = append(d.pending, frag...)
				if len(d.pending) > maxLine {
					d.discarding = true
					d.pending = d.pending[:0]
				}
			}
			continue
		case err == nil:
			line := frag
			if len(d.pending) > 0 {
				d.pending = append(d.pending, frag...)
				line = d.pending
			}
			if d.owesNewline {
				// The newline of a line returned at the end of the data.
				d.owesNewline = false
				if len(bytes.TrimSpace(line)) == 0 {
					d.pending = d.pending[:0]
					continue
				}
			}
			d.no++
			if len(line) > maxLine {
				d.discarding = true
			}
			if d.discarding {
				d.discarding = false
				d.pending = d.pending[:0]
				l := Line{Kind: KindSkipped, No: d.no, Reason: fmt.Sprintf("longer than %d MiB", maxLine>>20)}
				if !d.header {
					return Line{}, d.fail(fmt.Errorf("line %d: %w: the first line is %s", d.no, ErrNoHeader, l.Reason))
				}
				return l, nil
			}
			l, blank, ferr := d.decode(line[:len(line)-1])
			d.pending = d.pending[:0]
			if ferr != nil {
				return Line{}, d.fail(ferr)
			}
			if blank {
				continue
			}
			return l, nil
		default:
			if !d.discarding {
				d.pending = append(d.pending, frag...)
			}
			if err != io.EOF {
				return Line{}, err
			}
			if d.discarding || len(bytes.TrimSpace(d.pending)) == 0 {
				if d.discarding {
					return Line{}, io.ErrUnexpectedEOF
				}
				return Line{}, io.EOF
			}
			// The data ends without a newline. A line that is valid JSON
			// is complete (its closing bracket is there); otherwise it is
			// still being written, or was cut off.
			d.no++
			trimmed := bytes.TrimSpace(d.pending)
			l, _, ferr := d.decode(trimmed)
			if json.Valid(trimmed) || (ferr != nil && trimmed[0] != '{') {
				d.pending = d.pending[:0]
				if ferr != nil {
					return Line{}, d.fail(ferr)
				}
				d.owesNewline = true
				return l, nil
			}
			d.no--
			return Line{}, io.ErrUnexpectedEOF
		}
	}
}

func (d *Decoder) fail(err error) error {
	d.err = err
	return err
}

// decode parses one line (without its newline) and updates the decoder's
// state. blank reports an empty line; err is fatal (no usable header).
func (d *Decoder) decode(b []byte) (l Line, blank bool, err error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Line{}, true, nil
	}
	l.No = d.no
	if !d.header {
		if b[0] != '{' {
			return l, false, fmt.Errorf("line %d: %w: the first line is not a header object", d.no, ErrNoHeader)
		}
		var h struct {
			Type string `json:"type"`
			Header
		}
		if jerr := json.Unmarshal(b, &h); jerr != nil {
			return l, false, fmt.Errorf("line %d: %w: the header line is corrupt (%v)", d.no, ErrNoHeader, jerr)
		}
		if h.Type != "header" {
			return l, false, fmt.Errorf("line %d: %w: the first line is a %q line, not a header", d.no, ErrNoHeader, clean(h.Type))
		}
		if h.Format != FormatName {
			return l, false, fmt.Errorf("line %d: %w: the header's format is %q", d.no, ErrNoHeader, clean(h.Format))
		}
		if h.Version > Version {
			return l, false, fmt.Errorf("line %d: recording format version %d is newer than this numascope reads (%d); upgrade numascope", d.no, h.Version, Version)
		}
		hd := h.Header
		l.Kind, l.Type, l.Header = KindHeader, "header", &hd
		d.header = true
		d.ncols = len(hd.Columns)
		return l, false, nil
	}
	switch b[0] {
	case '[':
		t, vals, reason := parseSample(b, d.ncols)
		if reason == "" && len(vals) != d.ncols {
			reason = fmt.Sprintf("sample has %d values but the column set has %d", len(vals), d.ncols)
		}
		if reason != "" {
			return skip(l, reason), false, nil
		}
		l.Kind, l.T, l.Values = KindSample, t, vals
		return l, false, nil
	case '{':
		return d.decodeObject(l, b), false, nil
	}
	return skip(l, "not a JSON array or object"), false, nil
}

func skip(l Line, reason string) Line {
	l.Kind = KindSkipped
	l.Reason = reason
	return l
}

// object is the union of the fields of mark and end lines.
type object struct {
	Type            string    `json:"type"`
	T               *float64  `json:"t"`
	Text            *string   `json:"text"`
	Interval        *float64  `json:"interval_s"`
	Columns         *[]Column `json:"columns"`
	Samples         uint64    `json:"samples"`
	MissedDeadlines uint64    `json:"missed_deadlines"`
	Dropped         uint64    `json:"dropped"`
}

func (d *Decoder) decodeObject(l Line, b []byte) Line {
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		// A known type with a malformed field is as corrupt as bad JSON;
		// say which type it was if that much can be read.
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &probe) == nil && probe.Type != "" {
			l.Type = probe.Type
			return skip(l, fmt.Sprintf("corrupt %q line (%v)", clean(probe.Type), err))
		}
		return skip(l, fmt.Sprintf("not valid JSON (%v)", err))
	}
	l.Type = o.Type
	need := func(what string) Line {
		return skip(l, fmt.Sprintf("%q line without %q", clean(o.Type), what))
	}
	if o.T != nil {
		l.T = *o.T
	}
	switch o.Type {
	case "header":
		return skip(l, "a second header")
	case MarkLabel:
		if o.T == nil {
			return need("t")
		}
		l.Kind = KindLabel
		if o.Text != nil {
			l.Text = *o.Text
		}
	case MarkInterval:
		if o.T == nil {
			return need("t")
		}
		if o.Interval == nil {
			return need("interval_s")
		}
		l.Kind, l.Interval = KindInterval, *o.Interval
	case MarkPause, MarkResume:
		if o.T == nil {
			return need("t")
		}
		l.Kind = KindPause
		if o.Type == MarkResume {
			l.Kind = KindResume
		}
	case MarkColumns:
		if o.T == nil {
			return need("t")
		}
		if o.Columns == nil {
			return need("columns")
		}
		l.Kind, l.Columns = KindColumns, *o.Columns
		d.ncols = len(l.Columns)
	case "end":
		l.Kind = KindEnd
		l.End = &End{Samples: o.Samples, MissedDeadlines: o.MissedDeadlines, Dropped: o.Dropped}
	case "":
		return skip(l, "object without a \"type\"")
	default:
		return skip(l, fmt.Sprintf("unknown line type %q (written by a newer numascope?)", clean(o.Type)))
	}
	return l
}

// parseSample parses a sample line "[t, v1, ..., vN]": numbers, null for
// the values (not for t). It is strict JSON; reason says what is wrong.
func parseSample(b []byte, hint int) (t float64, vals []float64, reason string) {
	p := 1 // past '['
	p = skipSpace(b, p)
	if p < len(b) && b[p] == ']' {
		return 0, nil, "empty sample"
	}
	tok, q, ok := scanNumber(b, p)
	if !ok {
		return 0, nil, fmt.Sprintf("sample time at byte %d is not a number", p+1)
	}
	t = parseFloat(tok)
	if math.IsInf(t, 0) {
		return 0, nil, "sample time out of range"
	}
	p = q
	vals = make([]float64, 0, hint)
	for {
		p = skipSpace(b, p)
		if p >= len(b) {
			return 0, nil, "sample without closing ']'"
		}
		if b[p] == ']' {
			p++
			break
		}
		if b[p] != ',' {
			return 0, nil, fmt.Sprintf("unexpected %q at byte %d of a sample", b[p], p+1)
		}
		p = skipSpace(b, p+1)
		if bytes.HasPrefix(b[p:], []byte("null")) {
			vals = append(vals, math.NaN())
			p += 4
			continue
		}
		tok, q, ok := scanNumber(b, p)
		if !ok {
			return 0, nil, fmt.Sprintf("value at byte %d of a sample is not a number", p+1)
		}
		vals = append(vals, parseFloat(tok))
		p = q
	}
	if p = skipSpace(b, p); p != len(b) {
		return 0, nil, "data after the end of a sample"
	}
	return t, vals, ""
}

func skipSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\r' || b[p] == '\n') {
		p++
	}
	return p
}

// scanNumber matches a JSON number at b[p:] and returns it and the offset
// after it.
func scanNumber(b []byte, p int) (tok []byte, q int, ok bool) {
	q = p
	if q < len(b) && b[q] == '-' {
		q++
	}
	switch {
	case q < len(b) && b[q] == '0':
		q++
	case q < len(b) && b[q] >= '1' && b[q] <= '9':
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
	default:
		return nil, p, false
	}
	if q < len(b) && b[q] == '.' {
		q++
		s := q
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
		if q == s {
			return nil, p, false
		}
	}
	if q < len(b) && (b[q] == 'e' || b[q] == 'E') {
		q++
		if q < len(b) && (b[q] == '+' || b[q] == '-') {
			q++
		}
		s := q
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
		if q == s {
			return nil, p, false
		}
	}
	return b[p:q], q, true
}

// parseFloat converts a token scanNumber accepted; out-of-range values
// become ±Inf or 0, as strconv rounds them.
func parseFloat(tok []byte) float64 {
	f, _ := strconv.ParseFloat(string(tok), 64)
	return f
}
