package experiment

import (
	"encoding/json"

	"github.com/numascope/numascope/internal/term"
)

// WebReport is what the web client's experiment page shows (`numascope
// experiment --web`): the analysis and the results of every run, whose
// per-node distributions the page draws as boxplots, one box per run.
type WebReport struct {
	Analysis *Analysis `json:"analysis"`
	// Runs are the results in run order, warm-up runs included (marked).
	Runs []Result `json:"runs"`
}

// NewWebReport bundles the analysis of results with the results.
func NewWebReport(a *Analysis, results []Result) *WebReport {
	return &WebReport{Analysis: a, Runs: results}
}

// MarshalJSON encodes the report for the page with every string cleaned
// (term.CleanJSON): levels, names and paths come from the spec and the
// results file, which may not be the user's own, and a bidi override in
// them would reorder what the page shows.
func (w *WebReport) MarshalJSON() ([]byte, error) {
	type plain WebReport // without this method
	b, err := json.Marshal((*plain)(w))
	if err != nil {
		return nil, err
	}
	return term.CleanJSON(b)
}
