package sensor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/sysfs"
)

// The perf and uncore sensors are registered once; their options come with
// every sensor the registry makes (Options.Perf).
func init() {
	Register("perf", func(o Options) Sensor { return NewPerf(o.Perf) })
	Register("uncore", func(o Options) Sensor { return NewUncore(o.Perf) })
}

// NewPerf returns a perf sensor with opts, as the registry makes it.
func NewPerf(opts PerfOptions) Sensor { return &perfSensor{opts: opts} }

// NewUncore is NewPerf for the uncore sensor.
func NewUncore(opts PerfOptions) Sensor { return &perfSensor{uncore: true, opts: opts} }

// PerfOptions configures the perf and uncore sensors. A sensor's event list
// is fixed when it opens, so events beyond the defaults are named before the
// catalog opens the sensors, in Options.Perf (the CLI's --perf-events,
// --presets and --perf-per-cpu), extended by the environment
// (NUMASCOPE_PERF_EVENTS, NUMASCOPE_PRESETS, NUMASCOPE_PERF_PER_CPU).
type PerfOptions struct {
	// Events are perf specifications to offer besides the defaults, e.g.
	// "cpu/event=0xd3,umask=0x01,name=local_dram/" or "sched:sched_switch".
	Events []string
	// PresetFiles are user preset files, searched before the embedded ones.
	PresetFiles []string
	// PerCPU makes the perf sensor's sources the CPUs ("cpu0", "cpu1", ...)
	// instead of the nodes, so that --discrete shows each CPU.
	PerCPU bool
}

// withEnvironment extends o with the NUMASCOPE_PERF_* environment variables.
func (o PerfOptions) withEnvironment() PerfOptions {
	o.Events = append(append([]string(nil), o.Events...), SplitPerfSpecs(os.Getenv("NUMASCOPE_PERF_EVENTS"))...)
	if p := os.Getenv("NUMASCOPE_PRESETS"); p != "" {
		o.PresetFiles = append(append([]string(nil), o.PresetFiles...), filepath.SplitList(p)...)
	}
	if v := os.Getenv("NUMASCOPE_PERF_PER_CPU"); v != "" && v != "0" {
		o.PerCPU = true
	}
	return o
}

// SplitPerfSpecs splits a list of perf specifications (perfevent.SplitSpecs).
func SplitPerfSpecs(s string) []string { return perfevent.SplitSpecs(s) }

// PresetProvider is implemented by sensors that define event presets
// (-e @numa-traffic): Presets maps a preset's name (without '@') to the
// names of this sensor's events that make it up.
type PresetProvider interface {
	Presets() map[string][]string
}

// ExpandPresets replaces each "@NAME" pattern with the events of preset NAME
// in every sensor that provides it, as "SENSOR.EVENT" patterns. sensors
// maps sensor names to opened sensors (absent ones may be left out). A
// preset no sensor knows is an error that says which presets exist and why.
func ExpandPresets(patterns []string, sensors map[string]Sensor) ([]string, error) {
	var out []string
	names := make([]string, 0, len(sensors))
	for n := range sensors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, p := range patterns {
		preset, ok := strings.CutPrefix(strings.TrimSpace(p), "@")
		if !ok {
			out = append(out, p)
			continue
		}
		found := false
		known := map[string]bool{}
		var why []string
		for _, n := range names {
			pp, ok := sensors[n].(PresetProvider)
			if !ok {
				continue
			}
			m := pp.Presets()
			for k := range m {
				known["@"+k] = true
			}
			for _, ev := range m[preset] {
				out = append(out, n+"."+ev)
				found = true
			}
			if ps, ok := sensors[n].(*perfSensor); ok && ps.presetNote != "" {
				why = append(why, ps.presetNote)
			}
		}
		if !found {
			var ks []string
			for k := range known {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			msg := fmt.Sprintf("preset @%s has no events on this machine", preset)
			if len(ks) > 0 {
				msg += " (presets here: " + strings.Join(ks, ", ") + ")"
			}
			if len(why) > 0 {
				msg += ": " + why[0]
			}
			return nil, errors.New(msg)
		}
	}
	return out, nil
}

// perfSensor is the perf sensor (per-CPU events summed per node: software
// events, tracepoints, core PMU events) or, with uncore set, the uncore
// sensor (events of PMUs with a cpumask, opened once per PMU instance and
// summed per package).
type perfSensor struct {
	uncore  bool
	opts    PerfOptions // as given to NewPerf; Open adds the environment's
	fs      sysfs.FS
	sources []string
	srcCPUs [][]int // per source: the CPUs to open per-CPU events on
	// srcLater lists, per node, its CPUs that were offline at Open: their
	// groups are opened once they come online (counters.read).
	srcLater [][]int
	srcOf    map[int]int
	events   []perfEv
	evs      []Event
	presets  map[string][]string
	// presetNote says which preset model was selected, or why none.
	presetNote string
	c          *counters
}

func (p *perfSensor) Name() string {
	if p.uncore {
		return "uncore"
	}
	return "perf"
}

// perfMaxGroup bounds a hardware group: a group is scheduled all or
// nothing, so a group with more events than the PMU has counters would
// never count. Larger sets are split into groups of this size, which the
// kernel multiplexes (and the mux-PMU event reports).
const perfMaxGroup = 4

func (p *perfSensor) Open(env Env) error {
	p.Close()
	*p = perfSensor{uncore: p.uncore, opts: p.opts}
	name := p.Name()
	if !env.FS.Live() {
		return fmt.Errorf("%s: counts the running kernel only; --root reads a captured tree", name)
	}
	t := env.Topology
	if t == nil {
		return fmt.Errorf("%s: no topology: discover the topology before opening sensors", name)
	}
	p.fs = env.FS
	opts := p.opts.withEnvironment()
	p.srcOf = map[int]int{}
	online := map[int]bool{}
	for _, c := range t.CPUs {
		if c.Online {
			online[c.ID] = true
		}
	}
	if p.uncore {
		for _, pk := range t.Packages {
			var cpus []int
			for _, c := range pk.CPUs {
				if online[c] {
					cpus = append(cpus, c)
				}
			}
			if len(cpus) == 0 {
				continue
			}
			for _, c := range cpus {
				p.srcOf[c] = len(p.sources)
			}
			p.sources = append(p.sources, strconv.Itoa(pk.ID))
			p.srcCPUs = append(p.srcCPUs, cpus)
		}
	} else if opts.PerCPU {
		for _, c := range t.CPUs {
			if c.Online {
				p.srcOf[c.ID] = len(p.sources)
				p.sources = append(p.sources, "cpu"+strconv.Itoa(c.ID))
				p.srcCPUs = append(p.srcCPUs, []int{c.ID})
			}
		}
	} else {
		for _, nd := range t.Nodes {
			var cpus, later []int
			for _, c := range nd.CPUs {
				if _, dup := p.srcOf[c]; online[c] && !dup {
					cpus = append(cpus, c)
				}
			}
			if len(cpus) == 0 {
				continue
			}
			// A node's cpulist lists its online CPUs; an offline one
			// keeps its node link (cpuN/nodeM), which the topology reads.
			for _, c := range t.CPUs {
				if _, dup := p.srcOf[c.ID]; !c.Online && c.Node == nd.ID && !dup {
					later = append(later, c.ID)
				}
			}
			for _, c := range slices.Concat(cpus, later) {
				p.srcOf[c] = len(p.sources)
			}
			p.sources = append(p.sources, strconv.Itoa(nd.ID))
			p.srcCPUs = append(p.srcCPUs, cpus)
			p.srcLater = append(p.srcLater, later)
		}
	}
	if len(p.sources) == 0 {
		return fmt.Errorf("%s: no online CPU is on a node/package of the topology", name)
	}

	type cand struct {
		spec perfevent.Spec
		// name, desc, unit and scale override the resolved event's (presets).
		name, desc, unit string
		scale            float64
		presets          []string
		user             bool
	}
	var cands []cand
	addText := func(text string, user bool) error {
		sp, err := perfevent.Parse(text)
		if err != nil {
			return err
		}
		cands = append(cands, cand{spec: sp, user: user})
		return nil
	}
	if !p.uncore {
		_, _ = perfevent.MountTracefs(env.FS) // a failure shows as the tracepoints' reason
		for _, s := range perfevent.SoftwareEvents {
			_ = addText(s, false)
		}
		for _, s := range perfevent.NUMATracepoints {
			_ = addText(s, false)
		}
		for _, s := range perfevent.HardwareEvents {
			_ = addText(s, false)
		}
		if _, err := os.Stat(env.FS.Sys(perfevent.DevicesDir, "msr", "events", "tsc")); err == nil {
			_ = addText("msr/tsc,name=tsc/", false)
		}
	}
	// Presets for this CPU.
	p.presets = map[string][]string{}
	ps, err := perfevent.LoadPresets(opts.PresetFiles...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if id, err := perfevent.ReadCPUID(env.FS); err != nil {
		p.presetNote = "no presets: " + err.Error()
	} else if m := ps.Select(id); m == nil {
		p.presetNote = fmt.Sprintf("no preset model covers this CPU (%s): add one with --presets FILE (see docs/perf.md)", id)
	} else {
		p.presetNote = fmt.Sprintf("presets of model %s (%s) from %s", m.ID, m.Name, m.File)
		for _, e := range m.Events {
			sp, err := e.ParseSpec()
			if err != nil {
				return fmt.Errorf("%s: preset %s: %v", name, e.Name, err)
			}
			cands = append(cands, cand{spec: sp, name: e.Name, desc: e.Desc + " [" + m.ID + "]", unit: e.Unit, scale: e.Scale, presets: e.Presets})
		}
	}
	for _, s := range opts.Events {
		if err := addText(s, true); err != nil {
			return fmt.Errorf("%s: --perf-events: %v", name, err)
		}
	}

	seen := map[string]bool{}
	// Software events and tracepoints need the same permission each, so one
	// probe per type stands for all: closing a probed tracepoint costs tens
	// of milliseconds (the kernel waits for an RCU grace period).
	probed := map[uint32]error{}
	classes := map[string]int{} // hardware class -> number of available events
	var classOrder []string
	for _, cd := range cands {
		ev, err := perfevent.Resolve(env.FS, cd.spec)
		var un *perfevent.Unavailable
		if err != nil && !errors.As(err, &un) {
			if cd.user {
				return fmt.Errorf("%s: --perf-events %s: %v", name, cd.spec.Text, err)
			}
			un = &perfevent.Unavailable{Spec: cd.spec.Text, Reason: err.Error()}
		}
		isUncore := false
		if ev != nil {
			isUncore = ev.Uncore()
		} else {
			isUncore = uncoreName(cd.spec)
		}
		if isUncore != p.uncore {
			continue
		}
		pe := perfEv{ev: ev, scale: cd.scale}
		evName := cd.name
		if evName == "" && ev != nil {
			evName = ev.Name
		}
		if evName == "" {
			evName = perfevent.SafeName(cd.spec.Text)
		}
		if seen[evName] {
			continue
		}
		seen[evName] = true
		desc, unit := cd.desc, cd.unit
		if ev != nil {
			if desc == "" {
				desc = ev.Desc
			}
			if unit == "" {
				unit = ev.Unit
			}
			if pe.scale == 0 && ev.Scale != 0 {
				var note string
				pe.scale, unit, note = normalizeScale(ev.Scale, unit)
				desc += note
			}
			pe.class = perfClass(ev)
			if un == nil {
				typ := ev.Attr.Type
				perr, done := probed[typ]
				if !done || (typ != perfevent.TypeSoftware && typ != perfevent.TypeTracepoint) {
					perr = p.probe(ev)
					probed[typ] = perr
				}
				if perr != nil {
					un = diagnose(env.FS, cd.spec.Text, perr)
				}
			}
		}
		if g, ok := perfevent.LookupGeneric(cd.spec.Name); ok && cd.spec.Kind == perfevent.KindGeneric {
			if desc == "" {
				desc = g.Desc
			}
			if unit == "" || unit == "events" {
				unit = g.Unit
			}
		}
		if unit == "" {
			unit = "events"
		}
		if un != nil {
			pe.unavail, pe.ev = un, nil
			what := ""
			if desc != "" {
				what = " (" + desc + ")"
			}
			desc = "UNAVAILABLE: " + un.Reason + ifFix(un.Fix) + what
		} else if pe.class != "sw" && pe.class != "msr" {
			if classes[pe.class] == 0 {
				classOrder = append(classOrder, pe.class)
			}
			classes[pe.class]++
		}
		pe.event = Event{Name: evName, Desc: desc, Unit: unit, Kind: Counter}
		if un != nil {
			pe.event.Unavailable = un.Reason + ifFix(un.Fix)
		}
		if un == nil && ev != nil && ev.Attr.Type == perfevent.TypeHardware && ev.Attr.Config[0] == 0 {
			pe.event.Max = p.cycleMax(env.FS) // cycles: % of the CPUs' top frequency
		}
		for _, pr := range cd.presets {
			p.presets[pr] = append(p.presets[pr], evName)
		}
		p.events = append(p.events, pe)
	}
	for _, cl := range classOrder {
		mx := make([]float64, len(p.sources))
		for s := range p.sources {
			mx[s] = float64(ppm * p.groupsPerSource(cl, s))
		}
		p.events = append(p.events, perfEv{mux: cl, class: cl, event: Event{Name: "mux-" + cl, Kind: Gauge, Unit: "%", Max: mx,
			Desc: "share of time the " + cl + " events were counted (100%: all the time; less: the PMU multiplexed them and their counts are scaled up by time_enabled/time_running)"}})
	}
	if len(p.events) == 0 {
		if p.uncore {
			pmus, _ := perfevent.ListPMUs(env.FS)
			return fmt.Errorf("uncore: no uncore events: this machine has no uncore PMU with events to offer (PMUs: %s); name some with --perf-events, e.g. uncore_imc/cas_count_read/", strings.Join(pmus, ", "))
		}
		return errors.New("perf: no events")
	}
	for _, pe := range p.events {
		p.evs = append(p.evs, pe.event)
	}
	return nil
}

func ifFix(f string) string {
	if f == "" {
		return ""
	}
	return "; fix: " + f
}

// uncoreName guesses whether an unresolvable specification is meant for an
// uncore PMU, so that its unavailability is reported by the right sensor.
func uncoreName(sp perfevent.Spec) bool {
	if sp.Kind != perfevent.KindPMU {
		return false
	}
	for _, c := range perfevent.CorePMUs {
		if sp.PMU == c {
			return false
		}
	}
	return sp.PMU != "msr" && sp.PMU != "software" && sp.PMU != "tracepoint"
}

// perfClass is the group an event joins on a CPU: software events and
// tracepoints share one (both are counted by the kernel, never
// multiplexed); every hardware PMU has its own.
func perfClass(ev *perfevent.Event) string {
	switch ev.Attr.Type {
	case perfevent.TypeSoftware, perfevent.TypeTracepoint:
		return "sw"
	}
	if ev.PMU == "" {
		return "type" + strconv.Itoa(int(ev.Attr.Type))
	}
	return ev.PMU
}

// eventCPUs lists the CPUs (and PMU types) to open ev on for source s.
func (p *perfSensor) eventCPUs(ev *perfevent.Event, s int) (cpus []int, types []uint32) {
	if ev.Uncore() {
		for _, in := range ev.Instances {
			for _, c := range in.CPUMask {
				if src, ok := p.srcOf[c]; ok && src == s {
					cpus, types = append(cpus, c), append(types, in.Type)
				}
			}
		}
		return cpus, types
	}
	return p.cpuEvents(ev, p.srcCPUs[s])
}

// cpuEvents lists the CPUs of list that a per-CPU event ev is counted on
// (all but those its PMU does not cover), with its type on each.
func (p *perfSensor) cpuEvents(ev *perfevent.Event, list []int) (cpus []int, types []uint32) {
	for _, c := range list {
		if ev.CPUs != nil && !slices.Contains(ev.CPUs, c) {
			continue
		}
		cpus, types = append(cpus, c), append(types, ev.Attr.Type)
	}
	return cpus, types
}

// groupsPerSource counts the (CPU, PMU instance) pairs of source s where
// class has events, for the mux event's Max: each pair reports one ratio.
func (p *perfSensor) groupsPerSource(class string, s int) int {
	type pair struct {
		cpu int
		typ uint32
	}
	seen := map[pair]bool{}
	for _, pe := range p.events {
		if pe.ev == nil || pe.class != class {
			continue
		}
		cpus, types := p.eventCPUs(pe.ev, s)
		for i, c := range cpus {
			seen[pair{c, types[i]}] = true
		}
	}
	return len(seen)
}

// normalizeScale turns a PMU's scale into whole units numascope can carry
// in integer counters: a fraction of a MiB per count (uncore_imc's
// cas_count_read: 6.103515625e-5 MiB = 64 bytes) becomes bytes. A scale
// that stays below 1 is dropped (raw counts are reported) and described.
func normalizeScale(scale float64, unit string) (float64, string, string) {
	if scale == 0 || scale == 1 {
		return 0, unit, ""
	}
	mult := map[string]float64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1e3, "MB": 1e6, "GB": 1e9}
	if m, ok := mult[unit]; ok && scale < 1 {
		scale, unit = scale*m, "bytes"
	}
	if scale < 1 {
		return 0, "events", fmt.Sprintf("; one count is %g %s", scale, unit)
	}
	return scale, unit, ""
}

// probe opens ev once on its first CPU, to learn at Open whether the
// kernel lets this process count it.
func (p *perfSensor) probe(ev *perfevent.Event) error {
	for s := range p.sources {
		cpus, types := p.eventCPUs(ev, s)
		if len(cpus) == 0 {
			continue
		}
		fd, err := perfOpen(ev.Attr, types[0], cpus[0], -1)
		if err != nil {
			return err
		}
		unix.Close(fd)
		return nil
	}
	if ev.Uncore() {
		return fmt.Errorf("%w: none of the PMU's cpumask CPUs is online", unix.ENODEV)
	}
	return fmt.Errorf("%w: none of the PMU's CPUs is online", unix.ENODEV)
}

// cycleMax is the highest cycles rate per source: its CPUs times their
// maximum frequency (cpufreq), or nil when cpufreq is absent.
func (p *perfSensor) cycleMax(fs sysfs.FS) []float64 {
	mx := make([]float64, len(p.sources))
	for s, cpus := range p.srcCPUs {
		for _, c := range cpus {
			khz, err := sysfs.ReadInt(fs.Sys("devices/system/cpu", "cpu"+strconv.Itoa(c), "cpufreq/cpuinfo_max_freq"))
			if err != nil || khz <= 0 {
				return nil
			}
			mx[s] += float64(khz) * 1000
		}
	}
	return mx
}

func (p *perfSensor) Sources() []string { return p.sources }
func (p *perfSensor) Events() []Event   { return p.evs }

// Presets maps each preset to the names of this sensor's events in it.
func (p *perfSensor) Presets() map[string][]string { return p.presets }

// PresetNote says which preset model the sensor uses, or why none.
func (p *perfSensor) PresetNote() string { return p.presetNote }

func (p *perfSensor) Enable(events []int) error {
	if err := checkEnable(events, len(p.events)); err != nil {
		return err
	}
	p.c.close()
	p.c = nil
	if len(events) == 0 {
		return nil
	}
	enabledClass := map[string]bool{}
	for _, e := range events {
		pe := p.events[e]
		if pe.unavail != nil {
			return fmt.Errorf("%s.%s is unavailable: %v", p.Name(), pe.event.Name, pe.unavail)
		}
		if pe.mux == "" {
			enabledClass[pe.class] = true
		}
	}
	for _, e := range events {
		if pe := p.events[e]; pe.mux != "" && !enabledClass[pe.mux] {
			return fmt.Errorf("%s.%s reports on the %s events: select at least one of them with it", p.Name(), pe.event.Name, pe.mux)
		}
	}
	nsrc := len(p.sources)
	c := &counters{nsrc: nsrc, fs: p.fs}
	nslot := len(events) * nsrc
	c.slotDst = make([]int, nslot)
	c.slotScale = make([]float64, nslot)
	c.sum = make([]uint64, nslot)
	for k, e := range events {
		for s := 0; s < nsrc; s++ {
			c.slotDst[k*nsrc+s] = k*nsrc + s
			c.slotScale[k*nsrc+s] = p.events[e].scale
		}
	}
	// Members per (class, cpu, pmu type), in Enable order.
	type key struct {
		class string
		cpu   int
		typ   uint32
		later bool // an offline CPU's: opened once it is online
	}
	type member struct {
		ev   *perfevent.Event
		typ  uint32
		slot int
	}
	members := map[key][]member{}
	var order []key
	muxSlot := map[string]int{}
	for k, e := range events {
		pe := p.events[e]
		if pe.mux != "" {
			muxSlot[pe.mux] = k // slot base; source added per group
			continue
		}
		for s := 0; s < nsrc; s++ {
			cpus, types := p.eventCPUs(pe.ev, s)
			n := len(cpus)
			if !pe.ev.Uncore() && s < len(p.srcLater) {
				more, moreTypes := p.cpuEvents(pe.ev, p.srcLater[s])
				cpus, types = append(cpus, more...), append(types, moreTypes...)
			}
			for i, cpu := range cpus {
				ky := key{pe.class, cpu, types[i], i >= n}
				if pe.class == "sw" {
					ky.typ = 0 // software events and tracepoints share a group
				}
				if _, ok := members[ky]; !ok {
					order = append(order, ky)
				}
				members[ky] = append(members[ky], member{pe.ev, types[i], k*nsrc + s})
			}
		}
	}
	for _, ky := range order {
		ms := members[ky]
		size := len(ms)
		if ky.class != "sw" && ky.class != "msr" {
			size = perfMaxGroup
		}
		for start := 0; start < len(ms); start += size {
			chunk := ms[start:min(start+size, len(ms))]
			g := &perfGroup{cpu: ky.cpu, src: p.srcOf[ky.cpu], class: ky.class, muxSlot: -1,
				muxDiv: uint64((len(ms) + size - 1) / size)}
			if base, ok := muxSlot[ky.class]; ok {
				g.muxSlot = base*nsrc + g.src
			}
			for _, m := range chunk {
				g.members = append(g.members, groupMember{m.ev.Attr, m.typ})
				g.slots = append(g.slots, m.slot)
			}
			g.buf = make([]byte, 8*(3+len(chunk)))
			g.prev = make([]uint64, len(chunk))
			g.acc = make([]uint64, len(chunk))
			g.ratio = ppm
			c.groups = append(c.groups, g)
			if ky.later {
				// Offline at Open: read opens it once it is online.
				g.off = true
				c.offs++
				continue
			}
			if i, err := g.open(); err != nil {
				c.close()
				if i < 0 {
					return fmt.Errorf("%s: %v: the %s counters of CPU %d", p.Name(), err, ky.class, ky.cpu)
				}
				m := chunk[i]
				return fmt.Errorf("%s: opening %s on CPU %d: %v", p.Name(), m.ev.Spec.Text, ky.cpu, diagnose(p.fs, m.ev.Spec.Text, err))
			}
		}
	}
	// Baseline: the first read sets prev; counts start from here.
	for _, g := range c.groups {
		if g.off {
			continue
		}
		if err := g.read(); err != nil {
			c.close()
			return fmt.Errorf("%s: first read of the %s counters of CPU %d: %v", p.Name(), g.class, g.cpu, err)
		}
	}
	p.c = c
	return nil
}

func (p *perfSensor) Read(dst []int64) error {
	if p.c == nil {
		return nil
	}
	return p.c.read(dst)
}

// Groups returns the number of perf groups (one read() each) Read reads.
func (p *perfSensor) Groups() int {
	if p.c == nil {
		return 0
	}
	return len(p.c.groups)
}

func (p *perfSensor) Close() error {
	err := p.c.close()
	p.c = nil
	return err
}
