package experiment

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/stats"
)

// materialisedPlan is the plan as numascope built it before Plan became
// lazy: every run with its own levels, shuffled in one slice. Kept here to
// prove that the lazy plan orders runs exactly as before, so that a
// results file written by an earlier version resumes with the same run IDs.
func materialisedPlan(s *Spec) []Run {
	factors := s.AllFactors()
	cells := []map[string]string{{}}
	for _, f := range factors {
		var next []map[string]string
		for _, c := range cells {
			for _, l := range f.Levels {
				m := make(map[string]string, len(c)+1)
				for k, v := range c {
					m[k] = v
				}
				m[f.Name] = l
				next = append(next, m)
			}
		}
		cells = next
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6e756d6173636f70))
	var runs []Run
	warm := rng.Perm(len(cells))
	for i := 0; i < s.Warmup; i++ {
		runs = append(runs, s.run(cells[warm[i%len(warm)]], 0, true))
	}
	var measured []Run
	for _, c := range cells {
		for rep := 1; rep <= s.Replications; rep++ {
			measured = append(measured, s.run(c, rep, false))
		}
	}
	rng.Shuffle(len(measured), func(a, b int) { measured[a], measured[b] = measured[b], measured[a] })
	runs = append(runs, measured...)
	for i := range runs {
		runs[i].ID = i
	}
	return runs
}

func TestLazyPlanKeepsTheOrder(t *testing.T) {
	specs := []string{regimesSpec,
		"command = \"a {x} {y} {z}\"\nreplications = 4\nwarmup = 7\nseed = 9\n" +
			"[[factor]]\nname = \"x\"\nlevels = [1, 2, 3]\n[[factor]]\nname = \"y\"\nlevels = [\"p\", \"q\"]\n[[factor]]\nname = \"z\"\nlevels = [5, 6, 7, 8, 9]\n",
	}
	for _, text := range specs {
		s, err := Parse("/x/s.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(0); seed < 5; seed++ {
			s.Seed = seed
			got, want := allRuns(s.Plan()), materialisedPlan(s)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: lazy plan\n%v\ndiffers from the original order\n%v", seed, got, want)
			}
		}
	}
}

// TestSizeLimits: a spec beyond a limit is refused at once with a one-line
// error naming the limit and the value; one at the limit plans in bounded
// memory and time.
func TestSizeLimits(t *testing.T) {
	factor := func(name string, n int) string {
		var l []string
		for i := range n {
			l = append(l, fmt.Sprint(i))
		}
		return "[[factor]]\nname = \"" + name + "\"\nlevels = [" + strings.Join(l, ", ") + "]\n"
	}
	// twoLevels is a spec of k two-level factors.
	twoLevels := func(k int) string {
		cmd, fs := "a", ""
		for i := range k {
			cmd += fmt.Sprintf(" {f%d}", i)
			fs += factor(fmt.Sprintf("f%d", i), 2)
		}
		return "command = \"" + cmd + "\"\nreplications = 1\n" + fs
	}
	// At the analysis's limit: twelve two-level factors, 2^12 terms ×
	// 2^12 combinations, are MaxTermCells.
	if _, err := Parse("s.toml", []byte(twoLevels(12))); err != nil {
		t.Errorf("twelve two-level factors: %v", err)
	}
	for _, c := range []struct{ spec, want string }{
		{"command = \"a {x}\"\nreplications = 1000000000\n" + factor("x", 2),
			"s.toml:2: replications = 1000000000: more than the limit of 10000 replications"},
		{"command = \"a {x}\"\nreplications = 1\nwarmup = 1000000000\n" + factor("x", 2),
			"s.toml:3: warmup = 1000000000: more than the limit of 10000 warm-up runs"},
		{"command = \"a {x}\"\nreplications = 1\n" + factor("x", 1001),
			"factor x has 1001 levels: more than the limit of 1000 levels"},
		{"command = \"a {x} {y}\"\nreplications = 2\n" + factor("x", 1000) + factor("y", 1000),
			"the plan has 2000000 runs ((1000 × 1000) combinations of levels × 2 replications + 0 warm-up): more than the limit of 1000000 runs"},
		{"command = \"a {x} {y} {z} {w}\"\nreplications = 10000\nwarmup = 5\n" + factor("x", 1000) + factor("y", 1000) + factor("z", 1000) + factor("w", 1000),
			"the plan has more than 1000000 runs ((1000 × 1000 × 1000 × 1000) combinations"},
		{"command = \"a {x}\"\nreplications = 10000\nwarmup = 1\n" + factor("x", 100),
			"the plan has 1000001 runs"},
		// What the analysis would refuse after every run (internal/stats):
		// more factors than it takes, or more terms × combinations.
		{twoLevels(stats.MaxFactors + 1), fmt.Sprintf("%d factors: the analysis takes at most %d; vary fewer factors", stats.MaxFactors+1, stats.MaxFactors)},
		{twoLevels(13), fmt.Sprintf("13 factors with (2 × 2 × 2 × 2 × 2 × 2 × 2 × 2 × 2 × 2 × 2 × 2 × 2) combinations of levels: the analysis would hold 2^13 terms × 8192 combinations, more than its limit of %d; use fewer factors or levels", stats.MaxTermCells)},
	} {
		start := time.Now()
		_, err := Parse("s.toml", []byte(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("spec %.60q...: error %v, want one line containing %q", c.spec, err, c.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("refusing the spec took %v", d)
		}
	}

	// At the limit: a million runs plan in a few megabytes, not a map each.
	s, err := Parse("s.toml", []byte("command = \"a {x} {y}\"\nreplications = 1\n"+factor("x", 1000)+factor("y", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := s.Plan()
	runtime.ReadMemStats(&after)
	if p.Len() != MaxRuns {
		t.Fatalf("%d runs, want %d", p.Len(), MaxRuns)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("planning %d runs allocated %d MB", p.Len(), alloc>>20)
	}
	seen := map[string]bool{}
	for _, id := range []int{0, 1, MaxRuns / 2, MaxRuns - 1} {
		r := p.Run(id)
		if r.ID != id || r.Rep != 1 || r.Levels["x"] == "" || r.Levels["y"] == "" || seen[r.Label(s.AllFactors())] {
			t.Errorf("run %d = %+v", id, r)
		}
		seen[r.Label(s.AllFactors())] = true
	}
}
