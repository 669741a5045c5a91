package live

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

func histCols(names ...string) []recording.Column {
	var out []recording.Column
	for _, n := range names {
		out = append(out, recording.Column{Name: n})
	}
	return out
}

// replayed decodes history.batch: rows of t and values (NaN for null).
func replayed(t *testing.T, h *history) [][]float64 {
	t.Helper()
	b := h.batch()
	if b == nil {
		return nil
	}
	var m struct {
		Type    string       `json:"type"`
		Samples [][]*float64 `json:"samples"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Type != "batch" {
		t.Fatalf("history batch %.200s: %v", b, err)
	}
	out := make([][]float64, len(m.Samples))
	for i, r := range m.Samples {
		for _, x := range r {
			if x == nil {
				out[i] = append(out[i], math.NaN())
			} else {
				out[i] = append(out[i], *x)
			}
		}
	}
	return out
}

func TestHistoryPerColumn(t *testing.T) {
	var h history
	ms := func(i int) time.Duration { return time.Duration(i) * time.Millisecond }
	h.setColumns(histCols("a", "b"))
	for i := 0; i < 10; i++ {
		h.add(ms(i), []float64{float64(i), 100 + float64(i)})
	}
	h.setColumns(histCols("b", "c")) // a removed, c added
	for i := 10; i < 20; i++ {
		h.add(ms(i), []float64{100 + float64(i), 200 + float64(i)})
	}
	rows := replayed(t, &h)
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for i, r := range rows {
		if len(r) != 3 || r[0] != float64(i)/1000 || r[1] != 100+float64(i) {
			t.Fatalf("row %d = %v: want t, b's value, c's", i, r)
		}
		if c := r[2]; (i < 10) != math.IsNaN(c) || (i >= 10 && c != 200+float64(i)) {
			t.Fatalf("row %d: c = %v", i, c)
		}
	}
	// a comes back with its past; the samples without it have none.
	h.setColumns(histCols("a"))
	h.add(ms(20), []float64{20})
	rows = replayed(t, &h)
	if len(rows) != 11 || rows[0][1] != 0 || rows[9][1] != 9 || rows[10][1] != 20 {
		t.Fatalf("a after coming back: %v", rows)
	}
	// Rows where no current column has a value are left out.
	h.setColumns(histCols("d"))
	if rows := replayed(t, &h); rows != nil {
		t.Fatalf("a new column without samples replays %v", rows)
	}
}

func TestHistoryBoundedAndAgesOut(t *testing.T) {
	h := history{budget: 8 * 3 * minHistRows} // minHistRows rows of 2 columns
	h.setColumns(histCols("a", "b"))
	n := 3*minHistRows + 17
	for i := 0; i < n; i++ {
		h.add(time.Duration(i)*time.Millisecond, []float64{float64(i), -float64(i)})
	}
	rows := replayed(t, &h)
	if len(rows) != minHistRows {
		t.Fatalf("%d rows kept, want %d", len(rows), minHistRows)
	}
	for i, r := range rows {
		want := float64(n - minHistRows + i)
		if r[1] != want || r[2] != -want {
			t.Fatalf("row %d = %v, want the newest samples in order (%v)", i, r, want)
		}
	}
	// A removed column stays while it has values in the window, then goes.
	h.setColumns(histCols("b"))
	if len(h.cols) != 2 {
		t.Fatalf("%d columns kept right after removing a, want 2", len(h.cols))
	}
	for i := 0; i < minHistRows; i++ {
		h.add(time.Duration(n+i)*time.Millisecond, []float64{1})
	}
	h.setColumns(histCols("b", "c"))
	var names []string
	for _, c := range h.cols {
		names = append(names, c.name)
	}
	if fmt.Sprint(names) != "[b c]" {
		t.Fatalf("columns kept %v: a aged out of the window and should be gone", names)
	}
	// Marks older than every sample are forgotten.
	h.mark(0, []byte("old"))
	h.mark(time.Duration(n+minHistRows)*time.Millisecond, []byte("new"))
	if m := h.recentMarks(); len(m) != 1 || string(m[0]) != "new" {
		t.Fatalf("marks %q", m)
	}
}

func TestHistoryAddDoesNotAllocate(t *testing.T) {
	var h history
	h.setColumns(histCols("a", "b", "c"))
	vals := []float64{1, 2, 3}
	i := 0
	for ; i < 4*minHistRows; i++ { // past a few doublings
		h.add(time.Duration(i), vals)
	}
	h.budget = 8 * 4 * len(h.t) // full: from now on the ring wraps
	if allocs := testing.AllocsPerRun(1000, func() {
		i++
		h.add(time.Duration(i), vals)
	}); allocs != 0 {
		t.Fatalf("history.add allocates %v times per sample", allocs)
	}
}
