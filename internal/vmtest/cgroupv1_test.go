package vmtest

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// topCgroupV1Script lays the VM's cgroups out as a hybrid distribution
// does (RHEL and CentOS 7 and 8, Ubuntu before 21.10, many Slurm
// clusters): /sys/fs/cgroup a tmpfs, the memory controller on a cgroup v1
// hierarchy at /sys/fs/cgroup/memory, cgroup2 without it at
// /sys/fs/cgroup/unified. Two profnuma jobs run in /slurm/job_1 (8 MiB
// first-touched by each of its two workers, one a node) and /slurm/job_2
// (2 x 4 MiB bound to node 1); once placed they are stopped, and each
// cgroup's memory.numa_stat is read with cat before and after
// `numascope top --cgroup` and a scrape of `numascope exporter --cgroups`.
const topCgroupV1Script = `umount /sys/fs/cgroup
mount -t tmpfs tmpfs /sys/fs/cgroup
mkdir /sys/fs/cgroup/memory /sys/fs/cgroup/unified
mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory
mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
mkdir -p /sys/fs/cgroup/memory/slurm/job_1 /sys/fs/cgroup/memory/slurm/job_2
sh -c 'echo $$ > /sys/fs/cgroup/memory/slurm/job_1/cgroup.procs; exec profnuma --parallel --mb 8 --seconds 120 --lead 0' >/tmp/a.out 2>&1 &
A=$!
sh -c 'echo $$ > /sys/fs/cgroup/memory/slurm/job_2/cgroup.procs; exec profnuma --parallel --membind 1 --mb 4 --seconds 120 --lead 0' >/tmp/b.out 2>&1 &
B=$!
placed() { for c in job_1 job_2; do grep -q '^hierarchical_anon=[0-9][0-9][0-9][0-9]' /sys/fs/cgroup/memory/slurm/$c/memory.numa_stat || return 1; done; }
i=0; while ! placed; do sleep 0.2; i=$((i+1)); [ $i -gt 300 ] && break; done
sleep 1
kill -STOP $A $B
sleep 0.3
mkdir /sys/fs/cgroup/cpuset
mount -t cgroup -o cpuset cgroup /sys/fs/cgroup/cpuset
cs=/sys/fs/cgroup/cpuset/slurm
mkdir -p $cs/job_1 $cs/job_2
cat /sys/fs/cgroup/cpuset/cpuset.cpus > $cs/cpuset.cpus; echo 0-1 > $cs/cpuset.mems
cat /sys/devices/system/node/node0/cpulist > $cs/job_1/cpuset.cpus
echo 0 > $cs/job_1/cpuset.mems
cat /sys/devices/system/node/node1/cpulist > $cs/job_2/cpuset.cpus; echo 1 > $cs/job_2/cpuset.mems
echo $A > $cs/job_1/cgroup.procs; echo $B > $cs/job_2/cgroup.procs
sec cpusets sh -c "for c in slurm slurm/job_1 slurm/job_2; do echo /\$c \$(cat /sys/fs/cgroup/cpuset/\$c/cpuset.effective_cpus) \$(cat /sys/fs/cgroup/cpuset/\$c/cpuset.effective_mems); done"
stat() { for c in slurm slurm/job_1 slurm/job_2; do echo "/$c $(grep -E '^hierarchical_(anon|file)=' /sys/fs/cgroup/memory/$c/memory.numa_stat | tr '\n' ' ')"; done; }
sec before stat
sec top numascope top -b --format json -n 1 --cgroup --no-events
ip link set lo up
numascope exporter --listen 127.0.0.1:9866 --cgroups >/tmp/exporter.out 2>/tmp/exporter.err &
X=$!
for i in $(seq 100); do wget -q -O /dev/null http://127.0.0.1:9866/metrics 2>/dev/null && break; sleep 0.1; done
sec scrape wget -q -O - http://127.0.0.1:9866/metrics
kill $X; wait $X
sec exporter.err cat /tmp/exporter.err
sec after stat
sec cgroup sh -c "cat /proc/$A/cgroup /proc/$B/cgroup"
kill -KILL $A $B
`

// TestCgroupV1VM holds top --cgroup and exporter --cgroups on a machine
// whose memory controller is on cgroup v1 (topCgroupV1Script) to the
// kernel's own memory.numa_stat, read with cat and parsed here: each row's
// and each exported cgroup's memory per node is hierarchical_anon +
// hierarchical_file times the page size, within the two reads around
// numascope's (the jobs are stopped; reclaim could still move a page),
// /slurm (no page of its own) holding its two jobs'. The rows follow the
// v1 memory hierarchy's paths; job_2's memory is on node 1, where it is
// bound, and job_1's on both nodes. top says that a row's CPU% is its
// processes' sum there (no cpuacct hierarchy is mounted; with one:
// TestTopCgroupV1CPUVM), the exporter that it walks the v1 hierarchy
// (docs/fidelity.md). Once the jobs are stopped they are moved into
// cpusets of the same paths in a v1 cpuset hierarchy (job_1 to node 0,
// job_2 to node 1, their memory left where it is): the exporter's cpuset
// info and memory outside the cpuset are held to cat's reads of the
// cpusets and memory.numa_stat.
func TestCgroupV1VM(t *testing.T) {
	requireVM(t)
	r := runVM(t, []string{"--nodes", "2"}, topCgroupV1Script)
	t.Logf("/proc/PID/cgroup of the two jobs:\n%s", r.section(t, "cgroup"))
	// read parses "PATH hierarchical_anon=T N0=P N1=P hierarchical_file=T ..."
	// into bytes by node.
	field := regexp.MustCompile(`N(\d+)=(\d+)`)
	read := func(name string) map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for _, l := range strings.Split(strings.TrimSpace(r.section(t, name)), "\n") {
			path, rest, ok := strings.Cut(strings.TrimSpace(l), " ")
			if !ok || !strings.Contains(rest, "hierarchical_anon=") {
				t.Fatalf("%s: line %q", name, l)
			}
			m := map[string]float64{}
			for _, f := range field.FindAllStringSubmatch(rest, -1) {
				pages, _ := strconv.ParseFloat(f[2], 64)
				m[f[1]] += pages * 4096
			}
			out[path] = m
		}
		return out
	}
	before, after := read("before"), read("after")
	var frame struct {
		Cgroups []struct {
			Path      string            `json:"path"`
			Processes int               `json:"processes"`
			Memory    map[string]uint64 `json:"memory_bytes_by_node"`
		} `json:"cgroups"`
		Source struct {
			Missing []string `json:"missing"`
		} `json:"source"`
	}
	if err := json.Unmarshal([]byte(r.section(t, "top")), &frame); err != nil {
		t.Fatalf("top --format json: %v: %.500s", err, r.section(t, "top"))
	}
	rows := map[string]int{}
	for i, g := range frame.Cgroups {
		rows[g.Path] = i
	}
	for _, c := range []struct {
		path  string
		procs int
	}{{"/slurm", 2}, {"/slurm/job_1", 1}, {"/slurm/job_2", 1}} {
		i, ok := rows[c.path]
		if !ok {
			t.Errorf("top shows no row %s: %+v", c.path, frame.Cgroups)
			continue
		}
		g := frame.Cgroups[i]
		if g.Processes != c.procs {
			t.Errorf("%s: %d processes, want %d", c.path, g.Processes, c.procs)
		}
		for _, node := range []string{"0", "1"} {
			b, a := before[c.path][node], after[c.path][node]
			within(t, "top: "+c.path+" memory on node "+node+" (bytes; memory.numa_stat's hierarchical anon + file, pages x 4096, before and after)",
				float64(g.Memory[node]), min(a, b), max(a, b))
		}
	}
	if j := before["/slurm/job_2"]; j["1"] < 0.9*(j["0"]+j["1"]) || j["1"] < 8<<20 {
		t.Errorf("job_2, bound to node 1: %v bytes by node, want its 8 MiB there", j)
	}
	if j := before["/slurm/job_1"]; j["0"] < 7<<20 || j["1"] < 7<<20 {
		t.Errorf("job_1, a worker on each node: %v bytes by node, want about 8 MiB on each", j)
	}
	said := false
	for _, m := range frame.Source.Missing {
		said = said || strings.Contains(m, "cgroup v1")
	}
	if !said {
		t.Errorf("source.missing %q does not say that the rows are cgroup v1's", frame.Source.Missing)
	}

	// The exporter: numascope_cgroup_memory_bytes of each cgroup, anon and
	// file summed, within the same two reads; it says once that it walks
	// the v1 memory hierarchy.
	if e := r.section(t, "exporter.err"); strings.Count(e, "cgroup v1") != 1 {
		t.Errorf("the exporter's stderr %q: want one line naming cgroup v1", e)
	}
	tp := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := tp.TextToMetricFamilies(strings.NewReader(r.section(t, "scrape")))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	got := map[string]map[string]float64{}
	if f := fams["numascope_cgroup_memory_bytes"]; f != nil {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["type"] == "anon" || l["type"] == "file" {
				if got[l["cgroup"]] == nil {
					got[l["cgroup"]] = map[string]float64{}
				}
				got[l["cgroup"]][l["numa_node"]] += metricValue(m)
			}
		}
	}
	for _, path := range []string{"/slurm", "/slurm/job_1", "/slurm/job_2"} {
		for _, node := range []string{"0", "1"} {
			b, a := before[path][node], after[path][node]
			v, ok := got[path][node]
			if !ok {
				t.Errorf("exporter: no numascope_cgroup_memory_bytes{cgroup=%q,numa_node=%q}: %v", path, node, got)
				continue
			}
			within(t, "exporter: "+path+" anon + file on node "+node+" (bytes; memory.numa_stat's hierarchical lines, before and after)", v, min(a, b), max(a, b))
		}
	}

	// The cpusets, from the v1 cpuset hierarchy's cgroups of the same
	// paths, which hold the same processes: each cgroup's info series
	// carries what cat read of cpuset.effective_cpus and _mems, and the
	// memory outside it is memory.numa_stat's on the other node (job_1,
	// placed on both nodes and then given node 0 only; job_2, bound to
	// node 1, its few pages on node 0), none for /slurm (nodes 0-1).
	info := map[string][2]string{}
	if f := fams["numascope_cgroup_cpuset_info"]; f != nil {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			info[l["cgroup"]] = [2]string{l["cpus"], l["mems"]}
		}
	}
	outside := map[string]float64{}
	if f := fams["numascope_cgroup_memory_outside_cpuset_bytes"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, p := range m.GetLabel() {
				if p.GetName() == "cgroup" {
					outside[p.GetValue()] = metricValue(m)
				}
			}
		}
	}
	cat := map[string][2]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.section(t, "cpusets")), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			cat[f[0]] = [2]string{f[1], f[2]}
		}
	}
	if len(cat) != 3 {
		t.Fatalf("the cpusets read with cat: %q", r.section(t, "cpusets"))
	}
	for path, other := range map[string]string{"/slurm": "", "/slurm/job_1": "1", "/slurm/job_2": "0"} {
		if info[path] != cat[path] {
			t.Errorf("exporter: %s's cpuset info (cpus, mems) %q, want %q (cat)", path, info[path], cat[path])
		}
		v, ok := outside[path]
		if !ok {
			t.Errorf("exporter: no numascope_cgroup_memory_outside_cpuset_bytes{cgroup=%q}: %v", path, outside)
			continue
		}
		what, lo, hi := "none: it allows both nodes", 0.0, 0.0
		if other != "" {
			b, a := before[path][other], after[path][other]
			what, lo, hi = "memory.numa_stat's hierarchical anon + file on node "+other+", before and after", min(a, b), max(a, b)
		}
		within(t, "exporter: "+path+" memory outside its cpuset (bytes; "+what+")", v, lo, hi)
	}
	if outside["/slurm/job_1"] < 7<<20 {
		t.Errorf("exporter: job_1 has %.0f bytes outside its cpuset, want the about 8 MiB it placed on node 1 before", outside["/slurm/job_1"])
	}
}
