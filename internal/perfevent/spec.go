// Package perfevent turns perf-style event specifications into the attributes
// perf_event_open needs. It follows the syntax of perf(1):
//
//	cycles, instructions, cache-misses     generic hardware events
//	page-faults, context-switches          software events
//	node-loads, LLC-load-misses            generic hardware cache events
//	r01d3                                  a raw encoding for the core PMU
//	cpu/mem-loads/, uncore_imc/cas_count_read/
//	                                       an event a PMU names in sysfs (events/)
//	cpu/event=0xd3,umask=0x01,name=local_dram/
//	                                       a raw encoding whose fields come from the
//	                                       PMU's sysfs format/ directory
//	sched:sched_move_numa                  a tracepoint, found through tracefs
//
// Everything is read through a sysfs.FS, so specifications resolve against a
// captured tree exactly as against the live kernel; only opening the events
// (in package sensor) needs the live machine. Parsing is pure and separate
// from resolution, so that a specification can be checked for syntax before
// the machine is consulted, and fuzzed.
package perfevent

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the family a specification belongs to.
type Kind uint8

const (
	// KindGeneric is a named generic event (hardware, software or hardware
	// cache), e.g. "cycles" or "page-faults".
	KindGeneric Kind = iota
	// KindRaw is "rNNNN": a raw config for the core PMU.
	KindRaw
	// KindPMU is "pmu/terms/": an event of a sysfs PMU.
	KindPMU
	// KindTracepoint is "system:name".
	KindTracepoint
)

func (k Kind) String() string {
	switch k {
	case KindGeneric:
		return "generic"
	case KindRaw:
		return "raw"
	case KindPMU:
		return "pmu"
	case KindTracepoint:
		return "tracepoint"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Term is one item between the slashes of a "pmu/.../" specification:
// key=value, or a bare word (Value "", HasValue false) that names an event
// alias of the PMU or a one-bit format field.
type Term struct {
	Key      string
	Value    string
	HasValue bool
}

// Modifiers restrict what a counter counts, as perf's ":u", ":k", ":h".
type Modifiers struct {
	ExcludeUser, ExcludeKernel, ExcludeHV bool
}

// Spec is a parsed event specification. It names an event without saying
// whether this machine has it; Resolve answers that.
type Spec struct {
	// Text is the specification as written (trimmed).
	Text string
	Kind Kind
	// Name is the generic event name, the tracepoint's name, or for
	// KindPMU the value of a name= term ("" when none).
	Name string
	// PMU is the PMU of a KindPMU specification.
	PMU string
	// System is a tracepoint's system ("sched" in sched:sched_move_numa).
	System string
	// Terms are the terms of a KindPMU specification, in order, without name=.
	Terms []Term
	// Raw is the config of a KindRaw specification.
	Raw  uint64
	Mods Modifiers
}

// maxSpecLen bounds a specification, so that garbage is rejected early.
const maxSpecLen = 512

// Parse parses one event specification. It checks syntax only.
func Parse(text string) (Spec, error) {
	s := strings.TrimSpace(text)
	sp := Spec{Text: s}
	switch {
	case s == "":
		return sp, fmt.Errorf("empty event specification")
	case len(s) > maxSpecLen:
		return sp, fmt.Errorf("event specification %q is longer than %d characters", trunc(s, 40), maxSpecLen)
	}
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return sp, fmt.Errorf("event %q: character %q is not allowed (use perf syntax: NAME, PMU/TERMS/ or SYSTEM:TRACEPOINT)", trunc(s, 60), c)
		}
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return parsePMU(sp, s, i)
	}
	name, mods, hasMods := strings.Cut(s, ":")
	if hasMods {
		if _, ok := lookupGeneric(name); ok || isRawName(name) {
			m, err := parseMods(mods)
			if err != nil {
				return sp, fmt.Errorf("event %q: %v", s, err)
			}
			sp.Mods = m
		} else {
			return parseTracepoint(sp, name, mods)
		}
	}
	if isRawName(name) {
		v, err := strconv.ParseUint(name[1:], 16, 64)
		if err != nil {
			return sp, fmt.Errorf("event %q: raw event %q is not hex: use rNNNN, e.g. r01d3", s, name)
		}
		sp.Kind, sp.Name, sp.Raw = KindRaw, name, v
		return sp, nil
	}
	if _, ok := lookupGeneric(name); !ok {
		return sp, fmt.Errorf("unknown event %q: not a generic event (cycles, page-faults, ...), nor PMU/EVENT/, nor SYSTEM:TRACEPOINT%s", s, suggestGeneric(name))
	}
	sp.Kind, sp.Name = KindGeneric, name
	return sp, nil
}

// isRawName reports whether name has the shape rNNNN (hex digits).
func isRawName(name string) bool {
	if len(name) < 2 || name[0] != 'r' {
		return false
	}
	for _, c := range name[1:] {
		if !isHex(byte(c)) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// isWord reports whether s is a non-empty identifier as used in PMU, event,
// format and tracepoint names: letters, digits, '_', '-' and '.'.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func parseTracepoint(sp Spec, sys, name string) (Spec, error) {
	if !isWord(sys) || !isWord(name) || strings.Contains(sys, "..") || strings.Contains(name, "..") || sys[0] == '.' || name[0] == '.' {
		return sp, fmt.Errorf("event %q: a tracepoint is SYSTEM:NAME with letters, digits, '_' and '-' (e.g. sched:sched_move_numa)", sp.Text)
	}
	sp.Kind, sp.System, sp.Name = KindTracepoint, sys, name
	return sp, nil
}

func parsePMU(sp Spec, s string, slash int) (Spec, error) {
	pmu := s[:slash]
	rest := s[slash+1:]
	end := strings.LastIndexByte(rest, '/')
	if end < 0 {
		return sp, fmt.Errorf("event %q: missing the closing '/': use PMU/TERMS/, e.g. cpu/event=0xd3,umask=0x01/", s)
	}
	body, mods := rest[:end], rest[end+1:]
	if !isWord(pmu) || strings.Contains(pmu, "..") || pmu[0] == '.' {
		return sp, fmt.Errorf("event %q: bad PMU name %q (a directory of /sys/bus/event_source/devices)", s, pmu)
	}
	if strings.TrimSpace(body) == "" {
		return sp, fmt.Errorf("event %q: no event between the slashes: use PMU/EVENT/ or PMU/event=0x..,umask=0x../", s)
	}
	if mods != "" {
		m, err := parseMods(strings.TrimPrefix(mods, ":"))
		if err != nil {
			return sp, fmt.Errorf("event %q: %v", s, err)
		}
		sp.Mods = m
	}
	sp.Kind, sp.PMU = KindPMU, pmu
	for _, item := range strings.Split(body, ",") {
		key, val, hasVal := strings.Cut(item, "=")
		if !isWord(key) || strings.Contains(key, "..") || key[0] == '.' {
			return sp, fmt.Errorf("event %q: bad term %q: use NAME or FIELD=VALUE", s, trunc(item, 40))
		}
		if hasVal && val == "" {
			return sp, fmt.Errorf("event %q: term %q has no value", s, key)
		}
		if key == "name" {
			if !hasVal || !isWord(val) {
				return sp, fmt.Errorf("event %q: name= needs a name of letters, digits, '_' and '-'", s)
			}
			sp.Name = val
			continue
		}
		if hasVal {
			if _, err := ParseValue(val); err != nil {
				return sp, fmt.Errorf("event %q: term %s: %v", s, key, err)
			}
		}
		sp.Terms = append(sp.Terms, Term{Key: key, Value: val, HasValue: hasVal})
	}
	if len(sp.Terms) == 0 {
		return sp, fmt.Errorf("event %q: only a name= term: say which event, e.g. %s/event=0x3c,name=%s/", s, pmu, sp.Name)
	}
	return sp, nil
}

// parseMods parses perf's event modifiers. Only the privilege-level ones
// matter for counting: u (user only), k (kernel only), h (hypervisor only);
// several combine ("uk"). Precise (p) and guest/host (G/H) are accepted and
// ignored: they matter for sampling and virtualisation hosts only.
func parseMods(m string) (Modifiers, error) {
	if m == "" {
		return Modifiers{}, fmt.Errorf("empty modifier after ':'")
	}
	var u, k, h bool
	for _, c := range m {
		switch c {
		case 'u':
			u = true
		case 'k':
			k = true
		case 'h':
			h = true
		case 'p', 'G', 'H':
		default:
			return Modifiers{}, fmt.Errorf("unknown modifier %q: use u, k or h", c)
		}
	}
	if !u && !k && !h {
		return Modifiers{}, nil
	}
	return Modifiers{ExcludeUser: !u, ExcludeKernel: !k, ExcludeHV: !h}, nil
}

// ParseValue parses a term's value: decimal, or hex with 0x.
func ParseValue(v string) (uint64, error) {
	var (
		x   uint64
		err error
	)
	if h, ok := strings.CutPrefix(strings.ToLower(v), "0x"); ok {
		x, err = strconv.ParseUint(h, 16, 64)
	} else {
		x, err = strconv.ParseUint(v, 10, 64)
	}
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number (decimal or 0x hex up to 64 bits)", trunc(v, 30))
	}
	return x, nil
}

// String renders the specification in canonical perf syntax.
func (sp Spec) String() string {
	var b strings.Builder
	switch sp.Kind {
	case KindTracepoint:
		b.WriteString(sp.System + ":" + sp.Name)
	case KindPMU:
		b.WriteString(sp.PMU + "/")
		for i, t := range sp.Terms {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(t.Key)
			if t.HasValue {
				b.WriteString("=" + t.Value)
			}
		}
		if sp.Name != "" {
			b.WriteString(",name=" + sp.Name)
		}
		b.WriteByte('/')
	default:
		b.WriteString(sp.Name)
	}
	if m := sp.Mods.String(); m != "" {
		if sp.Kind != KindPMU {
			b.WriteByte(':')
		}
		b.WriteString(m)
	}
	return b.String()
}

// String renders the modifiers as perf writes them ("u", "k", "uk"), "" for none.
func (m Modifiers) String() string {
	if m == (Modifiers{}) {
		return ""
	}
	s := ""
	if !m.ExcludeUser {
		s += "u"
	}
	if !m.ExcludeKernel {
		s += "k"
	}
	if !m.ExcludeHV {
		s += "h"
	}
	return s
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
