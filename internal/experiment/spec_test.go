package experiment

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// regimesSpec is the experiment: the known-answer workload under
// three regimes.
const regimesSpec = `# placement regimes
name = "regimes"
command = "firsttouch --{mode} --mb {mb} --settle 0 --seconds 1"
replications = 3
warmup = 1
seed = 42
interval = "100ms"
responses = ["wall_time", "total:vmstat.numa_hint_faults", "rate:node.numa_miss", "total:node.2.numa_hit"]

[[factor]]
name = "mb"
levels = [16, 32]

[[regime]]
name = "serial-first-touch"
policy = "first-touch"
vars = { mode = "serial" }

[[regime]]
name = "parallel-first-touch"
vars = { mode = "parallel" }

[[regime]]
name = "interleave"
policy = "interleave"
nodes = "0-3"
vars = { mode = "serial" }
`

func TestParseSpec(t *testing.T) {
	s, err := Parse("/x/regimes.toml", []byte(regimesSpec))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "regimes" || s.Replications != 3 || s.Warmup != 1 || s.Seed != 42 || s.Interval != 100*time.Millisecond {
		t.Errorf("spec %+v", s)
	}
	if len(s.Regimes) != 3 || s.Regimes[1].Policy != "first-touch" || s.Regimes[2].Nodes != "0-3" {
		t.Errorf("regimes %+v", s.Regimes)
	}
	if got := fmt.Sprint(s.AllFactors()); got != "[{regime [serial-first-touch parallel-first-touch interleave]} {mb [16 32]}]" {
		t.Errorf("factors %s", got)
	}
	if len(s.Responses) != 4 || s.Responses[2].Metric != Rate || s.Responses[2].Event != "node.numa_miss" {
		t.Errorf("responses %+v", s.Responses)
	}
	if s.Results != "/x/regimes.results.jsonl" || s.RunsDir != "/x/regimes.runs" {
		t.Errorf("results %s runs %s", s.Results, s.RunsDir)
	}
	r := Run{ID: 5, Rep: 2, Levels: map[string]string{"regime": "interleave", "mb": "32"}, Regime: &s.Regimes[2]}
	argv := s.Argv("/bin/numascope", r)
	want := `[/bin/numascope run --policy interleave --nodes 0-3 -- /bin/sh -c firsttouch --serial --mb 32 --settle 0 --seconds 1]`
	if fmt.Sprint(argv) != want {
		t.Errorf("argv %v\nwant %s", argv, want)
	}
}

// TestSpecErrors checks that each bad spec is refused with a one-line error
// naming the line at fault.
func TestSpecErrors(t *testing.T) {
	base := "command = \"app --size {size}\"\nreplications = 2\n[[factor]]\nname = \"size\"\nlevels = [1, 2]\n"
	for _, c := range []struct{ name, spec, want string }{
		{"unknown factor in template", "command = \"app --size {size} --threads {threads}\"\nreplications = 2\n[[factor]]\nname = \"size\"\nlevels = [1, 2]\n",
			"spec.toml:1: the command template uses {threads}, which is not a factor or regime variable (known: regime, rep, run, size)"},
		{"zero replications", "command = \"app --size {size}\"\n\nreplications = 0\n[[factor]]\nname = \"size\"\nlevels = [1, 2]\n",
			"spec.toml:3: replications = 0: every combination must run at least once"},
		{"no replications", "command = \"app {size}\"\n[[factor]]\nname = \"size\"\nlevels = [1, 2]\n", "no replications"},
		{"non-numeric response name", strings.Replace(base, "replications = 2\n", "replications = 2\nresponses = [\"wall_time\",\n  \"hostname\"]\n", 1),
			"spec.toml:4: response \"hostname\" is not a numeric response: want wall_time, exit_status, total:EVENT or rate:EVENT"},
		{"response not a string", strings.Replace(base, "replications = 2\n", "replications = 2\nresponses = [3]\n", 1),
			"spec.toml:3: response 3 is not a string"},
		{"response with a glob", strings.Replace(base, "replications = 2\n", "replications = 2\nresponses = [\"total:node.*.numa_miss\"]\n", 1),
			"spec.toml:3: response \"total:node.*.numa_miss\": total needs one event"},
		{"string replications", strings.Replace(base, "replications = 2", "replications = \"three\"", 1), "spec.toml:2:"},
		{"syntax", base + "[[factor]\n", "spec.toml:6:"},
		{"unknown key", base + "replicate = 3\n", "spec.toml:6: unknown key \"factor.replicate\""},
		{"unknown top key", "colour = 1\n" + base, "spec.toml:1: unknown key \"colour\""},
		{"one level", strings.Replace(base, "levels = [1, 2]", "levels = [1]", 1), "spec.toml:5: factor size has 1 level(s)"},
		{"unused factor", base + "[[factor]]\nname = \"threads\"\nlevels = [1, 2]\n", "spec.toml:7: factor threads is not used in the command template"},
		{"reserved factor", strings.Replace(base, "name = \"size\"", "name = \"regime\"", 1), "spec.toml:4: factor name \"regime\" is reserved"},
		{"one regime", base + "[[regime]]\nname = \"a\"\n", "spec.toml:6: one regime is no comparison"},
		{"bad policy", base + "[[regime]]\nname = \"a\"\npolicy = \"spread\"\n[[regime]]\nname = \"b\"\n", "spec.toml:8: regime a: policy \"spread\""},
		{"var missing", base + "[[regime]]\nname = \"a\"\nvars = { mode = \"x\" }\n[[regime]]\nname = \"b\"\n", "spec.toml:9: regime b does not set variable \"mode\""},
		{"negative warmup", strings.Replace(base, "replications = 2\n", "replications = 2\nwarmup = -1\n", 1), "spec.toml:3: warmup = -1"},
		{"bad interval", strings.Replace(base, "replications = 2\n", "replications = 2\ninterval = \"fast\"\n", 1), "spec.toml:3: interval \"fast\""},
		{"no command", "replications = 2\n", "no command"},
		{"no factors", "command = \"app\"\nreplications = 2\n", "no factors"},
	} {
		_, err := Parse("spec.toml", []byte(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant one containing %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", c.name, err)
		}
	}
}

// FuzzParseSpec: no spec makes Parse panic, errors are one line, and a
// spec that parses gives a balanced plan.
func FuzzParseSpec(f *testing.F) {
	f.Add(regimesSpec)
	f.Add("command = \"a {x}\"\nreplications = 1\n[[factor]]\nname = \"x\"\nlevels = [\"p\", \"q\"]\n")
	f.Add("command = \"a {rep}\"\nreplications = 2\n[[regime]]\nname = \"a\"\n[[regime]]\nname = \"b\"\npolicy = \"bind:1\"\n")
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse("spec.toml", []byte(spec))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		cells := 1
		for _, f := range s.AllFactors() {
			cells *= len(f.Levels)
		}
		if cells > 1000 || s.Replications > 100 || s.Warmup > 100 {
			return
		}
		plan := allRuns(s.Plan())
		if len(plan) != cells*s.Replications+s.Warmup {
			t.Fatalf("plan of %d runs for %d cells x %d + %d", len(plan), cells, s.Replications, s.Warmup)
		}
	})
}

func TestPlan(t *testing.T) {
	s, err := Parse("/x/regimes.toml", []byte(regimesSpec))
	if err != nil {
		t.Fatal(err)
	}
	plan := allRuns(s.Plan())
	if len(plan) != 1+3*2*3 {
		t.Fatalf("%d runs", len(plan))
	}
	if !plan[0].Warmup || plan[1].Warmup {
		t.Errorf("the warm-up run must come first")
	}
	count := map[string]int{}
	reps := map[string]map[int]bool{}
	for i, r := range plan {
		if r.ID != i {
			t.Errorf("run %d has ID %d", i, r.ID)
		}
		if r.Regime == nil || r.Regime.Name != r.Levels[RegimeFactor] {
			t.Errorf("run %d: regime %v for level %s", i, r.Regime, r.Levels[RegimeFactor])
		}
		if r.Warmup {
			continue
		}
		key := r.Label(s.AllFactors())
		count[key]++
		if reps[key] == nil {
			reps[key] = map[int]bool{}
		}
		reps[key][r.Rep] = true
	}
	if len(count) != 6 {
		t.Errorf("%d cells, want 6", len(count))
	}
	for k, n := range count {
		if n != 3 || len(reps[k]) != 3 {
			t.Errorf("cell %s: %d runs, reps %v", k, n, reps[k])
		}
	}
	// The order is random but reproducible: same seed, same plan; another
	// seed, another order.
	again := allRuns(s.Plan())
	for i := range plan {
		if plan[i].Label(s.AllFactors()) != again[i].Label(s.AllFactors()) || plan[i].Rep != again[i].Rep {
			t.Fatalf("the plan is not reproducible at run %d", i)
		}
	}
	s.Seed++
	other := allRuns(s.Plan())
	same := 0
	for i := range plan {
		if plan[i].Label(s.AllFactors()) == other[i].Label(s.AllFactors()) {
			same++
		}
	}
	if same == len(plan) {
		t.Errorf("seeds %d and %d give the same order", s.Seed-1, s.Seed)
	}
	// Not in the systematic order: a shuffle that left everything in place
	// would confound the factors with time.
	sorted := 0
	for i := 2; i < len(plan); i++ {
		if plan[i].Levels[RegimeFactor] == plan[i-1].Levels[RegimeFactor] {
			sorted++
		}
	}
	if sorted > len(plan)-4 {
		t.Errorf("the plan looks unshuffled: %d neighbours share a regime", sorted)
	}
}

// allRuns returns every run of p, in order.
func allRuns(p *Plan) []Run {
	runs := make([]Run, p.Len())
	for i := range runs {
		runs[i] = p.Run(i)
	}
	return runs
}
