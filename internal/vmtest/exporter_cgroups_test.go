package vmtest

import (
	"fmt"
	"slices"
	"strconv"
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
mkdir -p /sys/fs/cgroup/moved
echo 0 > /sys/fs/cgroup/moved/cpuset.mems
sh -c 'echo $$ > /sys/fs/cgroup/moved/cgroup.procs; exec dd if=/dev/zero of=/tmp/moved.dat bs=1M count=16 2>/dev/null'
echo 1 > /sys/fs/cgroup/moved/cpuset.mems
taskset -c 0 numascope exporter --listen 127.0.0.1:9864 --cgroups --cgroup-faults >/tmp/exporter.out 2>/tmp/exporter.err &
for i in $(seq 100); do wget -q -O /dev/null http://127.0.0.1:9864/metrics 2>/dev/null && break; sleep 0.1; done
sec numastat.il.before cat /sys/fs/cgroup/il/memory.numa_stat
sec numastat.pin.before cat /sys/fs/cgroup/pin/memory.numa_stat
sec numastat.moved.before cat /sys/fs/cgroup/moved/memory.numa_stat
sec mems sh -c 'for cg in il pin moved; do echo "$cg $(cat /sys/fs/cgroup/$cg/cpuset.mems.effective)"; done' 
sec memstat.before cat /sys/fs/cgroup/il/memory.stat
sec scrape wget -q -O - http://127.0.0.1:9864/metrics
sec numastat.il cat /sys/fs/cgroup/il/memory.numa_stat
sec numastat.pin cat /sys/fs/cgroup/pin/memory.numa_stat
sec numastat.moved cat /sys/fs/cgroup/moved/memory.numa_stat
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
			t.Errorf("no numascope_cgroup_memory_bytes{cgroup=%q,numa_node=%q,type=\"anon\"}\nmemory.numa_stat:\n%s", cg, node, r.section(t, "numastat"+strings.ReplaceAll(cg, "/", ".")))
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
	// Memory outside the cpuset: anon + file of memory.numa_stat on the
	// nodes cpuset.mems.effective leaves out, read with cat before and
	// after the scrape. /moved wrote 16 MiB of page cache on node 0, then
	// its cpuset was moved to node 1, which migrates the pages its tasks
	// map, not its page cache; /il and /pin have none outside.
	mems := map[string][]int{}
	for _, l := range strings.Split(strings.TrimSpace(r.section(t, "mems")), "\n") {
		if cg, list, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			mems[cg] = kernelList(t, list)
		}
	}
	for _, cg := range []string{"il", "pin", "moved"} {
		outside := func(sec string) float64 {
			sum := 0.0
			for typ, nodes := range numaStatLines(t, r.section(t, sec)) {
				if typ != "anon" && typ != "file" {
					continue
				}
				for node, v := range nodes {
					if n, _ := strconv.Atoi(node); !slices.Contains(mems[cg], n) {
						sum += v
					}
				}
			}
			return sum
		}
		b, a := outside("numastat."+cg+".before"), outside("numastat."+cg)
		v, ok := get("numascope_cgroup_memory_outside_cpuset_bytes", map[string]string{"cgroup": "/" + cg})
		if !ok {
			t.Errorf("/%s: memory outside its cpuset not exported", cg)
			continue
		}
		within(t, fmt.Sprintf("/%s memory outside its cpuset (bytes; memory.numa_stat off cpuset.mems.effective %v, before and after)", cg, mems[cg]), v, min(a, b), max(a, b))
		if want := map[string]bool{"moved": true}[cg]; (b >= 16*mib) != want {
			t.Errorf("/%s: %.0f bytes outside its cpuset by memory.numa_stat, want %s", cg, b, map[bool]string{true: "16 MiB or more", false: "less"}[want])
		}
	}
	for _, cg := range []string{"/il", "/pin"} {
		for _, loc := range []string{"local", "remote"} {
			if _, ok := get("numascope_cgroup_numa_faults", map[string]string{"cgroup": cg, "locality": loc, "source": "sched"}); !ok {
				t.Errorf("%s: no %s faults series", cg, loc)
			}
		}
	}
	// Every byte figure against the kernel's own memory.numa_stat, read with
	// cat just before and just after the scrape: each line the exporter
	// keeps (not the workingset_ events, not the LRU lists), on each node,
	// lies between the two reads. The workloads hold their memory still, so
	// the two reads mostly agree and the check is exact; a wrong node, a
	// unit error or a line taken for another fails.
	for _, cg := range []string{"il", "pin", "moved"} {
		before := numaStatLines(t, r.section(t, "numastat."+cg+".before"))
		after := numaStatLines(t, r.section(t, "numastat."+cg))
		compared := 0
		for typ, nodes := range after {
			if strings.HasPrefix(typ, "workingset_") || strings.HasPrefix(typ, "active_") || strings.HasPrefix(typ, "inactive_") {
				continue
			}
			for node, b := range nodes {
				a, ok := before[typ][node]
				if !ok {
					t.Errorf("/%s memory.numa_stat %s N%s: in the read after the scrape only", cg, typ, node)
					continue
				}
				v, ok := get("numascope_cgroup_memory_bytes", map[string]string{"cgroup": "/" + cg, "numa_node": node, "type": typ})
				if !ok {
					t.Errorf("/%s memory.numa_stat %s N%s: not exported", cg, typ, node)
					continue
				}
				within(t, fmt.Sprintf("/%s %s on node %s (bytes; memory.numa_stat before and after the scrape)", cg, typ, node),
					v, min(a, b), max(a, b))
				compared++
			}
		}
		if compared < 8 {
			t.Errorf("/%s: only %d memory.numa_stat values compared with the scrape", cg, compared)
		}
	}

	// memory.stat's NUMA balancing and tiering lines, where this kernel
	// has them (numa_* from 6.11): each one there is exported, and none
	// that is not; each exported counter lies between the file's reads
	// before and after the scrape.
	stat, stat0 := memStatLines(r.section(t, "memstat")), memStatLines(r.section(t, "memstat.before"))
	for _, k := range []string{"numa_hint_faults", "numa_pte_updates", "numa_pages_migrated", "pgpromote_success", "pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged", "pgdemote_proactive"} {
		v, ok := get("numascope_cgroup_"+k+"_total", map[string]string{"cgroup": "/il"})
		_, inFile := stat[k]
		if ok != inFile {
			t.Errorf("memory.stat %s: in the file %v, exported %v", k, inFile, ok)
		}
		if ok && inFile {
			within(t, "/il memory.stat "+k+" (before and after the scrape)", v, stat0[k], stat[k])
		}
		t.Logf("memory.stat %s: in this kernel's file %v", k, inFile)
	}
}

// numaStatLines reads a memory.numa_stat as the kernel writes it ("anon
// N0=1234 N1=5678" a line): type -> node -> value, bytes.
func numaStatLines(t *testing.T, text string) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Fatalf("memory.numa_stat line %q", l)
		}
		out[f[0]] = map[string]float64{}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseFloat(v, 64)
			if !ok || !strings.HasPrefix(k, "N") || err != nil {
				t.Fatalf("memory.numa_stat line %q: field %q", l, kv)
			}
			out[f[0]][strings.TrimPrefix(k, "N")] = n
		}
	}
	return out
}

// memStatLines reads memory.stat ("key value" a line).
func memStatLines(text string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
