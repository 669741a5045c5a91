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
// results as sections; the kernel's /proc/vmstat just before and just
// after the second scrape too.
const exporterScript = `ip link set lo up
taskset -c 0 numascope exporter --listen 127.0.0.1:9864 >/tmp/exporter.out 2>/tmp/exporter.err &
for i in $(seq 100); do wget -q -O /dev/null http://127.0.0.1:9864/metrics 2>/dev/null && break; sleep 0.1; done
sec before wget -q -O - http://127.0.0.1:9864/metrics
sec workload interleave --mb %d --hold 0 --lead 0 --linger 0 --out /tmp/il.wl
sec vmstat1 cat /proc/vmstat
sec after wget -q -O - http://127.0.0.1:9864/metrics
sec vmstat2 cat /proc/vmstat
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
// 64 MiB (half on each node) as the workload's own counter deltas do. Its
// per-node vmstat series (numascope_node_vmstat_*, from each node's
// vmstat file, which node_exporter does not read) add up over the nodes
// to the kernel's own global counter of the same name in /proc/vmstat
// (checkNodeVmstatSums).
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
	checkNodeVmstatSums(t, r.section(t, "vmstat1"), after, r.section(t, "vmstat2"), nodes)
}

// checkNodeVmstatSums holds every numascope_node_vmstat_* family of the
// scrape against the kernel's /proc/vmstat read just before and just after
// it (before, after): the kernel folds each CPU's pending deltas into a
// node's counter and into the global one in the same step, and the zone
// items are summed over the node's zones as the global ones over all
// zones, so at one instant the nodes' values add up to the global value
// exactly. Between the reads the machine runs on, so a counter's sum must
// lie between the two reads, and a level's within a megabyte's pages of
// them (levels move both ways, and reclaim or the allocator may move a
// few pages between the reads and the scrape).
func checkNodeVmstatSums(t *testing.T, before, scrape, after string, nodes int) {
	t.Helper()
	read := func(text string) map[string]float64 {
		m := map[string]float64{}
		for _, l := range strings.Split(text, "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					t.Fatalf("/proc/vmstat line %q", l)
				}
				m[f[0]] = v
			}
		}
		return m
	}
	v1, v2 := read(before), read(after)
	const levelSlack = 1 << 20 / pageSize
	compared := 0
	for name, g1 := range v1 {
		g2, ok := v2[name]
		if !ok {
			continue
		}
		family, slack := "numascope_node_vmstat_"+name+"_total", 0.0
		got := scrapeValues(t, scrape, family)
		if len(got) == 0 {
			family, slack = "numascope_node_vmstat_"+name, levelSlack
			got = scrapeValues(t, scrape, family)
		}
		if len(got) == 0 {
			continue // a line of /proc/vmstat alone (events, the global counters)
		}
		if len(got) != nodes {
			t.Errorf("%s: series for nodes %v, want all %d", family, got, nodes)
			continue
		}
		var sum float64
		for _, v := range got {
			sum += v
		}
		if lo, hi := min(g1, g2)-slack, max(g1, g2)+slack; sum < lo || sum > hi {
			t.Errorf("%s summed over the nodes is %.0f; the kernel's /proc/vmstat %s read %.0f just before the scrape and %.0f just after (slack %.0f)", family, sum, name, g1, g2, slack)
		}
		compared++
	}
	// The guest's 6.1 kernel writes some 40 lines into each node's
	// vmstat: too few compared means names that no longer match.
	if compared < 30 {
		t.Errorf("only %d of the per-node vmstat families were found in /proc/vmstat", compared)
	}
	t.Logf("%d per-node vmstat families add up to /proc/vmstat", compared)
}
