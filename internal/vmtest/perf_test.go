package vmtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// perfTracepoints are the NUMA tracepoints of the perf sensor, recorded per
// node in TestPerfNUMABalancing.
var perfTracepoints = []string{"migrate:mm_migrate_pages", "sched:sched_move_numa", "sched:sched_swap_numa",
	"sched:sched_stick_numa", "exceptions:page_fault_user"}

// TestPerfNUMABalancing runs the serial first-touch workload (every buffer
// first touched on node 0, workers on all nodes, so automatic NUMA
// balancing migrates three quarters of the pages) under numascope record
// with the perf sensor's tracepoints and software events per node. It
// checks that the migrations show up in migrate:mm_migrate_pages, on the
// nodes whose workers pulled the pages home (not node 0, which only gives
// them away), in proportion to the workload's own numa_pages_migrated
// delta; and that the first-touch page faults show up on node 0, whose CPU
// did the initialisation.
func TestPerfNUMABalancing(t *testing.T) {
	requireVM(t)
	const nodes, mb = 4, 32
	var evs []string
	for _, tp := range perfTracepoints {
		evs = append(evs, "perf.*."+tp)
	}
	evs = append(evs, "perf.*.page-faults", "vmstat.numa_pages_migrated", "vmstat.numa_hint_faults")
	rec, wl := "/tmp/perf.jsonl", "/tmp/perf.wl"
	script := "sec perf.events numascope events 'perf.*'\n" +
		fmt.Sprintf("sec perf.record taskset -c 0 numascope record -o %s -i 200ms -e '%s' -- firsttouch --serial --mb %d --settle 1.5 --seconds 6 --lead 1 --out %s\n",
			rec, strings.Join(evs, ","), mb, wl) +
		fmt.Sprintf("sec perf.csv numascope convert %s\n", rec) +
		fmt.Sprintf("sec perf.wl cat %s\n", wl)
	r := runVM(t, []string{"--nodes", strconv.Itoa(nodes)}, script)

	// The sensor is present in the VM and offers the tracepoints.
	list := r.section(t, "perf.events")
	for _, tp := range perfTracepoints {
		found := false
		for _, line := range strings.Split(list, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "perf."+tp {
				found = true
				if strings.Contains(line, "UNAVAILABLE") {
					t.Errorf("numascope events: %s is unavailable in the VM: %s", tp, line)
				}
			}
		}
		if !found {
			t.Errorf("numascope events: %s is not listed:\n%s", tp, list)
		}
	}
	s, wlr := recorded(t, r, "perf")
	total := wlr.counters(t, "total")
	if total.PagesMigrated <= 0 {
		t.Fatalf("workload: numa_pages_migrated %d: NUMA balancing did not run", total.PagesMigrated)
	}
	migrated := float64(total.PagesMigrated)
	per := make([]float64, nodes)
	sum := 0.0
	for k := 0; k < nodes; k++ {
		per[k] = s.total(t, fmt.Sprintf("perf.%d.migrate:mm_migrate_pages", k))
		sum += per[k]
	}
	t.Logf("mm_migrate_pages per node %v (sum %.0f); workload numa_pages_migrated %d, numa_hint_faults %d",
		per, sum, total.PagesMigrated, total.HintFaults)
	for _, tp := range perfTracepoints[1:4] {
		var v []float64
		for k := 0; k < nodes; k++ {
			v = append(v, s.total(t, fmt.Sprintf("perf.%d.%s", k, tp)))
		}
		t.Logf("%s per node: %v", tp, v)
	}
	// NUMA balancing migrates a misplaced base page with one migrate_pages()
	// call, which fires the tracepoint once; other migrations (compaction)
	// add a few. So the hits are about the pages migrated.
	within(t, "perf: migrate:mm_migrate_pages hits vs the workload's numa_pages_migrated", sum,
		0.95*migrated, 1.05*migrated+50)
	// The pages moved to nodes 1-3, by the workers running there: each
	// node's hits are the pages of its worker's buffer that the workload
	// finds at home after the run (move_pages), counted on that node's CPUs.
	home := make([]float64, nodes)
	for _, pl := range wlr.placements(t, "after_compute") {
		if pl.OwnerNode > 0 && pl.OwnerNode < nodes {
			home[pl.OwnerNode] += float64(pl.PerNode[pl.OwnerNode])
		}
	}
	for k := 1; k < nodes; k++ {
		within(t, fmt.Sprintf("perf: mm_migrate_pages hits on node %d vs its worker's pages migrated home", k), per[k],
			0.95*home[k], 1.05*home[k]+50)
	}
	within(t, "perf: mm_migrate_pages hits on node 0 (which only gives pages away)", per[0], 0, 0.02*sum+50)

	// First touch: node 0's CPU took a fault per page of every buffer.
	pages := float64(nodes * (mb << 20 / pageSize))
	f0 := s.total(t, "perf.0.page-faults")
	within(t, "perf: page faults on node 0 (serial first touch of every page)", f0, 0.95*pages, 3*pages+20000)
	u0 := s.total(t, "perf.0.exceptions:page_fault_user")
	within(t, "perf: exceptions:page_fault_user on node 0", u0, 0.95*pages, 3*pages+20000)
}
