package experiment

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteText writes the analysis for a terminal.
func (a *Analysis) WriteText(w io.Writer) error { return a.write(w, false) }

// WriteMarkdown writes the analysis as GitHub-flavoured markdown.
func (a *Analysis) WriteMarkdown(w io.Writer) error { return a.write(w, true) }

func (a *Analysis) write(out io.Writer, md bool) error {
	w := bufio.NewWriter(out)
	var fs []string
	for _, f := range a.Factors {
		fs = append(fs, fmt.Sprintf("%s (%s)", f.Name, strings.Join(f.Levels, ", ")))
	}
	if md {
		fmt.Fprintf(w, "# Experiment %s\n\n", a.Name)
		fmt.Fprintf(w, "Factors: %s.\n\n%d measured runs, %d warm-up runs left out", strings.Join(fs, "; "), a.Measured, a.Warmups)
	} else {
		fmt.Fprintf(w, "Experiment %s\n  factors: %s\n  %d measured runs, %d warm-up runs left out", a.Name, strings.Join(fs, "; "), a.Measured, a.Warmups)
	}
	if a.Missing > 0 {
		fmt.Fprintf(w, ", %d planned runs not done yet (resume the experiment)", a.Missing)
	}
	if a.Failed > 0 {
		fmt.Fprintf(w, ", %d runs failed (non-zero exit status)", a.Failed)
	}
	fmt.Fprint(w, ".\n\n")
	for _, r := range a.Responses {
		if r.Result == nil {
			if md {
				fmt.Fprintf(w, "### %s\n\nNo analysis: %s.\n\n", r.Response, r.Error)
			} else {
				fmt.Fprintf(w, "%s: no analysis: %s.\n\n", r.Response, r.Error)
			}
			continue
		}
		var err error
		if md {
			err = r.Result.WriteMarkdown(w, r.Response)
		} else {
			err = r.Result.WriteText(w, r.Response)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, c := range a.Comparisons {
		title := fmt.Sprintf("%s vs %s", c.Other, c.Base)
		sp := "-"
		if c.Speedup != nil {
			sp = fmt.Sprintf("%.3fx", *c.Speedup)
		}
		if md {
			fmt.Fprintf(w, "### %s\n\nSpeedup of %s over %s (mean wall time ratio): **%s**.\n\n", title, c.Other, c.Base, sp)
		} else {
			fmt.Fprintf(w, "%s: speedup %s (mean wall time of %s / %s)\n", title, sp, c.Base, c.Other)
		}
		rows := [][]string{{"event", c.Base, c.Other, "change"}}
		for _, r := range c.Rows {
			ch := "n/a"
			switch {
			case r.Change == nil:
			case math.Abs(*r.Change) >= 1000:
				ch = fmt.Sprintf("x%.4g", r.Other/r.Base) // +1240901% reads worse
			default:
				ch = fmt.Sprintf("%+.1f%%", *r.Change)
			}
			rows = append(rows, []string{r.Event, num(r.Base), num(r.Other), ch})
		}
		table(w, rows, md)
		fmt.Fprintln(w)
	}
	if len(a.Distributions) > 0 {
		if md {
			fmt.Fprint(w, "### Per-node distribution\n\nMean per-node total of each event over the runs of each regime; the node with the largest value and its share.\n\n")
		} else {
			fmt.Fprint(w, "Per-node distribution (mean per-node totals over each regime's runs):\n")
		}
		rows := [][]string{{"regime", "event", "min", "q1", "median", "q3", "max", "max node", "share", "outlier runs"}}
		for _, d := range a.Distributions {
			x := d.Dist
			rows = append(rows, []string{d.Regime, d.Event, num(x.Min), num(x.Q1), num(x.Median), num(x.Q3), num(x.Max),
				x.MaxNode, fmt.Sprintf("%.0f%%", 100*x.MaxShare), fmt.Sprintf("%d/%d", d.OutlierRuns, d.Runs)})
		}
		table(w, rows, md)
	}
	return w.Flush()
}

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e12 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func table(w *bufio.Writer, rows [][]string, md bool) {
	if md {
		for n, row := range rows {
			w.WriteString("| " + strings.Join(row, " | ") + " |\n")
			if n == 0 {
				w.WriteString(strings.Repeat("|---", len(row)) + "|\n")
			}
		}
		return
	}
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || (i == 1 && len(row) > 4) {
				b.WriteString(c + strings.Repeat(" ", width[i]-len(c)))
			} else {
				b.WriteString(strings.Repeat(" ", width[i]-len(c)) + c)
			}
		}
		w.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
}
