package sampler

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/suggest"
)

// DefaultEvents are sampled when -e is not given: where pages are allocated
// (summed from every node, or per node with --discrete), what NUMA balancing
// does, free memory, and how busy the CPUs are.
var DefaultEvents = []string{
	"node.numa_hit", "node.numa_miss", "node.numa_foreign",
	"vmstat.numa_hint_faults", "vmstat.numa_hint_faults_local", "vmstat.numa_pages_migrated", "vmstat.pgfault",
	"node.MemFree", "cpu.user", "cpu.system", "cpu.idle", "cpu.iowait",
}

// Entry is one sensor as the catalog found it: opened and present, or absent
// with the reason.
type Entry struct {
	Name    string
	Sensor  sensor.Sensor // nil when absent
	Err     error         // why the sensor is absent
	Sources []string
	Events  []sensor.Event
}

// Present reports whether the sensor opened.
func (e *Entry) Present() bool { return e.Err == nil }

// Catalog holds every registered sensor, opened against one environment.
type Catalog struct {
	Entries []*Entry
}

// Open opens the named sensors (all registered ones when names is empty). A
// sensor that fails to open stays in the catalog as absent; it never stops the
// others.
func Open(env sensor.Env, names ...string) *Catalog {
	return OpenWith(env, sensor.Options{}, names...)
}

// OpenWith is Open with the sensors made with opts (sensor.Options: the
// settings that only some sensors read, such as the perf events to offer).
func OpenWith(env sensor.Env, opts sensor.Options, names ...string) *Catalog {
	if len(names) == 0 {
		names = sensor.Names()
	}
	c := &Catalog{}
	for _, name := range names {
		e := &Entry{Name: name}
		s, ok := sensor.New(name, opts)
		if !ok {
			e.Err = fmt.Errorf("no sensor named %q (known: %s)", name, strings.Join(sensor.Names(), ", "))
		} else if err := s.Open(env); err != nil {
			e.Err = err
			_ = s.Close()
		} else {
			e.Sensor, e.Sources, e.Events = s, s.Sources(), s.Events()
		}
		c.Entries = append(c.Entries, e)
	}
	return c
}

// Entry returns the sensor with the given name, or nil.
func (c *Catalog) Entry(name string) *Entry {
	for _, e := range c.Entries {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// Available returns the patterns whose sensor is present, so that default
// event lists degrade gracefully on a machine that lacks a sensor. Patterns
// without a sensor part are kept.
func (c *Catalog) Available(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		name, _, qualified := strings.Cut(p, ".")
		if e := c.Entry(name); !qualified || (e != nil && e.Present()) {
			out = append(out, p)
		}
	}
	return out
}

// ExpandPresets replaces each "@NAME" pattern (e.g. @numa-traffic) with the
// events that the present sensors define for that preset.
func (c *Catalog) ExpandPresets(patterns []string) ([]string, error) {
	present := map[string]sensor.Sensor{}
	for _, e := range c.Entries {
		if e.Present() {
			present[e.Name] = e.Sensor
		}
	}
	return sensor.ExpandPresets(patterns, present)
}

// Close closes every present sensor.
func (c *Catalog) Close() error {
	var errs []error
	for _, e := range c.Entries {
		if e.Sensor != nil {
			errs = append(errs, e.Sensor.Close())
		}
	}
	return errors.Join(errs...)
}

// Column is one output value per sample: an event summed over some sources,
// or of a single source.
type Column struct {
	// Name is "sensor.event" for a column that sums all sources and
	// "sensor.SOURCE.event" for a column of one source.
	Name    string
	Sensor  string
	Event   sensor.Event
	Sources []string
	// Max is the sum of Event.Max over Sources, 0 when unknown.
	Max float64
	// Per, when set, is the counter this counter column is shown per unit
	// of (e.g. per cycle), instead of per second; see Catalog.Per.
	Per *Column

	entry  *Entry
	event  int   // index into entry.Events
	source []int // indexes into entry.Sources
}

// Heading is the short form used as a column heading: the mnemonic, with
// "/SOURCE" appended for a column of one named source (one node's).
func (c *Column) Heading() string {
	if c.PerSource() {
		return c.Event.Name + "/" + c.Sources[0]
	}
	return c.Event.Name
}

// PerSource reports whether the column is one source's, named
// SENSOR.SOURCE.EVENT, rather than a sum over the sensor's sources.
func (c *Column) PerSource() bool {
	return c.Name != c.Sensor+"."+c.Event.Name
}

// Select resolves comma-separated event patterns to columns. Each pattern is
// one of
//
//	EVENT               an event of any sensor, e.g. numa_hit or numa_*; when
//	                    several sensors have it, the first in catalog order
//	SENSOR.EVENT        e.g. vmstat.numa_hint_faults
//	SENSOR.SOURCE.EVENT one source of a sensor, e.g. node.1.numa_miss or node.*.numa_miss
//
// where every part may be a glob. Without a source part, an event is summed
// over its sensor's sources, unless discrete is set, which gives one column
// per source. An unknown name is an error that suggests the closest names.
func (c *Catalog) Select(patterns []string, discrete bool) ([]*Column, error) {
	var cols []*Column
	seen := map[string]bool{}
	// add makes one column. perSource says the user asked for sources one
	// by one (a source part, or --discrete): such a column is named after
	// its source even where the sensor has only one, so that the name
	// selected is the name returned on a one-node machine as on a
	// four-node one (node.0.numa_hit stays node.0.numa_hit). A sensor
	// whose only source is unnamed (vmstat) has no per-source name.
	add := func(e *Entry, ev int, srcs []int, perSource bool) {
		col := &Column{Sensor: e.Name, Event: e.Events[ev], entry: e, event: ev, source: srcs}
		summed := len(srcs) == len(e.Sources) && (len(srcs) != 1 || !perSource || e.Sources[srcs[0]] == "")
		for _, s := range srcs {
			col.Sources = append(col.Sources, e.Sources[s])
			if s < len(col.Event.Max) {
				col.Max += col.Event.Max[s]
			}
		}
		if summed {
			col.Name = e.Name + "." + col.Event.Name
		} else {
			col.Name = e.Name + "." + e.Sources[srcs[0]] + "." + col.Event.Name
		}
		if !seen[col.Name] {
			seen[col.Name] = true
			cols = append(cols, col)
		}
	}
	for _, pat := range patterns {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			continue
		}
		parts := strings.Split(pat, ".")
		var sensPat, srcPat, evPat string
		switch len(parts) {
		case 1:
			sensPat, srcPat, evPat = "*", "", parts[0]
		case 2:
			sensPat, srcPat, evPat = parts[0], "", parts[1]
		case 3:
			sensPat, srcPat, evPat = parts[0], parts[1], parts[2]
		default:
			return nil, fmt.Errorf("bad event %q: use EVENT, SENSOR.EVENT or SENSOR.SOURCE.EVENT", pat)
		}
		for _, p := range []string{sensPat, srcPat, evPat} {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("bad event pattern %q: %v", pat, err)
			}
		}
		matched := false
		var absent []*Entry
		// A bare event name that several sensors share (node.numa_hit and
		// vmstat.numa_hit count the same pages) selects it once, from the
		// first sensor in catalog order that has it.
		taken := map[string]bool{}
		for _, e := range c.Entries {
			if ok, _ := path.Match(sensPat, e.Name); !ok {
				continue
			}
			if !e.Present() {
				absent = append(absent, e)
				continue
			}
			for ev := range e.Events {
				if ok, _ := path.Match(evPat, e.Events[ev].Name); !ok {
					continue
				}
				if why := e.Events[ev].Unavailable; why != "" {
					if isGlob(evPat) {
						continue // globs take what can be counted here
					}
					return nil, fmt.Errorf("event %s.%s is unavailable here: %s", e.Name, e.Events[ev].Name, why)
				}
				if len(parts) == 1 {
					if taken[e.Events[ev].Name] {
						continue
					}
					taken[e.Events[ev].Name] = true
				}
				switch {
				case srcPat != "":
					for s, name := range e.Sources {
						if ok, _ := path.Match(srcPat, name); ok {
							add(e, ev, []int{s}, true)
							matched = true
						}
					}
				case discrete && (len(e.Sources) > 1 || len(e.Sources) == 1 && e.Sources[0] != ""):
					for s := range e.Sources {
						add(e, ev, []int{s}, true)
					}
					matched = true
				default:
					all := make([]int, len(e.Sources))
					for s := range all {
						all[s] = s
					}
					add(e, ev, all, false)
					matched = true
				}
			}
		}
		if !matched {
			if len(absent) > 0 && sensPat != "*" {
				return nil, fmt.Errorf("event %q: sensor %s is absent: %v", pat, absent[0].Name, absent[0].Err)
			}
			return nil, c.unknown(pat, srcPat != "")
		}
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no events selected: name some with -e (see `numascope events`)")
	}
	return cols, nil
}

// Per makes every counter column of cols (except percentages and the
// divisor itself) show its increase per unit of the counter named by name
// ("SENSOR.EVENT", e.g. perf.cycles or perf.tsc) instead of per second: the
// Rate idea of the Sensor interface, used for events per cycle. The divisor
// is summed over the same sources as the column where its sensor has them
// (the same node's cycles for a node's events), and over all its sources
// otherwise. Columns are renamed NAME_per_EVENT and their unit becomes
// "UNIT/DIVISOR-UNIT".
func (c *Catalog) Per(cols []*Column, name string) error {
	sensName, evName, ok := strings.Cut(name, ".")
	if !ok || strings.Contains(evName, ".") || isGlob(name) {
		return fmt.Errorf("--per %q: name one counter as SENSOR.EVENT, e.g. perf.cycles or perf.tsc", name)
	}
	e := c.Entry(sensName)
	if e == nil || !e.Present() {
		if e != nil {
			return fmt.Errorf("--per %s: sensor %s is absent: %v", name, sensName, e.Err)
		}
		return c.unknown(name, false)
	}
	ev := -1
	for i := range e.Events {
		if e.Events[i].Name == evName {
			ev = i
		}
	}
	switch {
	case ev < 0:
		return c.unknown(name, false)
	case e.Events[ev].Unavailable != "":
		return fmt.Errorf("--per %s: unavailable here: %s", name, e.Events[ev].Unavailable)
	case e.Events[ev].Kind != sensor.Counter:
		return fmt.Errorf("--per %s: it is a gauge; give a counter such as perf.cycles", name)
	}
	index := map[string]int{}
	for i, src := range e.Sources {
		index[src] = i
	}
	for _, col := range cols {
		if col.Event.Kind != sensor.Counter || col.Event.Unit == "%" || (col.entry == e && col.event == ev) {
			continue
		}
		div := &Column{Sensor: e.Name, Event: e.Events[ev], entry: e, event: ev}
		for _, src := range col.Sources {
			if i, ok := index[src]; ok {
				div.source = append(div.source, i)
			}
		}
		if len(div.source) != len(col.Sources) {
			div.source = div.source[:0]
			for i := range e.Sources {
				div.source = append(div.source, i)
			}
		}
		for _, i := range div.source {
			div.Sources = append(div.Sources, e.Sources[i])
		}
		col.Per = div
		col.Name += "_per_" + evName
		col.Event.Name += "_per_" + evName
		col.Event.Unit += "/" + e.Events[ev].Unit
		col.Max = 0
	}
	return nil
}

// isGlob reports whether a pattern part holds glob metacharacters.
func isGlob(p string) bool { return strings.ContainsAny(p, "*?[\\") }

// unknown builds the error for a pattern that matched nothing, suggesting the
// closest known names.
func (c *Catalog) unknown(pat string, withSource bool) error {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	bare := !strings.Contains(pat, ".")
	for _, e := range c.Entries {
		if !e.Present() {
			continue
		}
		for _, ev := range e.Events {
			full := e.Name + "." + ev.Name
			d := suggest.Distance(pat, full)
			if bare {
				d = min(d, suggest.Distance(pat, ev.Name))
			}
			if withSource && len(e.Sources) > 0 {
				d = min(d, suggest.Distance(pat, e.Name+"."+e.Sources[0]+"."+ev.Name))
			}
			cands = append(cands, cand{full, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	var sugg []string
	for _, cd := range cands {
		if len(sugg) == 4 || cd.d > max(3, len(pat)/2) {
			break
		}
		sugg = append(sugg, cd.name)
	}
	if len(sugg) == 0 {
		return fmt.Errorf("unknown event %q: run `numascope events` to list the events", pat)
	}
	return fmt.Errorf("unknown event %q: did you mean %s? (run `numascope events` to list all)", pat, strings.Join(sugg, ", "))
}
