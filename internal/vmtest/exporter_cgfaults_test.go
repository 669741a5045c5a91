package vmtest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// cgroupFaultsScript puts two profnuma workloads in a cgroup /bal and its
// child /bal/sub of a two-node VM, one worker pinned to each node and all
// memory bound to node 0 (MPOL_BIND with MPOL_F_NUMA_BALANCING, so that the
// balancer samples it but never moves it): node 0's workers take local
// hinting faults and node 1's remote ones, in both cgroups. The kernel adds
// a thread's faults to its figures only at a placement, once per pass of
// the balancer's scanner; once both workers of each cgroup show faults,
// both workloads are stopped (a stopped thread takes no fault, so its
// decayed averages do not move: the kernel decays them only at a
// placement, on the thread's own faults), and each cgroup's faults are
// summed by awk, written apart from numascope, over the threads in
// cgroup.threads of the cgroup and its descendants (find), before and
// after one scrape of numascope exporter --cgroups --cgroup-faults.
const cgroupFaultsScript = `ip link set lo up
echo "+memory +cpuset" > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/bal/sub
sh -c 'echo $$ > /sys/fs/cgroup/bal/cgroup.procs; exec profnuma --parallel --membind 0 --mb 8 --seconds 120' >/tmp/a.out 2>&1 &
A=$!
sh -c 'echo $$ > /sys/fs/cgroup/bal/sub/cgroup.procs; exec profnuma --parallel --membind 0 --mb 8 --seconds 120' >/tmp/b.out 2>&1 &
B=$!
placed() {
	for cg in bal bal/sub; do
		n=0
		for t in $(cat /sys/fs/cgroup/$cg/cgroup.threads); do
			v=$(awk '/^total_numa_faults/ {print $3}' /proc/$t/sched)
			[ "${v:-0}" -gt 0 ] && n=$((n+1))
		done
		[ $n -ge 2 ] || return 1
	done
}
i=0; while ! placed; do sleep 0.5; i=$((i+1)); [ $i -gt 360 ] && break; done
kill -STOP $A $B
sleep 0.5
faults() {
	for cg in /sys/fs/cgroup/bal /sys/fs/cgroup/bal/sub; do
		for tid in $(find $cg -name cgroup.threads -exec cat {} +); do cat /proc/$tid/sched; done |
		awk -v cg=${cg#/sys/fs/cgroup} '
			/^current_node=/ { split($0, a, /[=,]/); cur = a[2] }
			/^numa_faults node=/ {
				for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
				n = v["task_private"] + v["task_shared"]
				if (v["node"] == cur) local += n; else remote += n
				lines++
			}
			END { printf "%s %d %d %d\n", cg, local, remote, lines }'
	done
}
sec threads sh -c 'for cg in /sys/fs/cgroup/bal /sys/fs/cgroup/bal/sub; do echo "$cg $(cat $cg/cgroup.threads | tr "\n" " ")"; done'
sec faults.before faults
taskset -c 0 numascope exporter --listen 127.0.0.1:9865 --cgroups --cgroup-faults >/tmp/exporter.out 2>/tmp/exporter.err &
for i in $(seq 100); do wget -q -O /dev/null http://127.0.0.1:9865/metrics 2>/dev/null && break; sleep 0.1; done
sec scrape wget -q -O - http://127.0.0.1:9865/metrics
sec faults.after faults
pfaults() {
	for p in $A $B; do
		cat /proc/$p/task/*/sched | awk -v p=$p '
			/^current_node=/ { split($0, a, /[=,]/); cur = a[2] }
			/^numa_faults node=/ {
				for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
				n = v["task_private"] + v["task_shared"]
				if (v["node"] == cur) local += n; else remote += n
			}
			END { printf "%s %d %d 2\n", p, local, remote }'
	done
}
sec pfaults.before pfaults
sec numastat.before cat /sys/fs/cgroup/bal/memory.numa_stat
sec top numascope top -b --format json --cgroup -n 1 --no-events
sec numastat.after cat /sys/fs/cgroup/bal/memory.numa_stat
sec pfaults.after pfaults
sec preferred sh -c "for t in /proc/$A/task/* /proc/$B/task/*; do echo \$(basename \$t) \$(awk '/^numa_preferred_nid/ {print \$3}' \$t/sched); done"
numascope live --listen 127.0.0.1:8766 --no-token -i 1s -e vmstat.numa_hit > /tmp/live.out 2>&1 &
L=$!
i=0; while ! wget -qO /dev/null http://127.0.0.1:8766/ 2>/dev/null; do sleep 0.2; i=$((i+1)); [ $i -gt 150 ] && break; done
sec detailA wget -qO- "http://127.0.0.1:8766/api/processes/detail?pid=$A"
sec detailB wget -qO- "http://127.0.0.1:8766/api/processes/detail?pid=$B"
kill $L
sec stderr cat /tmp/exporter.err
kill -KILL $A $B
`

// TestExporterCgroupFaultsVM holds numascope_cgroup_numa_faults to awk's
// sum of the same kernel figures (cgroupFaultsScript): for /bal (its own
// threads and /bal/sub's) and /bal/sub, local and remote, exactly, as the
// threads are stopped. The faults must be there to compare: both
// localities non-zero for both cgroups. A parent that leaves out its
// child's threads, or a fault's locality judged by another node than the
// one the thread runs on, fails.
func TestExporterCgroupFaultsVM(t *testing.T) {
	requireVM(t)
	r := runVM(t, []string{"--nodes", "2", "--distances", "10,21;21,10"}, cgroupFaultsScript)
	if e := strings.TrimSpace(r.section(t, "stderr")); e != "" {
		t.Errorf("the exporter wrote to stderr: %s", e)
	}
	t.Logf("threads:\n%s", r.section(t, "threads"))
	read := func(name string) map[string][2]float64 {
		out := map[string][2]float64{}
		for _, l := range strings.Split(strings.TrimSpace(r.section(t, name)), "\n") {
			f := strings.Fields(l)
			if len(f) != 4 {
				t.Fatalf("%s: line %q", name, l)
			}
			lo, _ := strconv.ParseFloat(f[1], 64)
			re, _ := strconv.ParseFloat(f[2], 64)
			if n, _ := strconv.Atoi(f[3]); n < 2 {
				t.Fatalf("%s: %s has %d numa_faults lines: no NUMA part in /proc/TID/sched", name, f[0], n)
			}
			out[f[0]] = [2]float64{lo, re}
		}
		return out
	}
	before, after := read("faults.before"), read("faults.after")
	tp := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := tp.TextToMetricFamilies(strings.NewReader(r.section(t, "scrape")))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	got := map[string][2]float64{}
	if f := fams["numascope_cgroup_numa_faults"]; f != nil {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			v := got[l["cgroup"]]
			v[map[string]int{"local": 0, "remote": 1}[l["locality"]]] = metricValue(m)
			got[l["cgroup"]] = v
		}
	}
	for _, cg := range []string{"/bal", "/bal/sub"} {
		b, a := before[cg], after[cg]
		if b != a {
			t.Logf("%s: awk read %v before the scrape and %v after: the stopped threads' figures moved", cg, b, a)
		}
		if b[0] == 0 || b[1] == 0 {
			t.Errorf("%s: awk finds local %v and remote %v faults: the workloads took no hinting faults of one kind, nothing to compare", cg, b[0], b[1])
		}
		for i, loc := range []string{"local", "remote"} {
			within(t, fmt.Sprintf("%s %s faults (awk's sum over /proc/TID/sched before and after the scrape)", cg, loc),
				got[cg][i], min(a[i], b[i]), max(a[i], b[i]))
		}
	}
	if sub, all := before["/bal/sub"], before["/bal"]; all[0] <= sub[0] || all[1] <= sub[1] {
		t.Errorf("/bal %v holds /bal/sub's threads and its own, but is not above /bal/sub's %v", all, sub)
	}
	t.Run("top", func(t *testing.T) { checkTopCgroupFaults(t, r, read) })
}

// checkTopCgroupFaults holds what `numascope top --cgroup --no-events`
// shows of the stopped workloads to the kernel's figures read apart from
// numascope: each process's recent remote share (REM% marked ~) to awk's
// remote / (local + remote) over /proc/PID/task/*/sched, and /bal's
// memory per node to anon + file of its memory.numa_stat read with cat,
// before and after.
func checkTopCgroupFaults(t *testing.T, r *vmResult, read func(string) map[string][2]float64) {
	var frame struct {
		Processes []topProcess `json:"processes"`
		Cgroups   []struct {
			Path   string            `json:"path"`
			Memory map[string]uint64 `json:"memory_bytes_by_node"`
		} `json:"cgroups"`
	}
	if err := json.Unmarshal([]byte(r.section(t, "top")), &frame); err != nil {
		t.Fatalf("top --format json: %v", err)
	}
	before, after := read("pfaults.before"), read("pfaults.after")
	if len(before) != 2 {
		t.Fatalf("awk read %d processes, want the 2 workloads", len(before))
	}
	for pid, b := range before {
		a := after[pid]
		share := func(f [2]float64) float64 { return f[1] / (f[0] + f[1]) }
		lo, hi := min(share(a), share(b)), max(share(a), share(b))
		found := false
		for _, p := range frame.Processes {
			if strconv.Itoa(p.PID) != pid {
				continue
			}
			found = true
			switch {
			case p.RecentShare == nil:
				t.Errorf("top: process %s (%s) has no recent remote share", pid, p.Cgroup)
			case *p.RecentShare < lo-1e-9 || *p.RecentShare > hi+1e-9:
				t.Errorf("top: process %s's recent remote share %.6f, awk's %.6f-%.6f (local, remote %v and %v)", pid, *p.RecentShare, lo, hi, b, a)
			default:
				t.Logf("top: process %s's recent remote share %.6f, awk's %.6f (local, remote %v)", pid, *p.RecentShare, lo, b)
			}
		}
		if !found {
			t.Errorf("top shows no process %s", pid)
		}
	}
	checkPreferredNodes(t, r, frame.Processes)
	nb, na := numaStatLines(t, r.section(t, "numastat.before")), numaStatLines(t, r.section(t, "numastat.after"))
	for _, g := range frame.Cgroups {
		if g.Path != "/bal" {
			continue
		}
		for _, node := range []string{"0", "1"} {
			b, a := nb["anon"][node]+nb["file"][node], na["anon"][node]+na["file"][node]
			within(t, "top: /bal memory on node "+node+" (bytes; memory.numa_stat's anon + file before and after)", float64(g.Memory[node]), min(a, b), max(a, b))
		}
		return
	}
	t.Errorf("top shows no cgroup /bal")
}

// topProcess is what checkTopCgroupFaults reads of a process in top's JSON.
type topProcess struct {
	PID         int      `json:"pid"`
	Cgroup      string   `json:"cgroup"`
	RecentShare *float64 `json:"recent_remote_share"`
	Preferred   int      `json:"preferred_node"`
}

// checkPreferredNodes holds the balancer's preferred node as top shows it
// (a process's, its main thread's: PREF) and as live's drill-down shows it
// for every thread, to numa_preferred_nid of /proc/PID/task/TID/sched read
// with awk. The workers' is node 0, where all their memory is, whatever
// node they run on (node 1 for half of them); the main threads have none
// (-1), having taken no hinting fault.
func checkPreferredNodes(t *testing.T, r *vmResult, procs []topProcess) {
	want := map[int]int{}
	for _, l := range strings.Split(strings.TrimSpace(r.section(t, "preferred")), "\n") {
		var tid, nid int
		if _, err := fmt.Sscan(l, &tid, &nid); err != nil {
			t.Fatalf("preferred: line %q: %v", l, err)
		}
		want[tid] = nid
	}
	seen := map[int]bool{}
	for _, sec := range []string{"detailA", "detailB"} {
		var d struct {
			PID     int `json:"pid"`
			Threads []struct {
				TID       int `json:"tid"`
				Node      int `json:"node"`
				Preferred int `json:"preferred_node"`
			} `json:"threads"`
		}
		if err := json.Unmarshal([]byte(r.section(t, sec)), &d); err != nil {
			t.Fatalf("%s: %v", sec, err)
		}
		for _, th := range d.Threads {
			w, ok := want[th.TID]
			seen[th.TID] = true
			if !ok || th.Preferred != w {
				t.Errorf("live's drill-down of %d: thread %d (on node %d) prefers node %d, its sched file says %d (read: %v)", d.PID, th.TID, th.Node, th.Preferred, w, ok)
			}
		}
		for _, p := range procs {
			if p.PID == d.PID && p.Preferred != want[d.PID] {
				t.Errorf("top: process %d prefers node %d, its main thread's sched file says %d", p.PID, p.Preferred, want[d.PID])
			}
		}
	}
	workers := 0
	for tid, nid := range want {
		if !seen[tid] {
			t.Errorf("thread %d is in no drill-down", tid)
		}
		if nid == 0 {
			workers++
		}
	}
	if workers < 4 {
		t.Errorf("%d threads prefer node 0, want the 4 workers (all memory is there): %v", workers, want)
	}
	t.Logf("preferred nodes by thread: %v", want)
}
