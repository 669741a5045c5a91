package top

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestCgroupRowsOnCgroupV1: where the memory controller is on cgroup v1
// (the VM capture of internal/procnuma/testdata/vm2-v1: a hybrid layout,
// two profnuma jobs in /slurm/job_1 and /slurm/job_2), the rows follow the
// memory hierarchy's paths from /proc/PID/cgroup, and each row's memory is
// its memory.numa_stat's hierarchical anon + file, pages made bytes:
// /slurm, with no page of its own, holds its jobs'. The table says that
// CPU% is the processes' sum there, and why.
func TestCgroupRowsOnCgroupV1(t *testing.T) {
	fs := sysfs.New(filepath.Join("..", "procnuma", "testdata", "vm2-v1"))
	c := &Collector{fs: fs, opts: Options{Cgroups: true}, rd: procnuma.NewReader(fs), procs: map[int]*procState{}}
	c.cgroups.init(fs)
	if !c.cgroups.v1 {
		t.Fatal("the capture's layout (no cgroup.controllers, a memory hierarchy) not taken for cgroup v1")
	}
	procs := []Process{{PID: 131, CPUPercent: 200}, {PID: 132, CPUPercent: 150}}
	for _, p := range procs {
		c.procs[p.PID] = &procState{}
	}
	gs := c.cgroups.group(c, procs)
	const page = 4096
	want := map[string]struct {
		procs int
		cpu   float64
		mem   map[string]uint64
	}{
		"/":            {2, 350, nil},
		"/slurm":       {2, 350, map[string]uint64{"0": 2131 * page, "1": 4249 * page}},
		"/slurm/job_1": {1, 200, map[string]uint64{"0": 2049 * page, "1": 2165 * page}},
		"/slurm/job_2": {1, 150, map[string]uint64{"0": 82 * page, "1": 2084 * page}},
	}
	if len(gs) != len(want) {
		t.Errorf("rows %+v, want %d", gs, len(want))
	}
	for _, g := range gs {
		w, ok := want[g.Path]
		if !ok || g.Processes != w.procs || g.CPUPercent != w.cpu || !maps.Equal(g.MemoryByNode, w.mem) || (w.mem == nil) != (g.MemoryByNode == nil) {
			t.Errorf("%s: %d processes, %.0f%% CPU, memory %v; want %+v", g.Path, g.Processes, g.CPUPercent, g.MemoryByNode, w)
		}
		if g.HintFaults != -1 || g.PagesMigrated != -1 {
			t.Errorf("%s: hinting faults %v, pages migrated %v from a v1 memory.stat, which has neither", g.Path, g.HintFaults, g.PagesMigrated)
		}
	}
	if p := procs[0].Cgroup; p != "/slurm/job_1" {
		t.Errorf("process 131's cgroup %q, want its memory hierarchy's /slurm/job_1", p)
	}
	miss := c.cgroups.missing(gs)
	if len(miss) != 1 || !strings.Contains(miss[0], "cgroup v1") || !strings.Contains(miss[0], "processes' sum") {
		t.Errorf("missing %q, want one line saying that CPU%% is the processes' sum on cgroup v1", miss)
	}
}

// TestCgroupV1CPUFromCpuacct: on cgroup v1 with a cpu,cpuacct hierarchy
// mounted as systemd mounts it (the names cpu and cpuacct symbolic links
// to it), a row's CPU% is its cpuacct.usage over the time between its own
// reads from its second frame on, where every process counts in the row
// by both hierarchies (Slurm's and the container runtimes' layout: the
// same paths in each); otherwise, and on every first frame, the
// processes' sum. Caught: a service whose cpuacct cgroup systemd did not
// make (its process sits at cpuacct's root, while a decoy cpuacct cgroup
// of the same path counts 9 s a second), and a process whose two paths
// part below a common row, which is cpuacct's there (/mix).
func TestCgroupV1CPUFromCpuacct(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	acct := filepath.Join(cg, "cpu,cpuacct")
	for _, d := range []string{"memory/slurm/job_1", "memory/slurm/job_2", "memory/svc/a", "memory/mix/x",
		"cpu,cpuacct/slurm/job_1", "cpu,cpuacct/slurm/job_2", "cpu,cpuacct/svc/a", "cpu,cpuacct/mix/y"} {
		if err := os.MkdirAll(filepath.Join(cg, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(cg, l)); err != nil {
			t.Fatal(err)
		}
	}
	in := map[int][2]string{10: {"slurm/job_1", "slurm/job_1"}, 11: {"slurm/job_2", "slurm/job_2"}, 12: {"svc/a", ""}, 13: {"mix/x", "mix/y"}}
	for pid, p := range in {
		dir := filepath.Join(root, "proc", strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("12:pids:/\n4:cpu,cpuacct:/%s\n3:memory:/%s\n0::/\n", p[1], p[0])
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	usage := func(ns map[string]uint64) {
		t.Helper()
		for d, v := range ns {
			if err := os.WriteFile(filepath.Join(acct, d, "cpuacct.usage"), []byte(strconv.FormatUint(v, 10)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	usage(map[string]uint64{"slurm": 1e9, "slurm/job_1": 5e8, "slurm/job_2": 5e8, "svc": 1e9, "svc/a": 1e9, "mix": 1e9, "mix/y": 1e9})

	fs := sysfs.New(root)
	c := &Collector{fs: fs, opts: Options{Cgroups: true}, rd: procnuma.NewReader(fs), procs: map[int]*procState{}}
	c.cgroups.init(fs)
	if !c.cgroups.v1 || c.cgroups.cpuacct != "cpu,cpuacct" {
		t.Fatalf("v1 %v, cpuacct hierarchy %q: want v1 and the directory cpu,cpuacct (not its symbolic links)", c.cgroups.v1, c.cgroups.cpuacct)
	}
	clock := time.Unix(1e9, 0)
	c.cgroups.counts.now = func() time.Time { return clock }
	procs := func() []Process {
		var ps []Process
		for pid := range in {
			if c.procs[pid] == nil {
				c.procs[pid] = &procState{}
			}
			ps = append(ps, Process{PID: pid, CPUPercent: float64(pid)})
		}
		return ps
	}
	check := func(frame string, gs []Cgroup, want map[string]float64) {
		t.Helper()
		got := map[string]float64{}
		for _, g := range gs {
			got[g.Path] = g.CPUPercent
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: CPU%% by row %v, want %v", frame, got, want)
		}
	}
	check("first frame: the processes' sums", c.cgroups.group(c, procs()), map[string]float64{
		"/": 46, "/slurm": 21, "/slurm/job_1": 10, "/slurm/job_2": 11, "/svc": 12, "/svc/a": 12, "/mix": 13, "/mix/x": 13,
	})
	if st := c.procs[13]; !st.cpuacctOK || st.cpuacct != "mix/y" || st.cgroup != "mix/x" {
		t.Errorf("process 13: memory %q, cpuacct %q (%v); want mix/x and mix/y from /proc/13/cgroup", st.cgroup, st.cpuacct, st.cpuacctOK)
	}
	clock = clock.Add(2 * time.Second)
	usage(map[string]uint64{"slurm": 2.5e9, "slurm/job_1": 1.5e9, "slurm/job_2": 1e9, "svc": 19e9, "svc/a": 19e9, "mix": 5e9, "mix/y": 5e9})
	gs := c.cgroups.group(c, procs())
	check("second frame: cpuacct.usage where the hierarchies agree", gs, map[string]float64{
		"/": 46, "/slurm": 75, "/slurm/job_1": 50, "/slurm/job_2": 25, "/svc": 12, "/svc/a": 12, "/mix": 200, "/mix/x": 13,
	})
	miss := strings.Join(c.cgroups.missing(gs), "\n")
	if !strings.Contains(miss, "cpuacct.usage") || !strings.Contains(miss, "except in 3 rows") {
		t.Errorf("missing %q: want it to say CPU%% is cpuacct.usage's except in 3 rows", miss)
	}
}

// TestCgroupV1Hostile attacks the v1 reading as another local user could
// in a tree numascope is pointed at: a cgroup's directory that is a
// symbolic link to a file elsewhere, a memory.numa_stat that is a FIFO
// nobody writes (it must not block the refresh), one far larger than a
// kernel's, a cpuacct hierarchy that is a symbolic link elsewhere, and a
// cgroup named with escape sequences and HTML. None of them gives memory
// or CPU figures, the refresh returns, and the name is shown as text.
func TestCgroupV1Hostile(t *testing.T) {
	root := t.TempDir()
	mem := filepath.Join(root, "sys", "fs", "cgroup", "memory")
	secret := filepath.Join(root, "secret")
	for _, d := range []string{"fifo", "huge", "\x1b[2J<b>x</b>", secret} {
		p := d
		if d != secret {
			p = filepath.Join(mem, d)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	good := "total=1 N0=1\nanon=1 N0=1\nfile=0 N0=0\nhierarchical_total=1 N0=1\nhierarchical_anon=1 N0=1\nhierarchical_file=0 N0=0\n"
	for name, body := range map[string]string{
		filepath.Join(secret, "memory.numa_stat"):                 good,
		filepath.Join(mem, "\x1b[2J<b>x</b>", "memory.numa_stat"): good,
		filepath.Join(mem, "huge", "memory.numa_stat"):            strings.Repeat("hierarchical_anon=1 N0=1\n", 1<<16),
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(mem, "link")); err != nil {
		t.Fatal(err)
	}
	// A cpuacct "hierarchy" that is a symbolic link to a directory
	// elsewhere, with a cpuacct.usage in it.
	if err := os.Symlink(secret, filepath.Join(root, "sys", "fs", "cgroup", "cpuacct")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "cpuacct.usage"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(mem, "fifo", "memory.numa_stat"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(root)
	c := &Collector{fs: fs, opts: Options{Cgroups: true}, rd: procnuma.NewReader(fs), procs: map[int]*procState{}}
	c.cgroups.init(fs)
	if !c.cgroups.v1 {
		t.Fatal("the tree is not taken for cgroup v1")
	}
	if c.cgroups.cpuacct != "" {
		t.Errorf("a symbolic link named cpuacct taken for the cpuacct hierarchy (%q)", c.cgroups.cpuacct)
	}
	paths := map[int]string{1: "link", 2: "fifo", 3: "huge", 4: "\x1b[2J<b>x</b>"}
	var procs []Process
	for pid, p := range paths {
		c.procs[pid] = &procState{cgroup: p, cgOK: true, cgRead: true}
		procs = append(procs, Process{PID: pid})
	}
	done := make(chan []Cgroup)
	go func() { done <- c.cgroups.group(c, procs) }()
	var gs []Cgroup
	select {
	case gs = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO as memory.numa_stat blocked the refresh")
	}
	for _, g := range gs {
		switch g.Path {
		case "/", "/\x1b[2J<b>x</b>":
		default:
			if g.MemoryByNode != nil {
				t.Errorf("%s: memory %v read through a symbolic link, a FIFO or an oversized file", g.Path, g.MemoryByNode)
			}
		}
		if g.Path == "/\x1b[2J<b>x</b>" && g.MemoryByNode["0"] != 4096 {
			t.Errorf("the hostile name's own cgroup: memory %v, want its 4096 bytes", g.MemoryByNode)
		}
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, &Frame{Cgroups: gs}, 0, true); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(buf.Bytes(), "\x1b") || !strings.Contains(buf.String(), "[2J<b>x</b>") {
		t.Errorf("the cgroup table carries the escape sequence or lost the name: %q", buf.String())
	}
}
