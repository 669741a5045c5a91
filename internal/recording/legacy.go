package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The original NUMAscope (Numascale's monitoring tool for NumaConnect
// systems, github.com/numascale/numascope) recorded to one JSON array with
// one element per line, each followed by a comma:
//
//	[["NumaConnect2",2,200000000],
//	["RdBlkMod commands sent:0","RdBlkMod commands sent:1"],
//	[1561449935018346,1234,987],
//	["label",1561449936018512,"phase 2"],
//	...
//	]
//
// What its source (record.go, the web client's parse()) shows:
//
//   - The first element is [sensor name, number of sources, rate]. The rate
//     is not the sampling interval: the web client divides "%" columns by
//     rate/100 to show them as percentages, so it is the per-second rate
//     that means 100% (e.g. the 200 MHz cycle rate of a NumaChip).
//     Earlier versions wrote [sensor name, heading...] instead of the first
//     two elements; both are read.
//   - The headings are the event descriptions (not mnemonics). recording
//     always used per-source ("discrete") columns, named "description:N" for
//     source N; headings without a suffix are for the whole sensor.
//   - Samples are [time, value...] with the time in microseconds since the
//     Unix epoch (the web client subtracts the first sample's time); values
//     are integer rates per second, computed from counter deltas.
//   - Labels are ["label", time, text].
//   - A clean stop replaces the last ",\n" with "\n]\n"; an interrupted
//     recording ends after a row and its comma, without the closing "]".
//
// A recording is imported as: one sensor named after the lowercased first
// string, sources "0".."n-1", one counter column per heading named
// "sensor.N.event" (or "sensor.event") with the heading as description and a
// sanitised heading as event. "%" columns are converted to percentages with
// the rate (unit "%", max 100). Times become seconds since the first row; an
// absolute first time sets Header.Start. Header.Interval is estimated from
// the median time between samples, since the format did not record it.

// absoluteMicros is the smallest time taken as microseconds since the Unix
// epoch (1973-03-03) rather than since the start of the recording.
const absoluteMicros = 1e14

// legacyRow is an interpreted row, before times are converted.
type legacyRow struct {
	label  bool
	us     float64
	text   string
	values []float64
}

// readLegacy imports a legacy recording. Like the JSON Lines reader it keeps
// everything before a cut or a corrupt row.
func readLegacy(br *bufio.Reader) (*Recording, error) {
	data, rerr := io.ReadAll(br)
	var sk skips
	lastUS, lastLine := math.Inf(-1), 0 // the last sample row's time and line
	if rerr != nil {
		var de *decompressError
		if !errors.As(rerr, &de) {
			return nil, rerr
		}
		sk.add(de.Error())
	}
	p := skipSpace(data, 0)
	if p >= len(data) || data[p] != '[' {
		return nil, fmt.Errorf("%w: a legacy NUMAscope recording starts with '['", ErrNoHeader)
	}
	p++
	lineOf := func(off int) int { return bytes.Count(data[:off], []byte{'\n'}) + 1 }

	var (
		sensor    string
		sources   = -1
		rate      float64
		headings  []string
		stage     int // 0: expect meta or name+headings, 1: expect headings, 2: rows
		rows      []legacyRow
		closed    bool
		cutBefore bool
	)
	for {
		// Elements are separated by commas; tolerate extra ones.
		for p < len(data) && (data[p] == ',' || data[p] == ' ' || data[p] == '\t' || data[p] == '\r' || data[p] == '\n') {
			p++
		}
		if p >= len(data) {
			break // no closing ']': the recording was interrupted
		}
		if data[p] == ']' {
			closed = true
			if q := skipSpace(data, p+1); q < len(data) {
				sk.add(fmt.Sprintf("line %d: data after the closing ']'; skipped", lineOf(q)))
			}
			break
		}
		start := p
		dec := json.NewDecoder(bytes.NewReader(data[p:]))
		dec.UseNumber()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
				if stage < 2 {
					cutBefore = true
				} else {
					sk.add(fmt.Sprintf("line %d: cut off mid-row (the recording was probably interrupted); 1 row skipped", lineOf(start)))
				}
				break
			}
			if stage < 2 {
				return nil, fmt.Errorf("%w: line %d: the legacy NUMAscope header is corrupt (%v)", ErrNoHeader, lineOf(start), err)
			}
			sk.add(fmt.Sprintf("line %d: not valid JSON (%v); skipped", lineOf(start), err))
			// The original wrote one row per line: go on at the next.
			nl := bytes.IndexByte(data[p:], '\n')
			if nl < 0 {
				break
			}
			p += nl + 1
			continue
		}
		p += int(dec.InputOffset())
		row, ok := decodeRow(raw)
		switch {
		case stage == 0:
			if !ok || len(row) == 0 {
				return nil, fmt.Errorf("%w: the first element of the legacy array is not [sensor, sources, rate]", ErrNoHeader)
			}
			name, isStr := row[0].(string)
			if !isStr {
				return nil, fmt.Errorf("%w: the first element of the legacy array does not start with the sensor name", ErrNoHeader)
			}
			sensor = name
			if strs, all := allStrings(row[1:]); all && len(row) > 1 {
				headings = strs // older layout: [sensor, heading...]
				stage = 2
				continue
			}
			if len(row) > 1 {
				if n, err := number(row[1]); err == nil && n >= 1 && n <= 1<<16 && n == math.Trunc(n) {
					sources = int(n)
				}
			}
			if len(row) > 2 {
				if r, err := number(row[2]); err == nil && r > 0 {
					rate = r
				}
			}
			stage = 1
		case stage == 1:
			strs, all := allStrings(row)
			if !ok || !all {
				return nil, fmt.Errorf("%w: line %d: the second element of the legacy array is not the list of column headings", ErrNoHeader, lineOf(start))
			}
			headings = strs
			stage = 2
		default:
			if !ok {
				sk.add(fmt.Sprintf("line %d: element is not an array; skipped", lineOf(start)))
				continue
			}
			r, reason := legacyRowOf(row, len(headings))
			if reason != "" {
				sk.add(fmt.Sprintf("line %d: %s; skipped", lineOf(start), reason))
				continue
			}
			for i, v := range r.values {
				if math.IsInf(v, 0) {
					// As for JSON Lines: beyond float64, read as missing.
					sk.add(fmt.Sprintf("line %d: value %d is out of range for a 64-bit float; read as missing (null)", lineOf(start), i+1))
					r.values[i] = math.NaN()
				}
			}
			if !r.label {
				// As for JSON Lines: time never goes backwards.
				if r.us < lastUS {
					sk.add(fmt.Sprintf("line %d: time goes backwards (%g µs after %g µs on line %d); skipped", lineOf(start), r.us, lastUS, lastLine))
					continue
				}
				lastUS, lastLine = r.us, lineOf(start)
			}
			rows = append(rows, r)
		}
	}
	if stage < 2 {
		if cutBefore || p >= len(data) {
			return nil, fmt.Errorf("%w: the legacy NUMAscope recording is cut off before its column headings", ErrNoHeader)
		}
		return nil, fmt.Errorf("%w: the legacy NUMAscope recording has no column headings", ErrNoHeader)
	}
	rec := buildLegacy(sensor, sources, rate, headings, rows)
	if closed {
		rec.End = &End{Samples: uint64(len(rec.Samples))}
	}
	rec.Skipped = sk.result()
	return rec, nil
}

// decodeRow decodes an array element with numbers kept as json.Number.
func decodeRow(raw json.RawMessage) ([]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var row []any
	if err := dec.Decode(&row); err != nil {
		return nil, false
	}
	return row, true
}

func allStrings(xs []any) ([]string, bool) {
	out := make([]string, len(xs))
	for i, x := range xs {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

func number(x any) (float64, error) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	return n.Float64()
}

// legacyRowOf interprets a row after the headings.
func legacyRowOf(row []any, ncols int) (legacyRow, string) {
	if len(row) == 0 {
		return legacyRow{}, "empty row"
	}
	switch first := row[0].(type) {
	case json.Number:
		us, err := first.Float64()
		if err != nil || math.IsInf(us, 0) {
			return legacyRow{}, "sample time out of range"
		}
		if len(row)-1 != ncols {
			return legacyRow{}, fmt.Sprintf("sample has %d values but there are %d headings", len(row)-1, ncols)
		}
		vals := make([]float64, ncols)
		for i, x := range row[1:] {
			switch x := x.(type) {
			case nil:
				vals[i] = math.NaN()
			case json.Number:
				f, err := x.Float64()
				if err != nil && !math.IsInf(f, 0) {
					return legacyRow{}, fmt.Sprintf("value %d is not a number", i+1)
				}
				vals[i] = f
			default:
				return legacyRow{}, fmt.Sprintf("value %d is not a number", i+1)
			}
		}
		return legacyRow{us: us, values: vals}, ""
	case string:
		if first != "label" {
			return legacyRow{}, fmt.Sprintf("unknown row type %q", clean(first))
		}
		if len(row) < 3 {
			return legacyRow{}, "label row without time and text"
		}
		us, err := number(row[1])
		if err != nil || math.IsInf(us, 0) {
			return legacyRow{}, "label row without a time"
		}
		text, ok := row[2].(string)
		if !ok {
			text = fmt.Sprint(row[2])
		}
		return legacyRow{label: true, us: us, text: text}, ""
	}
	return legacyRow{}, "row starts with neither a time nor \"label\""
}

// buildLegacy synthesises the Recording.
func buildLegacy(sensorName string, sources int, rate float64, headings []string, rows []legacyRow) *Recording {
	sensor := ident(strings.ToLower(sensorName))
	if sensor == "" {
		sensor = "legacy"
	}

	// Split "description:N" headings.
	type heading struct {
		base   string
		source int // -1: whole sensor
	}
	hs := make([]heading, len(headings))
	maxSrc := -1
	for i, h := range headings {
		hs[i] = heading{base: strings.TrimSpace(h), source: -1}
		if k := strings.LastIndexByte(h, ':'); k >= 0 && k+1 < len(h) {
			if n, err := strconv.Atoi(h[k+1:]); err == nil && n >= 0 && n < 1<<16 && h[k+1] != '+' && h[k+1] != '-' {
				hs[i] = heading{base: strings.TrimSpace(h[:k]), source: n}
				maxSrc = max(maxSrc, n)
			}
		}
	}
	if sources < maxSrc+1 {
		sources = maxSrc + 1
	}
	srcNames := []string{""}
	if sources >= 1 {
		srcNames = make([]string, sources)
		for i := range srcNames {
			srcNames[i] = strconv.Itoa(i)
		}
	}

	rec := &Recording{Legacy: true}
	rec.Header = Header{
		Format:  FormatName,
		Version: 0,
		Sensors: []SensorInfo{{Name: sensor, Present: true, Sources: srcNames}},
	}
	pct := make([]bool, len(hs))
	used := map[string]bool{}
	for i, h := range hs {
		c := Column{Sensor: sensor, Kind: Counter, Desc: SanitizeText(h.base)}
		base := h.base
		if strings.HasPrefix(base, "%") {
			if rate > 0 {
				pct[i] = true
				c.Unit = "%"
				c.Max = 100
			} else {
				c.Desc += " (raw rate: the recording gives no full-scale rate to make it a percentage)"
			}
			base = strings.TrimPrefix(base, "%")
		}
		c.Event = ident(base)
		if c.Event == "" {
			c.Event = "column" + strconv.Itoa(i+1)
		}
		src := ""
		if h.source >= 0 {
			src = strconv.Itoa(h.source)
			c.Sources = []string{src}
		} else {
			c.Sources = srcNames
		}
		name := QualifiedName(sensor, src, c.Event)
		for k := 2; used[name]; k++ {
			name = QualifiedName(sensor, src, c.Event+"_"+strconv.Itoa(k))
		}
		used[name] = true
		c.Name = name
		rec.Columns = append(rec.Columns, c)
	}
	rec.Header.Columns = append([]Column(nil), rec.Columns...)

	// Times: relative to the first row when absolute.
	origin := 0.0
	if len(rows) > 0 && rows[0].us >= absoluteMicros {
		origin = rows[0].us
		rec.Header.Start = time.UnixMicro(int64(origin)).UTC()
	}
	var deltas []float64
	prev := math.NaN()
	for _, r := range rows {
		t := (r.us - origin) / 1e6
		if r.label {
			rec.Marks = append(rec.Marks, Mark{Type: MarkLabel, T: t, Text: shownLabel(r.text)})
			continue
		}
		for i := range r.values {
			if pct[i] {
				r.values[i] = r.values[i] * 100 / rate
			}
		}
		rec.Samples = append(rec.Samples, Sample{T: t, V: r.values})
		if d := r.us - prev; d > 0 {
			deltas = append(deltas, d)
		}
		prev = r.us
	}
	if len(deltas) > 0 {
		sort.Float64s(deltas)
		rec.Header.Interval = math.Round(deltas[(len(deltas)-1)/2]) / 1e6
	}
	return rec
}

// ident turns a heading into an event or sensor name: letters, digits, '_'
// and '-', other runs replaced by one '_'.
func ident(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
			under = r == '_'
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "_")
}
