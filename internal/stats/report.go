package stats

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteText writes the analysis for a terminal: the ANOVA table, the
// verdicts, the effects with their confidence intervals drawn as bars, the
// contrasts and the residual diagnostics. response names the response in
// the title.
func (r *Result) WriteText(w io.Writer, response string) error {
	return r.write(w, response, false)
}

// WriteMarkdown writes the same report as GitHub-flavoured markdown.
func (r *Result) WriteMarkdown(w io.Writer, response string) error {
	return r.write(w, response, true)
}

func (r *Result) write(out io.Writer, response string, md bool) error {
	w := bufio.NewWriter(out)
	scale := ""
	if r.Log {
		scale = " (analysed as ln y: effects are logarithms of multiplicative factors)"
	}
	names := make([]string, len(r.Factors))
	for i, f := range r.Factors {
		names[i] = fmt.Sprintf("%s (%d levels)", f.Name, len(f.Levels))
	}
	design := fmt.Sprintf("%s full factorial, %d replication(s), %d observations%s",
		strings.Join(names, " x "), r.Replications, r.N, scale)
	conf := fmt.Sprintf("%g%%", 100*r.Confidence)
	if md {
		fmt.Fprintf(w, "### ANOVA of %s\n\n%s.\n\n", response, design)
	} else {
		fmt.Fprintf(w, "ANOVA of %s: %s\n\n", response, design)
	}
	rows := [][]string{{"term", "SS", "dof", "MS", "F", "p", "F-crit " + conf, "% variation"}}
	for _, t := range r.Terms {
		rows = append(rows, []string{t.Name, g(t.SS), fmt.Sprint(t.DoF), g(t.MS), g(float64(t.F)), g(float64(t.P)), g(float64(t.FCrit)),
			fmt.Sprintf("%.1f%%", t.PercentVariation)})
	}
	errName := "error"
	if r.ErrorTerm != "" {
		errName = "error (" + r.ErrorTerm + ")"
	}
	rows = append(rows, []string{errName, g(r.Error.SS), fmt.Sprint(r.Error.DoF), g(r.Error.MS), "", "", "", fmt.Sprintf("%.1f%%", r.Error.PercentVariation)})
	rows = append(rows, []string{"total", g(r.Total.SS), fmt.Sprint(r.Total.DoF), "", "", "", "", "100%"})
	table(w, rows, md)
	fmt.Fprintf(w, "\nmean %s, %s CI [%s, %s]\n\n", g(r.Mean), conf, g(r.MeanCI.Low), g(r.MeanCI.High))
	if len(r.Cells) <= 64 {
		if md {
			fmt.Fprintf(w, "**Cell means** (%d observation(s) each)\n\n", r.Replications)
		} else {
			fmt.Fprintf(w, "Cell means (%d observation(s) each):\n", r.Replications)
		}
		head := make([]string, len(r.Factors))
		for i, f := range r.Factors {
			head[i] = f.Name
		}
		rows := [][]string{append(head, "mean")}
		for _, c := range r.Cells {
			rows = append(rows, append(append([]string{}, c.Levels...), g(c.Mean)))
		}
		table(w, rows, md)
		fmt.Fprintln(w)
	}
	if md {
		fmt.Fprintln(w, "**Verdicts**")
		fmt.Fprintln(w)
	}
	for _, v := range r.Verdicts {
		if md {
			fmt.Fprintf(w, "- %s\n", v)
		} else {
			fmt.Fprintf(w, "  %s\n", v)
		}
	}
	fmt.Fprintln(w)
	if md {
		fmt.Fprintf(w, "**Effects** (%s confidence intervals)\n\n", conf)
	} else {
		fmt.Fprintf(w, "Effects with %s confidence intervals:\n", conf)
	}
	// Interactions that are not significant are left out of the effects
	// table: they are noise, and a three-factor design has dozens.
	shown := map[string]bool{}
	hidden := 0
	for _, t := range r.Terms {
		shown[t.Name] = len(t.Factors) == 1 || t.Significant
		if !shown[t.Name] {
			hidden++
		}
	}
	lo, hi := 0.0, 0.0
	for _, te := range r.TermEffects {
		if !shown[te.Term] {
			continue
		}
		for _, e := range te.Effects {
			lo, hi = math.Min(lo, e.Low), math.Max(hi, e.High)
		}
	}
	rows = [][]string{{"term", "levels", "effect", "low", "high"}}
	if r.Log {
		rows[0] = append(rows[0], "factor")
	}
	rows[0] = append(rows[0], "")
	for _, te := range r.TermEffects {
		if !shown[te.Term] {
			continue
		}
		for _, e := range te.Effects {
			row := []string{te.Term, strings.Join(e.Levels, ","), g(e.Estimate), g(e.Low), g(e.High)}
			if r.Log {
				row = append(row, fmt.Sprintf("x%.3g", math.Exp(e.Estimate)))
			}
			switch {
			case !md:
				row = append(row, bar(e.Low, e.Estimate, e.High, lo, hi, 30))
			case e.Significant:
				row = append(row, "significant")
			default:
				row = append(row, "")
			}
			rows = append(rows, row)
		}
	}
	table(w, rows, md)
	if hidden > 0 {
		fmt.Fprintf(w, "(%d interaction(s) not significant: effects not shown)\n", hidden)
	}
	if len(r.Contrasts) > 0 {
		fmt.Fprintln(w)
		if md {
			fmt.Fprintf(w, "**Contrasts between levels** (%s confidence intervals)\n\n", conf)
		} else {
			fmt.Fprintf(w, "Contrasts between levels with %s confidence intervals:\n", conf)
		}
		rows = [][]string{{"factor", "contrast", "difference", "low", "high", "significant"}}
		for _, c := range r.Contrasts {
			rows = append(rows, []string{c.Factor, c.A + " - " + c.B, g(c.Estimate), g(c.Low), g(c.High), yesNo(c.Significant)})
		}
		table(w, rows, md)
	}
	fmt.Fprintln(w)
	d := r.Diagnostics
	fmt.Fprintf(w, "Residuals: QQ correlation %.4f, largest |residual| %s, response range %s.\n",
		float64(d.QQCorrelation), g(d.MaxAbsResidual), g(d.ResponseRange))
	return w.Flush()
}

// bar draws an interval on a fixed scale [lo, hi]: '-' the interval, '|'
// zero, 'o' the estimate.
func bar(low, est, high, lo, hi float64, width int) string {
	if !(hi > lo) || math.IsNaN(low) || math.IsNaN(high) {
		return ""
	}
	pos := func(v float64) int {
		p := int(math.Round((v - lo) / (hi - lo) * float64(width-1)))
		return min(max(p, 0), width-1)
	}
	b := []byte(strings.Repeat(" ", width))
	for i := pos(low); i <= pos(high); i++ {
		b[i] = '-'
	}
	b[pos(0)] = '|'
	b[pos(est)] = 'o'
	return "[" + string(b) + "]"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// g formats a number compactly; non-finite values as "-".
func g(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if math.IsInf(v, 1) {
			return "inf"
		}
		return "-"
	}
	return fmt.Sprintf("%.4g", v)
}

// table writes aligned columns (numbers right-aligned), or a markdown table.
func table(w *bufio.Writer, rows [][]string, md bool) {
	if len(rows) == 0 {
		return
	}
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	if md {
		for n, row := range rows {
			w.WriteString("|")
			for _, c := range row {
				w.WriteString(" " + strings.ReplaceAll(c, "|", "\\|") + " |")
			}
			w.WriteString("\n")
			if n == 0 {
				w.WriteString("|")
				for range row {
					w.WriteString("---|")
				}
				w.WriteString("\n")
			}
		}
		return
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || i == len(row)-1 {
				b.WriteString(c + strings.Repeat(" ", width[i]-len(c)))
			} else {
				b.WriteString(strings.Repeat(" ", width[i]-len(c)) + c)
			}
		}
		w.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
}
