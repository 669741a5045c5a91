package experiment

import (
	"math/rand/v2"
	"strings"
)

// Run is one planned run.
type Run struct {
	// ID is the run's position in the plan (0-based); results and
	// recordings are keyed by it.
	ID     int
	Warmup bool
	// Rep is the replication (1-based); 0 for a warm-up run.
	Rep int
	// Levels maps every factor (the regime included) to its level.
	Levels map[string]string
	// Regime is the run's regime, nil when the spec has none.
	Regime *Regime
}

// Label describes the run's levels as "regime=x size=y".
func (r Run) Label(factors []Factor) string {
	var parts []string
	for _, f := range factors {
		parts = append(parts, f.Name+"="+r.Levels[f.Name])
	}
	return strings.Join(parts, " ")
}

// Plan returns the runs in the order they are carried out: the warm-up runs
// (combinations picked at random), then every combination of levels times
// the replications, shuffled with the spec's seed. The order depends only
// on the spec, so a resumed experiment finds the same plan.
func (s *Spec) Plan() []Run {
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
	rng := rand.New(rand.NewPCG(s.Seed, 0x6e756d6173636f70)) // "numascop"
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

func (s *Spec) run(levels map[string]string, rep int, warmup bool) Run {
	r := Run{Levels: levels, Rep: rep, Warmup: warmup}
	if name, ok := levels[RegimeFactor]; ok {
		for i := range s.Regimes {
			if s.Regimes[i].Name == name {
				r.Regime = &s.Regimes[i]
				break
			}
		}
	}
	return r
}
