package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// c2cMatrixCPUs bounds the CPUs whose CPU × CPU matrix the text prints: a
// wider one does not fit a terminal; the JSON and `numascope view` have
// it whole.
const c2cMatrixCPUs = 64

// lineWhere says where the contended line was, for the text.
func lineWhere(n *int) string {
	if n == nil {
		return "the line homed on each pair's first CPU's node"
	}
	return fmt.Sprintf("the line homed on node %d (--line-node)", *n)
}

// writeC2C writes the core-to-core latency as Intel MLC prints its
// --c2c_latency: a line per class, then the node matrix under "Numa node"
// headings, then the CPU × CPU matrix (up to c2cMatrixCPUs CPUs).
func (r *Result) writeC2C(b *strings.Builder) {
	m := r.C2C
	if m == nil {
		return
	}
	if r.Latency != nil || r.Bandwidth != nil || r.Loaded != nil || r.PeakInjection != nil {
		b.WriteString("\n")
	}
	which := fmt.Sprintf("all %d pairs", m.PairsTotal)
	if m.Sample > 0 {
		which = fmt.Sprintf("a sample of %d of the %d pairs", m.Sample, m.PairsTotal)
	}
	fmt.Fprintf(b, "Measuring core-to-core transfer latency (in ns): half the round trip of one cache line between two pinned CPUs taking turns to compare-and-swap it, median of %d windows of about %s per pair, %s, %s\n",
		m.Repeat, c2cWindow, which, lineWhere(m.LineNode))
	rows := [][]string{{"Class", "pairs", "median", "spread over the pairs"}}
	for _, c := range m.Classes {
		rows = append(rows, []string{c2cClassLabel(c.Class), strconv.Itoa(c.Pairs), fmtFig(c.MedianNS), fmtFig(c.MinNS) + "-" + fmtFig(c.MaxNS)})
	}
	if len(m.Classes) == 0 {
		b.WriteString("no pair was measured\n")
	} else {
		writeTable(b, rows)
	}
	if n := r.C2CNode; n != nil && len(n.Initiators) > 0 {
		fmt.Fprintf(b, "Core-to-core latency per node pair (median of the pairs' medians; SMT siblings left out), %s:\n", lineWhere(n.LineNode))
		labels := make([]string, len(n.Initiators))
		for i, id := range n.Initiators {
			labels[i] = strconv.Itoa(id)
		}
		writeMLCGrid(b, "Numa node", labels, labels, func(r, c int) string {
			if v := n.Matrix[r][c]; v != nil {
				return strconv.FormatFloat(*v, 'f', 1, 64)
			}
			return "-"
		})
	}
	if len(m.CPUs) > c2cMatrixCPUs {
		fmt.Fprintf(b, "CPU x CPU matrix: %d CPUs, too wide for the text: see --format json (c2c_ns.matrix) or numascope view\n", len(m.CPUs))
	} else {
		labels := make([]string, len(m.CPUs))
		for i, id := range m.CPUs {
			labels[i] = strconv.Itoa(id)
		}
		fmt.Fprintf(b, "CPU x CPU (ns; sorted by node, last-level cache, core):\n")
		writeMLCGrid(b, "CPU", labels, labels, func(r, c int) string {
			if v := m.Matrix[r][c]; v != nil {
				return strconv.FormatFloat(*v, 'f', 1, 64)
			}
			return "-"
		})
	}
	if m.Repeat > 1 && len(m.Pairs) > 0 {
		if d, _ := m.spread(); d != "" {
			fmt.Fprintf(b, "widest spread over the repeats: %s\n", d)
		}
	}
}

// c2cClassLabel is a class as the text names it.
func c2cClassLabel(c string) string {
	switch c {
	case ClassSMT:
		return "SMT siblings (one core)"
	case ClassLLC:
		return "same last-level cache"
	case ClassNode:
		return "same node, other LLC"
	case ClassCrossNode:
		return "cross node"
	}
	return c
}

// spread is the pair whose repeats spread widest, relative to its median.
func (m *C2C) spread() (desc string, rel float64) {
	if m == nil {
		return "", 0
	}
	for _, p := range m.Pairs {
		if p.MedianNS <= 0 {
			continue
		}
		if x := (p.MaxNS - p.MinNS) / p.MedianNS; x >= rel {
			rel = x
			desc = fmt.Sprintf("CPU %d <-> CPU %d %s-%s ns (median %s, the spread %.0f%% of it)", p.A, p.B, fmtFig(p.MinNS), fmtFig(p.MaxNS), fmtFig(p.MedianNS), 100*x)
		}
	}
	return desc, rel
}

// writeMLCGrid writes a matrix as MLC does: the column heading on a line
// of its own, then a row per label.
func writeMLCGrid(b *strings.Builder, what string, rows, cols []string, cell func(r, c int) string) {
	table := [][]string{append([]string{what}, cols...)}
	for r := range rows {
		row := []string{rows[r]}
		for c := range cols {
			row = append(row, cell(r, c))
		}
		table = append(table, row)
	}
	fmt.Fprintf(b, "\t\t%s\n", what)
	writeTable(b, table)
}

// writeTable writes rows right-aligned in columns, the first left-aligned.
func writeTable(b *strings.Builder, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for c, cell := range row {
			width[c] = max(width[c], len(cell))
		}
	}
	for _, row := range rows {
		for c, cell := range row {
			if c == 0 {
				fmt.Fprintf(b, "%-*s", width[c], cell)
				continue
			}
			fmt.Fprintf(b, "  %*s", width[c], cell)
		}
		b.WriteString("\n")
	}
}
