package procnuma

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseSchedWithoutNUMA(t *testing.T) {
	// A kernel without CONFIG_NUMA_BALANCING prints the scheduler's
	// statistics and stops at clock-delta: not available, not zeros.
	full := readFixture(t, "vm4-compute/proc/139/task/158/sched")
	cut := full[:bytes.Index(full, []byte("mm->numa_scan_seq"))]
	s := Sched{Faults: make([]NodeFaults, 3)}
	if err := ParseSched(cut, &s); err != nil {
		t.Fatal(err)
	}
	if s.NUMA || len(s.Faults) != 0 {
		t.Errorf("no NUMA part: %+v", s)
	}
}

func TestParseSchedTruncated(t *testing.T) {
	full := readFixture(t, "vm4-compute/proc/139/task/158/sched")
	for _, at := range []string{"numa_preferred_nid", "total_numa_faults", "current_node", "numa_faults node=0"} {
		cut := full[:bytes.Index(full, []byte(at))]
		var s Sched
		if err := ParseSched(cut, &s); err == nil || !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("cut before %s: %v, want an error", at, err)
		}
	}
	// Cut inside a numa_faults line.
	i := bytes.Index(full, []byte("numa_faults node=2"))
	var s Sched
	if err := ParseSched(full[:i+30], &s); err == nil {
		t.Errorf("cut inside a numa_faults line: no error")
	}
}

func TestParseSchedBad(t *testing.T) {
	base := "numa_pages_migrated                          :                    0\n" +
		"numa_preferred_nid                           :                   -1\n" +
		"total_numa_faults                            :                    0\n" +
		"current_node=0, numa_group_id=0\n"
	for _, c := range []struct{ name, in, err string }{
		{"node beyond MaxNode", base + "numa_faults node=4096 task_private=0 task_shared=0 group_private=0 group_shared=0\n", "node"},
		{"negative fault", base + "numa_faults node=0 task_private=-1 task_shared=0 group_private=0 group_shared=0\n", "not a number"},
		{"missing field", base + "numa_faults node=0 task_private=1 task_shared=0 group_private=0\n", "lacks"},
		{"bad current", strings.Replace(base, "current_node=0", "current_node=x", 1) + "numa_faults node=0 task_private=0 task_shared=0 group_private=0 group_shared=0\n", "current_node"},
		{"bad preferred", strings.Replace(base, "-1\n", "5000\n", 1) + "numa_faults node=0 task_private=0 task_shared=0 group_private=0 group_shared=0\n", "not a node"},
		{"long line", base + strings.Repeat("x", MaxLine+1) + "\n", "longer than"},
	} {
		var s Sched
		if err := ParseSched([]byte(c.in), &s); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
		}
	}
}

func TestParseNUMAMapsShapes(t *testing.T) {
	// The shapes show_numa_map prints that the captures lack: escaped
	// paths, policies with spaces, hugetlb, a line without pages.
	in := "7f0000000000 bind:1 file=/tmp/a\\040b\\012c\\011d\\075e\\134x dirty=2 mapped=3 N1=3 kernelpagesize_kB=4\n" +
		"7f0000100000 weighted interleave:0-3 anon=8 dirty=8 N0=2 N1=2 N2=2 N3=2 kernelpagesize_kB=4\n" +
		"7f0000200000 prefer (many):0,2 anon=4 N0=4 kernelpagesize_kB=4\n" +
		"7f0000300000 interleave=static:0-1 file=/dev/hugepages/x huge dirty=1 N1=1 kernelpagesize_kB=2048\n" +
		"7f0000400000 default\n" +
		"7f0000500000 local stack newfield=1 anon=1 N0=1 kernelpagesize_kB=4\n"
	type want struct {
		policy, path string
		kind         Kind
		huge         bool
		bytes        uint64
	}
	wants := []want{
		{"bind:1", "/tmp/a b\nc\td=e\\134x", KindFile, false, 3 * 4096},
		{"weighted interleave:0-3", "", KindAnon, false, 8 * 4096},
		{"prefer (many):0,2", "", KindAnon, false, 4 * 4096},
		{"interleave=static:0-1", "/dev/hugepages/x", KindFile, true, 2 << 20},
		{"default", "", KindAnon, false, 0},
		{"local", "", KindStack, false, 4096},
	}
	i := 0
	var scratch Mapping
	err := ParseNUMAMaps([]byte(in), &scratch, func(m *Mapping) error {
		w := wants[i]
		if string(m.Policy) != w.policy || string(m.Path) != w.path || m.Kind != w.kind || m.Huge != w.huge || m.Bytes() != w.bytes {
			t.Errorf("line %d: policy %q path %q kind %v huge %v bytes %d; want %+v", i+1, m.Policy, m.Path, m.Kind, m.Huge, m.Bytes(), w)
		}
		i++
		return nil
	})
	if err != nil || i != len(wants) {
		t.Fatalf("%d lines: %v", i, err)
	}
	var tot Totals
	if err := SumNUMAMaps([]byte(in), &tot, &scratch); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{7 * 4096, 3*4096 + 2*4096 + 2<<20, 2 * 4096, 2 * 4096}; !slices.Equal(tot.Bytes, want) {
		t.Errorf("totals %v, want %v", tot.Bytes, want)
	}
}

// TestNUMAMapsCategories: each line lands in the category numastat -p
// files it under: huge before anything else, then heap, then stack
// ("stack:TID" of kernels before 4.5 too), and everything else, file-backed
// memory included, in private. Each category's bytes use the line's own
// page size.
func TestNUMAMapsCategories(t *testing.T) {
	in := "1000 default file=/usr/lib/libc.so.6 mapped=5 mapmax=9 N0=5 kernelpagesize_kB=4\n" +
		"2000 default heap anon=7 dirty=7 N0=3 N1=4 kernelpagesize_kB=4\n" +
		"3000 default stack anon=2 dirty=2 N1=2 kernelpagesize_kB=4\n" +
		"4000 default stack:4321 anon=6 dirty=6 N0=6 kernelpagesize_kB=4\n" +
		"5000 bind:1 anon=9 dirty=9 N1=9 kernelpagesize_kB=4\n" +
		"6000 default file=/dev/hugepages/x huge dirty=3 N0=1 N1=2 kernelpagesize_kB=2048\n" +
		"7000 default anon=1 dirty=1 N0=1 kernelpagesize_kB=1048576\n" + // not huge: private
		"8000 default file=/dev/shm/s dirty=4 N0=4 kernelpagesize_kB=4\n"
	var tot Totals
	var scratch Mapping
	if err := SumNUMAMaps([]byte(in), &tot, &scratch); err != nil {
		t.Fatal(err)
	}
	const k = 4096
	want := [Categories][]uint64{
		CategoryHuge:    {2 << 20, 4 << 20},
		CategoryHeap:    {3 * k, 4 * k},
		CategoryStack:   {6 * k, 2 * k},
		CategoryPrivate: {5*k + 1<<30 + 4*k, 9 * k},
	}
	for c := range Categories {
		if !slices.Equal(tot.ByCategory[c], want[c]) {
			t.Errorf("%v: %v, want %v", c, tot.ByCategory[c], want[c])
		}
	}
	for n := range tot.Bytes {
		var sum uint64
		for c := range Categories {
			sum += tot.ByCategory[c][n]
		}
		if sum != tot.Bytes[n] {
			t.Errorf("node %d: categories sum to %d, total %d", n, sum, tot.Bytes[n])
		}
	}
	// Reset keeps nothing of the last process.
	if err := SumNUMAMaps([]byte("1000 default heap anon=1 N0=1 kernelpagesize_kB=4\n"), &tot, &scratch); err != nil {
		t.Fatal(err)
	}
	if len(tot.Bytes) != 1 || tot.ByCategory[CategoryHeap][0] != k || tot.ByCategory[CategoryStack][0] != 0 || len(tot.ByCategory[CategoryStack]) != 1 {
		t.Errorf("after Reset: %+v", tot)
	}
}

func TestParseNUMAMapsBad(t *testing.T) {
	for _, c := range []struct{ name, in, err string }{
		{"bad address", "zz default N0=1 kernelpagesize_kB=4\n", "address"},
		{"address too long", "12345678901234567 default\n", "address"},
		{"no policy", "7f00 N0=1 kernelpagesize_kB=4\n", "policy"},
		{"only an address", "7f00\n", "policy"},
		{"pages without size (truncated)", "7f00 default anon=3 N0=3\n", "kernelpagesize_kB"},
		{"node beyond MaxNode", "7f00 default N1024=1 kernelpagesize_kB=4\n", "beyond"},
		{"bad count", "7f00 default N0=x kernelpagesize_kB=4\n", "not a number"},
		{"two kinds", "7f00 default file=/a heap N0=1 kernelpagesize_kB=4\n", "two kinds"},
		{"absurd page size", "7f00 default N0=1 kernelpagesize_kB=0\n", "page size"},
		{"long line", "7f00 default file=/" + strings.Repeat("a", MaxLine) + " N0=1 kernelpagesize_kB=4\n", "longer than"},
	} {
		var scratch Mapping
		err := ParseNUMAMaps([]byte(c.in), &scratch, func(*Mapping) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
		}
	}
}

func TestParseStatComm(t *testing.T) {
	tail := " R 1 1 1 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 1 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 7 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	for _, comm := range []string{"sh", "a b", "a) R 1 (b", "((()))", ")", "", "\x1b[31mred", "tab\there"} {
		var s Stat
		if err := ParseStat([]byte("42 ("+comm+")"+tail), &s); err != nil {
			t.Errorf("comm %q: %v", comm, err)
			continue
		}
		if string(s.Comm) != comm || s.State != 'R' || s.UTime != 12 || s.STime != 34 || s.Processor != 7 || s.Flags != 4194560 || s.Flags&PFKThread != 0 {
			t.Errorf("comm %q: %+v", comm, s)
		}
	}
	for _, bad := range []string{"", "42 sh R 1", "42 (sh) R 1 2 3", "42 (sh)" + strings.Replace(tail, " 12 ", " x ", 1), "42 (sh)" + strings.Replace(tail, " R ", " RR ", 1)} {
		var s Stat
		if err := ParseStat([]byte(bad), &s); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	in := "Name:\t a\\nb \nUmask:\t0022\nState:\tS (sleeping)\nThreads:\t3\nCpus_allowed:\tff\nCpus_allowed_list:\t0-3,8\nMems_allowed_list:\t0,2\n"
	var s Status
	if err := ParseStatus([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Name) != " a\\nb " || s.Threads != 3 || s.HasRSS || !slices.Equal(s.CPUsAllowed, []int{0, 1, 2, 3, 8}) || !slices.Equal(s.MemsAllowed, []int{0, 2}) {
		t.Errorf("status = %+v (name %q)", s, s.Name)
	}
	for _, bad := range []string{
		strings.Replace(in, "Threads:\t3\n", "", 1),             // truncated
		strings.Replace(in, "0,2", "0-5000", 1),                 // node beyond MaxNode
		strings.Replace(in, "0-3,8", "3-1", 1),                  // backwards range
		strings.Replace(in, "Threads:\t3", "Threads:\tmany", 1), // not a count
		in + "VmRSS:\t12 MB\n",
		strings.Replace(in, "0-3,8", strings.Repeat("0-8191,", 20), 1), // more entries than CPUs                                  // not kB
	} {
		if err := ParseStatus([]byte(bad), &s); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseCgroupNUMABad(t *testing.T) {
	for _, bad := range []string{
		"",                 // no anon line
		"anon\n",           // truncated
		"anon N0=1 junk\n", // not N<node>=<value>
		"anon N5000=1\n",   // node beyond MaxNode
		"anon N0=-1\n",     // negative
		"file N0=1\n",      // no anon line
	} {
		var c CgroupNUMA
		if err := ParseCgroupNUMA([]byte(bad), &c); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCgroupPath(t *testing.T) {
	for _, c := range []struct {
		in, path string
		ok       bool
	}{
		{"0::/\n", "", true},
		{"0::/wl\n", "wl", true},
		{"12:memory:/a\n0::/system.slice/x.service\n", "system.slice/x.service", true},
		{"0::/gone (deleted)\n", "gone", true},
		{"4:memory:/a\n", "", false},
	} {
		p, ok, err := CgroupPath([]byte(c.in))
		if err != nil || ok != c.ok || string(p) != c.path {
			t.Errorf("%q: %q, %v, %v", c.in, p, ok, err)
		}
	}
}

// TestParsersDoNotAllocate: once the destination's slices have grown, a
// second parse of the same file allocates nothing (top refreshes every
// process each second).
func TestParsersDoNotAllocate(t *testing.T) {
	sched := readFixture(t, "vm4-compute/proc/139/task/158/sched")
	maps := readFixture(t, "vm4-compute/proc/139/numa_maps")
	status := readFixture(t, "vm4-compute/proc/139/status")
	stat := readFixture(t, "vm4-compute/proc/139/stat")
	numaStat := readFixture(t, "vm4-compute/sys/fs/cgroup/wl/memory.numa_stat")
	numaStatV1 := readFixture(t, "vm2-v1/sys/fs/cgroup/memory/slurm/memory.numa_stat")
	var (
		s  Sched
		m  Mapping
		tt Totals
		st Status
		sa Stat
		c  CgroupNUMA
		c1 CgroupNUMA
	)
	for name, f := range map[string]func() error{
		"sched":        func() error { return ParseSched(sched, &s) },
		"numa_maps":    func() error { return SumNUMAMaps(maps, &tt, &m) },
		"status":       func() error { return ParseStatus(status, &st) },
		"stat":         func() error { return ParseStat(stat, &sa) },
		"numa_stat":    func() error { return ParseCgroupNUMA(numaStat, &c) },
		"numa_stat v1": func() error { return ParseCgroupV1NUMA(numaStatV1, &c1, 4096) },
	} {
		if err := f(); err != nil {
			t.Fatal(name, err)
		}
		if a := testing.AllocsPerRun(100, func() {
			if err := f(); err != nil {
				t.Fatal(name, err)
			}
		}); a != 0 {
			t.Errorf("%s: %.1f allocations per parse, want 0", name, a)
		}
	}
}

// fixtureSeeds adds every fixture file of the given name to a fuzz corpus.
func fixtureSeeds(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(readFixture(f, n))
	}
}

func FuzzParseSched(f *testing.F) {
	fixtureSeeds(f, "vm4-compute/proc/139/sched", "vm4-compute/proc/139/task/158/sched", "vm4-init/proc/139/task/159/sched", "onenode/proc/7718/sched")
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Sched
		if err := ParseSched(data, &s); err != nil {
			return
		}
		if !s.NUMA {
			if len(s.Faults) != 0 {
				t.Fatalf("no NUMA part yet %d numa_faults", len(s.Faults))
			}
			return
		}
		if len(s.Faults) == 0 || s.PreferredNode < -1 || s.PreferredNode > MaxNode || s.CurrentNode > MaxNode {
			t.Fatalf("accepted %+v", s)
		}
		for _, nf := range s.Faults {
			if nf.Node < 0 || nf.Node > MaxNode {
				t.Fatalf("node %d accepted", nf.Node)
			}
		}
	})
}

func FuzzParseNUMAMaps(f *testing.F) {
	fixtureSeeds(f, "vm4-compute/proc/139/numa_maps", "onenode/proc/7718/numa_maps")
	f.Add([]byte("7f0000000000 weighted interleave:0-3 file=/a\\040b huge N3=1 kernelpagesize_kB=2048\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var scratch Mapping
		var tot Totals
		sum := uint64(0)
		errInvariant := errors.New("invariant broken")
		err := ParseNUMAMaps(data, &scratch, func(m *Mapping) error {
			if len(m.Policy) == 0 || (len(m.Nodes) > 0 && m.PageSize == 0) {
				return fmt.Errorf("%w: accepted %+v", errInvariant, m)
			}
			for _, p := range m.Nodes {
				if p.Node < 0 || p.Node > MaxNode {
					return fmt.Errorf("%w: node %d accepted", errInvariant, p.Node)
				}
			}
			if m.Kind != KindFile && len(m.Path) > 0 {
				return fmt.Errorf("%w: path %q on a %v mapping", errInvariant, m.Path, m.Kind)
			}
			if c := m.Category(); (c == CategoryHuge) != m.Huge || (c == CategoryHeap) != (m.Kind == KindHeap && !m.Huge) {
				return fmt.Errorf("%w: category %v of %+v", errInvariant, c, m)
			}
			tot.Add(m)
			sum += m.Bytes()
			return nil
		})
		if errors.Is(err, errInvariant) {
			t.Fatal(err)
		}
		if err == nil && tot.Sum() != sum {
			t.Fatalf("totals %d, mappings %d", tot.Sum(), sum)
		}
	})
}

func FuzzParseStatus(f *testing.F) {
	fixtureSeeds(f, "vm4-compute/proc/139/status", "onenode/proc/7718/status")
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Status
		if err := ParseStatus(data, &s); err != nil {
			return
		}
		for _, n := range s.MemsAllowed {
			if n < 0 || n > MaxNode {
				t.Fatalf("node %d accepted", n)
			}
		}
		if len(s.CPUsAllowed) > maxCPU+1 || len(s.MemsAllowed) > MaxNode+1 {
			t.Fatalf("%d CPUs, %d nodes accepted", len(s.CPUsAllowed), len(s.MemsAllowed))
		}
		for _, c := range s.CPUsAllowed {
			if c < 0 || c > maxCPU {
				t.Fatalf("CPU %d accepted", c)
			}
		}
	})
}

func FuzzParseStat(f *testing.F) {
	fixtureSeeds(f, "vm4-compute/proc/139/stat", "vm4-compute/proc/139/task/160/stat", "onenode/proc/7718/stat")
	f.Add([]byte("1 (a) R 1 (b) R 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1 1 1 1 0 0 0 0 0 0 0 0 0 0 0 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Stat
		if err := ParseStat(data, &s); err != nil {
			return
		}
		// The comm runs from the first '(' to the last ')'.
		open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		if string(data[open+1:closing]) != string(s.Comm) || s.Processor > maxCPU {
			t.Fatalf("comm %q, processor %d from %q", s.Comm, s.Processor, data)
		}
	})
}

func FuzzParseCgroupNUMA(f *testing.F) {
	fixtureSeeds(f, "vm4-compute/sys/fs/cgroup/wl/memory.numa_stat")
	f.Fuzz(func(t *testing.T, data []byte) {
		var c CgroupNUMA
		if err := ParseCgroupNUMA(data, &c); err != nil {
			return
		}
		if c.Anon == nil || len(c.Items) == 0 || len(c.Anon) > MaxNode+1 {
			t.Fatalf("accepted %+v", c)
		}
	})
}

// TestParseCgroupV1NUMA reads the v1 memory controller's memory.numa_stat
// of the VM capture (testdata/README.md): pages become bytes, and Anon and
// File are the hierarchical lines, so that /slurm, with no page of its own,
// holds its two jobs' pages as a v2 parent would.
func TestParseCgroupV1NUMA(t *testing.T) {
	const page = 4096
	for _, c := range []struct {
		name           string
		anonPg, filePg []uint64 // pages
	}{
		{"vm2-v1/sys/fs/cgroup/memory/slurm/memory.numa_stat", []uint64{2131, 4249}, []uint64{0, 0}},
		{"vm2-v1/sys/fs/cgroup/memory/slurm/job_1/memory.numa_stat", []uint64{2049, 2165}, []uint64{0, 0}},
		{"vm2-v1/sys/fs/cgroup/memory/slurm/job_2/memory.numa_stat", []uint64{82, 2084}, []uint64{0, 0}},
		{"build-v1/sys/fs/cgroup/memory/process_api/3a1abf10ce6132bc9ba7ac4e3a295f22/memory.numa_stat", []uint64{604}, []uint64{185884}},
	} {
		var n CgroupNUMA
		if err := ParseCgroupV1NUMA(readFixture(t, c.name), &n, page); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		anon, file := slices.Clone(c.anonPg), slices.Clone(c.filePg)
		for i := range anon {
			anon[i] *= page
			file[i] *= page
		}
		if !slices.Equal(n.Anon, anon) || !slices.Equal(n.File, file) {
			t.Errorf("%s: anon %v file %v, want %v and %v bytes", c.name, n.Anon, n.File, anon, file)
		}
		if len(n.Items) != 8 || n.Items[0].Name != "total" || n.Items[7].Name != "hierarchical_unevictable" {
			t.Errorf("%s: items %+v, want the file's 8 lines by name", c.name, n.Items)
		}
	}
	// A kernel that prints no hierarchical lines: the cgroup's own.
	var n CgroupNUMA
	if err := ParseCgroupV1NUMA([]byte("total=3 N0=1 N1=2\nfile=1 N0=1 N1=0\nanon=2 N0=0 N1=2\n"), &n, page); err != nil ||
		!slices.Equal(n.Anon, []uint64{0, 2 * page}) || !slices.Equal(n.File, []uint64{page, 0}) {
		t.Errorf("without hierarchical lines: %+v, %v", n, err)
	}
	for _, bad := range []string{
		"",                                 // no anon line
		"anon N0=1\n",                      // v2's format
		"anon=1\n",                         // no node
		"anon=1 N0=x\n",                    // not a number
		"anon=x N0=1\n",                    // total not a number
		"=1 N0=1\n",                        // no name
		"anon=1 N0=18446744073709551615\n", // bytes overflow
		"total=1 N0=1\n",                   // no anon line
	} {
		if err := ParseCgroupV1NUMA([]byte(bad), &n, page); err == nil {
			t.Errorf("%q: accepted as %+v", bad, n)
		}
	}
}

// TestCgroupV1Path: the path in the hierarchy of one v1 controller, from
// the captures and from lines that name it among others.
func TestCgroupV1Path(t *testing.T) {
	for _, c := range []struct {
		in, ctrl, path string
		ok             bool
	}{
		{string(readFixture(t, "vm2-v1/proc/131/cgroup")), "memory", "slurm/job_1", true},
		{string(readFixture(t, "build-v1/proc/10994/cgroup")), "memory", "process_api/3a1abf10ce6132bc9ba7ac4e3a295f22", true},
		{string(readFixture(t, "build-v1/proc/10994/cgroup")), "cpuacct", "", true},
		{"4:cpu,cpuacct:/slurm/uid_1000/job_7\n", "cpuacct", "slurm/uid_1000/job_7", true},
		{"4:cpu,cpuacct:/slurm\n", "cpua", "", false},
		{"0::/wl\n", "memory", "", false},
		{"9:name=systemd:/x\n", "systemd", "", false},
		{"3:memory:/gone (deleted)\n", "memory", "gone", true},
		{"garbage\n", "memory", "", false},
	} {
		p, ok, err := CgroupV1Path([]byte(c.in), c.ctrl)
		if err != nil || ok != c.ok || string(p) != c.path {
			t.Errorf("%q %s: %q, %v, %v; want %q, %v", c.in, c.ctrl, p, ok, err, c.path, c.ok)
		}
	}
}

func FuzzParseCgroupV1NUMA(f *testing.F) {
	fixtureSeeds(f, "vm2-v1/sys/fs/cgroup/memory/slurm/memory.numa_stat",
		"build-v1/sys/fs/cgroup/memory/process_api/3a1abf10ce6132bc9ba7ac4e3a295f22/memory.numa_stat")
	f.Fuzz(func(t *testing.T, data []byte) {
		var c CgroupNUMA
		if err := ParseCgroupV1NUMA(data, &c, 4096); err != nil {
			return
		}
		if c.Anon == nil || len(c.Items) == 0 || len(c.Anon) > MaxNode+1 {
			t.Fatalf("accepted %+v", c)
		}
		for _, b := range c.Anon {
			if b%4096 != 0 {
				t.Fatalf("anon %v: not whole pages", c.Anon)
			}
		}
	})
}

func FuzzCgroupV1Path(f *testing.F) {
	fixtureSeeds(f, "vm2-v1/proc/131/cgroup", "build-v1/proc/10994/cgroup")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok, err := CgroupV1Path(data, "memory")
		if err != nil || !ok {
			return
		}
		// The path ends a line (less " (deleted)"), and holds none; a
		// NUL ends the data, as the kernel's padding does.
		if i := bytes.IndexByte(data, 0); i >= 0 {
			data = data[:i]
		}
		found := false
		for l := range bytes.SplitSeq(data, []byte("\n")) {
			l = bytes.TrimSuffix(l, []byte(" (deleted)"))
			found = found || (bytes.HasSuffix(l, p) && len(l) > len(p))
		}
		if !found || bytes.ContainsAny(p, "\n") {
			t.Fatalf("path %q ends no line of %q", p, data)
		}
	})
}
