package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

func close(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.10g, want %.10g", what, got, want)
	}
}

func term(t *testing.T, r *Result, name string) Term {
	t.Helper()
	for _, x := range r.Terms {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no term %q in %v", name, r.Terms)
	return Term{}
}

// Montgomery, Design and Analysis of Experiments (5th ed., Wiley 2001),
// Example 5.1, the battery design experiment: life in hours of batteries
// made of 3 materials at 3 temperatures (15, 70, 125 F), 4 replications.
// Table 5.5 is its ANOVA table, which the test checks to the printed digits.
func TestMontgomeryBatteryWithReplication(t *testing.T) {
	life := [3][3][4]float64{
		{{130, 155, 74, 180}, {34, 40, 80, 75}, {20, 70, 82, 58}},
		{{150, 188, 159, 126}, {136, 122, 106, 115}, {25, 70, 58, 45}},
		{{138, 110, 168, 160}, {174, 120, 150, 139}, {96, 104, 82, 60}},
	}
	temps := []string{"15", "70", "125"}
	var obs []Observation
	for m := range life {
		for tp := range life[m] {
			for _, v := range life[m][tp] {
				obs = append(obs, Observation{Levels: []string{fmt.Sprint(m + 1), temps[tp]}, Value: v})
			}
		}
	}
	r, err := Analyze([]Factor{{Name: "material"}, {Name: "temperature"}}, obs, Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if r.Replications != 4 || r.N != 36 || r.ErrorTerm != "" {
		t.Fatalf("replications %d, N %d, error term %q", r.Replications, r.N, r.ErrorTerm)
	}
	want := []struct {
		name  string
		ss    float64
		dof   int
		ms, f float64
	}{
		{"material", 10683.72, 2, 5341.86, 7.91},
		{"temperature", 39118.72, 2, 19559.36, 28.97},
		{"material:temperature", 9613.78, 4, 2403.44, 3.56},
	}
	for _, w := range want {
		x := term(t, r, w.name)
		close(t, w.name+" SS", x.SS, w.ss, 1e-6)
		close(t, w.name+" MS", x.MS, w.ms, 5e-6)
		close(t, w.name+" F", float64(x.F), w.f, 2e-3)
		if x.DoF != w.dof {
			t.Errorf("%s dof = %d, want %d", w.name, x.DoF, w.dof)
		}
		// Montgomery: all three are significant at 5% (P < 0.05).
		if !x.Significant || float64(x.P) >= 0.05 {
			t.Errorf("%s: significant=%v p=%v, want significant at 95%%", w.name, x.Significant, x.P)
		}
	}
	close(t, "error SS", r.Error.SS, 18230.75, 1e-9)
	close(t, "error MS", r.Error.MS, 675.21, 1e-5)
	close(t, "total SS", r.Total.SS, 77646.97, 1e-7)
	if r.Error.DoF != 27 || r.Total.DoF != 35 {
		t.Errorf("dof error %d total %d, want 27 and 35", r.Error.DoF, r.Total.DoF)
	}
	// F_{0.05,4,27} = 2.73 (Montgomery's table of the F distribution).
	close(t, "F-crit interaction", float64(term(t, r, "material:temperature").FCrit), 2.73, 2e-3)
	// Marginal means: material 1 averages 83.17 h, material 3 125.08 h.
	close(t, "effect material 3 - material 1", r.Effects["material"]["3"]-r.Effects["material"]["1"], 125.08333-83.16667, 1e-6)
}

// Montgomery, Design and Analysis of Experiments (5th ed.), Example 5.2
// (section 5.3.7, one observation per cell): impurity of a chemical product
// at 3 temperatures and 5 pressures, no replication. The interaction is the
// error term; Table 5.11 is its ANOVA.
func TestMontgomeryImpurityWithoutReplication(t *testing.T) {
	impurity := [3][5]float64{{5, 4, 6, 3, 5}, {3, 1, 4, 2, 3}, {1, 1, 3, 1, 2}}
	temps, press := []string{"100", "125", "150"}, []string{"25", "30", "35", "40", "45"}
	var obs []Observation
	for i := range impurity {
		for j, v := range impurity[i] {
			obs = append(obs, Observation{Levels: []string{temps[i], press[j]}, Value: v})
		}
	}
	r, err := Analyze([]Factor{{Name: "temperature"}, {Name: "pressure"}}, obs, Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if r.ErrorTerm != "temperature:pressure" || len(r.Terms) != 2 {
		t.Fatalf("error term %q, %d terms: want the interaction as error and 2 terms", r.ErrorTerm, len(r.Terms))
	}
	tp, pr := term(t, r, "temperature"), term(t, r, "pressure")
	close(t, "temperature SS", tp.SS, 23.33, 2e-4)
	close(t, "pressure SS", pr.SS, 11.60, 1e-9)
	close(t, "residual SS", r.Error.SS, 2.00, 1e-9)
	close(t, "total SS", r.Total.SS, 36.93, 2e-4)
	close(t, "temperature F", float64(tp.F), 46.67, 1e-4)
	close(t, "pressure F", float64(pr.F), 11.60, 1e-9)
	if tp.DoF != 2 || pr.DoF != 4 || r.Error.DoF != 8 {
		t.Errorf("dof %d %d %d, want 2 4 8", tp.DoF, pr.DoF, r.Error.DoF)
	}
	if !tp.Significant || !pr.Significant {
		t.Errorf("both factors are significant at 95%% in Montgomery's table")
	}
}

// Jain, The Art of Computer Systems Performance Analysis (Wiley 1991),
// Example 21.1 (Table 21.1): execution times in ms of 5 workloads on 3
// cache configurations, no replication; Table 21.2 lists the effects.
func TestJainCacheComparisonEffects(t *testing.T) {
	times := [5][3]float64{{54, 55, 106}, {60, 60, 123}, {43, 43, 120}, {49, 52, 111}, {49, 50, 108}}
	wl := []string{"ASM", "TECO", "SIEVE", "DHRYSTONE", "SORT"}
	caches := []string{"two", "one", "none"}
	var obs []Observation
	for i := range times {
		for j, v := range times[i] {
			obs = append(obs, Observation{Levels: []string{wl[i], caches[j]}, Value: v})
		}
	}
	r, err := Analyze([]Factor{{Name: "workload"}, {Name: "cache"}}, obs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	close(t, "mean", r.Mean, 72.2, 1e-12)
	for c, e := range map[string]float64{"two": -21.2, "one": -20.2, "none": 41.4} {
		close(t, "cache effect "+c, r.Effects["cache"][c], e, 1e-12)
	}
	for w, e := range map[string]float64{"ASM": -0.53, "TECO": 8.8, "SIEVE": -3.53, "DHRYSTONE": -1.53, "SORT": -3.2} {
		close(t, "workload effect "+w, r.Effects["workload"][w], e, 0.005)
	}
	// The caches dominate, the workloads do not matter.
	if c := term(t, r, "cache"); !c.Significant || !c.Important || c.PercentVariation < 90 {
		t.Errorf("cache: %s", c.Verdict)
	}
	if w := term(t, r, "workload"); w.Important || !strings.Contains(w.Verdict, "unimportant") {
		t.Errorf("workload: %s", w.Verdict)
	}
}

// Invariants that hold for any balanced design: the sums of squares add up
// to the total, the effects of a factor sum to zero, and predicted plus
// residual is the observation.
func TestDecompositionInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []struct {
		levels []int
		reps   int
	}{{[]int{2, 3}, 1}, {[]int{2, 3}, 2}, {[]int{3, 2, 4}, 1}, {[]int{2, 2, 2}, 3}, {[]int{4}, 3}, {[]int{2, 2, 2, 2}, 2}} {
		factors, obs := randomDesign(rng, d.levels, d.reps)
		r, err := Analyze(factors, obs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum := r.Error.SS
		dof := r.Error.DoF
		pct := r.Error.PercentVariation
		for _, x := range r.Terms {
			sum += x.SS
			dof += x.DoF
			pct += x.PercentVariation
		}
		close(t, fmt.Sprintf("%v r=%d: sum of SS", d.levels, d.reps), sum, r.Total.SS, 1e-10)
		close(t, "sum of percentages", pct, 100, 1e-10)
		if dof != r.Total.DoF {
			t.Errorf("%v r=%d: dof add up to %d, total %d", d.levels, d.reps, dof, r.Total.DoF)
		}
		for f, lv := range r.Effects {
			s := 0.0
			for _, e := range lv {
				s += e
			}
			close(t, "sum of effects of "+f, s, 0, 1e-10)
		}
		for i, res := range r.Residuals {
			close(t, "predicted+residual", res.Predicted+res.Residual, obs[i].Value, 1e-10)
		}
		if len(r.QQ) != r.N {
			t.Errorf("%d QQ points for %d observations", len(r.QQ), r.N)
		}
	}
}

// TestPerfectFit: an exactly additive design without replication leaves
// no error at all; the F ratios are infinite and the JSON must still encode
// (as null), and the verdict say so.
func TestPerfectFit(t *testing.T) {
	var obs []Observation
	for i, a := range []string{"a1", "a2"} {
		for j, b := range []string{"b1", "b2", "b3"} {
			obs = append(obs, Observation{Levels: []string{a, b}, Value: float64(10*i + j)})
		}
	}
	r, err := Analyze([]Factor{{Name: "A"}, {Name: "B"}}, obs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Error.SS > 1e-20 || !math.IsInf(float64(r.Terms[0].F), 1) || !strings.Contains(r.Terms[0].Verdict, "zero error variance") {
		t.Errorf("error SS %v, F %v, verdict %q", r.Error.SS, r.Terms[0].F, r.Terms[0].Verdict)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if !bytes.Contains(b, []byte(`"f":null`)) {
		t.Errorf("an infinite F must encode as null: %s", b)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	two := []Factor{{Name: "A"}, {Name: "B"}}
	for _, c := range []struct {
		name    string
		factors []Factor
		obs     []Observation
		opt     Options
		want    string
	}{
		{"unbalanced", two, []Observation{{[]string{"a", "x"}, 1}, {[]string{"a", "x"}, 2}, {[]string{"a", "y"}, 1}, {[]string{"b", "x"}, 1}, {[]string{"b", "y"}, 1}}, Options{}, "unbalanced design"},
		{"missing cell", two, []Observation{{[]string{"a", "x"}, 1}, {[]string{"a", "y"}, 1}, {[]string{"b", "x"}, 1}}, Options{}, "unbalanced design"},
		{"one level", two, []Observation{{[]string{"a", "x"}, 1}, {[]string{"a", "y"}, 2}}, Options{}, "factor A has 1 level"},
		{"log of zero", two, []Observation{{[]string{"a", "x"}, 0}, {[]string{"a", "y"}, 1}, {[]string{"b", "x"}, 1}, {[]string{"b", "y"}, 1}}, Options{Log: true}, "positive"},
		{"no error dof", []Factor{{Name: "A"}}, []Observation{{[]string{"a"}, 1}, {[]string{"b"}, 2}}, Options{}, "replicate"},
		{"confidence", two, nil, Options{Confidence: 1.5}, "confidence"},
		{"nan", two, []Observation{{[]string{"a", "x"}, math.NaN()}, {[]string{"a", "y"}, 1}, {[]string{"b", "x"}, 1}, {[]string{"b", "y"}, 1}}, Options{}, "finite"},
		{"overflow", two, []Observation{{[]string{"a", "x"}, 1e300}, {[]string{"a", "y"}, -1e300}, {[]string{"b", "x"}, 1}, {[]string{"b", "y"}, 1}}, Options{}, "overflow"},
		{"unknown level", []Factor{{Name: "A", Levels: []string{"a", "b"}}, {Name: "B"}}, []Observation{{[]string{"c", "x"}, 1}}, Options{}, `level "c" is not one of a, b`},
		// 13 two-level factors: 2^13 terms × 2^13 cells, 1 GiB of effects
		// (16 factors were 64 GiB), refused before anything is allocated.
		{"too many terms", binaryFactors(13), []Observation{{make([]string, 13), 1}}, Options{}, "analyse fewer factors at once"},
	} {
		_, err := Analyze(c.factors, c.obs, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// binaryFactors returns n factors named F0, F1... with the levels "" and
// "x" each.
func binaryFactors(n int) []Factor {
	fs := make([]Factor, n)
	for i := range fs {
		fs[i] = Factor{Name: fmt.Sprintf("F%d", i), Levels: []string{"", "x"}}
	}
	return fs
}

// randomDesign makes a balanced design with random, positive responses that
// have real main effects, some interaction and noise.
func randomDesign(rng *rand.Rand, levels []int, reps int) ([]Factor, []Observation) {
	factors := make([]Factor, len(levels))
	eff := make([][]float64, len(levels))
	for i, n := range levels {
		factors[i].Name = string(rune('A' + i))
		for j := 0; j < n; j++ {
			eff[i] = append(eff[i], rng.NormFloat64()*0.5)
		}
	}
	var obs []Observation
	var rec func(i int, lv []string, idx []int)
	rec = func(i int, lv []string, idx []int) {
		if i == len(levels) {
			base := 0.0
			for f, j := range idx {
				base += eff[f][j]
			}
			inter := 0.2 * float64(idx[0]*idx[len(idx)-1])
			for r := 0; r < reps; r++ {
				v := 10 * math.Exp(base+inter+0.1*rng.NormFloat64())
				obs = append(obs, Observation{Levels: append([]string(nil), lv...), Value: v})
			}
			return
		}
		for j := 0; j < levels[i]; j++ {
			rec(i+1, append(lv, fmt.Sprintf("l%d", j)), append(idx, j))
		}
	}
	rec(0, nil, nil)
	rng.Shuffle(len(obs), func(a, b int) { obs[a], obs[b] = obs[b], obs[a] })
	return factors, obs
}

type smTerm struct {
	Name string  `json:"name"`
	SS   float64 `json:"ss"`
	DoF  int     `json:"dof"`
	F    float64 `json:"f"`
	P    float64 `json:"p"`
}

type smResult struct {
	Terms    []smTerm                      `json:"terms"`
	Residual smTerm                        `json:"residual"`
	Mean     float64                       `json:"mean"`
	Effects  map[string]map[string]float64 `json:"effects"`
	// SumCoded is the same model fitted with sum-to-zero coding: the
	// intervals of the grand mean, of every coefficient (each level's or
	// combination's effect but the last's) and of every contrast.
	SumCoded struct {
		MeanCI  smInterval `json:"mean_ci"`
		Effects []struct {
			Term   string   `json:"term"`
			Levels []string `json:"levels"`
			smInterval
		} `json:"effects"`
		Contrasts []struct {
			Factor string `json:"factor"`
			A      string `json:"a"`
			B      string `json:"b"`
			smInterval
		} `json:"contrasts"`
	} `json:"sum_coded"`
	// Residuals are the OLS fit's, in the file's row order, with the QQ
	// plot numpy and scipy draw of them.
	Residuals struct {
		Fitted        []float64 `json:"fitted"`
		Resid         []float64 `json:"resid"`
		MaxAbs        float64   `json:"max_abs"`
		Range         float64   `json:"range"`
		QQNormal      []float64 `json:"qq_normal"`
		QQResid       []float64 `json:"qq_resid"`
		QQCorrelation *float64  `json:"qq_correlation"`
	} `json:"residuals"`
}

// smInterval is an estimate with its standard error and interval, from
// statsmodels.
type smInterval struct {
	Estimate float64 `json:"estimate"`
	StdErr   float64 `json:"stderr"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
}

// sameInterval compares one of numascope's intervals with statsmodels':
// estimate and standard error to rel, the bounds to rel plus what two
// implementations of Student's t quantile may differ by (1e-9 of the
// half-width).
func sameInterval(t *testing.T, what string, got Interval, want smInterval, rel float64) {
	t.Helper()
	half := math.Abs(want.High - want.Low)
	for _, c := range []struct {
		name      string
		got, want float64
		abs       float64
	}{{"estimate", got.Estimate, want.Estimate, 0}, {"stderr", got.StdErr, want.StdErr, 0},
		{"low", got.Low, want.Low, 1e-9 * half}, {"high", got.High, want.High, 1e-9 * half}} {
		if !relEq(c.got, c.want, rel) && math.Abs(c.got-c.want) > c.abs {
			t.Errorf("%s %s = %.15g, statsmodels %.15g", what, c.name, c.got, c.want)
		}
	}
}

// requireStatsmodels skips unless python3 can import statsmodels, or fails
// when NUMASCOPE_STATS_REQUIRED is set (as in CI).
func requireStatsmodels(t *testing.T) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import statsmodels, pandas").CombinedOutput()
	if err == nil {
		return
	}
	testutil.SkipUnless(t, testutil.StatsRequired, "statsmodels unavailable (%v: %s); install it with scripts/install-stats-deps", err, strings.TrimSpace(string(out)))
}

// relEq reports whether a and b agree to rel relative precision.
func relEq(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// TestAgainstStatsmodels compares the whole table with statsmodels'
// anova_lm (an OLS fit by QR, a different algorithm from the marginal means
// used here) on random balanced designs: 2 and 3 factors, with and without
// replication, with and without the log transform. They must agree to 1e-9
// relative.
func TestAgainstStatsmodels(t *testing.T) {
	requireStatsmodels(t)
	script, err := filepath.Abs(filepath.Join("testdata", "anova_lm.py"))
	if err != nil {
		t.Fatal(err)
	}
	type design struct {
		name    string
		factors []Factor
		obs     []Observation
		log     bool
		// The manifest entry for anova_lm.py.
		CSV        string   `json:"csv"`
		Response   string   `json:"response"`
		Factors    []string `json:"factors"`
		Replicated bool     `json:"replicated"`
		Log        bool     `json:"log"`
		Confidence float64  `json:"confidence"`
	}
	rng := rand.New(rand.NewPCG(6, 42))
	dir := t.TempDir()
	var designs []*design
	for _, levels := range [][]int{{2, 3}, {4, 3}, {3, 2, 2}, {2, 4, 3}} {
		for _, reps := range []int{1, 3} {
			for _, log := range []bool{false, true} {
				d := &design{name: fmt.Sprintf("levels=%v/reps=%d/log=%v", levels, reps, log), log: log,
					Response: "y", Replicated: reps > 1, Log: log, Confidence: DefaultConfidence}
				d.factors, d.obs = randomDesign(rng, levels, reps)
				for _, f := range d.factors {
					d.Factors = append(d.Factors, f.Name)
				}
				var csv bytes.Buffer
				csv.WriteString(strings.Join(d.Factors, ",") + ",y\n")
				for _, o := range d.obs {
					fmt.Fprintf(&csv, "%s,%.17g\n", strings.Join(o.Levels, ","), o.Value)
				}
				d.CSV = filepath.Join(dir, fmt.Sprintf("design%d.csv", len(designs)))
				if err := os.WriteFile(d.CSV, csv.Bytes(), 0o600); err != nil {
					t.Fatal(err)
				}
				// Read back through ReadCSV: the command line's path.
				if d.obs, err = ReadCSV(bytes.NewReader(csv.Bytes()), "y", d.Factors); err != nil {
					t.Fatal(err)
				}
				designs = append(designs, d)
			}
		}
	}
	manifest, err := json.Marshal(designs)
	if err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(mpath, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", script, mpath).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("anova_lm.py: %v\n%s", err, stderr)
	}
	var sms []smResult
	if err := json.Unmarshal(out, &sms); err != nil {
		t.Fatalf("anova_lm.py output: %v\n%s", err, out)
	}
	if len(sms) != len(designs) || len(designs) != 16 {
		t.Fatalf("%d results from statsmodels for %d designs", len(sms), len(designs))
	}
	const rel = 1e-9
	for i, d := range designs {
		sm := sms[i]
		t.Run(d.name, func(t *testing.T) {
			r, err := Analyze(d.factors, d.obs, Options{Log: d.log})
			if err != nil {
				t.Fatal(err)
			}
			if len(sm.Terms) != len(r.Terms) {
				t.Fatalf("statsmodels has %d terms, numascope %d", len(sm.Terms), len(r.Terms))
			}
			for i, want := range sm.Terms {
				got := r.Terms[i]
				if got.Name != want.Name || got.DoF != want.DoF {
					t.Fatalf("term %d: %s dof %d, statsmodels %s dof %d", i, got.Name, got.DoF, want.Name, want.DoF)
				}
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"SS", got.SS, want.SS}, {"F", float64(got.F), want.F}, {"p", float64(got.P), want.P}} {
					if !relEq(c.got, c.want, rel) {
						t.Errorf("%s %s = %.15g, statsmodels %.15g (rel diff %.2g)", got.Name, c.what, c.got, c.want,
							math.Abs(c.got-c.want)/math.Abs(c.want))
					}
				}
			}
			if !relEq(r.Error.SS, sm.Residual.SS, rel) || r.Error.DoF != sm.Residual.DoF {
				t.Errorf("error SS %.15g dof %d, statsmodels %.15g dof %d", r.Error.SS, r.Error.DoF, sm.Residual.SS, sm.Residual.DoF)
			}
			if !relEq(r.Mean, sm.Mean, rel) {
				t.Errorf("mean %.15g, pandas %.15g", r.Mean, sm.Mean)
			}
			for f, lv := range sm.Effects {
				for l, e := range lv {
					if got := r.Effects[f][l]; !relEq(got, e, rel) {
						t.Errorf("effect %s=%s: %.15g, pandas %.15g", f, l, got, e)
					}
				}
			}

			// The intervals: the grand mean's, each effect's (of every
			// term the model fits) and each contrast's.
			sc := sm.SumCoded
			sameInterval(t, "mean", r.MeanCI, sc.MeanCI, rel)
			if len(sc.Effects) == 0 || len(sc.Contrasts) == 0 {
				t.Fatalf("statsmodels gave %d effect and %d contrast intervals", len(sc.Effects), len(sc.Contrasts))
			}
			for _, want := range sc.Effects {
				var got *LevelEffect
				for _, te := range r.TermEffects {
					for i, le := range te.Effects {
						if te.Term == want.Term && slices.Equal(le.Levels, want.Levels) {
							got = &te.Effects[i]
						}
					}
				}
				if got == nil {
					t.Errorf("no effect interval for %s %v, which statsmodels fits", want.Term, want.Levels)
					continue
				}
				sameInterval(t, fmt.Sprintf("effect %s %v", want.Term, want.Levels), got.Interval, want.smInterval, rel)
			}
			for _, want := range sc.Contrasts {
				i := slices.IndexFunc(r.Contrasts, func(c Contrast) bool {
					return c.Factor == want.Factor && (c.A == want.A && c.B == want.B || c.A == want.B && c.B == want.A)
				})
				if i < 0 {
					t.Errorf("no contrast %s %s-%s", want.Factor, want.A, want.B)
					continue
				}
				got := r.Contrasts[i].Interval
				if r.Contrasts[i].A != want.A { // the other way round: B - A
					got.Estimate, got.Low, got.High = -got.Estimate, -got.High, -got.Low
				}
				sameInterval(t, fmt.Sprintf("contrast %s %s-%s", want.Factor, want.A, want.B), got, want.smInterval, rel)
			}
			t.Logf("intervals compared with statsmodels: the mean's, %d effects', %d contrasts'", len(sc.Effects), len(sc.Contrasts))

			sameResiduals(t, r, sm, rel)
		})
	}
}

// sameResiduals compares the residuals, their QQ plot and the diagnostics
// with statsmodels' fit and scipy's quantiles. Residuals scatter around
// zero, so they are compared to rel of the response's largest magnitude
// rather than to their own.
func sameResiduals(t *testing.T, r *Result, sm smResult, rel float64) {
	t.Helper()
	res := sm.Residuals
	if len(res.Resid) != r.N || len(r.Residuals) != r.N || len(res.QQResid) != r.N || len(r.QQ) != r.N {
		t.Fatalf("statsmodels has %d residuals and %d QQ points, numascope %d and %d, for %d observations",
			len(res.Resid), len(res.QQResid), len(r.Residuals), len(r.QQ), r.N)
	}
	scale := 0.0
	for _, x := range r.Residuals {
		scale = math.Max(scale, math.Abs(x.Observed))
	}
	tol := rel * scale
	bad := 0
	for i, x := range r.Residuals {
		if math.Abs(x.Predicted-res.Fitted[i]) > tol || math.Abs(x.Residual-res.Resid[i]) > tol {
			if bad++; bad <= 3 {
				t.Errorf("observation %d %v: predicted %.15g residual %.15g, statsmodels %.15g and %.15g",
					i, x.Levels, x.Predicted, x.Residual, res.Fitted[i], res.Resid[i])
			}
		}
	}
	for i, q := range r.QQ {
		if !relEq(q.Normal, res.QQNormal[i], rel) || math.Abs(q.Residual-res.QQResid[i]) > tol {
			if bad++; bad <= 3 {
				t.Errorf("QQ point %d: (%.15g, %.15g), scipy (%.15g, %.15g)", i, q.Normal, q.Residual, res.QQNormal[i], res.QQResid[i])
			}
		}
	}
	d := r.Diagnostics
	if res.QQCorrelation == nil || math.IsNaN(float64(d.QQCorrelation)) {
		t.Errorf("QQ correlation %v, numpy %v", d.QQCorrelation, res.QQCorrelation)
	} else if math.Abs(float64(d.QQCorrelation)-*res.QQCorrelation) > rel {
		t.Errorf("QQ correlation %.15g, numpy %.15g", float64(d.QQCorrelation), *res.QQCorrelation)
	}
	if math.Abs(d.MaxAbsResidual-res.MaxAbs) > tol || !relEq(d.ResponseRange, res.Range, rel) {
		t.Errorf("largest residual %.15g and range %.15g, numpy %.15g and %.15g", d.MaxAbsResidual, d.ResponseRange, res.MaxAbs, res.Range)
	}
}
