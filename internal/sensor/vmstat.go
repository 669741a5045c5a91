package sensor

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

func init() { Register("vmstat", func(Options) Sensor { return &vmstatSensor{} }) }

// vmstatSensor offers every line of /proc/vmstat as an event of one source:
// the machine-wide NUMA allocation counters (numa_hit, numa_miss, ...), the
// automatic NUMA balancing counters (numa_hint_faults, numa_pages_migrated),
// page migration, faults, reclaim, THP and the nr_* page levels.
type vmstatSensor struct {
	path   string
	size   int
	maxLen int
	lines  []kvLine
	index  map[string]int // name -> line index at Open
	events []Event
	file   *kvFile // nil when nothing is enabled
}

func (v *vmstatSensor) Name() string { return "vmstat" }

func (v *vmstatSensor) Open(env Env) error {
	v.Close()
	*v = vmstatSensor{} // Open may be called again
	v.path = env.FS.Proc("vmstat")
	data, err := sysfs.ReadFile(v.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("vmstat: %s not found: /proc is not mounted (or the --root tree lacks proc/vmstat)", v.path)
		}
		return fmt.Errorf("vmstat: cannot read %s: %v", v.path, err)
	}
	v.size = len(data)
	v.lines, v.index, v.maxLen = scanNames(data, formatKV)
	if len(v.lines) == 0 {
		return fmt.Errorf("vmstat: %s holds no statistics: it is empty or not a vmstat file", v.path)
	}
	v.events = make([]Event, len(v.lines))
	for i, l := range v.lines {
		v.events[i] = vmstatEvent(l.Name, "/proc/vmstat")
	}
	return nil
}

func (v *vmstatSensor) Sources() []string { return []string{""} }
func (v *vmstatSensor) Events() []Event   { return v.events }

func (v *vmstatSensor) Enable(events []int) error {
	if err := checkEnable(events, len(v.events)); err != nil {
		return err
	}
	v.file.close()
	v.file = nil
	if len(events) == 0 {
		return nil
	}
	f, err := newKVFile(v.path, formatKV, v.size, v.maxLen, v.lines[len(v.lines)-1].Name)
	if err != nil {
		return fmt.Errorf("opening %s: %w", v.path, err)
	}
	for k, e := range events {
		name := v.lines[e].Name
		f.add(name, v.index[name], k)
	}
	v.file = f
	return nil
}

func (v *vmstatSensor) Read(dst []int64) error {
	if v.file == nil {
		return nil
	}
	return v.file.read(dst)
}

// Files lists the files Read reads for the current Enable set.
func (v *vmstatSensor) Files() []string {
	if v.file == nil {
		return nil
	}
	return []string{v.path}
}

func (v *vmstatSensor) Close() error {
	err := v.file.close()
	v.file = nil
	return err
}

// checkEnable validates the indexes given to Enable.
func checkEnable(events []int, n int) error {
	for _, e := range events {
		if e < 0 || e >= n {
			return fmt.Errorf("event index %d out of range (the sensor has %d events)", e, n)
		}
	}
	return nil
}

// cumulativeNr lists the nr_* entries of vmstat that count events since boot
// rather than give a current level (mm/vmstat.c, vmstat_text).
var cumulativeNr = map[string]bool{
	"nr_dirtied":                   true, // pages dirtied
	"nr_written":                   true, // pages written back
	"nr_throttled_written":         true, // pages written while reclaim was throttled
	"nr_foll_pin_acquired":         true, // FOLL_PIN page pins taken
	"nr_foll_pin_released":         true, // FOLL_PIN page pins dropped
	"nr_vmscan_write":              true, // pages written by reclaim
	"nr_vmscan_immediate_reclaim":  true, // pages marked for immediate reclaim
	"nr_tlb_remote_flush":          true, // CONFIG_DEBUG_TLBFLUSH event counters
	"nr_tlb_remote_flush_received": true,
	"nr_tlb_local_flush_all":       true,
	"nr_tlb_local_flush_one":       true,
}

// vmstatKind says whether a vmstat entry is a level or a count since boot.
func vmstatKind(name string) ValueKind {
	switch {
	case cumulativeNr[name]:
		return Counter
	case strings.HasPrefix(name, "nr_"), name == "workingset_nodes":
		return Gauge
	}
	return Counter
}

// vmstatUnit returns the unit of a vmstat entry. Most entries count pages
// (of the base page size); the exceptions are listed here.
func vmstatUnit(name string) string {
	switch name {
	case "pgpgin", "pgpgout", "nr_kernel_stack", "nr_shadow_call_stack":
		return "KiB"
	case "pgfault", "pgmajfault":
		return "faults"
	case "slabs_scanned":
		return "objects"
	case "workingset_nodes", "workingset_nodereclaim":
		return "nodes"
	case "pgscan_direct_throttle", "pageoutrun", "numa_huge_pte_updates":
		return "events"
	}
	switch {
	case strings.HasSuffix(name, "_faults"), strings.Contains(name, "_faults_"):
		return "faults"
	case strings.HasPrefix(name, "nr_tlb_"):
		return "events"
	case strings.HasPrefix(name, "allocstall_"):
		return "stalls"
	case strings.HasPrefix(name, "nr_"), strings.HasPrefix(name, "numa_"),
		strings.HasPrefix(name, "pg"), strings.HasPrefix(name, "pswp"),
		strings.HasPrefix(name, "unevictable_pgs_"), strings.HasPrefix(name, "workingset_"),
		strings.HasPrefix(name, "balloon_"), strings.HasPrefix(name, "zswp"),
		strings.HasPrefix(name, "swap_ra"), strings.HasPrefix(name, "swpin_"),
		strings.HasPrefix(name, "swpout_"), strings.HasPrefix(name, "kswapd_inodesteal"),
		name == "ksm_swpin_copy", name == "cow_ksm",
		name == "compact_isolated", strings.HasPrefix(name, "compact_") && strings.HasSuffix(name, "_scanned"):
		return "pages"
	}
	return "events"
}

// vmstatDesc holds descriptions of the entries NUMA work cares most about.
var vmstatDesc = map[string]string{
	"numa_hit":                      "pages allocated on the node the allocation preferred",
	"numa_miss":                     "pages allocated on a node other than the preferred one (counted on the node that got them)",
	"numa_foreign":                  "pages that preferred a node but were allocated elsewhere (counted on the preferred node)",
	"numa_interleave":               "pages allocated by the interleave policy on the intended node",
	"numa_local":                    "pages allocated on the node of the CPU that asked",
	"numa_other":                    "pages allocated on a node other than that of the CPU that asked",
	"numa_pte_updates":              "PTEs marked for NUMA hinting faults by automatic NUMA balancing",
	"numa_huge_pte_updates":         "huge PMDs marked for NUMA hinting faults by automatic NUMA balancing",
	"numa_hint_faults":              "NUMA hinting faults taken (automatic NUMA balancing sampling accesses)",
	"numa_hint_faults_local":        "NUMA hinting faults where the page was already on the accessing node",
	"numa_pages_migrated":           "pages migrated by automatic NUMA balancing",
	"pgmigrate_success":             "pages migrated successfully (any reason: balancing, compaction, move_pages)",
	"pgmigrate_fail":                "pages that failed to migrate",
	"thp_migration_success":         "transparent huge pages migrated whole",
	"thp_migration_fail":            "transparent huge pages that failed to migrate",
	"thp_migration_split":           "transparent huge pages split to be migrated",
	"pgpromote_success":             "pages promoted from a slow memory tier to a fast one",
	"pgpromote_candidate":           "pages found to be candidates for promotion to a faster tier",
	"pgdemote_kswapd":               "pages demoted to a slower memory tier by kswapd",
	"pgdemote_direct":               "pages demoted to a slower memory tier by direct reclaim",
	"pgdemote_khugepaged":           "pages demoted to a slower memory tier by khugepaged",
	"pgfault":                       "page faults (minor and major)",
	"pgmajfault":                    "major page faults (needing I/O)",
	"pgpgin":                        "data paged in from block devices",
	"pgpgout":                       "data paged out to block devices",
	"pswpin":                        "pages swapped in",
	"pswpout":                       "pages swapped out",
	"pgfree":                        "pages freed",
	"pgactivate":                    "pages moved to the active LRU list",
	"pgdeactivate":                  "pages moved to the inactive LRU list",
	"pgrefill":                      "pages scanned on the active list by reclaim",
	"pgreuse":                       "pages reused on a write fault instead of copied",
	"pgsteal_kswapd":                "pages reclaimed by kswapd",
	"pgsteal_direct":                "pages reclaimed by direct reclaim",
	"pgscan_kswapd":                 "pages scanned by kswapd",
	"pgscan_direct":                 "pages scanned by direct reclaim",
	"pgscan_direct_throttle":        "direct reclaims throttled",
	"pgrotated":                     "pages rotated to the tail of the inactive list after writeback",
	"zone_reclaim_failed":           "failed node-local (zone_reclaim_mode) reclaims",
	"zone_reclaim_success":          "successful node-local (zone_reclaim_mode) reclaims",
	"slabs_scanned":                 "slab objects scanned by shrinkers",
	"pageoutrun":                    "kswapd reclaim passes",
	"oom_kill":                      "processes killed by the OOM killer",
	"compact_stall":                 "allocations that stalled for direct compaction",
	"compact_fail":                  "direct compactions that failed",
	"compact_success":               "direct compactions that succeeded",
	"compact_migrate_scanned":       "pages scanned by compaction for migration",
	"compact_free_scanned":          "pages scanned by compaction for free targets",
	"compact_isolated":              "pages isolated by compaction",
	"thp_fault_alloc":               "transparent huge pages allocated on a page fault",
	"thp_fault_fallback":            "page faults that fell back to small pages, no THP was available",
	"thp_collapse_alloc":            "transparent huge pages allocated by khugepaged to collapse small pages",
	"thp_split_page":                "transparent huge pages split into small pages",
	"thp_split_pmd":                 "huge PMD mappings split into PTE mappings",
	"nr_free_pages":                 "free pages",
	"nr_anon_pages":                 "anonymous pages mapped into page tables",
	"nr_mapped":                     "file pages mapped into page tables",
	"nr_file_pages":                 "pages in the page cache",
	"nr_dirty":                      "dirty pages waiting for writeback",
	"nr_writeback":                  "pages under writeback",
	"nr_shmem":                      "shmem and tmpfs pages",
	"nr_slab_reclaimable":           "reclaimable slab pages",
	"nr_slab_unreclaimable":         "unreclaimable slab pages",
	"nr_page_table_pages":           "pages used for page tables",
	"nr_kernel_stack":               "memory used by kernel stacks",
	"nr_anon_transparent_hugepages": "anonymous transparent huge pages (in huge pages)",
	"nr_active_anon":                "anonymous pages on the active LRU list",
	"nr_inactive_anon":              "anonymous pages on the inactive LRU list",
	"nr_active_file":                "file pages on the active LRU list",
	"nr_inactive_file":              "file pages on the inactive LRU list",
	"nr_unevictable":                "unevictable (mlocked, ramfs) pages",
	"nr_mlock":                      "mlocked pages",
	"nr_isolated_anon":              "anonymous pages temporarily isolated from the LRU (migration, reclaim)",
	"nr_isolated_file":              "file pages temporarily isolated from the LRU (migration, reclaim)",
	"nr_dirtied":                    "pages dirtied",
	"nr_written":                    "pages written back",
	"nr_foll_pin_acquired":          "page pins taken with FOLL_PIN (RDMA, O_DIRECT, vfio)",
	"nr_foll_pin_released":          "page pins released with FOLL_PIN",
	"nr_dirty_threshold":            "dirty page level at which writers are throttled",
	"nr_dirty_background_threshold": "dirty page level at which background writeback starts",
	"workingset_refault_anon":       "anonymous pages faulted back in soon after reclaim",
	"workingset_refault_file":       "file pages read back in soon after reclaim",
}

// vmstatEvent describes a vmstat entry; file names where it came from, for
// the generic descriptions.
func vmstatEvent(name, file string) Event {
	e := Event{Name: name, Unit: vmstatUnit(name), Kind: vmstatKind(name)}
	if d, ok := vmstatDesc[name]; ok {
		e.Desc = d
		return e
	}
	for _, zone := range []struct{ prefix, what string }{
		{"pgalloc_", "pages allocated in zone "},
		{"pgskip_", "pages skipped by reclaim in zone "},
		{"allocstall_", "direct reclaim stalls of allocations for zone "},
		{"pgsteal_", "pages reclaimed by "},
		{"pgscan_", "pages scanned by reclaim: "},
		{"pgdemote_", "pages demoted to a slower tier by "},
		{"unevictable_pgs_", "unevictable pages "},
	} {
		if rest, ok := strings.CutPrefix(name, zone.prefix); ok {
			e.Desc = zone.what + rest
			return e
		}
	}
	switch {
	case strings.HasPrefix(name, "thp_"):
		e.Desc = "transparent huge page event " + name + " (see admin-guide/mm/transhuge)"
	case e.Kind == Gauge:
		e.Desc = "level of " + name + " in " + file + " (see mm/vmstat.c)"
	default:
		e.Desc = "count of " + name + " since boot, from " + file + " (see mm/vmstat.c)"
	}
	return e
}
