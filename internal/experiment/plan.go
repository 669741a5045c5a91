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

// Plan is the order of an experiment's runs. It holds one 32-bit index per
// run, not the runs themselves: Run builds a run when it is needed, so that
// the plan of a large experiment (up to MaxRuns) stays a few megabytes, and
// a dry run prints it as it goes.
type Plan struct {
	spec    *Spec
	factors []Factor
	warm    []uint32 // the cell of each warm-up run
	order   []uint32 // measured runs: cell*Replications + rep-1, in run order
}

// Plan returns the runs in the order they are carried out: the warm-up runs
// (combinations picked at random), then every combination of levels times
// the replications, shuffled with the spec's seed. The order depends only
// on the spec, so a resumed experiment finds the same plan; it is the order
// numascope has always used for a spec (cells in factor order, the last
// factor varying fastest, then the same random draws), so results files
// written by earlier versions resume correctly. Parse has checked that the
// plan has at most MaxRuns runs.
func (s *Spec) Plan() *Plan {
	factors := s.AllFactors()
	cells := 1
	for _, f := range factors {
		cells *= len(f.Levels)
	}
	p := &Plan{spec: s, factors: factors}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6e756d6173636f70)) // "numascop"
	warm := rng.Perm(cells)
	p.warm = make([]uint32, s.Warmup)
	for i := range p.warm {
		p.warm[i] = uint32(warm[i%len(warm)])
	}
	p.order = make([]uint32, cells*s.Replications)
	for i := range p.order {
		p.order[i] = uint32(i)
	}
	rng.Shuffle(len(p.order), func(a, b int) { p.order[a], p.order[b] = p.order[b], p.order[a] })
	return p
}

// Len returns the number of runs, warm-up runs included.
func (p *Plan) Len() int { return len(p.warm) + len(p.order) }

// Run returns the run with the given ID, 0 <= id < Len().
func (p *Plan) Run(id int) Run {
	if id < len(p.warm) {
		r := p.spec.run(p.levels(int(p.warm[id])), 0, true)
		r.ID = id
		return r
	}
	k := int(p.order[id-len(p.warm)])
	reps := p.spec.Replications
	r := p.spec.run(p.levels(k/reps), k%reps+1, false)
	r.ID = id
	return r
}

// levels returns the levels of cell c: c's digits in the mixed radix of
// the factors' level counts, the last factor least significant.
func (p *Plan) levels(c int) map[string]string {
	m := make(map[string]string, len(p.factors))
	for i := len(p.factors) - 1; i >= 0; i-- {
		f := p.factors[i]
		m[f.Name] = f.Levels[c%len(f.Levels)]
		c /= len(f.Levels)
	}
	return m
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
