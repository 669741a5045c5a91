package vmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// topologyFreeScript holds 128 MiB on node 1 (memmix, bound there by
// numascope run, then stopped), and reads every node's MemTotal and MemFree
// with numactl's numastat -m, then numascope topology's, with numascope on
// node 3's CPUs and its memory bound there, then numastat -m again.
const topologyFreeScript = `numastat() { NUMASTAT_WIDTH=100000 /data/ld-linux-x86-64.so.2 --library-path /data /data/numastat "$@"; }
numascope run --policy bind:1 -- memmix 0 0 128 0 > /tmp/hog.out 2>&1 &
H=$!
i=0; while ! grep -q ready /tmp/hog.out && kill -0 $H 2>/dev/null; do sleep 0.1; i=$((i+1)); [ $i -gt 600 ] && break; done
cat /tmp/hog.out
kill -STOP $H
sec hogmaps cat /proc/$H/numa_maps
sec freebefore numastat -m
sec topofree numascope run --policy bind:3 --nodes 3 -- numascope topology --format json
sec freeafter numastat -m
kill -KILL $H
`

// memmixNumastatAdds are the numavm options that carry memmix and the
// host's numastat, with its loader and C library, into the VM (for
// topologyFreeScript and the top tests that hold figures to numastat).
func memmixNumastatAdds(t *testing.T) []string {
	t.Helper()
	numastat, err := exec.LookPath("numastat")
	if err != nil {
		t.Fatal("numactl's numastat is not installed: scripts/install-test-deps installs Debian's numactl")
	}
	memmix := buildStaticC(t, filepath.Join("internal", "top", "testdata", "memmix.c"), "memmix", "-O2", "-Wall")
	opts := []string{"--add", memmix}
	for _, a := range numastatFiles(t, numastat) {
		opts = append(opts, "--add", a)
	}
	return opts
}

// numastatMeminfo parses `numastat -m` (numactl 2.0.x, its meminfo rows
// per node in MB with two decimals): row name to node to MiB.
func numastatMeminfo(t *testing.T, out string) map[string]map[int]float64 {
	t.Helper()
	var nodes []int
	rows := map[string]map[int]float64{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 2 && f[0] == "Node" && f[len(f)-1] == "Total":
			for i := 0; i+1 < len(f)-1; i += 2 {
				n, err := strconv.Atoi(f[i+1])
				if err != nil {
					t.Fatalf("numastat -m's header %q", l)
				}
				nodes = append(nodes, n)
			}
		case nodes != nil && len(f) == len(nodes)+2:
			row := map[int]float64{}
			for i, n := range nodes {
				v, err := strconv.ParseFloat(f[i+1], 64)
				if err != nil {
					break
				}
				row[n] = v
			}
			if len(row) == len(nodes) {
				rows[f[0]] = row
			}
		}
	}
	if rows["MemTotal"] == nil || rows["MemFree"] == nil {
		t.Fatalf("no MemTotal and MemFree rows in numastat -m:\n%s", out)
	}
	return rows
}

// checkTopologyFree holds `numascope topology`'s memory_total_bytes and
// memory_free_bytes to numactl's numastat -m (checkNodeMemory). Node 1
// holds memmix's 128 MiB (stopped), so that one node's MemFree is not near
// another's.
func checkTopologyFree(t *testing.T, r *vmResult, nodes int) {
	t.Helper()
	var topo topoJSON
	if err := json.Unmarshal([]byte(r.section(t, "topofree")), &topo); err != nil {
		t.Fatalf("numascope topology --format json: %v\n%s", err, tail(r.section(t, "topofree"), 2000))
	}
	if len(topo.Nodes) != nodes {
		t.Fatalf("numascope reports %d nodes, the VM has %d", len(topo.Nodes), nodes)
	}
	// The premise: node 1 holds memmix's 128 MiB, by its numa_maps.
	if n1 := numaMapsPages(r.section(t, "hogmaps"), 1); n1 < 128<<20/pageSize {
		t.Fatalf("memmix has %d pages on node 1, want its 128 MiB there:\n%s", n1, r.section(t, "hogmaps"))
	}
	got := map[int][2]uint64{}
	for _, n := range topo.Nodes {
		got[n.ID] = [2]uint64{n.MemoryTotal, n.MemoryFree}
	}
	checkNodeMemory(t, "topology", r.section(t, "freebefore"), r.section(t, "freeafter"), got, 3)
}

// meminfoSlackMiB widens the span of two numastat -m reads for the
// kernel's own churn between them: pages freed go first to per-CPU lists,
// which MemFree does not count until they are drained, and those hold a few
// MiB per CPU. Seen: 2.8 MiB below both reads on a node numascope did not
// touch, while top ran; 6.0 MiB beside four busy host loops.
const meminfoSlackMiB = 12

// checkNodeMemory holds numascope's MemTotal and MemFree of each node
// (got: node to total and free, in bytes) to numactl's numastat -m, which
// reads the nodes' meminfo with its own code, run just before and just
// after numascope:
//
//   - MemTotal: as numastat prints it (MiB, two decimals), exactly.
//   - MemFree: between the two numastat reads, widened by meminfoSlackMiB
//     for what the kernel does meanwhile; on self, the node that holds
//     numascope's own memory while it runs (it is bound there; about
//     9 MiB), the low end 24 MiB lower.
func checkNodeMemory(t *testing.T, what, beforeOut, afterOut string, got map[int][2]uint64, self int) {
	t.Helper()
	before := numastatMeminfo(t, beforeOut)
	after := numastatMeminfo(t, afterOut)
	if len(got) != len(before["MemTotal"]) {
		t.Errorf("%s shows %d nodes, numastat -m %d", what, len(got), len(before["MemTotal"]))
	}
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	for id, m := range got {
		total, free := m[0], m[1]
		if got, want := fmt.Sprintf("%.2f", mib(total)), fmt.Sprintf("%.2f", before["MemTotal"][id]); got != want {
			t.Errorf("%s: node %d memory_total_bytes = %d (%s MiB), numastat -m %s", what, id, total, got, want)
		}
		b, a := before["MemFree"][id], after["MemFree"][id]
		lo, hi := math.Min(b, a)-meminfoSlackMiB, math.Max(b, a)+meminfoSlackMiB
		if id == self {
			lo -= 24
		}
		if got := mib(free); got < lo || got > hi {
			t.Errorf("%s: node %d memory_free_bytes = %.2f MiB; numastat -m read %.2f before and %.2f after (bounds %.2f-%.2f)",
				what, id, got, b, a, lo, hi)
		} else {
			t.Logf("%s: node %d memory_free_bytes = %.2f MiB; numastat -m %.2f before, %.2f after", what, id, got, b, a)
		}
	}
}

// numaMapsPages sums the pages on node n over the lines of a numa_maps
// ("N1=32768" fields).
func numaMapsPages(maps string, n int) int64 {
	var pages int64
	key := fmt.Sprintf("N%d=", n)
	for _, f := range strings.Fields(maps) {
		if v, ok := strings.CutPrefix(f, key); ok {
			p, _ := strconv.ParseInt(v, 10, 64)
			pages += p
		}
	}
	return pages
}
