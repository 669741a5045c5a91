package vmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const pageSize = 4096

// slackBytes is what a node's AnonPages may drift by apart from the workload:
// numascope's own memory (a few MiB of Go heap) lives on some node, and NUMA
// balancing may move it while the workload runs.
const slackBytes = 3 << 20

// events recorded in every scenario: per-node numastat counters and meminfo
// gauges, three of them also summed over the nodes (node.numa_hit, the
// column a user sees without --discrete), and the system-wide NUMA
// balancing counters.
const events = "node.*.numa_hit,node.*.local_node,node.*.interleave_hit,node.*.AnonPages,node.*.MemUsed," +
	"node.numa_hit,node.interleave_hit,node.AnonPages," +
	"vmstat.numa_hint_faults,vmstat.numa_pages_migrated"

// recordScript returns the VM script lines that record one workload run
// with numascope and print, as sections NAME.record, NAME.csv and NAME.wl,
// numascope's output, its recording as CSV and the workload's results.
//
// numascope runs on CPU 0 (taskset): its own few MiB of memory then stay on
// node 0 instead of being migrated by NUMA balancing from node to node as its
// threads move, which would blur the per-node gauges by as much. The
// workloads set their threads' CPUs themselves, so the inherited CPU mask
// does not constrain them.
func recordScript(name string, workload ...string) string {
	rec, wl := "/tmp/"+name+".jsonl", "/tmp/"+name+".wl"
	return fmt.Sprintf("sec %s.record taskset -c 0 numascope record -o %s -i 200ms -e '%s' -- %s --lead 1 --out %s\n",
		name, rec, events, strings.Join(workload, " "), wl) +
		fmt.Sprintf("sec %s.csv numascope convert %s\n", name, rec) +
		fmt.Sprintf("sec %s.wl cat %s\n", name, wl)
}

// recorded parses the sections recordScript produced.
func recorded(t *testing.T, r *vmResult, name string) (*series, wlResults) {
	t.Helper()
	r.section(t, name+".record")
	s, err := parseCSV(r.section(t, name+".csv"))
	if err != nil {
		t.Fatalf("%s: numascope convert: %v", name, err)
	}
	if len(s.T) < 5 {
		t.Fatalf("%s: numascope recorded only %d samples", name, len(s.T))
	}
	return s, parseWorkload(t, r.section(t, name+".wl"))
}

// ---- topology ------------------------------------------------------------------

// topoJSON is the part of `numascope topology --format json` checked here.
type topoJSON struct {
	Nodes []struct {
		ID          int            `json:"id"`
		CPUs        []int          `json:"cpus"`
		MemoryTotal uint64         `json:"memory_total_bytes"`
		MemoryFree  uint64         `json:"memory_free_bytes"`
		Distances   map[string]int `json:"distances"`
		CPULess     bool           `json:"cpuless"`
		Allowed     bool           `json:"allowed"`
	} `json:"nodes"`
	CPUs []struct {
		ID     int  `json:"id"`
		Node   int  `json:"node"`
		Online bool `json:"online"`
	} `json:"cpus"`
}

// distanceFlag formats a matrix for numavm --distances.
func distanceFlag(d [][]int) string {
	rows := make([]string, len(d))
	for i, r := range d {
		cells := make([]string, len(r))
		for j, v := range r {
			cells[j] = strconv.Itoa(v)
		}
		rows[i] = strings.Join(cells, ",")
	}
	return strings.Join(rows, ";")
}

// topologyScript prints, as sections, numascope's topology and the kernel's
// own per-node MemTotal lines ("Node N MemTotal: K kB") as ground truth.
const topologyScript = "sec topology numascope topology --format json\n" +
	"sec memtotal sh -c 'cat /sys/devices/system/node/node*/meminfo | grep MemTotal'\n"

// kernelMemTotal parses the memtotal section: node ID -> bytes.
func kernelMemTotal(t *testing.T, body string) map[int]uint64 {
	t.Helper()
	m := map[int]uint64{}
	for _, line := range strings.Split(body, "\n") {
		var node int
		var kb uint64
		if _, err := fmt.Sscanf(line, "Node %d MemTotal: %d kB", &node, &kb); err == nil {
			m[node] = kb << 10
		}
	}
	if len(m) == 0 {
		t.Fatalf("no MemTotal lines in the VM's node meminfo:\n%s", body)
	}
	return m
}

// checkTopology asserts that numascope reports exactly the VM numavm was
// asked for: node IDs, CPUs per node, memory per node and every distance.
func checkTopology(t *testing.T, r *vmResult, nodes, cpusPerNode, memMiB int, dist [][]int) {
	t.Helper()
	body := r.section(t, "topology")
	kernelTotal := kernelMemTotal(t, r.section(t, "memtotal"))
	var topo topoJSON
	if err := json.Unmarshal([]byte(body), &topo); err != nil {
		t.Fatalf("numascope topology --format json: %v\n%s", err, tail(body, 2000))
	}
	if len(topo.Nodes) != nodes {
		t.Fatalf("numascope reports %d nodes, the VM has %d", len(topo.Nodes), nodes)
	}
	if len(topo.CPUs) != nodes*cpusPerNode {
		t.Errorf("numascope reports %d CPUs, the VM has %d", len(topo.CPUs), nodes*cpusPerNode)
	}
	want := int64(memMiB) << 20
	for i, n := range topo.Nodes {
		if n.ID != i {
			t.Errorf("node %d has ID %d", i, n.ID)
		}
		var wantCPUs []int
		for c := 0; c < cpusPerNode; c++ {
			wantCPUs = append(wantCPUs, i*cpusPerNode+c)
		}
		if fmt.Sprint(n.CPUs) != fmt.Sprint(wantCPUs) {
			t.Errorf("node %d CPUs = %v, want %v", i, n.CPUs, wantCPUs)
		}
		// The kernel keeps part of each node for itself (more on node 0,
		// which holds the kernel image and the initramfs): its MemTotal is
		// a little under the size asked for, and numascope's is the kernel's.
		within(t, fmt.Sprintf("kernel: node %d MemTotal", i), float64(kernelTotal[i]), float64(want-96<<20), float64(want))
		if n.MemoryTotal != kernelTotal[i] {
			t.Errorf("node %d memory_total_bytes = %d, the kernel's MemTotal is %d", i, n.MemoryTotal, kernelTotal[i])
		}
		if n.MemoryFree == 0 || n.MemoryFree > n.MemoryTotal {
			t.Errorf("node %d memory_free_bytes = %d, want in (0, %d]", i, n.MemoryFree, n.MemoryTotal)
		}
		if n.CPULess || !n.Allowed {
			t.Errorf("node %d: cpuless=%v allowed=%v, want false and true", i, n.CPULess, n.Allowed)
		}
		if len(n.Distances) != nodes {
			t.Errorf("node %d has %d distances, want %d: %v", i, len(n.Distances), nodes, n.Distances)
		}
		for j := 0; j < nodes; j++ {
			if got := n.Distances[strconv.Itoa(j)]; got != dist[i][j] {
				t.Errorf("distance %d->%d = %d, want %d", i, j, got, dist[i][j])
			}
		}
	}
	for _, c := range topo.CPUs {
		if want := c.ID / cpusPerNode; c.Node != want || !c.Online {
			t.Errorf("CPU %d: node %d online %v, want node %d online", c.ID, c.Node, c.Online, want)
		}
	}
}

func twoLevel(nodes int) [][]int {
	d := make([][]int, nodes)
	for i := range d {
		d[i] = make([]int, nodes)
		for j := range d[i] {
			d[i][j] = 20
			if i == j {
				d[i][j] = 10
			}
		}
	}
	return d
}

// TestTopology: 4 nodes of 2 CPUs with numavm's default distances; the
// nodes' free memory against numastat -m with 128 MiB held on node 1.
func TestTopology(t *testing.T) {
	requireVM(t)
	opts := []string{"--nodes", "4", "--cpus-per-node", "2", "--mem-per-node", "384M"}
	r := runVM(t, append(opts, memmixNumastatAdds(t)...), topologyScript+topologyFreeScript)
	checkTopology(t, r, 4, 2, 384, twoLevel(4))
	t.Run("free", func(t *testing.T) { checkTopologyFree(t, r, 4) })
}

// ---- first touch -----------------------------------------------------------------

// TestSerialInit: one thread first-touches every worker's buffer, so all
// pages land on node 0 and three of four workers compute on remote memory,
// until automatic NUMA balancing migrates their pages.
func TestSerialInit(t *testing.T) {
	requireVM(t)
	const nodes, mb = 4, 32
	r := runVM(t, []string{"--nodes", strconv.Itoa(nodes)},
		recordScript("serial", "firsttouch", "--serial", "--mb", strconv.Itoa(mb), "--settle", "1.5", "--seconds", "6"))
	s, wl := recorded(t, r, "serial")
	pages := int64(mb << 20 / pageSize)
	all := float64(nodes * pages)
	allBytes := all * pageSize

	// Ground truth: every buffer is on node 0 after the serial first touch.
	for _, p := range wl.placements(t, "after_init") {
		within(t, fmt.Sprintf("workload: pages of buffer %d on node 0 after init", p.Buffer),
			float64(p.PerNode[0]), 0.99*float64(pages), float64(pages))
	}
	total := wl.counters(t, "total")

	// numascope sees the imbalance in meminfo: at node 0's peak, node 0
	// holds every buffer and the other nodes next to nothing.
	peak := s.argmax(func(i int) float64 { return s.col(t, "node.0.AnonPages")[i] })
	for k := 0; k < nodes; k++ {
		col := fmt.Sprintf("node.%d.AnonPages", k)
		grew := s.col(t, col)[peak] - s.firstValue(t, col)
		if k == 0 {
			within(t, "numascope: node 0 AnonPages growth at its peak (bytes)", grew, 0.9*allBytes, 1.1*allBytes)
		} else {
			within(t, fmt.Sprintf("numascope: node %d AnonPages growth at node 0's peak (bytes)", k), grew,
				-slackBytes, 0.03*allBytes+slackBytes)
		}
	}
	used := s.col(t, "node.0.MemUsed")[peak] - s.firstValue(t, "node.0.MemUsed")
	within(t, "numascope: node 0 MemUsed growth at its peak (bytes)", used, 0.9*allBytes, 1.1*allBytes+slackBytes)
	// ... and in numastat: the allocations up to that peak were node 0's.
	for k := 0; k < nodes; k++ {
		hits := s.totalUntil(t, fmt.Sprintf("node.%d.numa_hit", k), peak)
		if k == 0 {
			within(t, "numascope: node 0 numa_hit up to its peak", hits, 0.98*all, 1.1*all+3000)
		} else {
			within(t, fmt.Sprintf("numascope: node %d numa_hit up to node 0's peak", k), hits, 0, 0.05*all)
		}
	}
	agrees(t, "numascope: node 0 numa_hit", s.total(t, "node.0.numa_hit"), float64(total.NumaHit[0]))

	// Balancing ran: hinting faults and migrations, as numascope and the
	// workload's own counter deltas both see them.
	if total.HintFaults <= 0 || total.PagesMigrated <= 0 {
		t.Errorf("workload: numa_hint_faults %d, numa_pages_migrated %d: NUMA balancing did not run",
			total.HintFaults, total.PagesMigrated)
	}
	agrees(t, "numascope: vmstat.numa_hint_faults", s.total(t, "vmstat.numa_hint_faults"), float64(total.HintFaults))
	agrees(t, "numascope: vmstat.numa_pages_migrated", s.total(t, "vmstat.numa_pages_migrated"), float64(total.PagesMigrated))

	// The migrations moved remote workers' pages home: the workload finds
	// them on their owners' nodes, and numascope sees those nodes' AnonPages
	// grow by as much. (Their peak, not the last sample: the last one may
	// fall while the exiting workload unmaps its buffers.)
	var home int64
	for _, p := range wl.placements(t, "after_compute") {
		if p.OwnerNode != 0 {
			home += p.PerNode[p.OwnerNode]
		}
	}
	within(t, "workload: remote workers' pages migrated to their own nodes", float64(home),
		0.05*float64((nodes-1)*pages), float64((nodes-1)*pages))
	others := func(i int) float64 {
		sum := 0.0
		for k := 1; k < nodes; k++ {
			col := fmt.Sprintf("node.%d.AnonPages", k)
			sum += s.col(t, col)[i] - s.firstValue(t, col)
		}
		return sum
	}
	within(t, "numascope: AnonPages growth on nodes 1-3 at their peak (bytes)", others(s.argmax(others)),
		0.95*float64(home)*pageSize-(nodes-1)*slackBytes, float64(home)*pageSize+(nodes-1)*slackBytes)
}

// TestParallelFirstTouch: each worker first-touches its own buffer, so the
// pages spread evenly, one buffer per node.
func TestParallelFirstTouch(t *testing.T) {
	requireVM(t)
	const nodes, mb = 4, 32
	r := runVM(t, []string{"--nodes", strconv.Itoa(nodes)},
		recordScript("parallel", "firsttouch", "--parallel", "--mb", strconv.Itoa(mb), "--settle", "1", "--seconds", "2"))
	s, wl := recorded(t, r, "parallel")
	pages := float64(mb << 20 / pageSize)

	for _, p := range wl.placements(t, "after_init") {
		within(t, fmt.Sprintf("workload: pages of buffer %d on its node %d after init", p.Buffer, p.OwnerNode),
			float64(p.PerNode[p.OwnerNode]), 0.99*pages, pages)
	}
	total := wl.counters(t, "total")

	// At the peak of all nodes' AnonPages, each node grew by one buffer.
	anon := func(k, i int) float64 { return s.col(t, fmt.Sprintf("node.%d.AnonPages", k))[i] }
	peak := s.argmax(func(i int) float64 {
		sum := 0.0
		for k := 0; k < nodes; k++ {
			sum += anon(k, i)
		}
		return sum
	})
	var growth []float64
	for k := 0; k < nodes; k++ {
		g := anon(k, peak) - s.firstValue(t, fmt.Sprintf("node.%d.AnonPages", k))
		growth = append(growth, g)
		within(t, fmt.Sprintf("numascope: node %d AnonPages growth at the peak (bytes)", k), g,
			0.85*pages*pageSize-slackBytes, 1.15*pages*pageSize+slackBytes)
	}
	sort.Float64s(growth)
	if growth[0] <= 0 || growth[nodes-1]/growth[0] > 1.2 {
		t.Errorf("numascope: AnonPages growth per node %v is not even (max/min > 1.2)", growth)
	}
	for k := 0; k < nodes; k++ {
		hit := s.total(t, fmt.Sprintf("node.%d.numa_hit", k))
		within(t, fmt.Sprintf("numascope: node %d numa_hit", k), hit, 0.98*pages, math.Inf(1))
		agrees(t, fmt.Sprintf("numascope: node %d numa_hit", k), hit, float64(total.NumaHit[k]))
		local := s.total(t, fmt.Sprintf("node.%d.local_node", k))
		within(t, fmt.Sprintf("numascope: node %d local_node", k), local, 0.98*pages, math.Inf(1))
		agrees(t, fmt.Sprintf("numascope: node %d local_node", k), local, float64(total.LocalNode[k]))
	}
	// The summed columns, with the pages spread over every node: a sum that
	// left a node out would miss a quarter, one that took a node twice would
	// be a quarter over.
	agreesSum(t, "numascope: numa_hit summed over the nodes", s.total(t, "node.numa_hit"), sum(total.NumaHit), nodes)
	within(t, "numascope: AnonPages summed over the nodes, growth at the peak (bytes)",
		s.col(t, "node.AnonPages")[peak]-s.firstValue(t, "node.AnonPages"),
		0.85*nodes*pages*pageSize-nodes*slackBytes, 1.15*nodes*pages*pageSize+nodes*slackBytes)
}

// ---- interleave ----------------------------------------------------------------

// checkInterleave asserts that an interleaved buffer spread evenly and that
// interleave_hit grew on every node by its share.
func checkInterleave(t *testing.T, r *vmResult, name string, nodes, mb int) {
	t.Helper()
	s, wl := recorded(t, r, name)
	share := float64(mb<<20/pageSize) / float64(nodes)
	p := wl.placements(t, "after_touch")[0]
	touch := wl.counters(t, "touch")
	for k := 0; k < nodes; k++ {
		within(t, fmt.Sprintf("%s workload: pages on node %d", name, k), float64(p.PerNode[k]), 0.99*share-2, 1.01*share+2)
		within(t, fmt.Sprintf("%s workload: interleave_hit delta on node %d", name, k), float64(touch.InterleaveHit[k]),
			0.99*share, 1.05*share+64)
		il := s.total(t, fmt.Sprintf("node.%d.interleave_hit", k))
		within(t, fmt.Sprintf("%s numascope: node %d interleave_hit", name, k), il, 0.98*share, math.Inf(1))
		agrees(t, fmt.Sprintf("%s numascope: node %d interleave_hit", name, k), il, float64(touch.InterleaveHit[k]))
	}
	anon := func(k, i int) float64 { return s.col(t, fmt.Sprintf("node.%d.AnonPages", k))[i] }
	peak := s.argmax(func(i int) float64 {
		sum := 0.0
		for k := 0; k < nodes; k++ {
			sum += anon(k, i)
		}
		return sum
	})
	for k := 0; k < nodes; k++ {
		g := anon(k, peak) - s.firstValue(t, fmt.Sprintf("node.%d.AnonPages", k))
		within(t, fmt.Sprintf("%s numascope: node %d AnonPages growth at the peak (bytes)", name, k), g,
			0.85*share*pageSize-slackBytes, 1.15*share*pageSize+slackBytes)
	}
	// Summed over the nodes (on 4 nodes, and on 8 in TestEightNodes), the
	// interleaved hits are the workload's on every node together.
	agreesSum(t, name+" numascope: interleave_hit summed over the nodes", s.total(t, "node.interleave_hit"),
		sum(touch.InterleaveHit), nodes)
}

// TestInterleave: MPOL_INTERLEAVE for the process (set_mempolicy) and for
// one buffer (mbind), in one boot.
func TestInterleave(t *testing.T) {
	requireVM(t)
	const nodes, mb = 4, 64
	r := runVM(t, []string{"--nodes", strconv.Itoa(nodes)},
		recordScript("setmempolicy", "interleave", "--mb", strconv.Itoa(mb), "--hold", "1")+
			recordScript("mbind", "interleave", "--mbind", "--mb", strconv.Itoa(mb), "--hold", "1"))
	t.Run("set_mempolicy", func(t *testing.T) { checkInterleave(t, r, "setmempolicy", nodes, mb) })
	t.Run("mbind", func(t *testing.T) { checkInterleave(t, r, "mbind", nodes, mb) })
}

// ---- 8 nodes -------------------------------------------------------------------

// twoBoards is 2 boards of 4 nodes: 10 within a node, 16 on the same board,
// 32 across boards.
func twoBoards() [][]int {
	d := make([][]int, 8)
	for i := range d {
		d[i] = make([]int, 8)
		for j := range d[i] {
			switch {
			case i == j:
				d[i][j] = 10
			case i/4 == j/4:
				d[i][j] = 16
			default:
				d[i][j] = 32
			}
		}
	}
	return d
}

// TestEightNodes: 8 nodes with a two-board distance matrix: the topology,
// exactly, and an interleaved allocation over all eight nodes.
func TestEightNodes(t *testing.T) {
	requireVM(t)
	const nodes, mb = 8, 64
	d := twoBoards()
	r := runVM(t, []string{"--nodes", "8", "--mem-per-node", "256M", "--distances", distanceFlag(d)},
		topologyScript+
			recordScript("interleave8", "interleave", "--mb", strconv.Itoa(mb), "--hold", "1"))
	t.Run("topology", func(t *testing.T) { checkTopology(t, r, nodes, 1, 256, d) })
	t.Run("interleave", func(t *testing.T) { checkInterleave(t, r, "interleave8", nodes, mb) })
}
