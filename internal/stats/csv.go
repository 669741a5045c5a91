package stats

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// The bounds of ReadCSV's input, which may be any file: lines of at most
// MaxLine bytes, at most MaxInput bytes in all and at most MaxObservations
// data lines, so that reading it takes a bounded amount of memory (one
// 200 MB line cost 1.1 GB). A factorial experiment's table is far
// smaller: a million observations of a few factors fit.
const (
	MaxLine         = 1 << 20
	MaxInput        = 64 << 20
	MaxObservations = 1_000_000
)

// limitError is the error of a bound of ReadCSV's input, naming the line.
type limitError struct {
	line int
	what string
}

func (e *limitError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.what) }

// limitReader passes r on while counting lines, and fails at the first
// line longer than MaxLine or the first byte beyond MaxInput, before
// encoding/csv buffers them.
type limitReader struct {
	r       io.Reader
	line    int   // the line being read, from 1
	lineLen int   // its bytes so far
	total   int64 // bytes so far
	err     error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for rest := p[:n]; len(rest) > 0; {
		seg := bytes.IndexByte(rest, '\n') // this line's bytes in rest
		if seg < 0 {
			seg = len(rest)
		}
		end := l.total + int64(seg) // the input read to the end of this segment
		if seg < len(rest) {
			end++ // and its newline
		}
		switch {
		case l.lineLen+seg > MaxLine:
			l.err = &limitError{l.line, fmt.Sprintf("the line is longer than %d MiB, the limit of a line: is this the right file?", MaxLine>>20)}
		case end > MaxInput:
			l.err = &limitError{l.line, fmt.Sprintf("the input is larger than %d MiB, the limit: is this the right file?", MaxInput>>20)}
		}
		if l.err != nil {
			return 0, l.err
		}
		l.total = end
		l.lineLen += seg
		rest = rest[seg:]
		if len(rest) > 0 { // at a newline
			l.line++
			l.lineLen = 0
			rest = rest[1:]
		}
	}
	return n, err
}

// ReadCSV reads observations from a CSV table with a header line: the
// response column holds numbers, each factor column the level (any text).
// Other columns are ignored; blank lines and lines starting with # are
// skipped. Errors name the line, so that a bad cell in a large file can be
// found.
func ReadCSV(r io.Reader, response string, factors []string) ([]Observation, error) {
	if response == "" {
		return nil, errors.New("no response column named")
	}
	if len(factors) == 0 {
		return nil, errors.New("no factor columns named")
	}
	br := bufio.NewReader(&limitReader{r: r, line: 1})
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3) // a byte order mark from a spreadsheet
	}
	cr := csv.NewReader(br)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("the CSV is empty: want a header line and data lines")
	}
	if err != nil {
		return nil, csvError(err)
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(h)
		if _, dup := col[h]; dup && h != "" {
			line, _ := cr.FieldPos(i)
			return nil, fmt.Errorf("line %d: column %q appears twice in the header", line, h)
		}
		col[h] = i
	}
	cols := quoteList(head)
	ri, ok := col[response]
	if !ok {
		return nil, fmt.Errorf("line 1: no response column %q in the header (columns: %s)", response, cols)
	}
	fi := make([]int, len(factors))
	for i, f := range factors {
		j, ok := col[f]
		if !ok {
			return nil, fmt.Errorf("line 1: no factor column %q in the header (columns: %s)", f, cols)
		}
		if j == ri {
			return nil, fmt.Errorf("column %q is both the response and a factor", f)
		}
		for _, prev := range fi[:i] {
			if prev == j {
				return nil, fmt.Errorf("factor %q is named twice", f)
			}
		}
		fi[i] = j
	}
	var obs []Observation
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		cell := strings.TrimSpace(rec[ri])
		v, err := strconv.ParseFloat(cell, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("line %d: response %s = %q is not a finite number", line, response, truncate(cell, 40))
		}
		if len(obs) == MaxObservations {
			return nil, fmt.Errorf("line %d: more than %d data lines, the limit: is this the right file?", line, MaxObservations)
		}
		o := Observation{Value: v, Levels: make([]string, len(fi))}
		for i, j := range fi {
			l := strings.TrimSpace(rec[j])
			if l == "" {
				return nil, fmt.Errorf("line %d: factor %s has an empty level", line, factors[i])
			}
			o.Levels[i] = l
		}
		obs = append(obs, o)
	}
	if len(obs) == 0 {
		return nil, errors.New("the CSV has a header but no data lines")
	}
	return obs, nil
}

// csvError turns encoding/csv's errors into one line naming the line.
func csvError(err error) error {
	var le *limitError
	if errors.As(err, &le) {
		return le
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fmt.Errorf("line %d: wrong number of fields (the header has a different count)", pe.Line)
		}
		return fmt.Errorf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("reading the CSV: %w", err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// quoteList joins names for a message, quoting those that would garble it.
func quoteList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || strings.ContainsAny(n, ",\"") || strings.IndexFunc(n, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			n = strconv.Quote(n)
		}
		out[i] = truncate(n, 40)
	}
	return strings.Join(out, ", ")
}
