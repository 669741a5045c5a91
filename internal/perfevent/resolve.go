package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

// Attr is what perf_event_open needs to know about an event to count it.
type Attr struct {
	Type uint32
	// Config holds config, config1, config2 and config3.
	Config [4]uint64
	Mods   Modifiers
}

// Event is a specification resolved against a machine (or a captured tree).
type Event struct {
	Spec Spec
	// Name is the event's name as numascope shows it: the name= term, the
	// generic or tracepoint name, or the specification with every character
	// outside [A-Za-z0-9_:-] turned into '_' (no dots, no slashes, so that it
	// works in -e patterns).
	Name string
	Desc string
	Attr Attr
	// PMU names the PMU for KindPMU and KindRaw ("cpu"), "" otherwise.
	PMU string
	// CPUMask is the PMU's cpumask for an uncore event: open it on these
	// CPUs only, once each. nil for per-CPU events.
	CPUMask []int
	// Instances lists, for an uncore PMU written without its instance
	// number (uncore_imc for uncore_imc_0, uncore_imc_1, ...), every
	// instance: the event is opened on each and their counts are summed,
	// as perf does. For other events it holds the one PMU (KindPMU) or is
	// empty.
	Instances []Instance
	// CPUs restricts a hybrid core PMU's event to its CPUs; nil means all.
	CPUs []int
	// Scale and Unit come from the PMU's events/NAME.scale and .unit, or
	// from the generic event's table; Scale 0 means 1.
	Scale float64
	Unit  string
}

// Instance is one PMU an event is opened on.
type Instance struct {
	PMU     string
	Type    uint32
	CPUMask []int
}

// Uncore reports whether the event counts per PMU instance, not per CPU.
func (e *Event) Uncore() bool { return e.CPUMask != nil }

// Hardware reports whether the event needs a hardware PMU (as opposed to
// software events and tracepoints, which every kernel counts).
func (e *Event) Hardware() bool {
	return e.Attr.Type != TypeSoftware && e.Attr.Type != TypeTracepoint
}

// Unavailable says why an event that parses cannot be counted here and what
// to do about it.
type Unavailable struct {
	Spec   string
	Reason string
	Fix    string
}

func (u *Unavailable) Error() string {
	if u.Fix == "" {
		return u.Spec + ": " + u.Reason
	}
	return u.Spec + ": " + u.Reason + "; " + u.Fix
}

// CorePMUs are the names under which kernels register the core PMU that
// generic hardware events and rNNNN go to.
var CorePMUs = []string{"cpu", "cpu_core", "cpu_atom", "armv8_pmuv3", "armv8_pmuv3_0", "cpum_cf", "power_pmu"}

// CorePMU returns the machine's core PMU, or nil when it has none (a
// virtual machine without a virtual PMU, or a kernel without support).
func CorePMU(fs sysfs.FS) *PMU {
	for _, n := range CorePMUs {
		if p, err := LoadPMU(fs, n); err == nil {
			return p
		}
	}
	// Arm PMUs are named after the core (armv8_cortex_a72, armv8_neoverse_n1).
	names, _ := ListPMUs(fs)
	for _, n := range names {
		if strings.HasPrefix(n, "armv8_") || strings.HasPrefix(n, "armv9_") {
			if p, err := LoadPMU(fs, n); err == nil {
				return p
			}
		}
	}
	return nil
}

// NoCorePMU is the reason given for hardware events on a machine without a
// core PMU.
func NoCorePMU(fs sysfs.FS, spec string) *Unavailable {
	return &Unavailable{Spec: spec,
		Reason: "no core PMU (" + fs.Sys(DevicesDir, "cpu") + " is missing: a virtual machine without a virtual PMU, or a kernel without PMU support)",
		Fix:    "give the guest a PMU (QEMU/KVM: -cpu host,pmu=on; VMware: enable 'virtualize CPU performance counters'; cloud: a bare-metal or PMU-enabled instance type); software events and tracepoints still work"}
}

// Resolve finds what a specification means on the machine fs describes.
// Tracepoints are looked up under tracefs (see Tracefs). An error of type
// *Unavailable means the specification is valid but this machine cannot
// count it.
func Resolve(fs sysfs.FS, sp Spec) (*Event, error) {
	ev := &Event{Spec: sp, Attr: Attr{Mods: sp.Mods}}
	switch sp.Kind {
	case KindGeneric:
		g, ok := lookupGeneric(sp.Name)
		if !ok {
			return nil, fmt.Errorf("unknown generic event %q", sp.Name)
		}
		ev.Name, ev.Desc, ev.Unit = sp.Name, g.Desc, g.Unit
		ev.Attr.Type, ev.Attr.Config[0] = g.Type, g.Config
		if g.Type == TypeHardware || g.Type == TypeHWCache {
			core := CorePMU(fs)
			if core == nil {
				return nil, NoCorePMU(fs, sp.Text)
			}
			ev.PMU, ev.CPUs = core.Name, core.CPUs
		}
	case KindRaw:
		core := CorePMU(fs)
		if core == nil {
			return nil, NoCorePMU(fs, sp.Text)
		}
		ev.Name, ev.Desc, ev.Unit = sp.Name, fmt.Sprintf("raw event 0x%x of the core PMU", sp.Raw), "events"
		ev.Attr.Type, ev.Attr.Config[0], ev.PMU, ev.CPUs = TypeRaw, sp.Raw, core.Name, core.CPUs
	case KindTracepoint:
		dir, err := Tracefs(fs)
		if err != nil {
			return nil, &Unavailable{Spec: sp.Text, Reason: err.Error(), Fix: TracefsFix(err)}
		}
		id, err := sysfs.ReadInt(filepath.Join(dir, "events", sp.System, sp.Name, "id"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if _, serr := os.Stat(filepath.Join(dir, "events", sp.System, sp.Name)); serr == nil {
					return nil, &Unavailable{Spec: sp.Text, Reason: "tracepoint " + sp.Text + " exists but its id is unreadable", Fix: "run as root or make tracefs readable (chmod/mount -o mode)"}
				}
				return nil, &Unavailable{Spec: sp.Text, Reason: "this kernel has no tracepoint " + sp.Text + " (" + filepath.Join(dir, "events", sp.System, sp.Name) + " is missing)",
					Fix: "it depends on the kernel version and configuration (CONFIG_NUMA_BALANCING, CONFIG_MIGRATION, the architecture)"}
			}
			if errors.Is(err, os.ErrPermission) {
				return nil, &Unavailable{Spec: sp.Text, Reason: "cannot read tracepoint ids under " + dir + ": permission denied", Fix: "run as root, or mount tracefs with -o mode=755"}
			}
			return nil, fmt.Errorf("tracepoint %s: %w", sp.Text, err)
		}
		ev.Name, ev.Desc, ev.Unit = sp.System+":"+sp.Name, tracepointDesc(sp.System, sp.Name), "events"
		ev.Attr.Type, ev.Attr.Config[0] = TypeTracepoint, uint64(id)
	case KindPMU:
		pmus, err := loadInstances(fs, sp.PMU)
		if err != nil {
			if errors.Is(err, ErrNoPMU) {
				return nil, &Unavailable{Spec: sp.Text, Reason: "this machine has no PMU " + sp.PMU + " (" + fs.Sys(DevicesDir, sp.PMU) + " is missing)",
					Fix: pmuFix(fs, sp.PMU)}
			}
			return nil, err
		}
		p := pmus[0]
		regs, alias, err := p.Encode(sp.Terms)
		if err != nil {
			return nil, err
		}
		for _, q := range pmus {
			if q != p {
				r, _, err := q.Encode(sp.Terms)
				if err != nil || r != regs {
					return nil, fmt.Errorf("event %q: instance %s of %s encodes differently from %s: name the instance (%s/.../)", sp.Text, q.Name, sp.PMU, p.Name, q.Name)
				}
			}
			if (q.CPUMask == nil) != (p.CPUMask == nil) {
				return nil, fmt.Errorf("event %q: instances of %s disagree on having a cpumask", sp.Text, sp.PMU)
			}
			ev.Instances = append(ev.Instances, Instance{PMU: q.Name, Type: q.Type, CPUMask: q.CPUMask})
		}
		ev.Attr.Type, ev.Attr.Config, ev.PMU = p.Type, regs, sp.PMU
		ev.CPUMask, ev.CPUs = p.CPUMask, p.CPUs
		ev.Unit = "events"
		if alias != nil {
			ev.Scale, ev.Desc = alias.Scale, "event "+alias.Name+" of PMU "+p.Name
			if alias.Unit != "" {
				ev.Unit = alias.Unit
			}
		} else {
			ev.Desc = fmt.Sprintf("raw event of PMU %s (config 0x%x)", p.Name, regs[0])
		}
		ev.Name = sp.Name
		if ev.Name == "" {
			ev.Name = SafeName(strings.TrimSuffix(sp.String(), "/"))
		}
	default:
		return nil, fmt.Errorf("event %q: unknown kind %v", sp.Text, sp.Kind)
	}
	return ev, nil
}

// loadInstances loads the PMU name, or when there is none, every instance
// name_N (uncore_imc_0, uncore_imc_1, ...), sorted by N.
func loadInstances(fs sysfs.FS, name string) ([]*PMU, error) {
	p, err := LoadPMU(fs, name)
	if err == nil {
		return []*PMU{p}, nil
	}
	if !errors.Is(err, ErrNoPMU) {
		return nil, err
	}
	names, _ := ListPMUs(fs)
	type inst struct {
		n int
		p *PMU
	}
	var found []inst
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, name+"_")
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		q, err := LoadPMU(fs, n)
		if err != nil {
			return nil, err
		}
		num, _ := strconv.Atoi(rest)
		found = append(found, inst{num, q})
	}
	if len(found) == 0 {
		return nil, err
	}
	sort.Slice(found, func(i, j int) bool { return found[i].n < found[j].n })
	out := make([]*PMU, len(found))
	for i, f := range found {
		out[i] = f.p
	}
	return out, nil
}

// pmuFix suggests what to do about a missing PMU.
func pmuFix(fs sysfs.FS, name string) string {
	switch {
	case strings.HasPrefix(name, "uncore_"):
		return "uncore PMUs need bare metal and the intel_uncore driver (modprobe intel_uncore)"
	case strings.HasPrefix(name, "amd_df"), strings.HasPrefix(name, "amd_l3"), strings.HasPrefix(name, "amd_umc"):
		return "AMD data-fabric/L3/UMC PMUs need bare metal and the amd_uncore driver (modprobe amd_uncore)"
	case name == "cpu" || name == "cpu_core" || name == "cpu_atom":
		return NoCorePMU(fs, name).Fix
	case name == "msr":
		return "modprobe msr does not add it: the msr PMU is built into x86 kernels (arch/x86/events/msr.c); check CONFIG_PERF_EVENTS"
	}
	names, _ := ListPMUs(fs)
	return "this machine's PMUs are: " + strings.Join(names, ", ")
}

// SafeName turns s into an event name numascope accepts: characters outside
// [A-Za-z0-9_:-] become '_', runs of '_' collapse, and '_' is trimmed.
func SafeName(s string) string {
	var b strings.Builder
	under := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '-'
		if !ok || c == '_' {
			if !under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		under = false
		b.WriteByte(c)
	}
	return strings.TrimRight(b.String(), "_")
}

// tracepointDesc describes the NUMA tracepoints; others get a generic line.
func tracepointDesc(sys, name string) string {
	if d, ok := numaTracepointDesc[sys+":"+name]; ok {
		return d
	}
	return "tracepoint " + sys + ":" + name + " hits"
}

// NUMATracepoints are the tracepoints that show NUMA balancing and page
// migration at work, offered by default where the kernel has them.
var NUMATracepoints = []string{
	"sched:sched_move_numa", "sched:sched_stick_numa", "sched:sched_swap_numa",
	"migrate:mm_migrate_pages", "exceptions:page_fault_user", "exceptions:page_fault_kernel",
}

var numaTracepointDesc = map[string]string{
	"sched:sched_move_numa":        "NUMA balancing moved a task to its preferred node",
	"sched:sched_stick_numa":       "NUMA balancing failed to move a task to its preferred node (it sticks)",
	"sched:sched_swap_numa":        "NUMA balancing swapped two tasks between nodes",
	"migrate:mm_migrate_pages":     "page migration batches finished (NUMA balancing, compaction, move_pages, demotion)",
	"exceptions:page_fault_user":   "page faults taken in user mode (x86), on the CPU that took them",
	"exceptions:page_fault_kernel": "page faults taken in kernel mode (x86), on the CPU that took them",
}
