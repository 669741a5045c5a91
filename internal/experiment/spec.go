// Package experiment runs full factorial experiments on NUMA placement and
// analyses them: a TOML spec names the factors and their levels, a command
// template, the placement regimes (a built-in factor carried out by
// `numascope run`), replications, warm-up runs and the responses. Every
// combination is run, replicated, in a seeded random order; every run is
// recorded by numascope; each run's result is appended to a results file as
// soon as it ends, so an interrupted experiment resumes where it stopped,
// never losing or repeating a run. The analysis (internal/stats) then says,
// per response, which factors matter and by how much.
//
// The package does not sample by itself: a Runner (the command line's, which
// wraps numascope's sampling session) carries out one run and returns its
// wall time, exit status and recording.
package experiment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/stats"
)

// RegimeFactor is the name of the built-in placement factor.
const RegimeFactor = "regime"

// Limits on the size of an experiment. A spec beyond them is refused when it
// is read, before anything is planned: a typo such as replications =
// 1000000000 must not make numascope eat memory until the machine swaps.
// They are far beyond what can be run (a million runs of one second each
// take eleven days) and keep the plan a few megabytes.
const (
	MaxReplications = 10000     // replications of each combination of levels
	MaxLevels       = 1000      // levels of one factor, and [[regime]] tables
	MaxWarmup       = 10000     // warm-up runs
	MaxRuns         = 1_000_000 // runs in all: combinations × replications + warm-up
)

// Spec is a parsed experiment spec.
type Spec struct {
	// Path is the spec file; Dir its directory, against which relative paths
	// in the spec are resolved.
	Path, Dir string
	Name      string
	// Command is the command template: {NAME} is replaced by the level of
	// factor NAME, by a regime variable, or by {regime}, {rep}, {run}.
	Command      string
	Replications int
	Warmup       int
	Seed         uint64
	Interval     time.Duration
	Events       []string
	// DefaultEvents is true when the spec names no events: Events is then
	// DefaultEvents, which the caller may narrow to what the machine has.
	DefaultEvents bool
	Responses     []Response
	Confidence    float64
	Log           bool
	// Timeout bounds one run (0: none).
	Timeout time.Duration
	// Factors are the user's factors, in spec order.
	Factors []Factor
	// Regimes are the levels of the built-in regime factor; nil when the
	// spec has no [[regime]] tables (then there is no regime factor).
	Regimes []Regime
	// Results and RunsDir are where results and recordings go.
	Results, RunsDir string
	// Hash identifies the spec's content, so a results file is only ever
	// resumed by the spec that started it.
	Hash string
}

// Factor is a user factor.
type Factor struct {
	Name   string   `json:"name"`
	Levels []string `json:"levels"`
}

// Regime is one placement regime: the options of `numascope run` and the
// template variables it sets.
type Regime struct {
	// Line is the line of the regime's table in the spec, for messages.
	Line           int
	Name           string
	Policy         string
	CPUs           string
	Nodes          string
	ThreadsPerNode int
	Vars           map[string]string
}

// RunArgs returns the `numascope run` options of the regime.
func (r Regime) RunArgs() []string {
	args := []string{"--policy", r.Policy}
	if r.CPUs != "" {
		args = append(args, "--cpus", r.CPUs)
	}
	if r.Nodes != "" {
		args = append(args, "--nodes", r.Nodes)
	}
	if r.ThreadsPerNode > 0 {
		args = append(args, "--threads-per-node", strconv.Itoa(r.ThreadsPerNode))
	}
	return args
}

// Metric is what a response measures.
type Metric string

// The metrics.
const (
	WallTime   Metric = "wall_time"   // seconds from start to exit
	ExitStatus Metric = "exit_status" // the command's exit status
	Total      Metric = "total"       // an event's total over the run (counter) or mean level (gauge)
	Rate       Metric = "rate"        // an event's total divided by the wall time
)

// Response is one measured response.
type Response struct {
	// Name is how the response is written: "wall_time", "total:EVENT".
	Name   string
	Metric Metric
	// Event is "sensor.event" (summed over nodes) or "sensor.N.event".
	Event string
	// Minus, when set, is an event subtracted from Event: for example
	// remote hinting faults are total:vmstat.numa_hint_faults-vmstat.numa_hint_faults_local.
	Minus string
}

// rawSpec mirrors the TOML.
type rawSpec struct {
	Name         string   `toml:"name"`
	Command      string   `toml:"command"`
	Replications *int     `toml:"replications"`
	Warmup       int      `toml:"warmup"`
	Seed         *int64   `toml:"seed"`
	Interval     string   `toml:"interval"`
	Events       []string `toml:"events"`
	Responses    []any    `toml:"responses"`
	Confidence   float64  `toml:"confidence"`
	Log          bool     `toml:"log"`
	Timeout      string   `toml:"timeout"`
	Results      string   `toml:"results"`
	Runs         string   `toml:"runs"`
	Factor       []struct {
		Name   string `toml:"name"`
		Levels []any  `toml:"levels"`
	} `toml:"factor"`
	Regime []struct {
		Name           string            `toml:"name"`
		Policy         string            `toml:"policy"`
		CPUs           string            `toml:"cpus"`
		Nodes          string            `toml:"nodes"`
		ThreadsPerNode int               `toml:"threads_per_node"`
		Vars           map[string]string `toml:"vars"`
	} `toml:"regime"`
}

// DefaultEvents are recorded when the spec names none: the NUMA counters
// that placement studies compare.
var DefaultEvents = []string{"node.*.numa_hit", "node.*.numa_miss", "node.*.numa_foreign", "node.*.local_node",
	"node.*.other_node", "node.*.interleave_hit", "vmstat.numa_hint_faults", "vmstat.numa_hint_faults_local",
	"vmstat.numa_pages_migrated"}

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	placeRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// specError is an error at a line of the spec.
func specError(path string, line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		return fmt.Errorf("%s:%d: %s", path, line, msg)
	}
	return fmt.Errorf("%s: %s", path, msg)
}

// locator finds the line of a key in the spec's text. The TOML decoder
// does not expose positions, and a spec is small: a scan is enough.
type locator struct{ lines []string }

func newLocator(data []byte) *locator {
	return &locator{lines: strings.Split(string(data), "\n")}
}

// key returns the line of `key =` in the index-th [[table]] (table "" is
// the top level), or of the table header when key is "", or 0.
func (l *locator) key(table string, index int, key string) int {
	start, end := 0, len(l.lines)
	if table != "" {
		n := -1
		start = -1
		for i, s := range l.lines {
			if strings.TrimSpace(s) == "[["+table+"]]" {
				n++
				if n == index {
					start = i
					if key == "" {
						return i + 1
					}
					continue
				}
			}
			if start >= 0 && i > start && strings.HasPrefix(strings.TrimSpace(s), "[") {
				end = i
				break
			}
		}
		if start < 0 {
			return 0
		}
	} else {
		for i, s := range l.lines {
			if strings.HasPrefix(strings.TrimSpace(s), "[") {
				end = i
				break
			}
		}
	}
	re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
	for i := start; i < end; i++ {
		if re.MatchString(l.lines[i]) {
			return i + 1
		}
	}
	return 0
}

// text returns the first line at or after from holding s, or from.
func (l *locator) text(from int, s string) int {
	for i := max(from-1, 0); i < len(l.lines); i++ {
		if strings.Contains(l.lines[i], s) {
			return i + 1
		}
	}
	return from
}

var tomlLineRE = regexp.MustCompile(`line (\d+)`)

// Load reads and checks a spec. Every error names the spec and, where it
// has one, the line.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the spec: %w", err)
	}
	return Parse(path, data)
}

// Parse checks a spec's text; path is for messages and relative paths.
// Each step below checks one part of the spec and fills its part of the
// Spec; the first error stops the parse.
func Parse(path string, data []byte) (*Spec, error) {
	raw, md, err := decodeSpec(path, data)
	if err != nil {
		return nil, err
	}
	p := &specParser{path: path, raw: raw, md: md, loc: newLocator(data), factorLine: map[string]int{}, vars: map[string]bool{}}
	if err := p.undecoded(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s := &Spec{Path: path, Dir: filepath.Dir(abs), Name: raw.Name, Command: strings.TrimSpace(raw.Command),
		Warmup: raw.Warmup, Confidence: raw.Confidence, Log: raw.Log, Events: raw.Events}
	sum := sha256.Sum256(data)
	s.Hash = hex.EncodeToString(sum[:8])
	for _, step := range []func(*Spec) error{p.scalars, p.factors, p.regimes, p.design, p.template, p.responses} {
		if err := step(s); err != nil {
			return nil, err
		}
	}
	p.outputs(s)
	return s, nil
}

// decodeSpec decodes the TOML, turning the decoder's errors into one line
// naming the spec's line.
func decodeSpec(path string, data []byte) (*rawSpec, toml.MetaData, error) {
	raw := &rawSpec{}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(raw)
	if err == nil {
		return raw, md, nil
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line := pe.Position.Line
		if strings.Contains(pe.Message, `got '\n'`) && line > 1 {
			line-- // the parser stood on the next line when it found the end of this one
		}
		return nil, md, specError(path, line, "%s", strings.ReplaceAll(pe.Message, "\n", `\n`))
	}
	// Type errors carry "line N" in their text.
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if m := tomlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg = strings.TrimSpace(strings.Replace(msg, m[0], "", 1))
		return nil, md, specError(path, line, "%s", msg)
	}
	return nil, md, specError(path, 0, "%s", msg)
}

// specParser carries what the checks of a spec share: the decoded TOML,
// the locator for line numbers, and the names the factor and regime
// checks find, which the template check needs.
type specParser struct {
	path       string
	raw        *rawSpec
	md         toml.MetaData // for the keys rawSpec does not know
	loc        *locator
	factorLine map[string]int  // factor name -> line of its definition
	vars       map[string]bool // regime variable names
}

// errAt is specError for this spec.
func (p *specParser) errAt(line int, format string, args ...any) error {
	return specError(p.path, line, format, args...)
}

// undecoded refuses keys the spec format does not know.
func (p *specParser) undecoded() error {
	und := p.md.Undecoded()
	if len(und) == 0 {
		return nil
	}
	k := und[0]
	line := 0
	if len(k) == 1 {
		line = p.loc.key("", 0, k[0])
	} else {
		line = p.loc.text(1, k[len(k)-1])
	}
	return p.errAt(line, "unknown key %q (known: name, command, replications, warmup, seed, interval, events, responses, confidence, log, timeout, results, runs, [[factor]], [[regime]])", k.String())
}

// scalars checks the top-level settings and fills in their defaults.
func (p *specParser) scalars(s *Spec) error {
	raw, top := p.raw, func(key string) int { return p.loc.key("", 0, key) }
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(p.path), filepath.Ext(p.path))
	}
	if s.Command == "" {
		return p.errAt(top("command"), "no command: give the command template, e.g. command = \"./app --size {size}\"")
	}
	if raw.Replications == nil {
		return p.errAt(0, "no replications: say how many times to run each combination, e.g. replications = 3")
	}
	if s.Replications = *raw.Replications; s.Replications < 1 {
		return p.errAt(top("replications"), "replications = %d: every combination must run at least once", s.Replications)
	}
	if s.Replications > MaxReplications {
		return p.errAt(top("replications"), "replications = %d: more than the limit of %d replications of each combination; a handful (3 to 10) is usual", s.Replications, MaxReplications)
	}
	if s.Warmup < 0 {
		return p.errAt(top("warmup"), "warmup = %d: cannot be negative", s.Warmup)
	}
	if s.Warmup > MaxWarmup {
		return p.errAt(top("warmup"), "warmup = %d: more than the limit of %d warm-up runs", s.Warmup, MaxWarmup)
	}
	s.Seed = 1
	if raw.Seed != nil {
		s.Seed = uint64(*raw.Seed)
	}
	s.Interval = 200 * time.Millisecond
	if raw.Interval != "" {
		var err error
		if s.Interval, err = sampler.ParseInterval(raw.Interval); err != nil {
			return p.errAt(top("interval"), "interval %q: %v", raw.Interval, err)
		}
	}
	if raw.Timeout != "" {
		var err error
		if s.Timeout, err = time.ParseDuration(raw.Timeout); err != nil || s.Timeout <= 0 {
			return p.errAt(top("timeout"), "timeout %q: want a duration such as 10m", raw.Timeout)
		}
	}
	if s.Confidence == 0 {
		s.Confidence = 0.90
	}
	if !(s.Confidence > 0 && s.Confidence < 1) {
		return p.errAt(top("confidence"), "confidence = %v: want a level in (0, 1), e.g. 0.90", s.Confidence)
	}
	if len(s.Events) == 0 {
		s.Events, s.DefaultEvents = DefaultEvents, true
	}
	return nil
}

// reserved reports whether name is one of the built-in template names.
func reserved(name string) bool { return name == RegimeFactor || name == "rep" || name == "run" }

// factors checks the [[factor]] tables: names, and levels as strings.
func (p *specParser) factors(s *Spec) error {
	for i, f := range p.raw.Factor {
		line := p.loc.key("factor", i, "name")
		if line == 0 {
			line = p.loc.key("factor", i, "")
		}
		if !nameRE.MatchString(f.Name) {
			return p.errAt(line, "factor name %q: want a name of letters, digits and _", f.Name)
		}
		if reserved(f.Name) {
			return p.errAt(line, "factor name %q is reserved (regimes go in [[regime]] tables)", f.Name)
		}
		if _, dup := p.factorLine[f.Name]; dup {
			return p.errAt(line, "factor %q is defined twice", f.Name)
		}
		p.factorLine[f.Name] = line
		ll := p.loc.key("factor", i, "levels")
		if ll == 0 {
			ll = line
		}
		fac, err := p.levels(f.Name, f.Levels, ll)
		if err != nil {
			return err
		}
		s.Factors = append(s.Factors, fac)
	}
	return nil
}

// levels turns one factor's TOML levels (strings, numbers or booleans)
// into distinct non-empty strings; line is where they are written.
func (p *specParser) levels(name string, levels []any, line int) (Factor, error) {
	if len(levels) < 2 {
		return Factor{}, p.errAt(line, "factor %s has %d level(s): a factor needs at least 2", name, len(levels))
	}
	if len(levels) > MaxLevels {
		return Factor{}, p.errAt(line, "factor %s has %d levels: more than the limit of %d levels of a factor", name, len(levels), MaxLevels)
	}
	fac := Factor{Name: name}
	dup := map[string]bool{}
	for _, v := range levels {
		var l string
		switch v := v.(type) {
		case string:
			l = v
		case int64:
			l = strconv.FormatInt(v, 10)
		case float64:
			l = strconv.FormatFloat(v, 'g', -1, 64)
		case bool:
			l = strconv.FormatBool(v)
		default:
			return Factor{}, p.errAt(line, "factor %s: level %v is not a string or number", name, v)
		}
		if l == "" || dup[l] {
			return Factor{}, p.errAt(line, "factor %s: level %q is empty or repeated", name, l)
		}
		dup[l] = true
		fac.Levels = append(fac.Levels, l)
	}
	return fac, nil
}

// regimes checks the [[regime]] tables one by one, then that they are
// at least two and each sets every variable that another sets: the
// template would otherwise get a hole for some runs.
func (p *specParser) regimes(s *Spec) error {
	names := map[string]bool{}
	for i := range p.raw.Regime {
		reg, err := p.regime(i, names)
		if err != nil {
			return err
		}
		s.Regimes = append(s.Regimes, reg)
	}
	if len(s.Regimes) > MaxLevels {
		return p.errAt(p.loc.key("regime", MaxLevels, ""), "%d [[regime]] tables: more than the limit of %d regimes", len(s.Regimes), MaxLevels)
	}
	if len(s.Regimes) == 1 {
		return p.errAt(p.loc.key("regime", 0, ""), "one regime is no comparison: give at least 2 [[regime]] tables, or none")
	}
	for k := range p.vars {
		for i, r := range s.Regimes {
			if _, ok := r.Vars[k]; !ok {
				return p.errAt(p.loc.key("regime", i, ""), "regime %s does not set variable %q, which other regimes set", r.Name, k)
			}
		}
	}
	return nil
}

// regime checks the i-th [[regime]] table; names holds the names seen so far.
func (p *specParser) regime(i int, names map[string]bool) (Regime, error) {
	r := p.raw.Regime[i]
	line := p.loc.key("regime", i, "name")
	if line == 0 {
		line = p.loc.key("regime", i, "")
	}
	if r.Name == "" || strings.ContainsAny(r.Name, ",\n\"") {
		return Regime{}, p.errAt(line, "regime %d needs a name (no commas or quotes)", i+1)
	}
	if names[r.Name] {
		return Regime{}, p.errAt(line, "regime %q is defined twice", r.Name)
	}
	names[r.Name] = true
	reg := Regime{Line: p.loc.key("regime", i, ""), Name: r.Name, Policy: r.Policy, CPUs: r.CPUs, Nodes: r.Nodes, ThreadsPerNode: r.ThreadsPerNode, Vars: r.Vars}
	if reg.Policy == "" {
		reg.Policy = "first-touch"
	}
	if !validPolicySyntax(reg.Policy) {
		return Regime{}, p.errAt(p.loc.key("regime", i, "policy"), "regime %s: policy %q: want first-touch, interleave[:NODES], bind:NODES, preferred:NODE or local", r.Name, reg.Policy)
	}
	if reg.CPUs != "" && reg.Nodes != "" {
		return Regime{}, p.errAt(line, "regime %s: cpus and nodes are exclusive", r.Name)
	}
	if reg.ThreadsPerNode < 0 {
		return Regime{}, p.errAt(p.loc.key("regime", i, "threads_per_node"), "regime %s: threads_per_node cannot be negative", r.Name)
	}
	for k := range reg.Vars {
		if !nameRE.MatchString(k) {
			return Regime{}, p.errAt(p.loc.text(line, k), "regime %s: variable name %q: want letters, digits and _", r.Name, k)
		}
		if _, clash := p.factorLine[k]; clash || reserved(k) {
			return Regime{}, p.errAt(p.loc.text(line, k), "regime %s: variable %q has the name of a factor", r.Name, k)
		}
		p.vars[k] = true
	}
	return reg, nil
}

// design checks that there is something to vary and that the plan is not
// too big to run.
func (p *specParser) design(s *Spec) error {
	if len(s.Factors) == 0 && len(s.Regimes) == 0 {
		return p.errAt(0, "no factors: give [[factor]] tables with name and levels, [[regime]] tables, or both")
	}
	return s.checkSize()
}

// template checks that the command template names only known things and
// uses every factor: a factor that changes nothing would be analysed as
// noise.
func (p *specParser) template(s *Spec) error {
	cl := p.loc.key("", 0, "command")
	used := map[string]bool{}
	for _, m := range placeRE.FindAllStringSubmatch(s.Command, -1) {
		name := m[1]
		if _, ok := p.factorLine[name]; ok || p.vars[name] || reserved(name) {
			used[name] = true
			continue
		}
		known := []string{RegimeFactor, "rep", "run"}
		for k := range p.factorLine {
			known = append(known, k)
		}
		for k := range p.vars {
			known = append(known, k)
		}
		sort.Strings(known)
		return p.errAt(cl, "the command template uses {%s}, which is not a factor or regime variable (known: %s)", name, strings.Join(known, ", "))
	}
	for _, f := range s.Factors {
		if !used[f.Name] {
			return p.errAt(p.factorLine[f.Name], "factor %s is not used in the command template: add {%s} to it", f.Name, f.Name)
		}
	}
	return nil
}

// responses checks the responses list, wall time when it is empty.
func (p *specParser) responses(s *Spec) error {
	rl := p.loc.key("", 0, "responses")
	if len(p.raw.Responses) == 0 {
		s.Responses = []Response{{Name: "wall_time", Metric: WallTime}}
	}
	seen := map[string]bool{}
	for _, v := range p.raw.Responses {
		str, ok := v.(string)
		if !ok {
			return p.errAt(rl, "response %v is not a string: want wall_time, exit_status, total:EVENT or rate:EVENT", v)
		}
		r, err := parseResponse(str)
		if err != nil {
			return p.errAt(p.loc.text(max(rl, 1), str), "%v", err)
		}
		if seen[r.Name] {
			return p.errAt(p.loc.text(max(rl, 1), str), "response %s is listed twice", r.Name)
		}
		seen[r.Name] = true
		s.Responses = append(s.Responses, r)
	}
	return nil
}

// outputs places the results file and the runs directory, relative paths
// beside the spec.
func (p *specParser) outputs(s *Spec) {
	resolve := func(path, def string) string {
		if path == "" {
			path = def
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.Dir, path)
		}
		return path
	}
	base := strings.TrimSuffix(filepath.Base(p.path), filepath.Ext(p.path))
	s.Results = resolve(p.raw.Results, base+".results.jsonl")
	s.RunsDir = resolve(p.raw.Runs, base+".runs")
}

// checkSize refuses a plan of more than MaxRuns runs, counting without
// overflow: the product of the level counts is cut off as soon as it alone
// passes the limit.
func (s *Spec) checkSize() error {
	cells := 1
	var counts []string
	for _, f := range s.AllFactors() {
		counts = append(counts, strconv.Itoa(len(f.Levels)))
		if cells <= MaxRuns {
			cells *= len(f.Levels) // at most MaxRuns × MaxLevels: no overflow
		}
	}
	if cells > MaxRuns || cells*s.Replications+s.Warmup > MaxRuns {
		total := "more than " + strconv.Itoa(MaxRuns)
		if cells <= MaxRuns {
			total = strconv.Itoa(cells*s.Replications + s.Warmup)
		}
		return specError(s.Path, 0, "the plan has %s runs ((%s) combinations of levels × %d replications + %d warm-up): more than the limit of %d runs; use fewer levels or replications",
			total, strings.Join(counts, " × "), s.Replications, s.Warmup, MaxRuns)
	}
	// The analysis (internal/stats) refuses a design past its limits only
	// once every run is done: the same limits here, before the first run.
	// cells is at most MaxRuns here, and the terms at most 2^MaxFactors.
	if k := len(counts); k > stats.MaxFactors {
		return specError(s.Path, 0, "%d factors: the analysis takes at most %d; vary fewer factors at once (one experiment per group of factors)", k, stats.MaxFactors)
	} else if terms := 1 << k; terms*cells > stats.MaxTermCells {
		return specError(s.Path, 0, "%d factors with (%s) combinations of levels: the analysis would hold 2^%d terms × %d combinations, more than its limit of %d; use fewer factors or levels",
			k, strings.Join(counts, " × "), k, cells, stats.MaxTermCells)
	}
	return nil
}

// validPolicySyntax checks the shape of a policy; the nodes are checked
// against the machine by `numascope run` (and by CheckRegimes).
func validPolicySyntax(p string) bool {
	name, _, _ := strings.Cut(p, ":")
	switch name {
	case "first-touch", "default", "local", "interleave", "bind", "membind", "preferred":
		return true
	}
	return false
}

// parseResponse parses "wall_time", "exit_status", "total:EVENT" or
// "rate:EVENT".
func parseResponse(s string) (Response, error) {
	s = strings.TrimSpace(s)
	metric, event, hasEvent := strings.Cut(s, ":")
	r := Response{Name: s, Metric: Metric(metric), Event: event}
	switch r.Metric {
	case WallTime, ExitStatus:
		if hasEvent {
			return r, fmt.Errorf("response %q: %s takes no event", s, metric)
		}
		return r, nil
	case Total, Rate:
		ev, minus, hasMinus := strings.Cut(event, "-")
		r.Event, r.Minus = ev, minus
		for _, e := range []string{ev, minus} {
			if e == minus && !hasMinus {
				continue
			}
			parts := strings.Split(e, ".")
			if !hasEvent || len(parts) < 2 || slices.Contains(parts, "") || strings.ContainsAny(e, "*?[") {
				return r, fmt.Errorf("response %q: %s needs one event (or EVENT-EVENT), e.g. %s:node.numa_miss or %s:vmstat.numa_hint_faults", s, metric, metric, metric)
			}
		}
		return r, nil
	}
	return r, fmt.Errorf("response %q is not a numeric response: want wall_time, exit_status, total:EVENT or rate:EVENT", s)
}

// AllFactors returns the factors of the analysis: the regime first (when
// there are regimes), then the user's.
func (s *Spec) AllFactors() []Factor {
	var out []Factor
	if len(s.Regimes) > 0 {
		f := Factor{Name: RegimeFactor}
		for _, r := range s.Regimes {
			f.Levels = append(f.Levels, r.Name)
		}
		out = append(out, f)
	}
	return append(out, s.Factors...)
}

// Expand fills the command template for one run.
func (s *Spec) Expand(levels map[string]string, regime *Regime, rep, run int) string {
	return placeRE.ReplaceAllStringFunc(s.Command, func(m string) string {
		name := m[1 : len(m)-1]
		switch name {
		case "rep":
			return strconv.Itoa(rep)
		case "run":
			return strconv.Itoa(run)
		case RegimeFactor:
			if regime != nil {
				return regime.Name
			}
		}
		if v, ok := levels[name]; ok {
			return v
		}
		if regime != nil {
			if v, ok := regime.Vars[name]; ok {
				return v
			}
		}
		return m
	})
}
