package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/suggest"
	"github.com/numascope/numascope/internal/sysfs"
)

// DevicesDir is where the kernel lists its PMUs, relative to /sys.
const DevicesDir = "bus/event_source/devices"

// BitRange is a run of bits [Lo, Hi] of one config register.
type BitRange struct{ Lo, Hi uint8 }

// Field is one format field of a PMU: which bits of which config register
// (0: config, 1: config1, 2: config2, 3: config3) a value goes to. The bits
// of a value fill the ranges in order, low bits first, as the kernel's
// format attributes define ("event: config:0-7,32-35" puts value bits 0-7 in
// config bits 0-7 and value bits 8-11 in config bits 32-35).
type Field struct {
	Name   string
	Reg    uint8
	Ranges []BitRange
}

// Width is the number of bits the field holds.
func (f Field) Width() int {
	w := 0
	for _, r := range f.Ranges {
		w += int(r.Hi-r.Lo) + 1
	}
	return w
}

// ParseFormat parses the content of a sysfs format/ file, e.g.
// "config:0-7,21" or "config1:0-63".
func ParseFormat(name, content string) (Field, error) {
	f := Field{Name: name}
	s := strings.TrimSpace(strings.TrimRight(content, "\x00"))
	reg, list, ok := strings.Cut(s, ":")
	if !ok {
		return f, fmt.Errorf("format %s: %q is not CONFIG:BITS", name, trunc(s, 40))
	}
	switch reg {
	case "config":
		f.Reg = 0
	case "config1":
		f.Reg = 1
	case "config2":
		f.Reg = 2
	case "config3":
		f.Reg = 3
	default:
		return f, fmt.Errorf("format %s: unknown register %q (want config, config1, config2 or config3)", name, trunc(reg, 20))
	}
	var used uint64
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.ParseUint(lo, 10, 8)
		if err != nil || a > 63 {
			return f, fmt.Errorf("format %s: bad bit %q in %q", name, trunc(lo, 10), trunc(s, 40))
		}
		b := a
		if isRange {
			b, err = strconv.ParseUint(hi, 10, 8)
			if err != nil || b > 63 || b < a {
				return f, fmt.Errorf("format %s: bad bit range %q in %q", name, trunc(part, 10), trunc(s, 40))
			}
		}
		m := (^uint64(0) >> (63 - b)) &^ (1<<a - 1)
		if used&m != 0 {
			return f, fmt.Errorf("format %s: bits overlap in %q", name, trunc(s, 40))
		}
		used |= m
		f.Ranges = append(f.Ranges, BitRange{uint8(a), uint8(b)})
	}
	return f, nil
}

// Place puts v into the field's bits of regs. It fails when v does not fit.
func (f Field) Place(regs *[4]uint64, v uint64) error {
	w := f.Width()
	if w < 64 && v>>uint(w) != 0 {
		return fmt.Errorf("value 0x%x does not fit field %s (%d bits, at most 0x%x)", v, f.Name, w, uint64(1)<<uint(w)-1)
	}
	for _, r := range f.Ranges {
		n := uint(r.Hi-r.Lo) + 1
		var part uint64
		if n == 64 {
			part = v
		} else {
			part = v & (1<<n - 1)
		}
		mask := (^uint64(0) >> (64 - n)) << r.Lo
		regs[f.Reg] = regs[f.Reg]&^mask | part<<r.Lo
		if n < 64 {
			v >>= n
		}
	}
	return nil
}

// Extract is the inverse of Place: it reads the field's value from regs.
func (f Field) Extract(regs [4]uint64) uint64 {
	var v uint64
	shift := uint(0)
	for _, r := range f.Ranges {
		n := uint(r.Hi-r.Lo) + 1
		part := regs[f.Reg] >> r.Lo
		if n < 64 {
			part &= 1<<n - 1
		}
		v |= part << shift
		shift += n
	}
	return v
}

// PMU is one performance monitoring unit the kernel lists in
// /sys/bus/event_source/devices.
type PMU struct {
	Name string
	Dir  string
	Type uint32
	// Formats are the fields of format/, by name.
	Formats map[string]Field
	// CPUMask lists the CPUs to open the PMU's events on, from its cpumask
	// file (uncore PMUs: one CPU per socket or die; events are system-wide,
	// not per CPU); nil when there is no cpumask file.
	CPUMask []int
	// CPUs lists the CPUs a hybrid core PMU (cpu_core, cpu_atom) covers,
	// from its cpus file; nil when absent.
	CPUs []int
}

// Uncore reports whether the PMU counts for a whole socket/die/instance
// rather than per CPU, i.e. has a cpumask file.
func (p *PMU) Uncore() bool { return p.CPUMask != nil }

// ListPMUs lists the PMU names the kernel offers, sorted.
func ListPMUs(fs sysfs.FS) ([]string, error) {
	ents, err := os.ReadDir(fs.Sys(DevicesDir))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// ErrNoPMU is wrapped by LoadPMU's error when the PMU does not exist.
var ErrNoPMU = errors.New("no such PMU")

// LoadPMU reads a PMU's type, format fields and cpumask.
func LoadPMU(fs sysfs.FS, name string) (*PMU, error) {
	if !isWord(name) || strings.Contains(name, "..") {
		return nil, fmt.Errorf("bad PMU name %q", name)
	}
	dir := fs.Sys(DevicesDir, name)
	p := &PMU{Name: name, Dir: dir, Formats: map[string]Field{}}
	t, err := sysfs.ReadInt(filepath.Join(dir, "type"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("PMU %s: %w (%s is missing)", name, ErrNoPMU, dir)
		}
		return nil, fmt.Errorf("PMU %s: %w", name, err)
	}
	if t < 0 || t > 1<<31 {
		return nil, fmt.Errorf("PMU %s: bad type %d", name, t)
	}
	p.Type = uint32(t)
	ents, err := os.ReadDir(filepath.Join(dir, "format"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("PMU %s: %w", name, err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, "format", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("PMU %s: %w", name, err)
		}
		f, err := ParseFormat(e.Name(), string(b))
		if err != nil {
			return nil, fmt.Errorf("PMU %s: %w", name, err)
		}
		p.Formats[e.Name()] = f
	}
	if s, err := sysfs.ReadString(filepath.Join(dir, "cpumask")); err == nil {
		cpus, err := sysfs.ParseCPUList(s)
		if err != nil {
			return nil, fmt.Errorf("PMU %s: cpumask: %w", name, err)
		}
		if cpus == nil {
			cpus = []int{}
		}
		p.CPUMask = cpus
	}
	if s, err := sysfs.ReadString(filepath.Join(dir, "cpus")); err == nil {
		if cpus, err := sysfs.ParseCPUList(s); err == nil {
			p.CPUs = cpus
		}
	}
	return p, nil
}

// Alias is an event a PMU names in its events/ directory.
type Alias struct {
	Name  string
	Terms []Term
	// Scale multiplies counts into Unit (e.g. 6.103515625e-05 for MiB per
	// 64-byte line); 0 when the PMU gives none.
	Scale float64
	Unit  string
}

// LoadAlias reads events/NAME of the PMU (with NAME.scale and NAME.unit).
func (p *PMU) LoadAlias(name string) (*Alias, error) {
	if !isWord(name) || strings.Contains(name, "..") {
		return nil, fmt.Errorf("bad event name %q", name)
	}
	path := filepath.Join(p.Dir, "events", name)
	s, err := sysfs.ReadString(path)
	if err != nil {
		return nil, err
	}
	a := &Alias{Name: name}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, hasVal := strings.Cut(item, "=")
		if !isWord(k) {
			return nil, fmt.Errorf("%s: bad term %q", path, trunc(item, 40))
		}
		if hasVal {
			// "?" marks a value the user must give (e.g. chan=?): not usable as is.
			if v == "?" {
				return nil, fmt.Errorf("%s: the event needs %s=VALUE: write %s/%s,%s=N/", path, k, p.Name, name, k)
			}
			if _, err := ParseValue(v); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
		}
		a.Terms = append(a.Terms, Term{Key: k, Value: v, HasValue: hasVal})
	}
	if sc, err := sysfs.ReadString(path + ".scale"); err == nil {
		if f, err := strconv.ParseFloat(sc, 64); err == nil && f > 0 {
			a.Scale = f
		}
	}
	if u, err := sysfs.ReadString(path + ".unit"); err == nil {
		a.Unit = u
	}
	return a, nil
}

// Aliases lists the names in the PMU's events/ directory.
func (p *PMU) Aliases() []string {
	ents, _ := os.ReadDir(filepath.Join(p.Dir, "events"))
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, ".scale") || strings.HasSuffix(n, ".unit") || strings.HasSuffix(n, ".snapshot") || strings.HasSuffix(n, ".per-pkg") {
			continue
		}
		out = append(out, n)
	}
	return out
}

// Encode turns terms into config registers: each term is FIELD=VALUE of the
// format/ directory, config/config1/config2/config3=VALUE, a bare one-bit
// field (set to 1), or a bare event alias of events/ (expanded first, so
// explicit terms override it).
func (p *PMU) Encode(terms []Term) (regs [4]uint64, alias *Alias, err error) {
	apply := func(t Term) error {
		if !t.HasValue {
			if f, ok := p.Formats[t.Key]; ok && f.Width() == 1 {
				return f.Place(&regs, 1)
			}
			return fmt.Errorf("%s/%s/: %q is neither a one-bit field of %s nor an event of %s", p.Name, t.Key, t.Key, filepath.Join(p.Dir, "format"), filepath.Join(p.Dir, "events"))
		}
		v, err := ParseValue(t.Value)
		if err != nil {
			return err
		}
		if f, ok := p.Formats[t.Key]; ok {
			return f.Place(&regs, v)
		}
		switch t.Key {
		case "config", "config1", "config2", "config3":
			r := 0
			if t.Key != "config" {
				r = int(t.Key[6] - '0')
			}
			regs[r] = v
			return nil
		}
		return fmt.Errorf("%s has no format field %q (it has: %s)", p.Name, t.Key, strings.Join(p.fieldNames(), ", "))
	}
	var explicit []Term
	for _, t := range terms {
		if !t.HasValue {
			if _, isField := p.Formats[t.Key]; !isField {
				if alias != nil {
					return regs, nil, fmt.Errorf("%s: two events (%s and %s) in one specification", p.Name, alias.Name, t.Key)
				}
				a, err := p.LoadAlias(t.Key)
				if err != nil {
					if errors.Is(err, os.ErrNotExist) {
						return regs, nil, fmt.Errorf("PMU %s has no event %q (see %s)%s", p.Name, t.Key, filepath.Join(p.Dir, "events"), suggestAlias(p, t.Key))
					}
					return regs, nil, err
				}
				alias = a
				continue
			}
		}
		explicit = append(explicit, t)
	}
	if alias != nil {
		for _, t := range alias.Terms {
			if err := apply(t); err != nil {
				return regs, nil, fmt.Errorf("event %s/%s/: %v", p.Name, alias.Name, err)
			}
		}
	}
	for _, t := range explicit {
		if err := apply(t); err != nil {
			return regs, nil, err
		}
	}
	return regs, alias, nil
}

func (p *PMU) fieldNames() []string {
	var n []string
	for k := range p.Formats {
		n = append(n, k)
	}
	sort.Strings(n)
	if len(n) == 0 {
		return []string{"none: use config=VALUE"}
	}
	return n
}

func suggestAlias(p *PMU, name string) string {
	var c []string
	for _, a := range p.Aliases() {
		if suggest.Distance(a, name) <= max(2, len(name)/4) {
			c = append(c, a)
		}
	}
	if len(c) == 0 {
		return ""
	}
	if len(c) > 4 {
		c = c[:4]
	}
	return "; did you mean " + strings.Join(c, ", ") + "?"
}
