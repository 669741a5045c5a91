package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/stats"
	"github.com/numascope/numascope/internal/term"
)

func newStatsCmd(*globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Statistics on experiment results from anywhere (ANOVA of a full factorial design)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newStatsAnovaCmd())
	return cmd
}

func newStatsAnovaCmd() *cobra.Command {
	var input, response, factors, format string
	var opt stats.Options
	cmd := &cobra.Command{
		Use:   "anova --input FILE.csv --response COL --factors A,B[,C]",
		Short: "Effects, ANOVA table, confidence intervals and verdicts for a balanced full factorial design",
		Long: `Analyse a balanced full factorial experiment read from a CSV file with a header line: one
column per factor (levels are any text) and a numeric response column; other columns are
ignored. Every combination of levels must appear equally often (the replications).

With replications every interaction is tested; without, the highest-order interaction is the
error term (the textbook design without replication). The report has the grand mean, the
ANOVA table (SS, DoF, MS, F, p-value, critical F at the confidence level, % of variation
explained), effects and contrasts with confidence intervals, residual diagnostics (QQ data,
residuals against predicted values) and a plain-language verdict per term.

--log analyses ln(response), for effects that multiply rather than add. docs/stats.md
describes the method and the JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if input == "" || response == "" || factors == "" {
				return fmt.Errorf("--input, --response and --factors are required")
			}
			if format != "text" && format != "json" && format != "markdown" {
				return fmt.Errorf("--format %q: want text, json or markdown", format)
			}
			var fs []stats.Factor
			var names []string
			for _, f := range strings.Split(factors, ",") {
				f = strings.TrimSpace(f)
				if f == "" {
					return fmt.Errorf("--factors %q: empty factor name", factors)
				}
				names = append(names, f)
				fs = append(fs, stats.Factor{Name: f})
			}
			var r io.Reader = os.Stdin
			if input != "-" {
				f, err := os.Open(input)
				if err != nil {
					return fmt.Errorf("cannot read the input: %w", err)
				}
				defer f.Close()
				r = f
			}
			obs, err := stats.ReadCSV(r, response, names)
			if err != nil {
				return fmt.Errorf("%s: %w", input, err)
			}
			res, err := stats.Analyze(fs, obs, opt)
			if err != nil {
				return fmt.Errorf("%s: %w", input, err)
			}
			// Levels and column names come from a file that may be
			// crafted: the whole output is cleaned (term.Clean) on its
			// way to the terminal; JSON keeps them exact but escaped.
			if format == "json" {
				b, err := json.MarshalIndent(res, "", "  ")
				if err != nil {
					return err
				}
				_, err = os.Stdout.Write(append(term.EscapeJSON(b), '\n'))
				return err
			}
			cw := term.NewWriter(os.Stdout)
			w := bufio.NewWriter(cw)
			if format == "markdown" {
				err = res.WriteMarkdown(w, response)
			} else {
				err = res.WriteText(w, response)
			}
			if err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			return cw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "", "CSV file with a header line (- for stdin)")
	f.StringVarP(&response, "response", "r", "", "column of the response")
	f.StringVarP(&factors, "factors", "f", "", "comma-separated factor columns")
	f.BoolVar(&opt.Log, "log", false, "analyse ln(response): multiplicative effects")
	f.Float64Var(&opt.Confidence, "confidence", stats.DefaultConfidence, "confidence level of tests and intervals")
	f.Float64Var(&opt.ImportantPercent, "important", stats.DefaultImportantPercent, "% of variation from which a term is important")
	f.StringVar(&format, "format", "text", "text, json or markdown")
	return cmd
}
