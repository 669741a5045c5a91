package experiment

import (
	"fmt"
	"math"
	"sort"

	"github.com/numascope/numascope/internal/stats"
)

// Analysis is the analysis of an experiment's results.
type Analysis struct {
	Name    string   `json:"name"`
	Factors []Factor `json:"factors"`
	// Measured and Warmups count the results used and the warm-up runs
	// left out; Missing the planned measured runs not done yet.
	Measured int `json:"measured"`
	Warmups  int `json:"warmups"`
	Missing  int `json:"missing"`
	// Failed counts measured runs with a non-zero exit status.
	Failed    int                `json:"failed"`
	Responses []ResponseAnalysis `json:"responses"`
	// Comparisons are the "regime B vs regime A" tables.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// Distributions are the per-node spreads of each event, per regime.
	Distributions []RegimeDistribution `json:"distributions,omitempty"`
}

// ResponseAnalysis is the ANOVA of one response, or why there is none.
type ResponseAnalysis struct {
	Response string        `json:"response"`
	Result   *stats.Result `json:"anova,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// Comparison compares regime Other against regime Base, averaged over the
// other factors' levels and the replications.
type Comparison struct {
	Base  string `json:"base"`
	Other string `json:"other"`
	// Speedup is mean wall time of Base over that of Other: above 1, Other
	// is faster.
	Speedup *float64        `json:"speedup"`
	Rows    []ComparisonRow `json:"events"`
}

// ComparisonRow is one event's mean total under both regimes.
type ComparisonRow struct {
	Event string  `json:"event"`
	Base  float64 `json:"base"`
	Other float64 `json:"other"`
	// Change is (Other - Base) / Base in percent; nil when Base is 0.
	Change *float64 `json:"change_percent"`
}

// RegimeDistribution is the spread over the nodes of one event's mean
// per-node total under one regime.
type RegimeDistribution struct {
	Regime  string             `json:"regime"`
	Event   string             `json:"event"`
	PerNode map[string]float64 `json:"per_node"`
	Dist    *Distribution      `json:"distribution"`
	// OutlierRuns counts the runs in which one node was a boxplot outlier.
	OutlierRuns int `json:"outlier_runs"`
	Runs        int `json:"runs"`
}

// Analyze analyses the measured results of spec.
func Analyze(spec *Spec, results []Result) *Analysis {
	a := &Analysis{Name: spec.Name, Factors: spec.AllFactors()}
	var measured []Result
	for _, r := range results {
		if r.Warmup {
			a.Warmups++
			continue
		}
		measured = append(measured, r)
		if r.ExitStatus != 0 {
			a.Failed++
		}
	}
	a.Measured = len(measured)
	cells := 1
	for _, f := range a.Factors {
		cells *= len(f.Levels)
	}
	a.Missing = cells*spec.Replications - a.Measured
	sf := make([]stats.Factor, len(a.Factors))
	for i, f := range a.Factors {
		sf[i] = stats.Factor{Name: f.Name, Levels: f.Levels}
	}
	for _, resp := range spec.Responses {
		ra := ResponseAnalysis{Response: resp.Name}
		var obs []stats.Observation
		missing := 0
		first, constant := math.NaN(), true
		for _, r := range measured {
			v := r.Responses[resp.Name]
			if v == nil {
				missing++
				continue
			}
			levels := make([]string, len(a.Factors))
			for i, f := range a.Factors {
				levels[i] = r.Levels[f.Name]
			}
			if math.IsNaN(first) {
				first = *v
			} else if *v != first {
				constant = false
			}
			obs = append(obs, stats.Observation{Levels: levels, Value: *v})
		}
		switch {
		case missing > 0:
			ra.Error = fmt.Sprintf("%d run(s) have no value for this response", missing)
		case len(obs) == 0:
			ra.Error = "no measured runs yet"
		case constant:
			ra.Error = fmt.Sprintf("every run gave %g: nothing varies, nothing to analyse", first)
		default:
			res, err := stats.Analyze(sf, obs, stats.Options{Log: spec.Log, Confidence: spec.Confidence})
			if err != nil {
				ra.Error = err.Error()
				if a.Missing > 0 {
					ra.Error += fmt.Sprintf(" (%d planned runs are not done: resume the experiment)", a.Missing)
				}
			} else {
				ra.Result = res
			}
		}
		a.Responses = append(a.Responses, ra)
	}
	if len(spec.Regimes) > 1 {
		a.compare(spec, measured)
	}
	return a
}

func (a *Analysis) compare(spec *Spec, measured []Result) {
	byRegime := map[string][]Result{}
	for _, r := range measured {
		byRegime[r.Levels[RegimeFactor]] = append(byRegime[r.Levels[RegimeFactor]], r)
	}
	mean := func(rs []Result, f func(Result) (float64, bool)) (float64, bool) {
		s, n := 0.0, 0
		for _, r := range rs {
			if v, ok := f(r); ok {
				s += v
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return s / float64(n), true
	}
	wall := func(r Result) (float64, bool) { return r.WallTime, true }
	events := map[string]bool{}
	for _, r := range measured {
		for k := range r.Events {
			events[k] = true
		}
	}
	names := make([]string, 0, len(events))
	for k := range events {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, base := range spec.Regimes {
		for _, other := range spec.Regimes[i+1:] {
			A, B := byRegime[base.Name], byRegime[other.Name]
			if len(A) == 0 || len(B) == 0 {
				continue
			}
			c := Comparison{Base: base.Name, Other: other.Name}
			wa, _ := mean(A, wall)
			wb, _ := mean(B, wall)
			if wb > 0 {
				s := wa / wb
				c.Speedup = &s
			}
			for _, ev := range names {
				get := func(r Result) (float64, bool) {
					e, ok := r.Events[ev]
					return e.Total, ok
				}
				va, okA := mean(A, get)
				vb, okB := mean(B, get)
				if !okA || !okB || (va == 0 && vb == 0) {
					continue // nothing to compare
				}
				row := ComparisonRow{Event: ev, Base: va, Other: vb}
				if va != 0 {
					ch := 100 * (vb - va) / math.Abs(va)
					row.Change = &ch
				}
				c.Rows = append(c.Rows, row)
			}
			a.Comparisons = append(a.Comparisons, c)
		}
	}
	for _, reg := range spec.Regimes {
		rs := byRegime[reg.Name]
		for _, ev := range names {
			d := RegimeDistribution{Regime: reg.Name, Event: ev, PerNode: map[string]float64{}}
			counts := map[string]int{}
			for _, r := range rs {
				e, ok := r.Events[ev]
				if !ok || e.Distribution == nil {
					continue
				}
				d.Runs++
				if e.Distribution.Outlier {
					d.OutlierRuns++
				}
				for n, v := range e.PerNode {
					d.PerNode[n] += v
					counts[n]++
				}
			}
			if d.Runs == 0 {
				continue
			}
			for n := range d.PerNode {
				d.PerNode[n] /= float64(counts[n])
			}
			d.Dist = NewDistribution(d.PerNode)
			if d.Dist != nil && d.Dist.Max != 0 {
				a.Distributions = append(a.Distributions, d)
			}
		}
	}
}
