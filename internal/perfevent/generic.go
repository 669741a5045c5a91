package perfevent

import (
	"sort"
	"strings"

	"github.com/numascope/numascope/internal/suggest"
)

// perf_event_attr.type values (include/uapi/linux/perf_event.h).
const (
	TypeHardware   = 0
	TypeSoftware   = 1
	TypeTracepoint = 2
	TypeHWCache    = 3
	TypeRaw        = 4
)

// Generic describes a generic event: its type, config and what it counts.
type Generic struct {
	Type   uint32
	Config uint64
	Desc   string
	Unit   string
}

// generic maps perf's generic event names (and their aliases) to encodings.
var generic = map[string]Generic{}

func addGeneric(typ uint32, cfg uint64, unit, desc string, names ...string) {
	for _, n := range names {
		generic[n] = Generic{Type: typ, Config: cfg, Desc: desc, Unit: unit}
	}
}

func init() {
	// PERF_COUNT_HW_*: the core PMU's generic events.
	addGeneric(TypeHardware, 0, "cycles", "CPU cycles (core clock; counts only while not halted)", "cycles", "cpu-cycles")
	addGeneric(TypeHardware, 1, "instructions", "instructions retired", "instructions")
	addGeneric(TypeHardware, 2, "references", "last-level cache references (model-specific meaning)", "cache-references")
	addGeneric(TypeHardware, 3, "misses", "last-level cache misses (model-specific meaning)", "cache-misses")
	addGeneric(TypeHardware, 4, "branches", "branch instructions retired", "branches", "branch-instructions")
	addGeneric(TypeHardware, 5, "misses", "mispredicted branches", "branch-misses")
	addGeneric(TypeHardware, 6, "cycles", "bus cycles", "bus-cycles")
	addGeneric(TypeHardware, 7, "cycles", "cycles stalled in the front end", "stalled-cycles-frontend", "idle-cycles-frontend")
	addGeneric(TypeHardware, 8, "cycles", "cycles stalled in the back end", "stalled-cycles-backend", "idle-cycles-backend")
	addGeneric(TypeHardware, 9, "cycles", "reference cycles (constant rate, unaffected by frequency scaling)", "ref-cycles")

	// PERF_COUNT_SW_*: counted by the kernel, present on every machine.
	addGeneric(TypeSoftware, 0, "ns", "CPU clock time in nanoseconds", "cpu-clock")
	addGeneric(TypeSoftware, 1, "ns", "task clock time in nanoseconds", "task-clock")
	addGeneric(TypeSoftware, 2, "faults", "page faults (minor and major), counted on the CPU that took them", "page-faults", "faults")
	addGeneric(TypeSoftware, 3, "switches", "context switches", "context-switches", "cs")
	addGeneric(TypeSoftware, 4, "migrations", "task migrations between CPUs", "cpu-migrations", "migrations")
	addGeneric(TypeSoftware, 5, "faults", "minor page faults (no I/O)", "minor-faults")
	addGeneric(TypeSoftware, 6, "faults", "major page faults (needing I/O)", "major-faults")
	addGeneric(TypeSoftware, 7, "faults", "alignment faults", "alignment-faults")
	addGeneric(TypeSoftware, 8, "faults", "instruction emulation faults", "emulation-faults")
	addGeneric(TypeSoftware, 11, "switches", "context switches to a task of another cgroup", "cgroup-switches")

	// PERF_COUNT_HW_CACHE_*: config = cache | op<<8 | result<<16.
	caches := []struct {
		id         uint64
		name, what string
	}{
		{0, "L1-dcache", "L1 data cache"}, {1, "L1-icache", "L1 instruction cache"},
		{2, "LLC", "last-level cache"}, {3, "dTLB", "data TLB"}, {4, "iTLB", "instruction TLB"},
		{5, "branch", "branch prediction unit"},
		{6, "node", "memory of the local NUMA node (node-load-misses: accesses served by a remote node)"},
	}
	ops := []struct {
		id                uint64
		access, miss, how string
	}{
		{0, "loads", "load-misses", "loads"}, {1, "stores", "store-misses", "stores"},
		{2, "prefetches", "prefetch-misses", "prefetches"},
	}
	for _, c := range caches {
		for _, o := range ops {
			addGeneric(TypeHWCache, c.id|o.id<<8, "accesses", c.what+": "+o.how, c.name+"-"+o.access)
			addGeneric(TypeHWCache, c.id|o.id<<8|1<<16, "misses", c.what+": "+o.how+" that missed", c.name+"-"+o.miss)
		}
	}
}

// lookupGeneric finds a generic event by name.
func lookupGeneric(name string) (Generic, bool) {
	g, ok := generic[name]
	return g, ok
}

// LookupGeneric finds a generic event by name (cycles, page-faults, node-loads, ...).
func LookupGeneric(name string) (Generic, bool) { return lookupGeneric(name) }

// SoftwareEvents lists the software events every kernel counts, in the
// order the sensor offers them. Aliases are left out.
var SoftwareEvents = []string{"page-faults", "minor-faults", "major-faults", "context-switches", "cpu-migrations", "cpu-clock"}

// HardwareEvents lists the generic hardware events the sensor offers when
// no other list is asked for: cycles for rates, and the NUMA-relevant cache
// events.
var HardwareEvents = []string{"cycles", "instructions", "cache-misses", "node-loads", "node-load-misses", "node-stores", "node-store-misses"}

// suggestGeneric suggests generic names close to a mistyped one.
func suggestGeneric(name string) string {
	var cands []string
	lname := strings.ToLower(name)
	for n := range generic {
		ln := strings.ToLower(n)
		if strings.HasPrefix(ln, lname) || strings.HasPrefix(lname, ln) || suggest.Distance(ln, lname) <= 2 {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return ""
	}
	sort.Strings(cands)
	if len(cands) > 4 {
		cands = cands[:4]
	}
	return "; did you mean " + strings.Join(cands, ", ") + "?"
}
