package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// MaxPoints bounds the points of one range reply per column.
const MaxPoints = 20000

// View serves one recording (`numascope view FILE`). The recording is kept
// in memory column by column; clients ask for time ranges at their screen
// resolution and get min/max-decimated data.
type View struct {
	*Server
	rec  *recording.Recording
	file string
	t    []float64
	cols [][]float64
}

// NewView prepares serving rec, loaded from file.
func NewView(opt Options, rec *recording.Recording, file string) *View {
	v := &View{rec: rec, file: file}
	v.Server = NewServer(opt, v)
	v.load()
	return v
}

// load moves the recording's samples into the column store and drops the
// row form.
func (v *View) load() {
	rec := v.rec
	v.t = make([]float64, len(rec.Samples))
	v.cols = make([][]float64, len(rec.Columns))
	for i := range v.cols {
		v.cols[i] = make([]float64, len(rec.Samples))
	}
	for k, s := range rec.Samples {
		v.t[k] = s.T
		for i := range v.cols {
			if i < len(s.V) {
				v.cols[i][k] = s.V[i]
			} else {
				v.cols[i][k] = math.NaN()
			}
		}
	}
	// The columns hold everything now; the row form is not needed.
	rec.Samples = nil
}

// Attach, Detach and Request make a recording a Backend.
func (v *View) Attach(c *Client) {
	h := v.rec.Header
	marks := make([]MarkMsg, 0, len(v.rec.Marks))
	for _, m := range v.rec.Marks {
		marks = append(marks, MarkMsg{Type: "mark", Mark: m.Type, T: m.T, Text: m.Text, Interval: m.Interval})
	}
	dur := 0.0
	if n := len(v.t); n > 0 {
		dur = v.t[n-1]
	}
	// A recording keeps the sensors, not their events.
	descs := make([]sampler.SensorDesc, 0, len(h.Sensors))
	for _, s := range h.Sensors {
		descs = append(descs, sampler.SensorDesc{Name: s.Name, Present: s.Present, Reason: s.Reason, Sources: s.Sources})
	}
	cat := CatalogOf(descs)
	c.Reply(Hello{
		Type: "hello", Protocol: ProtocolVersion, Mode: "view",
		Host: h.Host, Kernel: h.Kernel, Start: h.Start, Topology: h.Topology,
		Catalog: cat, Columns: v.rec.Columns,
		State: State{Interval: h.Interval, Events: []string{}},
		File:  v.file, Duration: dur, Samples: len(v.t), Marks: marks,
		Skipped: v.rec.Skipped, Legacy: v.rec.Legacy,
	})
}

func (v *View) Detach(*Client) {}

func (v *View) Request(c *Client, r *Request) {
	switch r.Type {
	case "range":
		b, err := v.rangeMsg(r)
		if err != nil {
			c.Fail(r.ID, err)
			return
		}
		c.Enqueue(b)
	case "totals":
		b, err := v.totalsMsg(r)
		if err != nil {
			c.Fail(r.ID, err)
			return
		}
		c.Enqueue(b)
	case "interval", "pause", "resume", "label", "events", "enable", "disable", "discrete", "record", "record_stop":
		c.Fail(r.ID, fmt.Errorf("%s: this is a recording (numascope view); only range and totals requests apply", r.Type))
	case "source":
		c.Fail(r.ID, fmt.Errorf("%s: this is a recording (numascope view); only a profile serves source files", r.Type))
	default:
		c.Fail(r.ID, UnknownType(r.Type, "numascope view on a recording", viewTypes))
	}
}

// rangeMsg answers a range request: the samples in [t0, t1] decimated to at
// most about points rows. Each bucket of consecutive samples becomes its
// first and last row, holding for every column the bucket's minimum and
// maximum (in the order they occur), so that peaks survive decimation.
func (v *View) rangeMsg(r *Request) ([]byte, error) {
	if len(v.t) == 0 {
		return MustJSON(map[string]any{"type": "range", "id": r.ID, "t0": 0, "t1": 0, "decimated": false, "samples": []any{}}), nil
	}
	t0, t1 := v.t[0], v.t[len(v.t)-1]
	if r.T0 != nil {
		t0 = *r.T0
	}
	if r.T1 != nil {
		t1 = *r.T1
	}
	if math.IsNaN(t0) || math.IsNaN(t1) || t1 < t0 {
		return nil, errors.New("range: want t0 <= t1 (seconds)")
	}
	points := r.Points
	if points <= 0 {
		points = 2000
	}
	if points > MaxPoints {
		return nil, fmt.Errorf("range: at most %d points", MaxPoints)
	}
	// One sample either side, so lines run to the edges of the window.
	lo := max(sort.SearchFloat64s(v.t, t0)-1, 0)
	hi := min(sort.Search(len(v.t), func(i int) bool { return v.t[i] > t1 })+1, len(v.t)) // exclusive
	return v.encodeRange(r.ID, lo, hi, points), nil
}

func (v *View) encodeRange(id any, lo, hi, points int) []byte {
	n := hi - lo
	b := make([]byte, 0, 64+min(n, points)*(12+10*len(v.cols)))
	b = append(b, `{"type":"range"`...)
	if id != nil {
		b = append(b, `,"id":`...)
		b = append(b, MustJSON(id)...)
	}
	b = append(b, `,"t0":`...)
	b = appendNumberF(b, v.t[lo])
	b = append(b, `,"t1":`...)
	b = appendNumberF(b, v.t[hi-1])
	row := func(k int, vals []float64) {
		if b[len(b)-1] != '[' {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendNumberF(b, v.t[k])
		for _, x := range vals {
			b = append(b, ',')
			b = AppendNumber(b, x)
		}
		b = append(b, ']')
	}
	buckets := points / 2
	if n <= points || buckets < 1 {
		b = append(b, `,"decimated":false,"samples":[`...)
		vals := make([]float64, len(v.cols))
		for k := lo; k < hi; k++ {
			for i, c := range v.cols {
				vals[i] = c[k]
			}
			row(k, vals)
		}
		return append(b, "]}"...)
	}
	b = append(b, `,"decimated":true,"samples":[`...)
	first := make([]float64, len(v.cols))
	second := make([]float64, len(v.cols))
	for j := 0; j < buckets; j++ {
		a := lo + j*n/buckets
		e := lo + (j+1)*n/buckets
		if e <= a {
			continue
		}
		for i, c := range v.cols {
			mn, mx := math.Inf(1), math.Inf(-1)
			imn, imx := -1, -1
			for k := a; k < e; k++ {
				x := c[k]
				if x < mn {
					mn, imn = x, k
				}
				if x > mx {
					mx, imx = x, k
				}
			}
			switch {
			case imn < 0: // all NaN
				first[i], second[i] = math.NaN(), math.NaN()
			case imn <= imx:
				first[i], second[i] = mn, mx
			default:
				first[i], second[i] = mx, mn
			}
		}
		row(a, first)
		if e-1 > a {
			row(e-1, second)
		}
	}
	return append(b, "]}"...)
}

// appendNumberF appends a time or other finite number.
func appendNumberF(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// columnTotal is one column's totals over a window.
type columnTotal struct {
	Name string `json:"name"`
	N    int    `json:"n"`
	// Count is a counter's events in the window: each rate times the
	// interval it covers. Null for gauges and "%" columns.
	Count *float64 `json:"count"`
	// Mean is the mean rate (counters: Count over the time covered) or level.
	Mean *float64 `json:"mean"`
	Max  *float64 `json:"max"`
	// Overflow says that a count, mean or max left the range of a float64
	// and is null for that reason.
	Overflow bool `json:"overflow,omitempty"`
}

// maxSums bounds the sums one totals request may ask for.
const maxSums = 4096

// totalsMsg answers a totals request from the full-resolution data: per
// column, over the samples with t0 <= t <= t1, and per requested sum of
// columns (the summed view's traces: a column's total rate summed over its
// nodes, whose maximum is not the sum of the nodes' maxima).
func (v *View) totalsMsg(r *Request) ([]byte, error) {
	if r.T0 == nil || r.T1 == nil || *r.T1 < *r.T0 {
		return nil, errors.New("totals: give t0 <= t1 (seconds)")
	}
	if len(r.Sums) > maxSums {
		return nil, fmt.Errorf("totals: at most %d sums", maxSums)
	}
	t0, t1 := *r.T0, *r.T1
	lo := sort.SearchFloat64s(v.t, t0)
	hi := sort.Search(len(v.t), func(i int) bool { return v.t[i] > t1 })
	out := make([]columnTotal, len(v.cols))
	for i, c := range v.cols {
		out[i] = v.total(v.rec.Columns[i], lo, hi, func(k int) float64 { return c[k] })
	}
	msg := map[string]any{"type": "totals", "id": r.ID, "t0": t0, "t1": t1, "columns": out}
	if len(r.Sums) > 0 {
		index := make(map[string]int, len(v.rec.Columns))
		for i, c := range v.rec.Columns {
			index[c.Name] = i
		}
		sums := make([]columnTotal, len(r.Sums))
		for j, sr := range r.Sums {
			if len(sr.Columns) == 0 {
				return nil, fmt.Errorf("totals: sum %q names no columns", sr.Name)
			}
			idx := make([]int, len(sr.Columns))
			for k, name := range sr.Columns {
				i, ok := index[name]
				if !ok {
					return nil, fmt.Errorf("totals: sum %q: no column %q in this recording", sr.Name, name)
				}
				idx[k] = i
			}
			col := v.rec.Columns[idx[0]]
			// Like the client's summed trace: NaN only where every column
			// is; "%" columns are averaged, not added.
			scale := 1.0
			if col.Unit == "%" {
				scale = 1 / float64(len(idx))
			}
			f := func(k int) float64 {
				sum, any := 0.0, false
				for _, i := range idx {
					if x := v.cols[i][k]; !math.IsNaN(x) {
						sum += x
						any = true
					}
				}
				if !any {
					return math.NaN()
				}
				return sum * scale
			}
			sums[j] = v.total(col, lo, hi, f)
			sums[j].Name = sr.Name
		}
		msg["sums"] = sums
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("totals: %v", err)
	}
	return b, nil
}

// total computes one series' totals over the samples lo..hi-1.
func (v *View) total(col recording.Column, lo, hi int, at func(k int) float64) columnTotal {
	n, sum, area, span, mx := 0, 0.0, 0.0, 0.0, math.Inf(-1)
	for k := lo; k < hi; k++ {
		x := at(k)
		if math.IsNaN(x) {
			continue
		}
		n++
		sum += x
		mx = max(mx, x)
		if k > 0 {
			dt := v.t[k] - v.t[k-1]
			area += x * dt
			span += dt
		}
	}
	ct := columnTotal{Name: col.Name, N: n}
	if n > 0 {
		counter := col.Kind == recording.Counter && col.Unit != "%"
		mean := sum / float64(n)
		if counter {
			ct.Count = ct.finite(area)
			if span > 0 {
				mean = area / span
			}
		}
		ct.Mean, ct.Max = ct.finite(mean), ct.finite(mx)
	}
	return ct
}

// finite returns &x, or nil (null) and marks the total as overflowed when
// x is not finite: values near the float64 limit (1e308) can sum to
// infinity, which JSON cannot carry.
func (ct *columnTotal) finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		ct.Overflow = true
		return nil
	}
	return &x
}
