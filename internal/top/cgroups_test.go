package top

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
)

// TestCgroupRowsHoldTheirSubtree: a cgroup's row counts the processes of
// the cgroup and of every cgroup below it, down to the depth asked for (a
// deeper cgroup's processes count in its ancestor at that depth), so that
// a pod's row holds its containers; the root holds every process. CPU% is
// the processes' sum on a cgroup's first frame, then cpu.stat's usage_usec
// over the time between its own reads, which counts what the processes'
// sum cannot (a task that exited within the interval).
func TestCgroupRowsHoldTheirSubtree(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	pod1 := filepath.Join(cg, "kubepods", "pod1")
	for _, d := range []string{"ctrA", "ctrB"} {
		if err := os.MkdirAll(filepath.Join(pod1, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(cg, "kubepods", "pod2", "ctrC", "deep", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	usage := func(us string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(pod1, "cpu.stat"), []byte("usage_usec "+us+"\nuser_usec 1\nsystem_usec 2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	usage("1000000")

	fs := sysfs.New(root)
	c := &Collector{fs: fs, opts: Options{Cgroups: true, CgroupDepth: 3}, rd: procnuma.NewReader(fs), procs: map[int]*procState{}}
	c.cgroups.init(fs)
	clock := time.Unix(1e9, 0)
	c.cgroups.counts.now = func() time.Time { return clock }
	in := map[int]string{1: "", 10: "kubepods/pod1/ctrA", 11: "kubepods/pod1/ctrB", 12: "kubepods/pod2/ctrC/deep/deeper"}
	procs := func() []Process {
		var ps []Process
		for pid, path := range in {
			c.procs[pid] = &procState{cgroup: path, cgOK: true, cgRead: true}
			ps = append(ps, Process{PID: pid, CPUPercent: float64(pid), NUMAFaults: &Faults{Local: 1, Remote: float64(pid)}})
		}
		return ps
	}
	type row struct {
		procs         int
		cpu, lo, remo float64
	}
	check := func(frame string, gs []Cgroup, want map[string]row) {
		t.Helper()
		got := map[string]row{}
		for _, g := range gs {
			if _, dup := got[g.Path]; dup {
				t.Errorf("%s: two rows for %s", frame, g.Path)
			}
			got[g.Path] = row{g.Processes, g.CPUPercent, g.NUMAFaults.Local, g.NUMAFaults.Remote}
		}
		if len(got) != len(want) {
			t.Errorf("%s: rows %v, want %v", frame, got, want)
		}
		for p, w := range want {
			if got[p] != w {
				t.Errorf("%s: %s is %+v, want %+v", frame, p, got[p], w)
			}
		}
	}
	ps := procs()
	check("first frame", c.cgroups.group(c, ps), map[string]row{
		"/":                   {4, 34, 4, 34},
		"/kubepods":           {3, 33, 3, 33},
		"/kubepods/pod1":      {2, 21, 2, 21},
		"/kubepods/pod1/ctrA": {1, 10, 1, 10},
		"/kubepods/pod1/ctrB": {1, 11, 1, 11},
		"/kubepods/pod2":      {1, 12, 1, 12},
		"/kubepods/pod2/ctrC": {1, 12, 1, 12},
	})
	for _, p := range ps {
		if want := "/" + in[p.PID]; p.Cgroup != want {
			t.Errorf("process %d: cgroup %q, want its own %q", p.PID, p.Cgroup, want)
		}
	}
	// 0.5 s of CPU over the 2 s between pod1's two reads of cpu.stat.
	clock = clock.Add(2 * time.Second)
	usage("1500000")
	check("second frame", c.cgroups.group(c, procs()), map[string]row{
		"/":                   {4, 34, 4, 34},
		"/kubepods":           {3, 33, 3, 33},
		"/kubepods/pod1":      {2, 25, 2, 21},
		"/kubepods/pod1/ctrA": {1, 10, 1, 10},
		"/kubepods/pod1/ctrB": {1, 11, 1, 11},
		"/kubepods/pod2":      {1, 12, 1, 12},
		"/kubepods/pod2/ctrC": {1, 12, 1, 12},
	})
	// Depth 1: the root's children only.
	c.opts.CgroupDepth = 1
	check("depth 1", c.cgroups.group(c, procs()), map[string]row{
		"/":         {4, 34, 4, 34},
		"/kubepods": {3, 33, 3, 33},
	})
}
