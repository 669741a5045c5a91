// Package term prints samples the way vmstat does: one line per sample, a
// column per event, headings repeated every so often on a terminal. On a
// terminal numbers use human units (K/M/G); when piped they are raw, so that
// scripts get exact values.
package term

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Width is the terminal width of f, or def when f is not a terminal.
func Width(f *os.File, def int) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return def
	}
	return int(ws.Col)
}

// Options say how to print.
type Options struct {
	// Human uses K/M/G units and a fixed width; otherwise values are raw.
	Human bool
	// CSV prints comma-separated values with one heading line.
	CSV bool
	// Repeat reprints the headings every Repeat lines; 0 prints them once.
	Repeat int
	// Units, one per column, are printed under the headings (not in CSV,
	// whose first line stays the column names that scripts read), so that
	// a reader knows pages/s from bytes.
	Units []string
}

// Column describes one printed column.
type Column struct {
	Heading string
	Unit    string
}

// Printer formats samples. It reuses one buffer, so printing a line does not
// allocate.
type Printer struct {
	w      io.Writer
	opt    Options
	cols   []Column
	widths []int
	buf    []byte
	lines  int
}

// timeWidth is the width of the leading elapsed-time column.
const timeWidth = 9

// NewPrinter returns a printer for cols writing to w.
func NewPrinter(w io.Writer, cols []Column, opt Options) *Printer {
	p := &Printer{w: w, opt: opt, cols: cols, buf: make([]byte, 0, 64+16*len(cols))}
	if opt.CSV || len(opt.Units) != len(cols) {
		p.opt.Units = nil
	}
	for i, c := range cols {
		width := len(c.Heading)
		if p.opt.Units != nil {
			width = max(width, len(p.opt.Units[i]))
		}
		if opt.Human && width < 6 {
			width = 6
		}
		p.widths = append(p.widths, width)
	}
	return p
}

// headings writes the heading line.
func (p *Printer) headings() error {
	b := p.buf[:0]
	if p.opt.CSV {
		b = append(b, "time_s"...)
		for _, c := range p.cols {
			b = append(b, ',')
			b = appendCSVField(b, c.Heading)
		}
	} else {
		b = pad(b, "time", timeWidth)
		for i, c := range p.cols {
			b = append(b, ' ')
			b = pad(b, c.Heading, p.widths[i])
		}
		if p.opt.Units != nil {
			b = append(b, '\n')
			b = pad(b, "s", timeWidth)
			for i, u := range p.opt.Units {
				b = append(b, ' ')
				b = pad(b, u, p.widths[i])
			}
		}
	}
	b = append(b, '\n')
	p.buf = b
	_, err := p.w.Write(b)
	return err
}

// Sample prints one line for values taken at t since the start.
func (p *Printer) Sample(t time.Duration, values []float64) error {
	if p.lines == 0 || (p.opt.Repeat > 0 && !p.opt.CSV && p.lines%p.opt.Repeat == 0) {
		if err := p.headings(); err != nil {
			return err
		}
	}
	p.lines++
	b := p.buf[:0]
	if p.opt.CSV {
		b = strconv.AppendFloat(b, t.Seconds(), 'f', 6, 64)
		for i, v := range values {
			b = append(b, ',')
			if !math.IsNaN(v) {
				b = appendRaw(b, v, p.cols[i].Unit)
			}
		}
	} else {
		start := len(b)
		b = strconv.AppendFloat(b, t.Seconds(), 'f', 3, 64)
		b = padLeft(b, start, timeWidth)
		for i, v := range values {
			b = append(b, ' ')
			start = len(b)
			switch {
			case math.IsNaN(v):
				b = append(b, '-')
			case p.opt.Human:
				b = appendHuman(b, v, p.cols[i].Unit)
			default:
				b = appendRaw(b, v, p.cols[i].Unit)
			}
			b = padLeft(b, start, p.widths[i])
		}
	}
	b = append(b, '\n')
	p.buf = b
	_, err := p.w.Write(b)
	return err
}

// Note prints an out-of-band line (a label, a pause) so that it stands out
// from the samples; in CSV it becomes a comment line.
func (p *Printer) Note(t time.Duration, format string, args ...any) error {
	_, err := fmt.Fprintf(p.w, "# %.3f %s\n", t.Seconds(), fmt.Sprintf(format, args...))
	return err
}

// pad appends s right-aligned in width, like vmstat.
func pad(b []byte, s string, width int) []byte {
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// padLeft right-aligns the text appended since start within width.
func padLeft(b []byte, start, width int) []byte {
	n := len(b) - start
	if n >= width {
		return b
	}
	shift := width - n
	for i := 0; i < shift; i++ {
		b = append(b, ' ')
	}
	copy(b[start+shift:], b[start:start+n])
	for i := 0; i < shift; i++ {
		b[start+i] = ' '
	}
	return b
}

// appendRaw writes v without unit suffixes, for scripts: integers exactly,
// percentages with two decimals, rates with six significant digits (more
// than any rate is accurate to) and never in exponent form above 1e-4.
func appendRaw(b []byte, v float64, unit string) []byte {
	a := math.Abs(v)
	switch {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	case unit == "%":
		return strconv.AppendFloat(b, v, 'f', 2, 64)
	case a >= 1e5:
		return strconv.AppendFloat(b, v, 'f', 0, 64)
	}
	return strconv.AppendFloat(b, v, 'g', 6, 64)
}

// appendHuman writes v in at most 6 characters with a K/M/G/T/P suffix;
// bytes scale by 1024, everything else by 1000.
func appendHuman(b []byte, v float64, unit string) []byte {
	if unit == "%" {
		return strconv.AppendFloat(b, v, 'f', 1, 64)
	}
	base := 1000.0
	if unit == "bytes" {
		base = 1024
	}
	const suffixes = " KMGTPE"
	a := math.Abs(v)
	i := 0
	for a >= 999.5 && i < len(suffixes)-1 {
		a /= base
		v /= base
		i++
	}
	switch {
	case i == 0 && v == math.Trunc(v):
		b = strconv.AppendInt(b, int64(v), 10)
	case a < 9.995:
		b = strconv.AppendFloat(b, v, 'f', 2, 64)
	case a < 99.95:
		b = strconv.AppendFloat(b, v, 'f', 1, 64)
	default:
		b = strconv.AppendFloat(b, v, 'f', 0, 64)
	}
	if i > 0 {
		b = append(b, suffixes[i])
	}
	return b
}

func appendCSVField(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\n") {
		return append(b, s...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}

// Human formats v as the Printer's human mode does: at most 6 characters
// with a K/M/G/T/P suffix, bytes (unit "bytes") scaled by 1024, everything
// else by 1000, "%" with one decimal. For interfaces that lay out their own
// columns (the TUI of numascope top).
func Human(v float64, unit string) string { return string(appendHuman(nil, v, unit)) }
