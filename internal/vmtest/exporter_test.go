package vmtest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// exporterScript starts numascope exporter in the VM (on loopback, which
// the VM's init leaves down), scrapes it with busybox wget before and after
// an interleaved allocation, and prints the two scrapes and the workload's
// results as sections.
const exporterScript = `ip link set lo up
taskset -c 0 numascope exporter --listen 127.0.0.1:9864 >/tmp/exporter.out 2>/tmp/exporter.err &
for i in $(seq 100); do wget -q -O /dev/null http://127.0.0.1:9864/metrics 2>/dev/null && break; sleep 0.1; done
sec before wget -q -O - http://127.0.0.1:9864/metrics
sec workload interleave --mb %d --hold 0 --lead 0 --linger 0 --out /tmp/il.wl
sec after wget -q -O - http://127.0.0.1:9864/metrics
sec wl cat /tmp/il.wl
sec stderr cat /tmp/exporter.err
`

// scrapeValues parses the text format's samples of one family by their
// numa_node label (the VM has no Prometheus: its Debian build needs glibc,
// which the busybox VM lacks; TestPrometheus covers the real server).
func scrapeValues(t *testing.T, body, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(l, name+`{numa_node="`)
		if !ok {
			continue
		}
		node, v, ok := strings.Cut(rest, `"} `)
		if !ok {
			t.Fatalf("%s: bad sample line %q", name, l)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s: bad value in %q", name, l)
		}
		out[node] = f
	}
	return out
}

// TestExporter: numascope exporter in a two-node VM gives per-node series
// labelled numa_node 0 and 1, with each node's own memory and distances,
// and its interleave_hit and numa_hit follow an interleaved allocation of
// 64 MiB (half on each node) as the workload's own counter deltas do.
func TestExporter(t *testing.T) {
	requireVM(t)
	const nodes, mb = 2, 64
	r := runVM(t, []string{"--nodes", strconv.Itoa(nodes), "--distances", "10,21;21,10"}, fmt.Sprintf(exporterScript, mb))
	before, after := r.section(t, "before"), r.section(t, "after")
	if e := strings.TrimSpace(r.section(t, "stderr")); e != "" {
		t.Errorf("the exporter wrote to stderr: %s", e)
	}
	for _, name := range []string{"numascope_node_numa_hit_total", "numascope_node_interleave_hit_total",
		"numascope_node_memory_free_bytes", "numascope_node_memory_total_bytes", "numascope_node_vmstat_nr_free_pages"} {
		got := scrapeValues(t, after, name)
		if len(got) != nodes {
			t.Errorf("%s: series for nodes %v, want 0 and 1", name, got)
		}
	}
	for _, want := range []string{`numascope_numa_distance{from="0",to="1"} 21`, `numascope_numa_distance{from="1",to="1"} 10`,
		`numascope_numa_node_info{cpus="1",numa_node="1",tier=`} {
		if !strings.Contains(after, want) {
			t.Errorf("no %s in the scrape", want)
		}
	}
	total := scrapeValues(t, after, "numascope_node_memory_total_bytes")
	for k := range nodes {
		// numavm gives each node 512M; the kernel keeps some for itself.
		within(t, fmt.Sprintf("node %d MemTotal (bytes)", k), total[strconv.Itoa(k)], 400<<20, 512<<20)
	}
	wl := parseWorkload(t, r.section(t, "wl"))
	touch := wl.counters(t, "touch")
	share := float64(mb<<20/pageSize) / nodes
	il0, il1 := scrapeValues(t, before, "numascope_node_interleave_hit_total"), scrapeValues(t, after, "numascope_node_interleave_hit_total")
	hit0, hit1 := scrapeValues(t, before, "numascope_node_numa_hit_total"), scrapeValues(t, after, "numascope_node_numa_hit_total")
	for k := range nodes {
		n := strconv.Itoa(k)
		il := il1[n] - il0[n]
		within(t, fmt.Sprintf("node %d interleave_hit growth across the workload", k), il, 0.99*share, 1.05*share+64)
		// The scrapes bracket the workload's own before/after reads.
		within(t, fmt.Sprintf("node %d interleave_hit growth against the workload's delta %d", k, touch.InterleaveHit[k]),
			il, float64(touch.InterleaveHit[k]), float64(touch.InterleaveHit[k])+256)
		within(t, fmt.Sprintf("node %d numa_hit growth across the workload", k), hit1[n]-hit0[n], float64(touch.NumaHit[k]), math.Inf(1))
	}
}
