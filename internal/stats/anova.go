// Package stats analyses full factorial experiments: effects, the ANOVA
// table with F tests and the share of the variation each factor explains,
// confidence intervals for effects and contrasts, residual diagnostics and a
// plain-language verdict per factor.
//
// The method is the classic one for computer performance studies (R. Jain,
// The Art of Computer Systems Performance Analysis, Wiley 1991, chapters
// 20-22): a balanced full factorial design with r >= 1 replications of every
// combination of levels. With replications, every interaction is estimated
// and the error is the spread within cells. Without, the highest-order
// interaction is the error term (the two-factor design without replication
// of Jain's chapter 21), which assumes that interaction is negligible.
//
// Balance is what makes the decomposition exact and simple: every term's
// sum of squares comes from marginal means, the terms are orthogonal, and
// the sums of squares add up to the total. Unbalanced data is refused
// rather than analysed with a method whose answer depends on the order of
// the terms.
package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// Factor is one factor of a design and its levels, in display order.
type Factor struct {
	Name   string   `json:"name"`
	Levels []string `json:"levels"`
}

// Observation is one measured response with the level of every factor, in
// the order of the design's factors.
type Observation struct {
	Levels []string
	Value  float64
}

// Options tune the analysis.
type Options struct {
	// Log analyses ln(y) instead of y: the model then is multiplicative, and
	// exp(effect) is the factor by which a level multiplies the response.
	// Every response must then be positive.
	Log bool
	// Confidence is the confidence level of the F tests and of the
	// intervals, in (0, 1); 0 means 0.90.
	Confidence float64
	// ImportantPercent is the share of the variation (in percent) from which
	// a term is called important; 0 means 5.
	ImportantPercent float64
}

// DefaultConfidence and DefaultImportantPercent are the defaults of Options.
const (
	DefaultConfidence       = 0.90
	DefaultImportantPercent = 5.0
)

// Num is a float64 that encodes as JSON null when it is not finite (an F
// ratio over a zero error, for example), since JSON has no Inf or NaN.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return []byte(fmt.Sprintf("%.17g", f)), nil
}

// Term is one row of the ANOVA table: a main effect or an interaction.
type Term struct {
	// Name is the factor names joined by ":" ("A", "A:B").
	Name    string   `json:"name"`
	Factors []string `json:"factors"`
	SS      float64  `json:"ss"`
	DoF     int      `json:"dof"`
	MS      float64  `json:"ms"`
	F       Num      `json:"f"`
	P       Num      `json:"p"`
	// FCrit is the F quantile at the chosen confidence: the term is
	// significant when F exceeds it.
	FCrit            Num     `json:"f_crit"`
	PercentVariation float64 `json:"percent_variation"`
	Significant      bool    `json:"significant"`
	Important        bool    `json:"important"`
	// Verdict says the above in one sentence.
	Verdict string `json:"verdict"`
}

// SSDoF is a sum of squares with its degrees of freedom.
type SSDoF struct {
	SS  float64 `json:"ss"`
	DoF int     `json:"dof"`
	// MS is SS/DoF (the error's mean square is the variance estimate).
	MS               float64 `json:"ms"`
	PercentVariation float64 `json:"percent_variation"`
}

// Interval is an estimate with its confidence interval.
type Interval struct {
	Estimate float64 `json:"estimate"`
	StdErr   float64 `json:"stderr"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	// Significant is true when the interval excludes zero.
	Significant bool `json:"significant"`
}

// LevelEffect is the effect of one level of a factor (or of a combination
// of levels for an interaction term).
type LevelEffect struct {
	Levels []string `json:"levels"`
	Interval
}

// TermEffects are the effects of one term.
type TermEffects struct {
	Term    string        `json:"term"`
	Effects []LevelEffect `json:"effects"`
}

// Contrast is the difference between two levels of one factor, effect(A)
// minus effect(B), which is also the difference of their marginal means.
type Contrast struct {
	Factor string `json:"factor"`
	A      string `json:"a"`
	B      string `json:"b"`
	Interval
}

// Cell is one combination of levels with its observations' mean.
type Cell struct {
	Levels []string `json:"levels"`
	Mean   float64  `json:"mean"`
	N      int      `json:"n"`
}

// Residual is one observation's residual: observed minus predicted, both on
// the analysed scale (logarithmic under Options.Log).
type Residual struct {
	Levels    []string `json:"levels"`
	Observed  float64  `json:"observed"`
	Predicted float64  `json:"predicted"`
	Residual  float64  `json:"residual"`
}

// QQPoint is one point of the normal quantile-quantile plot of the
// residuals: sorted residuals against standard normal quantiles at
// (i-0.5)/n. Points on a straight line mean normally distributed errors.
type QQPoint struct {
	Normal   float64 `json:"normal"`
	Residual float64 `json:"residual"`
}

// Diagnostics summarise whether the model's assumptions look sane.
type Diagnostics struct {
	// QQCorrelation is the correlation of the QQ points (1 for perfectly
	// normal residuals; well under 0.95 is suspect).
	// null in JSON when undefined (all residuals equal).
	QQCorrelation Num `json:"qq_correlation"`
	// MaxAbsResidual and ResponseRange compare the residuals with the
	// spread of the response: residuals an order of magnitude smaller than
	// the range make a trend in them unimportant (Jain, section 20.6).
	MaxAbsResidual float64 `json:"max_abs_residual"`
	ResponseRange  float64 `json:"response_range"`
	// Notes are the warnings drawn from the above, as sentences.
	Notes []string `json:"notes,omitempty"`
}

// Result is a complete analysis.
type Result struct {
	Factors      []Factor `json:"factors"`
	N            int      `json:"n"`
	Replications int      `json:"replications"`
	Log          bool     `json:"log"`
	Confidence   float64  `json:"confidence"`
	// Mean is the grand mean (of ln y under Log).
	Mean   float64  `json:"mean"`
	MeanCI Interval `json:"mean_ci"`
	Terms  []Term   `json:"terms"`
	Error  SSDoF    `json:"error"`
	Total  SSDoF    `json:"total"`
	// ErrorTerm names the interaction used as the error when there are no
	// replications; empty otherwise.
	ErrorTerm string `json:"error_term,omitempty"`
	// Effects maps factor -> level -> main effect.
	Effects     map[string]map[string]float64 `json:"effects"`
	TermEffects []TermEffects                 `json:"term_effects"`
	Contrasts   []Contrast                    `json:"contrasts"`
	Cells       []Cell                        `json:"cells"`
	Residuals   []Residual                    `json:"residuals"`
	QQ          []QQPoint                     `json:"qq"`
	Diagnostics Diagnostics                   `json:"diagnostics"`
	// Verdicts are the terms' verdicts and the diagnostics' notes, in the
	// order to print them.
	Verdicts []string `json:"verdicts"`
}

// Analyze runs the analysis of a balanced full factorial design. factors
// gives the names; a factor with nil Levels gets its levels from the data in
// order of first appearance. Every combination of levels must have the same
// number of observations (at least one).
func Analyze(factors []Factor, obs []Observation, opt Options) (*Result, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := newDesign(factors, obs)
	if err != nil {
		return nil, err
	}
	c, err := d.cells(obs, opt.Log)
	if err != nil {
		return nil, err
	}
	f, err := newFit(d, c, opt)
	if err != nil {
		return nil, err
	}
	res := &Result{Factors: d.fs, N: c.n, Replications: c.r, Log: opt.Log, Confidence: opt.Confidence, Mean: c.grand,
		ErrorTerm: f.errorTerm}
	res.Error = SSDoF{SS: f.sse, DoF: f.dofE, MS: f.mse, PercentVariation: f.pct(f.sse)}
	res.Total = SSDoF{SS: c.sst, DoF: c.n - 1, MS: c.sst / float64(c.n-1), PercentVariation: 100}
	res.MeanCI = f.interval(c.grand, f.se/math.Sqrt(float64(c.n)))
	f.terms(res)
	f.mainEffects(res)
	for cell := 0; cell < d.ncells; cell++ {
		res.Cells = append(res.Cells, Cell{Levels: cellLevels(d.fs, cell, d.stride, d.full()), Mean: c.mean[cell], N: c.r})
	}
	f.residuals(res)
	res.Diagnostics.Notes = diagnosticNotes(res)
	res.Verdicts = append(res.Verdicts, res.Diagnostics.Notes...)
	return res, nil
}

// withDefaults fills in the default confidence and importance threshold
// and checks the confidence level.
func (opt Options) withDefaults() (Options, error) {
	if opt.Confidence == 0 {
		opt.Confidence = DefaultConfidence
	}
	if !(opt.Confidence > 0 && opt.Confidence < 1) {
		return opt, fmt.Errorf("confidence %v: want a level in (0, 1), e.g. 0.90", opt.Confidence)
	}
	if opt.ImportantPercent == 0 {
		opt.ImportantPercent = DefaultImportantPercent
	}
	return opt, nil
}

// MaxTermCells bounds the terms (2^factors) times the combinations of
// levels of a design: the analysis keeps two float64 values per term and
// combination, 256 MiB at the bound (twelve two-level factors).
const MaxTermCells = 1 << 24

// MaxFactors bounds the factors of a design: its terms are 2^factors
// bitmasks, and past sixteen even two levels each pass MaxTermCells.
const MaxFactors = 16

// design is the shape of a full factorial: the factors with their levels,
// and the cells (combinations of levels) numbered in mixed radix, the first
// factor varying slowest. A term is a bitmask of factors.
type design struct {
	fs     []Factor
	index  []map[string]int // factor -> level -> its position
	nl     []int            // levels of each factor
	stride []int            // cell-number stride of each factor
	ncells int
}

// k is the number of factors.
func (d *design) k() int { return len(d.fs) }

// full is the term of all factors together, the highest interaction.
func (d *design) full() int { return 1<<d.k() - 1 }

// newDesign checks the factors and takes the levels of those given without
// from the observations, in order of first appearance.
func newDesign(factors []Factor, obs []Observation) (*design, error) {
	k := len(factors)
	if k == 0 {
		return nil, errors.New("no factors: name at least one")
	}
	if k > MaxFactors {
		return nil, fmt.Errorf("%d factors: at most %d are supported", k, MaxFactors)
	}
	d := &design{fs: make([]Factor, k), index: make([]map[string]int, k)}
	seen := map[string]bool{}
	for i, f := range factors {
		if f.Name == "" {
			return nil, fmt.Errorf("factor %d has no name", i+1)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("factor %q is named twice", f.Name)
		}
		seen[f.Name] = true
		d.fs[i] = Factor{Name: f.Name, Levels: append([]string(nil), f.Levels...)}
		d.index[i] = map[string]int{}
		for j, l := range f.Levels {
			if _, dup := d.index[i][l]; dup {
				return nil, fmt.Errorf("factor %s: level %q is listed twice", f.Name, l)
			}
			d.index[i][l] = j
		}
	}
	if len(obs) == 0 {
		return nil, errors.New("no observations")
	}
	if err := d.levelsFromData(factors, obs); err != nil {
		return nil, err
	}
	d.nl = make([]int, k)
	d.ncells = 1
	for i, f := range d.fs {
		d.nl[i] = len(f.Levels)
		d.ncells *= d.nl[i]
		if d.ncells > 1<<22 {
			return nil, errors.New("too many combinations of levels")
		}
	}
	// effects holds every term's marginal means and effects for every
	// cell: 2 × 2^k × cells values. Sixteen two-level factors are 65536
	// cells, whose 2^32 values (64 GiB) no machine holds.
	if terms := 1 << k; terms*d.ncells > MaxTermCells {
		return nil, fmt.Errorf("%d factors with %d combinations of levels: the analysis would hold %d terms × %d combinations of values, more than the limit of %d; analyse fewer factors at once",
			k, d.ncells, terms, d.ncells, MaxTermCells)
	}
	d.stride = make([]int, k)
	s := 1
	for i := k - 1; i >= 0; i-- {
		d.stride[i] = s
		s *= d.nl[i]
	}
	return d, nil
}

// levelsFromData checks every observation's levels against the factors
// given with levels, adds the levels of those given without, and checks
// that every factor has at least two.
func (d *design) levelsFromData(factors []Factor, obs []Observation) error {
	for _, o := range obs {
		if len(o.Levels) != d.k() {
			return fmt.Errorf("an observation has %d levels for %d factors", len(o.Levels), d.k())
		}
		for i, l := range o.Levels {
			if factors[i].Levels != nil {
				if _, ok := d.index[i][l]; !ok {
					return fmt.Errorf("factor %s: level %q is not one of %s", d.fs[i].Name, l, strings.Join(d.fs[i].Levels, ", "))
				}
				continue
			}
			if _, ok := d.index[i][l]; !ok {
				d.index[i][l] = len(d.fs[i].Levels)
				d.fs[i].Levels = append(d.fs[i].Levels, l)
			}
		}
	}
	for _, f := range d.fs {
		if len(f.Levels) < 2 {
			return fmt.Errorf("factor %s has %d level(s): a factor needs at least 2", f.Name, len(f.Levels))
		}
	}
	return nil
}

// cellData is the responses placed in the design's cells.
type cellData struct {
	y          []float64 // responses (ln y under Log), in observation order
	cellOf     []int     // each observation's cell
	n, r       int       // observations, and replications of every cell
	mean       []float64 // cell means
	grand      float64   // grand mean
	sst        float64   // total sum of squares about the grand mean
	minY, maxY float64
}

// cells places the observations in their cells, transformed under log,
// and checks that the responses are finite and the design balanced.
func (d *design) cells(obs []Observation, log bool) (*cellData, error) {
	c := &cellData{y: make([]float64, len(obs)), cellOf: make([]int, len(obs)), n: len(obs)}
	count := make([]int, d.ncells)
	sum := make([]float64, d.ncells)
	for n, o := range obs {
		v := o.Value
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("observation %d (%s) is %v: responses must be finite numbers", n+1, levelsString(d.fs, o.Levels), v)
		}
		if log {
			if v <= 0 {
				return nil, fmt.Errorf("observation %d (%s) is %v: the log transform needs positive responses", n+1, levelsString(d.fs, o.Levels), v)
			}
			v = math.Log(v)
		}
		cell := 0
		for i, l := range o.Levels {
			cell += d.index[i][l] * d.stride[i]
		}
		c.y[n], c.cellOf[n] = v, cell
		count[cell]++
		sum[cell] += v
	}
	c.r = count[0]
	for cell, n := range count {
		if n != c.r {
			return nil, fmt.Errorf("unbalanced design: cell %s has %d observation(s), cell %s has %d: every combination of levels needs the same number of replications",
				cellString(d.fs, cell, d.stride), n, cellString(d.fs, 0, d.stride), c.r)
		}
	}
	c.mean = make([]float64, d.ncells)
	for cell := range c.mean {
		c.mean[cell] = sum[cell] / float64(c.r)
		c.grand += c.mean[cell]
	}
	c.grand /= float64(d.ncells)
	c.minY, c.maxY = math.Inf(1), math.Inf(-1)
	for _, v := range c.y {
		dv := v - c.grand
		c.sst += dv * dv
		c.minY, c.maxY = math.Min(c.minY, v), math.Max(c.maxY, v)
	}
	if math.IsInf(c.sst, 0) || math.IsNaN(c.sst) {
		return nil, fmt.Errorf("the responses' squares overflow (values up to %g): rescale them, e.g. to other units", math.Max(math.Abs(c.minY), math.Abs(c.maxY)))
	}
	return c, nil
}

// effects returns the effect of every term T, by inclusion-exclusion over
// the marginal means: effect_T = sum over S in T of (-1)^|T\S| mean_S.
// They are indexed by full cell for simplicity.
func (d *design) effects(cellMean []float64) [][]float64 {
	nterms := 1 << d.k()
	effect := make([][]float64, nterms)
	marg := make([][]float64, nterms)
	for m := 0; m < nterms; m++ {
		marg[m] = marginal(cellMean, m, d.nl, d.stride)
	}
	for m := 1; m < nterms; m++ {
		e := make([]float64, d.ncells)
		for sub := m; ; sub = (sub - 1) & m {
			sign := 1.0
			if popcount(m^sub)%2 == 1 {
				sign = -1
			}
			for c := range e {
				e[c] += sign * marg[sub][c]
			}
			if sub == 0 {
				break
			}
		}
		effect[m] = e
	}
	return effect
}

// dof is a term's degrees of freedom: the product of its factors' levels
// less one.
func (d *design) dof(m int) int {
	dof := 1
	for i := 0; i < d.k(); i++ {
		if m&(1<<i) != 0 {
			dof *= d.nl[i] - 1
		}
	}
	return dof
}

// termOrder lists the terms to test: main effects, then two-factor
// interactions, and so on; without replications the highest interaction
// is the error and is left out.
func (d *design) termOrder(r int) []int {
	var masks []int
	for m := 1; m <= d.full(); m++ {
		if r == 1 && m == d.full() {
			continue
		}
		masks = append(masks, m)
	}
	sort.SliceStable(masks, func(a, b int) bool {
		pa, pb := popcount(masks[a]), popcount(masks[b])
		if pa != pb {
			return pa < pb
		}
		return lexLess(masks[a], masks[b], d.k())
	})
	return masks
}

// fit is the fitted model: the effects, the error term and what the
// confidence intervals need.
type fit struct {
	*design
	*cellData
	opt       Options
	effect    [][]float64
	sse, mse  float64
	dofE      int
	errorTerm string    // the interaction used as the error, without replications
	predicted []float64 // the model's value for each cell
	se        float64   // standard deviation of the errors
	tq        float64   // the two-sided Student t quantile at the confidence level
}

// newFit computes the effects and the error: the spread within cells with
// replications, the highest interaction without.
func newFit(d *design, c *cellData, opt Options) (*fit, error) {
	f := &fit{design: d, cellData: c, opt: opt, effect: d.effects(c.mean), predicted: make([]float64, d.ncells)}
	if c.r > 1 {
		for n, v := range c.y {
			dv := v - c.mean[c.cellOf[n]]
			f.sse += dv * dv
		}
		f.dofE = c.n - d.ncells
		copy(f.predicted, c.mean)
	} else {
		if d.k() == 1 {
			return nil, errors.New("one factor without replications leaves no degrees of freedom for the error: replicate the runs")
		}
		full := d.full()
		f.sse, f.dofE = f.ss(full), d.dof(full)
		f.errorTerm = termName(d.fs, full)
		for cell := range f.predicted {
			f.predicted[cell] = c.mean[cell] - f.effect[full][cell]
		}
	}
	f.mse = f.sse / float64(f.dofE)
	f.se = math.Sqrt(f.mse)
	f.tq = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(f.dofE)}.Quantile(1 - (1-opt.Confidence)/2)
	return f, nil
}

// ss is a term's sum of squares; each cell's effect stands for r
// observations.
func (f *fit) ss(m int) float64 {
	s := 0.0
	for _, e := range f.effect[m] {
		s += e * e
	}
	return s * float64(f.r)
}

// pct is a sum of squares as a percentage of the total.
func (f *fit) pct(ss float64) float64 {
	if f.sst == 0 {
		return 0
	}
	return 100 * ss / f.sst
}

// interval is the confidence interval of an estimate.
func (f *fit) interval(est, stderr float64) Interval {
	iv := Interval{Estimate: est, StdErr: stderr, Low: est - f.tq*stderr, High: est + f.tq*stderr}
	iv.Significant = iv.Low > 0 || iv.High < 0
	return iv
}

// terms fills the ANOVA table, each term's verdict and the effects of its
// level combinations.
func (f *fit) terms(res *Result) {
	for _, m := range f.termOrder(f.r) {
		t := f.term(m)
		res.Terms = append(res.Terms, t)
		res.Verdicts = append(res.Verdicts, t.Verdict)
		// Effects of the term's level combinations: var = sigma^2 dof/N.
		te := TermEffects{Term: t.Name}
		stderr := f.se * math.Sqrt(float64(t.DoF)/float64(f.n))
		for _, c := range representatives(m, f.nl, f.stride) {
			te.Effects = append(te.Effects, LevelEffect{Levels: cellLevels(f.fs, c, f.stride, m), Interval: f.interval(f.effect[m][c], stderr)})
		}
		res.TermEffects = append(res.TermEffects, te)
	}
}

// term is one row of the ANOVA table with its F test and verdict.
func (f *fit) term(m int) Term {
	ss, dof := f.ss(m), f.dof(m)
	t := Term{Name: termName(f.fs, m), Factors: termFactors(f.fs, m), SS: ss, DoF: dof, MS: ss / float64(dof),
		PercentVariation: f.pct(ss)}
	fd := distuv.F{D1: float64(dof), D2: float64(f.dofE)}
	t.FCrit = Num(fd.Quantile(f.opt.Confidence))
	switch {
	case f.mse > 0:
		fv := t.MS / f.mse
		t.F, t.P = Num(fv), Num(fSurvival(fv, float64(dof), float64(f.dofE)))
	case t.MS > 0:
		t.F, t.P = Num(math.Inf(1)), 0
	default:
		t.F, t.P = Num(math.NaN()), Num(math.NaN())
	}
	t.Significant = float64(t.F) > float64(t.FCrit)
	// Important: a real effect (significant) that also matters (a large
	// enough share of the variation). A large share that is not
	// significant is noise that happened to line up.
	t.Important = t.Significant && t.PercentVariation >= f.opt.ImportantPercent
	t.Verdict = verdict(t, f.opt)
	return t
}

// mainEffects fills the main effects as a map, and the contrasts between
// the levels of each factor.
func (f *fit) mainEffects(res *Result) {
	res.Effects = map[string]map[string]float64{}
	for i, fac := range f.fs {
		m := 1 << i
		lv := map[string]float64{}
		for j, l := range fac.Levels {
			lv[l] = f.effect[m][j*f.stride[i]]
		}
		res.Effects[fac.Name] = lv
		// Each level's marginal mean averages N/levels observations.
		stderr := f.se * math.Sqrt(2*float64(f.nl[i])/float64(f.n))
		for a := 0; a < f.nl[i]; a++ {
			for b := a + 1; b < f.nl[i]; b++ {
				d := f.effect[m][a*f.stride[i]] - f.effect[m][b*f.stride[i]]
				res.Contrasts = append(res.Contrasts, Contrast{Factor: fac.Name, A: fac.Levels[a], B: fac.Levels[b], Interval: f.interval(d, stderr)})
			}
		}
	}
}

// residuals fills the residuals, their normal QQ plot and the numbers the
// diagnostics judge.
func (f *fit) residuals(res *Result) {
	maxAbs := 0.0
	resid := make([]float64, f.n)
	for n, v := range f.y {
		p := f.predicted[f.cellOf[n]]
		resid[n] = v - p
		maxAbs = math.Max(maxAbs, math.Abs(resid[n]))
		res.Residuals = append(res.Residuals, Residual{Levels: cellLevels(f.fs, f.cellOf[n], f.stride, f.full()), Observed: v, Predicted: p, Residual: resid[n]})
	}
	sorted := append([]float64(nil), resid...)
	sort.Float64s(sorted)
	qx := make([]float64, f.n)
	for i, v := range sorted {
		qx[i] = distuv.UnitNormal.Quantile((float64(i) + 0.5) / float64(f.n))
		res.QQ = append(res.QQ, QQPoint{Normal: qx[i], Residual: v})
	}
	res.Diagnostics = Diagnostics{QQCorrelation: Num(correlation(qx, sorted)), MaxAbsResidual: maxAbs, ResponseRange: f.maxY - f.minY}
}

// fSurvival is P(F > f) for an F(d1, d2) variable, computed as the
// regularized incomplete beta function directly rather than as 1 - CDF, so
// that small p-values keep their relative precision.
func fSurvival(f, d1, d2 float64) float64 {
	if f <= 0 {
		return 1
	}
	return mathext.RegIncBeta(d2/2, d1/2, d2/(d2+d1*f))
}

// marginal returns, indexed by full cell, the mean of the cell means over
// the factors not in mask (the marginal mean of the mask's levels).
func marginal(cellMean []float64, mask int, nl, stride []int) []float64 {
	ncells := len(cellMean)
	key := func(c int) int {
		kk := 0
		for i := range nl {
			if mask&(1<<i) != 0 {
				kk += (c / stride[i] % nl[i]) * stride[i]
			}
		}
		return kk
	}
	sums := map[int]float64{}
	counts := map[int]int{}
	for c := 0; c < ncells; c++ {
		kk := key(c)
		sums[kk] += cellMean[c]
		counts[kk]++
	}
	out := make([]float64, ncells)
	for c := range out {
		kk := key(c)
		out[c] = sums[kk] / float64(counts[kk])
	}
	return out
}

// representatives returns one full cell per combination of the mask's
// levels: those whose other factors are at their first level.
func representatives(mask int, nl, stride []int) []int {
	cells := []int{0}
	for i := range nl {
		if mask&(1<<i) == 0 {
			continue
		}
		var next []int
		for _, c := range cells {
			for j := 0; j < nl[i]; j++ {
				next = append(next, c+j*stride[i])
			}
		}
		cells = next
	}
	sort.Ints(cells)
	return cells
}

func cellLevels(fs []Factor, c int, stride []int, mask int) []string {
	var out []string
	for i, f := range fs {
		if mask&(1<<i) != 0 {
			out = append(out, f.Levels[c/stride[i]%len(f.Levels)])
		}
	}
	return out
}

func cellString(fs []Factor, c int, stride []int) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + printable(f.Levels[c/stride[i]%len(f.Levels)])
	}
	return strings.Join(parts, ",")
}

func levelsString(fs []Factor, levels []string) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + printable(levels[i])
	}
	return strings.Join(parts, ",")
}

func termFactors(fs []Factor, m int) []string {
	var out []string
	for i, f := range fs {
		if m&(1<<i) != 0 {
			out = append(out, f.Name)
		}
	}
	return out
}

func termName(fs []Factor, m int) string { return strings.Join(termFactors(fs, m), ":") }

func popcount(m int) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

// lexLess orders two masks of equal size by their factors' positions.
func lexLess(a, b, k int) bool {
	for i := 0; i < k; i++ {
		ia, ib := a&(1<<i) != 0, b&(1<<i) != 0
		if ia != ib {
			return ia
		}
	}
	return false
}

func correlation(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

func verdict(t Term, opt Options) string {
	conf := fmt.Sprintf("%g%%", 100*opt.Confidence)
	var sig string
	switch {
	case math.IsNaN(float64(t.F)):
		sig = "cannot be tested (no variation at all)"
	case math.IsInf(float64(t.F), 1):
		sig = fmt.Sprintf("significant at %s confidence (zero error variance)", conf)
	case t.Significant:
		sig = fmt.Sprintf("significant at %s confidence (F = %.3g > F-crit %.3g, p = %.2g)", conf, float64(t.F), float64(t.FCrit), float64(t.P))
	default:
		sig = fmt.Sprintf("not significant at %s confidence (F = %.3g <= F-crit %.3g, p = %.2g)", conf, float64(t.F), float64(t.FCrit), float64(t.P))
	}
	var imp string
	switch {
	case t.Important:
		imp = fmt.Sprintf("explains %.1f%% of the variation: important", t.PercentVariation)
	case t.Significant:
		imp = fmt.Sprintf("explains only %.1f%% of the variation: unimportant", t.PercentVariation)
	default:
		imp = fmt.Sprintf("its %.1f%% of the variation cannot be told from noise: unimportant", t.PercentVariation)
	}
	return fmt.Sprintf("%s: %s; %s.", t.Name, sig, imp)
}

func diagnosticNotes(r *Result) []string {
	var notes []string
	if r.ErrorTerm != "" {
		notes = append(notes, fmt.Sprintf("No replications: the %s interaction is the error term, which assumes it is negligible; replicate the runs to test it.", r.ErrorTerm))
	}
	d := r.Diagnostics
	if qq := float64(d.QQCorrelation); !math.IsNaN(qq) && qq < 0.95 && r.N >= 8 {
		notes = append(notes, fmt.Sprintf("The residuals' QQ plot is not straight (correlation %.3f): the errors may not be normal; consider --log or look for outliers.", qq))
	}
	if d.ResponseRange > 0 && d.MaxAbsResidual > d.ResponseRange/2 {
		notes = append(notes, fmt.Sprintf("The largest residual (%.3g) is over half the response's range (%.3g): the model explains the data poorly.", d.MaxAbsResidual, d.ResponseRange))
	}
	if r.Error.PercentVariation > 50 {
		notes = append(notes, fmt.Sprintf("The error explains %.1f%% of the variation: the factors studied are not what drives this response, or the runs are too noisy.", r.Error.PercentVariation))
	}
	return notes
}

// printable quotes a level for an error message when it holds characters
// that would garble a one-line message.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
