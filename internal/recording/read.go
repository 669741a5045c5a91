package recording

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxSkipped bounds Recording.Skipped; further entries are counted.
const maxSkipped = 100

// Load reads a whole recording file: numascope JSON Lines, plain or zstd
// (detected by content, not by suffix), or a legacy NUMAscope JSON-array
// recording. A file cut off mid-line or mid-zstd-block loads with everything
// before the cut; corrupt lines are skipped; both are listed in
// Recording.Skipped. A missing or corrupt header is an error.
func Load(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open recording: %w", err)
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// Read reads a whole recording from r, like Load.
func Read(r io.Reader) (*Recording, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(len(zstdMagic)); bytes.Equal(magic, zstdMagic) {
		zr, err := newZstdReader(br)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	// Skip a byte-order mark; Windows editors add one to JSON files.
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xef, 0xbb, 0xbf}) {
		br.Discard(3)
	}
	first, err := firstByte(br)
	if err != nil {
		var de *decompressError
		if errors.As(err, &de) {
			return nil, fmt.Errorf("%w: %v", ErrNoHeader, err)
		}
		return nil, err
	}
	switch first {
	case '{':
		return readLines(br)
	case '[':
		return readLegacy(br)
	case 0:
		return nil, fmt.Errorf("%w: the file is empty", ErrNoHeader)
	case 0x1f:
		if b, _ := br.Peek(2); len(b) == 2 && b[1] == 0x8b {
			return nil, fmt.Errorf("%w: the file is gzip-compressed; decompress it first (numascope reads plain and zstd recordings)", ErrNoHeader)
		}
	}
	return nil, fmt.Errorf("%w: it starts with %q, not with a header object (or a legacy NUMAscope array)", ErrNoHeader, first)
}

// firstByte returns the first non-space byte without consuming it, 0 for
// empty input.
func firstByte(br *bufio.Reader) (byte, error) {
	for n := 1; n <= br.Size(); n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			if err == io.EOF || err == nil {
				return 0, nil
			}
			return 0, err
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, nil
		}
	}
	return 0, nil
}

// skips collects Recording.Skipped entries, counting those beyond the cap.
type skips struct {
	list []string
	more int
}

func (s *skips) add(msg string) {
	if len(s.list) < maxSkipped {
		s.list = append(s.list, msg)
		return
	}
	s.more++
}

func (s *skips) result() []string {
	if s.more > 0 {
		return append(s.list, fmt.Sprintf("%d more problems not listed", s.more))
	}
	return s.list
}

// cleanAll returns a copy of ss cleaned by SanitizeText (nil for nil).
func cleanAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = SanitizeText(s)
	}
	return out
}

// readLines reads the JSON Lines format.
func readLines(br *bufio.Reader) (*Recording, error) {
	dec := NewDecoder(br)
	rec := &Recording{}
	var sk skips
	index := map[string]int{} // union column name -> index in rec.Columns
	var cur []int             // current column set -> union index
	lastT, lastLine := math.Inf(-1), 0

	setColumns := func(cols []Column) {
		cur = cur[:0]
		seen := map[string]bool{}
		for _, c := range cols {
			// Column names reach the page and the terminal: cleaned as
			// every name read from a file is (a crafted one may hold
			// escapes or bidi overrides).
			base := SanitizeText(c.qualified())
			c.Sensor, c.Event, c.Unit, c.Desc = SanitizeText(c.Sensor), SanitizeText(c.Event), SanitizeText(c.Unit), SanitizeText(c.Desc)
			c.Sources = cleanAll(c.Sources)
			name := base
			// A name used twice in one set would merge two columns; keep
			// both by renaming the second.
			for k := 2; seen[name]; k++ {
				name = base + "~" + strconv.Itoa(k)
			}
			seen[name] = true
			i, ok := index[name]
			if !ok {
				i = len(rec.Columns)
				index[name] = i
				c.Name = name
				rec.Columns = append(rec.Columns, c)
			}
			cur = append(cur, i)
		}
	}

	for {
		l, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var de *decompressError
			switch {
			case errors.As(err, &de) && rec.Header.Format != "":
				sk.add(fmt.Sprintf("line %d: %v; everything after the last complete block is lost", dec.LineNumber()+1, de))
			case errors.As(err, &de):
				return nil, fmt.Errorf("%w: %v before the end of the header", ErrNoHeader, de)
			case err == io.ErrUnexpectedEOF && rec.Header.Format != "":
				sk.add(fmt.Sprintf("line %d: cut off mid-line (the recording was probably interrupted); 1 line skipped", dec.LineNumber()+1))
			case err == io.ErrUnexpectedEOF:
				return nil, fmt.Errorf("%w: the header line is cut off (the recording was interrupted as it started)", ErrNoHeader)
			case rec.Header.Format != "":
				// Keep what was read; say why the rest is missing.
				sk.add(fmt.Sprintf("line %d: read error (%v); the rest of the file was not read", dec.LineNumber()+1, err))
			default:
				return nil, err
			}
			break
		}
		switch l.Kind {
		case KindHeader:
			rec.Header = *l.Header
			rec.Header.Host = SanitizeText(rec.Header.Host)
			rec.Header.Kernel = SanitizeText(rec.Header.Kernel)
			sensors := make([]SensorInfo, len(rec.Header.Sensors))
			for i, si := range rec.Header.Sensors {
				si.Name, si.Reason, si.Sources = SanitizeText(si.Name), SanitizeText(si.Reason), cleanAll(si.Sources)
				sensors[i] = si
			}
			rec.Header.Sensors = sensors
			setColumns(l.Header.Columns)
		case KindSample:
			// Time never goes backwards in a recording numascope wrote; in
			// a crafted one it would make totals negative (an area of
			// -1e300) and break the binary searches of a time range.
			if l.T < lastT {
				sk.add(fmt.Sprintf("line %d: time goes backwards (t=%g after t=%g on line %d); skipped", l.No, l.T, lastT, lastLine))
				continue
			}
			lastT, lastLine = l.T, l.No
			v := make([]float64, len(rec.Columns))
			for i := range v {
				v[i] = math.NaN()
			}
			for i, x := range l.Values {
				if math.IsInf(x, 0) {
					// Beyond float64 (1e999): no sum or rate of it means
					// anything, and JSON cannot carry it on.
					sk.add(fmt.Sprintf("line %d: the value of %s is out of range for a 64-bit float; read as missing (null)", l.No, rec.Columns[cur[i]].Name))
					continue
				}
				v[cur[i]] = x
			}
			rec.Samples = append(rec.Samples, Sample{T: l.T, V: v})
		case KindLabel:
			rec.Marks = append(rec.Marks, Mark{Type: MarkLabel, T: l.T, Text: shownLabel(l.Text)})
		case KindInterval:
			rec.Marks = append(rec.Marks, Mark{Type: MarkInterval, T: l.T, Interval: l.Interval})
		case KindPause:
			rec.Marks = append(rec.Marks, Mark{Type: MarkPause, T: l.T})
		case KindResume:
			rec.Marks = append(rec.Marks, Mark{Type: MarkResume, T: l.T})
		case KindColumns:
			setColumns(l.Columns)
			rec.Marks = append(rec.Marks, Mark{Type: MarkColumns, T: l.T})
		case KindEnd:
			e := *l.End
			rec.End = &e
		case KindSkipped:
			sk.add(fmt.Sprintf("line %d: %s; skipped", l.No, l.Reason))
		}
	}
	if rec.Header.Format == "" {
		return nil, fmt.Errorf("%w: no header line", ErrNoHeader)
	}
	// Samples written before a column-set change lack the later columns.
	for i := range rec.Samples {
		if v := rec.Samples[i].V; len(v) < len(rec.Columns) {
			nv := make([]float64, len(rec.Columns))
			copy(nv, v)
			for k := len(v); k < len(nv); k++ {
				nv[k] = math.NaN()
			}
			rec.Samples[i].V = nv
		}
	}
	rec.Skipped = sk.result()
	return rec, nil
}
