package live

import (
	"math"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// history is the recent past of a live session, replayed to a client that
// connects later: the samples of every column in a ring of rows, and the
// marks.
//
// It keeps values, not the encoded batches that went out, because the event
// set changes while the server runs: a client that connects after a change
// must get every current column's whole retained past (a column that was
// there before the change keeps its samples from before it, one added later
// starts where it was added), in the layout of the current columns. Columns
// that were removed stay, written NaN, until their last value leaves the
// window, so that enabling one again brings its past back; they are never
// replayed while they are not current.
//
// add is on the hot path (once per sample, in the hub). Rows are laid out
// current columns first, in sample order, then the removed ones, so that
// adding a sample is one copy into contiguous memory and NaNs after it; it
// allocates nothing, except when the ring doubles on its way to its limit.
// Column-set changes re-lay the ring out and replays encode it: both are
// rare and may allocate.
type history struct {
	budget int // bytes of samples to keep; 0 means histBytes

	t    []time.Duration // ring of row times
	v    []float64       // ring of rows of len(cols) values, parallel to t
	cols []*histCol      // every column with values in the window: current ones first
	ncur int             // how many of cols are current
	head int             // ring index of the oldest row
	n    int             // rows held
	seq  uint64          // rows ever added
	// evicted is set once a row has been dropped: only then are marks
	// from before the oldest row out of the window (a label can come
	// before the first sample).
	evicted bool

	marks []histMark
}

type histCol struct {
	name string
	// last is the seq of the newest row in which the column had a value:
	// seq itself while the column is current.
	last uint64
}

type histMark struct {
	t   time.Duration
	msg []byte
}

// histBytes bounds the samples kept for new clients (about two and a half
// minutes of 12 columns at 1 kHz, 35 minutes at 100 Hz).
const histBytes = 16 << 20

// maxHistMarks bounds the marks kept for new clients.
const maxHistMarks = 4096

// minHistRows is the ring's first size and smallest limit.
const minHistRows = 1024

// limit is how many rows the budget holds for width columns.
func (h *history) limit(width int) int {
	b := h.budget
	if b <= 0 {
		b = histBytes
	}
	return max(b/(8*(1+width)), minHistRows)
}

// setColumns switches to a new current column set. Columns are matched by
// name; a known one keeps its past, a new one has none.
func (h *history) setColumns(cols []recording.Column) {
	oldest := h.seq - uint64(h.n) // seq of the row before the oldest
	old := make(map[string]int, len(h.cols))
	for i, c := range h.cols {
		if i < h.ncur {
			c.last = h.seq
		}
		old[c.name] = i
	}
	// The new layout: the current columns, then the removed ones that
	// still have a value in the window. from[i] is the old slot, or -1.
	var next []*histCol
	var from []int
	taken := map[string]bool{}
	for _, col := range cols {
		if taken[col.Name] {
			continue
		}
		taken[col.Name] = true
		if i, ok := old[col.Name]; ok {
			next, from = append(next, h.cols[i]), append(from, i)
		} else {
			next, from = append(next, &histCol{name: col.Name}), append(from, -1)
		}
	}
	ncur := len(next)
	for i, c := range h.cols {
		if !taken[c.name] && c.last > oldest {
			next, from = append(next, c), append(from, i)
		}
	}
	size := min(len(h.t), h.limit(len(next)))
	h.relayout(next, from, size)
	h.ncur = ncur
}

// relayout copies the newest rows (at most size) into a new ring of size
// rows for the columns next, whose values are at old slots from (-1: none).
func (h *history) relayout(next []*histCol, from []int, size int) {
	w, nw := len(h.cols), len(next)
	keep := min(h.n, size)
	skip := h.n - keep // logical index of the first row kept
	t := make([]time.Duration, size)
	v := make([]float64, size*nw)
	for i := 0; i < keep; i++ {
		k := h.at(skip + i)
		t[i] = h.t[k]
		row, nrow := h.v[k*w:(k+1)*w], v[i*nw:(i+1)*nw]
		for j, f := range from {
			if f >= 0 {
				nrow[j] = row[f]
			} else {
				nrow[j] = math.NaN()
			}
		}
	}
	h.evicted = h.evicted || keep < h.n
	h.t, h.v, h.cols, h.head, h.n = t, v, next, 0, keep
}

// at is the ring index of the i-th oldest row.
func (h *history) at(i int) int {
	i += h.head
	if i >= len(h.t) {
		i -= len(h.t)
	}
	return i
}

// add remembers one sample of the current columns.
func (h *history) add(t time.Duration, values []float64) {
	w := len(h.cols)
	if h.n == len(h.t) {
		if lim := h.limit(w); len(h.t) < lim {
			from := make([]int, w)
			for i := range from {
				from[i] = i
			}
			h.relayout(h.cols, from, min(max(2*len(h.t), minHistRows), lim))
		}
	}
	var k int
	if h.n < len(h.t) {
		k = h.at(h.n)
		h.n++
	} else {
		k = h.head
		h.head = h.at(1)
		h.evicted = true
	}
	h.seq++
	h.t[k] = t
	row := h.v[k*w : (k+1)*w]
	c := copy(row[:h.ncur], values)
	for i := c; i < w; i++ {
		row[i] = math.NaN()
	}
}

// mark remembers a mark message at time t.
func (h *history) mark(t time.Duration, msg []byte) {
	drop := 0
	for drop < len(h.marks) && h.outside(h.marks[drop].t) {
		drop++ // older than every remembered sample
	}
	if len(h.marks)-drop >= maxHistMarks {
		drop = len(h.marks) - maxHistMarks + 1
	}
	if drop > 0 {
		n := copy(h.marks, h.marks[drop:])
		clear(h.marks[n:])
		h.marks = h.marks[:n]
	}
	h.marks = append(h.marks, histMark{t, msg})
}

// batch encodes the remembered samples of the current columns as one batch
// message, oldest first, or returns nil when there are none. Rows in which
// no current column has a value (from before every current column was
// added) are left out.
func (h *history) batch() []byte {
	if h.n == 0 || h.ncur == 0 {
		return nil
	}
	w := len(h.cols)
	b := make([]byte, 0, len(batchPrefix)+2+h.n*(16+12*h.ncur))
	b = append(b, batchPrefix...)
	rows := 0
	for i := 0; i < h.n; i++ {
		k := h.at(i)
		row := h.v[k*w : k*w+h.ncur]
		any := false
		for _, x := range row {
			if !math.IsNaN(x) {
				any = true
				break
			}
		}
		if !any {
			continue
		}
		if rows > 0 {
			b = append(b, ',')
		}
		rows++
		b = appendRow(b, h.t[k], row)
	}
	if rows == 0 {
		return nil
	}
	return append(b, "]}"...)
}

// outside reports whether time t has left the window.
func (h *history) outside(t time.Duration) bool {
	return h.evicted && (h.n == 0 || t < h.t[h.head])
}

// recentMarks returns the remembered marks that are in the window.
func (h *history) recentMarks() [][]byte {
	var out [][]byte
	for _, m := range h.marks {
		if h.outside(m.t) {
			continue
		}
		out = append(out, m.msg)
	}
	return out
}
