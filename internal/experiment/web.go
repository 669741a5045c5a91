package experiment

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
