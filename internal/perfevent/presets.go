package perfevent

import (
	"embed"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The preset files are data, not code: adding a CPU model means adding a
// [[model]] table to one of them (or a user file given with --presets).
//
//go:embed presets/*.toml
var presetFiles embed.FS

// PresetNames are the presets numascope defines. A user file may add others.
var PresetNames = []string{"numa-traffic", "memory-bandwidth", "interconnect"}

// Model is one CPU model (or a family of models sharing event encodings)
// with its preset events.
type Model struct {
	ID     string        `toml:"id"`
	Name   string        `toml:"name"`
	Vendor string        `toml:"vendor"`
	Family int           `toml:"family"`
	Models []string      `toml:"models"`
	Events []PresetEvent `toml:"event"`
	// File is where the model was defined (embedded name or user path).
	File   string `toml:"-"`
	ranges [][2]int
}

// PresetEvent is one event of a model's presets.
type PresetEvent struct {
	Presets []string `toml:"presets"`
	Name    string   `toml:"name"`
	Spec    string   `toml:"spec"`
	Desc    string   `toml:"desc"`
	Unit    string   `toml:"unit"`
	Scale   float64  `toml:"scale"`
	// Source cites the vendor document the encoding comes from.
	Source string `toml:"source"`
	// Pfm names the event in libpfm4 for the cross-check test ("" if none).
	Pfm string `toml:"pfm"`
	// Kernel names the event in the Linux perf event tables
	// (tools/perf/pmu-events/arch/x86/DIR/*.json) as "DIR/event_name", for
	// the cross-check against the kernel's encodings where libpfm4 has no
	// table (every uncore PMU: the AMD data fabric and memory controllers,
	// the Intel iMC and UPI; the Zen 5 and Granite Rapids cores); "" if none.
	Kernel string `toml:"kernel"`
}

// Presets is a set of models, searched in order.
type Presets struct {
	Models []*Model
}

type presetFile struct {
	Model []*Model `toml:"model"`
}

// LoadPresets loads the embedded preset files, then the user files, whose
// models take precedence (they are searched first).
func LoadPresets(userFiles ...string) (*Presets, error) {
	p := &Presets{}
	for i := len(userFiles) - 1; i >= 0; i-- {
		data, err := os.ReadFile(userFiles[i])
		if err != nil {
			return nil, fmt.Errorf("--presets: %w", err)
		}
		ms, err := ParsePresets(userFiles[i], data)
		if err != nil {
			return nil, fmt.Errorf("--presets: %w", err)
		}
		p.Models = append(p.Models, ms...)
	}
	ents, err := presetFiles.ReadDir("presets")
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		data, err := presetFiles.ReadFile("presets/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms, err := ParsePresets("presets/"+e.Name(), data)
		if err != nil {
			return nil, fmt.Errorf("embedded %w", err)
		}
		p.Models = append(p.Models, ms...)
	}
	return p, nil
}

// ParsePresets parses and checks one preset file: every model has a vendor,
// a family and model ranges; every event a name usable as an event name, a
// specification that parses, at least one preset and a cited source.
func ParsePresets(file string, data []byte) ([]*Model, error) {
	var f presetFile
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s: unknown key %s (known: id, name, vendor, family, models, event: presets, name, spec, desc, unit, scale, source, pfm, kernel)", file, und[0])
	}
	for i, m := range f.Model {
		m.File = file
		where := fmt.Sprintf("%s: model %d (%s)", file, i+1, m.ID)
		if m.ID == "" || m.Vendor == "" || m.Family <= 0 || len(m.Models) == 0 {
			return nil, fmt.Errorf("%s: needs id, vendor, family and models", where)
		}
		for _, r := range m.Models {
			lo, hi, err := parseModelRange(r)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			m.ranges = append(m.ranges, [2]int{lo, hi})
		}
		names := map[string]bool{}
		for j, e := range m.Events {
			ew := fmt.Sprintf("%s event %d (%s)", where, j+1, e.Name)
			if e.Name == "" || SafeName(e.Name) != e.Name || strings.Contains(e.Name, ":") {
				return nil, fmt.Errorf("%s: name must be letters, digits, '_' and '-'", ew)
			}
			if names[e.Name] {
				return nil, fmt.Errorf("%s: name defined twice", ew)
			}
			names[e.Name] = true
			if len(e.Presets) == 0 {
				return nil, fmt.Errorf("%s: belongs to no preset (presets = [...])", ew)
			}
			if strings.TrimSpace(e.Source) == "" {
				return nil, fmt.Errorf("%s: cites no source document (source = ...)", ew)
			}
			if e.Scale < 0 {
				return nil, fmt.Errorf("%s: negative scale", ew)
			}
			if _, err := Parse(e.Spec); err != nil {
				return nil, fmt.Errorf("%s: %v", ew, err)
			}
			if e.Kernel != "" {
				if dir, name, ok := strings.Cut(e.Kernel, "/"); !ok || dir == "" || name == "" || strings.ContainsAny(name, "/ \t") {
					return nil, fmt.Errorf("%s: kernel = %q: want DIR/event_name (a directory of tools/perf/pmu-events/arch/x86 and an event of it)", ew, e.Kernel)
				}
			}
		}
	}
	return f.Model, nil
}

func parseModelRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err = parseNum(a)
	if err != nil {
		return 0, 0, fmt.Errorf("bad model %q", s)
	}
	hi = lo
	if isRange {
		if hi, err = parseNum(b); err != nil || hi < lo {
			return 0, 0, fmt.Errorf("bad model range %q", s)
		}
	}
	return lo, hi, nil
}

func parseNum(s string) (int, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 32)
	return int(v), err
}

// Matches reports whether the model covers the CPU.
func (m *Model) Matches(id CPUID) bool {
	if m.Vendor != id.Vendor || m.Family != id.Family {
		return false
	}
	for _, r := range m.ranges {
		if id.Model >= r[0] && id.Model <= r[1] {
			return true
		}
	}
	return false
}

// Select returns the first model that covers the CPU, or nil.
func (p *Presets) Select(id CPUID) *Model {
	for _, m := range p.Models {
		if m.Matches(id) {
			return m
		}
	}
	return nil
}

// Preset returns the events of the named preset ("numa-traffic", without
// '@') in the model.
func (m *Model) Preset(name string) []PresetEvent {
	var out []PresetEvent
	for _, e := range m.Events {
		for _, p := range e.Presets {
			if p == name {
				out = append(out, e)
			}
		}
	}
	return out
}

// PresetList lists the presets the model defines, sorted.
func (m *Model) PresetList() []string {
	set := map[string]bool{}
	for _, e := range m.Events {
		for _, p := range e.Presets {
			set[p] = true
		}
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ParseSpec parses the event's specification and names it after the entry.
func (e PresetEvent) ParseSpec() (Spec, error) {
	sp, err := Parse(e.Spec)
	if err != nil {
		return sp, err
	}
	if sp.Kind == KindPMU {
		sp.Name = e.Name
	}
	return sp, nil
}
