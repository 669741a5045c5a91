package sensor

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/topology"
)

// checkCPURead enables all events, reads once and compares every node's
// value with the per-CPU sums of the reference parse; it also checks Max.
func checkCPURead(t *testing.T, root string, topo *topology.Topology, s Sensor) {
	t.Helper()
	ref := refStat(t, filepath.Join(root, "proc/stat"))
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatalf("Read: %v", err)
	}
	ns := len(s.Sources())
	var srcs []string
	for _, n := range topo.Nodes {
		online := 0
		var sums [nCPUFields]uint64
		for _, cpu := range topo.CPUs {
			if cpu.Node != n.ID {
				continue
			}
			if v, ok := ref[cpu.ID]; ok {
				online++
				for f := range v {
					sums[f] += v[f]
				}
			}
		}
		if online == 0 {
			continue
		}
		si := len(srcs)
		srcs = append(srcs, strconv.Itoa(n.ID))
		if si >= ns {
			break
		}
		for k, e := range s.Events() {
			want := uint64(0)
			if e.Name == "ticks" {
				// All accounted time: user..steal (guest and guest_nice
				// are already in user and nice).
				for f := 0; f < 8; f++ {
					want += sums[f]
				}
			} else {
				want = sums[k]
			}
			if got := uint64(dst[k*ns+si]); got != want {
				t.Errorf("node %d %s = %d, its CPUs sum to %d", n.ID, e.Name, got, want)
			}
			if e.Max[si] != float64(100*online) {
				t.Errorf("node %d %s: Max %v, want %d (100 x %d online CPUs)", n.ID, e.Name, e.Max[si], 100*online, online)
			}
		}
	}
	if !reflect.DeepEqual(s.Sources(), srcs) {
		t.Errorf("sources %q, want the nodes with online CPUs %q", s.Sources(), srcs)
	}
	if a := testing.AllocsPerRun(20, func() { s.Read(dst) }); a != 0 {
		t.Errorf("Read allocates %v times per call", a)
	}
}

func TestCPUEvents(t *testing.T) {
	root := "testdata/twonode"
	s := openSensor(t, "cpu", root, treeTopology(t, root))
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
		unit, share := "%", "ticks"
		if e.Name == "ticks" {
			unit, share = "ticks", ""
		}
		if e.Unit != unit || e.ShareOf != share || e.Kind != Counter || e.Desc == "" || !reflect.DeepEqual(e.Max, []float64{100, 100}) {
			t.Errorf("bad event %+v", e)
		}
	}
	want := "user nice system idle iowait irq softirq steal guest guest_nice ticks"
	if strings.Join(names, " ") != want {
		t.Errorf("events %q, want %q", names, want)
	}
	if !reflect.DeepEqual(s.Sources(), []string{"0", "1"}) {
		t.Errorf("sources %q", s.Sources())
	}
}

func TestCPURead(t *testing.T) {
	for _, root := range []string{"testdata/live1", "testdata/twonode"} {
		t.Run(filepath.Base(root), func(t *testing.T) {
			topo := treeTopology(t, root)
			checkCPURead(t, root, topo, openSensor(t, "cpu", root, topo))
		})
	}
}

func TestCPUSubset(t *testing.T) {
	root := "testdata/twonode"
	s := openSensor(t, "cpu", root, treeTopology(t, root))
	ref := refStat(t, filepath.Join(root, "proc/stat"))
	if err := s.Enable([]int{3, 0}); err != nil { // idle, user
		t.Fatal(err)
	}
	dst := make([]int64, 4)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	want := []int64{int64(ref[0][3]), int64(ref[1][3]), int64(ref[0][0]), int64(ref[1][0])}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("idle,user = %v, want %v", dst, want)
	}
	if got := files(s); !reflect.DeepEqual(got, []string{filepath.Join(root, "proc/stat")}) {
		t.Errorf("Files() = %q", got)
	}
	s.Enable(nil)
	if len(files(s)) != 0 || s.Read(nil) != nil {
		t.Errorf("nothing enabled: Files() = %q", files(s))
	}
}

// writeStat writes a /proc/stat with the given cpuN lines (and the lines
// that follow them in a real one).
func writeStat(t *testing.T, path string, cpus map[int][nCPUFields]uint64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("cpu  1 2 3 4 5 6 7 8 0 0\n")
	for id := 0; id < 64; id++ {
		if v, ok := cpus[id]; ok {
			fmt.Fprintf(&b, "cpu%d", id)
			for _, x := range v {
				fmt.Fprintf(&b, " %d", x)
			}
			b.WriteByte('\n')
		}
	}
	b.WriteString("intr 1 2 3\nctxt 5\nbtime 1\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCPUHotplug: node 0 has CPUs 0-1, node 1 CPUs 2-3, CPU 3 offline at
// Open. Sums never go backwards, offline CPUs freeze, a CPU coming online
// adds only its new time, values going backwards are held.
func TestCPUHotplug(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	path := filepath.Join(root, "proc/stat")
	topo := &topology.Topology{NUMA: true, Nodes: []topology.Node{{ID: 0, CPUs: []int{0, 1}}, {ID: 1, CPUs: []int{2, 3}}}}
	for _, n := range topo.Nodes {
		for _, c := range n.CPUs {
			topo.CPUs = append(topo.CPUs, topology.CPU{ID: c, Node: n.ID})
		}
	}
	row := func(user, idle uint64) [nCPUFields]uint64 { return [nCPUFields]uint64{user, 0, 0, idle} }
	writeStat(t, path, map[int][nCPUFields]uint64{0: row(100, 1000), 1: row(200, 2000), 2: row(300, 3000)})
	s := openSensor(t, "cpu", root, topo)
	for _, e := range s.Events() {
		if !reflect.DeepEqual(e.Max, []float64{200, 100}) {
			t.Fatalf("%s: Max %v, want [200 100] (CPU 3 offline at Open)", e.Name, e.Max)
		}
	}
	if err := s.Enable([]int{0, 3}); err != nil { // user, idle
		t.Fatal(err)
	}
	dst := make([]int64, 4)
	step := func(what string, cpus map[int][nCPUFields]uint64, want []int64) {
		t.Helper()
		writeStat(t, path, cpus)
		if err := s.Read(dst); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !reflect.DeepEqual(dst, want) {
			t.Errorf("%s: user/0 user/1 idle/0 idle/1 = %v, want %v", what, dst, want)
		}
	}
	step("first read", map[int][nCPUFields]uint64{0: row(100, 1000), 1: row(200, 2000), 2: row(300, 3000)},
		[]int64{300, 300, 3000, 3000})
	step("cpu1 offline", map[int][nCPUFields]uint64{0: row(110, 1010), 2: row(305, 3005)},
		[]int64{310, 305, 3010, 3005})
	step("cpu1 back, cpu3 new", map[int][nCPUFields]uint64{0: row(120, 1020), 1: row(250, 2050), 2: row(310, 3010), 3: row(5000, 50000)},
		[]int64{370, 310, 3070, 3010})
	step("cpu3 advances", map[int][nCPUFields]uint64{0: row(120, 1020), 1: row(250, 2050), 2: row(310, 3010), 3: row(5007, 50003)},
		[]int64{370, 317, 3070, 3013})
	step("cpu0 idle goes backwards", map[int][nCPUFields]uint64{0: row(120, 1015), 1: row(250, 2050), 2: row(310, 3010), 3: row(5007, 50003)},
		[]int64{370, 317, 3070, 3013})
	step("cpu0 idle passes its high", map[int][nCPUFields]uint64{0: row(120, 1025), 1: row(250, 2050), 2: row(310, 3010), 3: row(5007, 50003)},
		[]int64{370, 317, 3075, 3013})
	step("all of node 1 offline", map[int][nCPUFields]uint64{0: row(121, 1026), 1: row(251, 2051)},
		[]int64{372, 317, 3077, 3013})
}

func TestCPUGarbage(t *testing.T) {
	root := "testdata/garbage"
	s := openSensor(t, "cpu", root, treeTopology(t, root))
	dst := enableAll(t, s)
	err := s.Read(dst)
	if err == nil {
		t.Fatal("garbage read without error")
	}
	for _, want := range []string{filepath.Join(root, "proc/stat"), "line 3", "nice", "cpu1", "zz"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := s.Enable([]int{0}); err != nil { // user: the field before the garbage
		t.Fatal(err)
	}
	if err := s.Read(dst[:1]); err != nil {
		t.Errorf("user alone: %v", err)
	}
}

func TestCPUAbsent(t *testing.T) {
	s, _ := New("cpu", Options{})
	topo := treeTopology(t, "testdata/missing")
	if err := s.Open(Env{FS: fsAt("testdata/missing"), Topology: topo}); err == nil || !strings.Contains(err.Error(), "testdata/missing/proc/stat not found") {
		t.Errorf("Open without proc/stat: %v", err)
	}
	if err := s.Open(Env{FS: fsAt("testdata/live1")}); err == nil || !strings.Contains(err.Error(), "topology") {
		t.Errorf("Open without topology: %v", err)
	}
	// CPUs the topology does not know.
	other := &topology.Topology{NUMA: true, Nodes: []topology.Node{{ID: 0, CPUs: []int{7}}}}
	if err := s.Open(Env{FS: fsAt("testdata/live1"), Topology: other}); err == nil || !strings.Contains(err.Error(), "none of the 2 CPUs") {
		t.Errorf("Open with a foreign topology: %v", err)
	}
}

// TestCPUGrowth: the cpu lines grow past the prefix buffer sized at Open.
func TestCPUGrowth(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	path := filepath.Join(root, "proc/stat")
	topo := &topology.Topology{NUMA: true, Nodes: []topology.Node{{ID: 0}}}
	cpus := map[int][nCPUFields]uint64{}
	for id := range 64 {
		topo.Nodes[0].CPUs = append(topo.Nodes[0].CPUs, id)
		cpus[id] = [nCPUFields]uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	}
	writeStat(t, path, cpus)
	s := openSensor(t, "cpu", root, topo)
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil || dst[0] != 64 {
		t.Fatalf("user = %d, %v; want 64", dst[0], err)
	}
	var want [nCPUFields]int64
	for id := range 64 {
		for f := range nCPUFields {
			v := uint64(1e15) + uint64(id*10+f)
			c := cpus[id]
			c[f] = v
			cpus[id] = c
			want[f] += int64(v - 1)
		}
	}
	writeStat(t, path, cpus)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	for f := range nCPUFields {
		if dst[f] != want[f]+64 {
			t.Errorf("%s = %d, want %d", cpuFields[f].name, dst[f], want[f]+64)
		}
	}

	// A long intr line, as on machines with thousands of IRQs: only a
	// prefix holding the cpu lines is read.
	rewrite(t, path, func(s string) string {
		return strings.Replace(s, "intr 1 2 3", "intr "+strings.Repeat("0 ", 100000), 1)
	})
	clear(dst)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	if dst[3] != want[3]+64 {
		t.Errorf("with a long intr line: idle = %d, want %d", dst[3], want[3]+64)
	}
	size := fileSize(t, path)
	if n := len(s.(*cpuSensor).file.buf); n >= int(size) {
		t.Errorf("read buffer of %d bytes for a %d-byte file: the prefix should do", n, size)
	}
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCPUHwloc(t *testing.T) {
	tested := 0
	for _, root := range hwlocTrees(t) {
		if _, err := os.Stat(filepath.Join(root, "proc/stat")); err != nil {
			continue
		}
		topo := treeTopology(t, root)
		tested++
		t.Run(filepath.Base(root), func(t *testing.T) {
			checkCPURead(t, root, topo, openSensor(t, "cpu", root, topo))
		})
	}
	if tested < 25 {
		t.Errorf("only %d captures with proc/stat", tested)
	}
}

func TestCPULive(t *testing.T) {
	topo := treeTopology(t, "")
	s := openSensor(t, "cpu", "", topo)
	before := refStat(t, "/proc/stat")
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	after := refStat(t, "/proc/stat")
	ns := len(s.Sources())
	for si, src := range s.Sources() {
		id, _ := strconv.Atoi(src)
		var lo, hi uint64
		for _, c := range topo.Node(id).CPUs {
			lo += before[c][3]
			hi += after[c][3]
		}
		// idle may go backwards a little on nohz kernels; allow a tick per CPU.
		if got := uint64(dst[3*ns+si]); got+uint64(len(before)) < lo || got > hi {
			t.Errorf("node %s idle = %d, not within [%d, %d]", src, got, lo, hi)
		}
	}
	if a := testing.AllocsPerRun(100, func() { s.Read(dst) }); a != 0 {
		t.Errorf("Read allocates %v times per call", a)
	}
}

// FuzzParseStatCPULine checks the /proc/stat line parser against
// strings.Fields and strconv.
func FuzzParseStatCPULine(f *testing.F) {
	for _, s := range []string{"cpu0 849 0 564 19432 9 0 5 2 0 0", "cpu  2264 0 1511", "cpu12 1 2",
		"cpu1 1 zz 3", "cpu999999999999 1", "cpux 1", "intr 1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var vals [nCPUFields]uint64
		id, ok, bad := parseStatCPULine([]byte(line), vals[:])
		fl := strings.Fields(line)
		if len(fl) == 0 || !strings.HasPrefix(fl[0], "cpu") || !strings.HasPrefix(line, fl[0]+" ") && line != fl[0] {
			return // not the shape of a stat line: only "no panic" is checked
		}
		refID, err := strconv.Atoi(fl[0][3:])
		if err != nil || !isDigits(fl[0][3:]) || refID > 1<<24 {
			if ok {
				t.Fatalf("%q: accepted id %d", line, id)
			}
			return
		}
		if strings.ContainsAny(line, "\n\t\r\x00\v\f\u0085\u00a0") {
			return
		}
		if !ok || id != refID {
			t.Fatalf("%q: id %d, %v; want %d", line, id, ok, refID)
		}
		refBad := -1
		for i := range nCPUFields {
			var want uint64
			if i+1 < len(fl) {
				v, good := parseUint([]byte(fl[i+1]))
				if !good {
					refBad = i
					break
				}
				want = uint64(v)
			}
			if bad < 0 && vals[i] != want {
				t.Fatalf("%q: field %d = %d, want %d", line, i, vals[i], want)
			}
		}
		if bad != refBad {
			t.Fatalf("%q: bad field %d, want %d", line, bad, refBad)
		}
	})
}

func BenchmarkReadCPU(b *testing.B) {
	s := openSensor(b, "cpu", "", treeTopology(b, ""))
	dst := enableAll(b, s)
	benchRead(b, s, dst)
}

// BenchmarkBaselineCPU is the bare pread of the file BenchmarkReadCPU reads.
func BenchmarkBaselineCPU(b *testing.B) {
	s := openSensor(b, "cpu", "", treeTopology(b, ""))
	enableAll(b, s)
	benchBaseline(b, s)
}
