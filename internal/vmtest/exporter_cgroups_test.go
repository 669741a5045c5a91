package vmtest

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// exporterCgroupsScript runs two workloads in their own cgroups (memory
// and cpuset controllers on) in a two-node VM: /il interleaves 64 MiB
// over both nodes, /pin allocates 32 MiB with its cpuset.mems set to node
// 1 only. Once both hold their memory, numascope exporter --cgroups
// --cgroup-faults is scraped once.
const exporterCgroupsScript = `ip link set lo up
echo "+memory +cpuset" > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/il /sys/fs/cgroup/pin
echo 1 > /sys/fs/cgroup/pin/cpuset.mems
sh -c 'echo $$ > /sys/fs/cgroup/il/cgroup.procs; exec interleave --mb 64 --hold 60 --lead 0 --linger 0 --out /tmp/il.wl' >/tmp/il.out 2>&1 &
sh -c 'echo $$ > /sys/fs/cgroup/pin/cgroup.procs; exec interleave --mb 32 --hold 60 --lead 0 --linger 0 --out /tmp/pin.wl' >/tmp/pin.out 2>&1 &
for cg in il:66000000 pin:33000000; do
	i=0; while [ "$(cat /sys/fs/cgroup/${cg%%:*}/memory.current)" -lt "${cg##*:}" ]; do sleep 0.2; i=$((i+1)); [ $i -gt 600 ] && break; done
done
taskset -c 0 numascope exporter --listen 127.0.0.1:9864 --cgroups --cgroup-faults >/tmp/exporter.out 2>/tmp/exporter.err &
for i in $(seq 100); do wget -q -O /dev/null http://127.0.0.1:9864/metrics 2>/dev/null && break; sleep 0.1; done
sec scrape wget -q -O - http://127.0.0.1:9864/metrics
sec numastat cat /sys/fs/cgroup/il/memory.numa_stat /sys/fs/cgroup/pin/memory.numa_stat
sec memstat cat /sys/fs/cgroup/il/memory.stat
sec stderr cat /tmp/exporter.err
`

// TestExporterCgroups: in a two-node VM, numascope exporter --cgroups
// gives each workload's cgroup its memory per node as the kernel charged
// it (half on each node for the interleaved one, all on node 1 for the one
// whose cpuset allows only node 1), the cpusets, no memory outside them,
// and faults from /proc/TID/sched.
func TestExporterCgroups(t *testing.T) {
	requireVM(t)
	r := runVM(t, []string{"--nodes", "2", "--distances", "10,21;21,10"}, exporterCgroupsScript)
	if e := strings.TrimSpace(r.section(t, "stderr")); e != "" {
		t.Errorf("the exporter wrote to stderr: %s", e)
	}
	tp := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := tp.TextToMetricFamilies(strings.NewReader(r.section(t, "scrape")))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	get := func(name string, labels map[string]string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return metricValue(m), true
		}
		return 0, false
	}
	anon := func(cg, node string) float64 {
		v, ok := get("numascope_cgroup_memory_bytes", map[string]string{"cgroup": cg, "numa_node": node, "type": "anon"})
		if !ok {
			t.Errorf("no numascope_cgroup_memory_bytes{cgroup=%q,numa_node=%q,type=\"anon\"}\nmemory.numa_stat:\n%s", cg, node, r.section(t, "numastat"))
		}
		return v
	}
	const mib = 1 << 20
	for _, node := range []string{"0", "1"} {
		within(t, "/il anon on node "+node+" (bytes)", anon("/il", node), 30*mib, 36*mib)
	}
	within(t, "/pin anon on node 1 (bytes)", anon("/pin", "1"), 31.5*mib, 36*mib)
	within(t, "/pin anon on node 0 (bytes)", anon("/pin", "0"), 0, 1*mib)
	if _, ok := get("numascope_cgroup_cpuset_info", map[string]string{"cgroup": "/pin", "mems": "1"}); !ok {
		t.Errorf("no numascope_cgroup_cpuset_info{cgroup=\"/pin\",mems=\"1\"}")
	}
	for _, cg := range []string{"/il", "/pin"} {
		if v, ok := get("numascope_cgroup_memory_outside_cpuset_bytes", map[string]string{"cgroup": cg}); !ok || v != 0 {
			t.Errorf("%s: memory outside its cpuset %v (exported: %v), want 0", cg, v, ok)
		}
		for _, loc := range []string{"local", "remote"} {
			if _, ok := get("numascope_cgroup_numa_faults", map[string]string{"cgroup": cg, "locality": loc, "source": "sched"}); !ok {
				t.Errorf("%s: no %s faults series", cg, loc)
			}
		}
	}
	// memory.stat's NUMA balancing and tiering lines, where this kernel
	// has them (numa_* from 6.11): each one there is exported, and none
	// that is not.
	stat := map[string]bool{}
	for _, l := range strings.Split(r.section(t, "memstat"), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			stat[k] = true
		}
	}
	for _, k := range []string{"numa_hint_faults", "numa_pte_updates", "numa_pages_migrated", "pgpromote_success", "pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged", "pgdemote_proactive"} {
		_, ok := get("numascope_cgroup_"+k+"_total", map[string]string{"cgroup": "/il"})
		if ok != stat[k] {
			t.Errorf("memory.stat %s: in the file %v, exported %v", k, stat[k], ok)
		}
		t.Logf("memory.stat %s: in this kernel's file %v", k, stat[k])
	}
}

func metricValue(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
