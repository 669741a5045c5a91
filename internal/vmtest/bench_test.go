package vmtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchDoc is the part of numascope bench's JSON the test reads.
type benchDoc struct {
	Latency   *benchMatrix `json:"latency_ns"`
	Bandwidth *benchMatrix `json:"bandwidth_mbs"`
	Placement struct {
		MinFractionOnTarget *float64 `json:"min_fraction_on_target"`
		Pairs               []struct {
			Kind             string  `json:"kind"`
			Initiator        int     `json:"initiator"`
			Target           int     `json:"target"`
			FractionOnTarget float64 `json:"fraction_on_target"`
			PagesChecked     int     `json:"pages_checked"`
		} `json:"pairs"`
	} `json:"placement"`
	Rated struct {
		Initiators  []int           `json:"initiators"`
		Targets     []int           `json:"targets"`
		NotReported string          `json:"not_reported"`
		MemoryTiers map[string]*int `json:"memory_tiers"`
		TierOrder   struct {
			Checked bool   `json:"checked"`
			Why     string `json:"why"`
		} `json:"tier_order"`
	} `json:"rated"`
	Conditions struct {
		NUMABalancing    string `json:"numa_balancing"`
		NUMABalancingOff bool   `json:"numa_balancing_off_during_run"`
		Virtual          bool   `json:"virtual"`
		THP              string `json:"thp"`
	} `json:"conditions"`
	Skipped []struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	// --kind all includes loaded latency (TestBenchLoaded checks it).
	Peak   *benchMatrix `json:"peak_injection_mbs"`
	Loaded *struct {
		Pairs []struct {
			LatencyNS []float64 `json:"latency_ns"`
			Reason    string    `json:"reason"`
		} `json:"pairs"`
	} `json:"loaded"`
	Topology *struct {
		Nodes []struct {
			ID        int            `json:"id"`
			CPUs      []int          `json:"cpus"`
			CPUList   string         `json:"cpu_list"`
			CPULess   bool           `json:"cpuless"`
			Distances map[string]int `json:"distances"`
		} `json:"nodes"`
		Distances [][]*int `json:"distances"`
	} `json:"topology"`
}

type benchMatrix struct {
	Kernel     string       `json:"kernel"`
	Initiators []int        `json:"initiators"`
	Targets    []int        `json:"targets"`
	Matrix     [][]*float64 `json:"matrix"`
	CPUs       [][]int      `json:"cpus"`
}

// TestBench runs numascope bench in a VM with CPUs on nodes 0-2 and a
// CPU-less memory node 3 (CXL- or HBM-like). Emulated timings mean nothing
// (TCG), so it asserts structure and placement: three initiator rows and
// four target columns, the CPU-less node a column only, every buffer's
// pages on its target, and NUMA balancing off during the run and restored
// after it, also after a kill -9.
func TestBench(t *testing.T) {
	requireVM(t)
	const bal = "/proc/sys/kernel/numa_balancing"
	script := "sec bal.before cat " + bal + "\n" +
		"sec bench gtimeout 180 numascope bench --format json --size 8M --repeat 2 --kernel triad\n" +
		"sec bal.after cat " + bal + "\n" +
		// What the kernel says about tiers, beside what topology read.
		"sec tiers sh -c 'for d in /sys/devices/virtual/memory_tiering/memory_tier*; do [ -d \"$d\" ] && echo \"${d##*memory_tier} $(cat $d/nodelist)\"; done; true'\n" +
		"sec topo numascope topology --format json\n" +
		"sec text gtimeout 120 numascope bench --kind latency --from 0 --to 2-3 --size 4M --repeat 1\n" +
		"sec err.from sh -c 'numascope bench --from 3 2>&1; echo rc=$?'\n" +
		"sec err.size sh -c 'numascope bench --to 3 --size 2G 2>&1; echo rc=$?'\n" +
		// Killed in the middle of a run: the guard restores balancing.
		"numascope bench --kind latency --size 32M --repeat 100 >/dev/null 2>&1 &\n" +
		"pid=$!; i=0; while [ \"$(cat " + bal + ")\" != 0 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done\n" +
		"sec bal.during cat " + bal + "\n" +
		"kill -9 $pid; sleep 1\n" +
		"sec bal.killed cat " + bal + "\n"
	r := runVM(t, []string{"--nodes", "4", "--cpuless", "1"}, script)

	before := strings.TrimSpace(r.section(t, "bal.before"))
	if before != "1" {
		t.Fatalf("kernel.numa_balancing in the VM is %q before the run, want 1 (numavm turns it on)", before)
	}
	var d benchDoc
	if err := json.Unmarshal([]byte(r.section(t, "bench")), &d); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, r.section(t, "bench"))
	}
	for name, m := range map[string]*benchMatrix{"latency_ns": d.Latency, "bandwidth_mbs": d.Bandwidth, "peak_injection_mbs": d.Peak} {
		if m == nil {
			t.Fatalf("%s missing", name)
		}
		if fmt.Sprint(m.Initiators) != "[0 1 2]" || fmt.Sprint(m.Targets) != "[0 1 2 3]" {
			t.Errorf("%s: initiators %v targets %v, want [0 1 2] (CPU nodes) and [0 1 2 3] (the CPU-less node 3 a target only)", name, m.Initiators, m.Targets)
		}
		if len(m.Matrix) != 3 {
			t.Fatalf("%s: %d rows, want 3", name, len(m.Matrix))
		}
		for i, row := range m.Matrix {
			if len(row) != 4 {
				t.Fatalf("%s: row %d has %d columns, want 4", name, i, len(row))
			}
			for j, v := range row {
				if v == nil || *v <= 0 {
					t.Errorf("%s[%d][%d] = %v, want a positive figure", name, i, j, v)
				}
			}
		}
		for i, cpus := range m.CPUs {
			if len(cpus) != 1 || cpus[0] != i {
				t.Errorf("%s: initiator %d ran on CPUs %v, want [%d] (one CPU per node in this VM)", name, i, cpus, i)
			}
		}
	}
	if d.Bandwidth != nil && d.Bandwidth.Kernel != "triad" {
		t.Errorf("bandwidth kernel %q, want triad", d.Bandwidth.Kernel)
	}
	// One CPU per node: every pair has a peak, but no CPU is left to
	// inject beside the chaser's, so no loaded curve: null, and why.
	if d.Loaded == nil || len(d.Loaded.Pairs) != 12 {
		t.Fatalf("loaded %+v, want 12 pairs", d.Loaded)
	}
	for k, p := range d.Loaded.Pairs {
		if p.LatencyNS != nil || !strings.Contains(p.Reason, "no CPU is left to inject") {
			t.Errorf("loaded pair %d: latency %v, reason %q; want null and why (one CPU per node)", k, p.LatencyNS, p.Reason)
		}
	}
	for _, s := range d.Skipped {
		if s.Kind != "loaded" || !strings.Contains(s.Reason, "no CPU is left to inject") {
			t.Errorf("skipped %+v, want only the loaded curves (one CPU per node)", s)
		}
	}
	if len(d.Skipped) != 12 {
		t.Errorf("%d skipped, want the 12 loaded curves", len(d.Skipped))
	}
	// QEMU gives this VM no HMAT: rated says so once, for every pair.
	if fmt.Sprint(d.Rated.Initiators, d.Rated.Targets) != "[0 1 2] [0 1 2 3]" || !strings.Contains(d.Rated.NotReported, "no HMAT values") {
		t.Errorf("rated %+v: want the 3x4 pairs and a reason for no HMAT values", d.Rated)
	}
	checkTiers(t, r.section(t, "tiers"), r.section(t, "topo"), d.Rated.MemoryTiers, d.Rated.TierOrder.Checked)
	checkBenchTopology(t, &d, r.section(t, "topo"))
	if f := d.Placement.MinFractionOnTarget; f == nil || *f < 0.99 {
		t.Errorf("placement.min_fraction_on_target %v, want at least 0.99", f)
	}
	if len(d.Placement.Pairs) != 36 {
		t.Errorf("%d placements checked, want 36 (3 kinds x 3 initiators x 4 targets)", len(d.Placement.Pairs))
	}
	for _, p := range d.Placement.Pairs {
		if p.FractionOnTarget < 0.99 || p.PagesChecked == 0 {
			t.Errorf("%s %d->%d: %.3f of %d pages on the target", p.Kind, p.Initiator, p.Target, p.FractionOnTarget, p.PagesChecked)
		}
	}
	if !d.Conditions.NUMABalancingOff || d.Conditions.NUMABalancing != "1" || !d.Conditions.Virtual {
		t.Errorf("conditions %+v: want balancing 1 turned off during the run, and a virtual machine", d.Conditions)
	}
	if after := strings.TrimSpace(r.section(t, "bal.after")); after != before {
		t.Errorf("kernel.numa_balancing %q after the run, want %q restored", after, before)
	}
	text := r.section(t, "text")
	t.Logf("text output:\n%s", text)
	if !strings.Contains(text, "from\\to") || !strings.Contains(text, "Placement:") {
		t.Errorf("text output has no matrix or placement line:\n%s", text)
	}
	if s := r.section(t, "err.from"); !strings.Contains(s, "node 3 has no CPUs") || !strings.Contains(s, "rc=1") {
		t.Errorf("--from 3 (CPU-less): %q, want one error line saying node 3 has no CPUs", s)
	}
	if s := r.section(t, "err.size"); !strings.Contains(s, "free; --size needs") || !strings.Contains(s, "rc=1") {
		t.Errorf("--size 2G on a 512M node: %q, want an error about the free memory", s)
	}
	if during := strings.TrimSpace(r.section(t, "bal.during")); during != "0" {
		t.Errorf("kernel.numa_balancing %q during a run as root, want 0", during)
	}
	if killed := strings.TrimSpace(r.section(t, "bal.killed")); killed != before {
		t.Errorf("kernel.numa_balancing %q after kill -9, want %q restored by the guard", killed, before)
	}
}

// checkTiers compares the memory tiers the guest kernel lists with what
// numascope topology and bench read. Debian's kernels since 6.1 put every
// node with memory in the DRAM tier (memory_tier4); an older kernel has no
// tiers, and then both must say "not reported" (null).
func checkTiers(t *testing.T, kernel, topoJSON string, benchTiers map[string]*int, checked bool) {
	t.Helper()
	want := map[int]int{} // node -> tier
	for _, l := range strings.Split(strings.TrimSpace(kernel), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		var tier int
		fmt.Sscan(f[0], &tier)
		for _, part := range strings.Split(f[1], ",") {
			var lo, hi int
			if n, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); n < 2 {
				fmt.Sscan(part, &lo)
				hi = lo
			}
			for n := lo; n <= hi; n++ {
				want[n] = tier
			}
		}
	}
	var topo struct {
		MemoryTiers []struct {
			ID    int   `json:"id"`
			Nodes []int `json:"nodes"`
		} `json:"memory_tiers"`
		Nodes []struct {
			ID         int  `json:"id"`
			MemoryTier *int `json:"memory_tier"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(topoJSON), &topo); err != nil {
		t.Fatalf("topology JSON: %v", err)
	}
	t.Logf("kernel memory tiers: %q", kernel)
	if len(want) == 0 && topo.MemoryTiers != nil {
		t.Errorf("the kernel lists no memory tier, topology shows %+v", topo.MemoryTiers)
	}
	for _, n := range topo.Nodes {
		w, ok := want[n.ID]
		switch {
		case ok && (n.MemoryTier == nil || *n.MemoryTier != w):
			t.Errorf("node %d: topology's memory tier %v, the kernel's %d", n.ID, n.MemoryTier, w)
		case !ok && n.MemoryTier != nil:
			t.Errorf("node %d: topology's memory tier %d, the kernel lists it in none", n.ID, *n.MemoryTier)
		}
		if b := benchTiers[fmt.Sprint(n.ID)]; ok && (b == nil || *b != w) {
			t.Errorf("node %d: bench's memory tier %v, the kernel's %d", n.ID, b, w)
		}
	}
	if len(want) > 0 && !checked {
		t.Errorf("the kernel has memory tiers, but bench did not check their order")
	}
}

// checkBenchTopology: the bench document's topology is the guest's, as
// numascope topology reads it: four nodes, node 3 CPU-less, and the SLIT
// matrix of the nodes' distances.
func checkBenchTopology(t *testing.T, d *benchDoc, topoJSON string) {
	t.Helper()
	var topo struct {
		Nodes []struct {
			ID        int            `json:"id"`
			CPUs      []int          `json:"cpus"`
			Distances map[string]int `json:"distances"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(topoJSON), &topo); err != nil {
		t.Fatalf("topology JSON: %v", err)
	}
	if d.Topology == nil || len(d.Topology.Nodes) != 4 || len(d.Topology.Distances) != 4 {
		t.Fatalf("bench topology %+v, want 4 nodes and a 4x4 distance matrix", d.Topology)
	}
	for i, n := range d.Topology.Nodes {
		want := topo.Nodes[i]
		if n.ID != want.ID || fmt.Sprint(n.CPUs) != fmt.Sprint(want.CPUs) || n.CPULess != (n.ID == 3) || (n.CPULess && n.CPUList != "") {
			t.Errorf("bench topology node %+v, topology's %+v (node 3 CPU-less)", n, want)
		}
		for j, m := range topo.Nodes {
			v := d.Topology.Distances[i][j]
			if w, ok := want.Distances[fmt.Sprint(m.ID)]; !ok || v == nil || *v != w || n.Distances[fmt.Sprint(m.ID)] != w {
				t.Errorf("distance %d -> %d: bench %v (%d), topology %d", n.ID, m.ID, v, n.Distances[fmt.Sprint(m.ID)], w)
			}
		}
	}
}
