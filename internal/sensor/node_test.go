package sensor

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/topology"

	"github.com/numascope/numascope/internal/testutil"
)

const nodeDir = "sys/devices/system/node"

// nodeRef is the reference value of a node event, parsed from the node's
// files independently of the sensor; ok is false when the node lacks it.
func nodeRef(t testing.TB, root string, node string, e Event, evKind nodeKind) (int64, bool) {
	dir := filepath.Join(root, nodeDir, "node"+node)
	var m map[string]int64
	switch evKind {
	case numastatKind:
		m = refKVIfAny(t, filepath.Join(dir, "numastat"))
	case nodeVmstatKind:
		m = refKVIfAny(t, filepath.Join(dir, "vmstat"))
	default:
		if fileExists(filepath.Join(dir, "meminfo")) {
			m = refMeminfo(t, filepath.Join(dir, "meminfo"))
		}
	}
	v, ok := m[e.Name]
	return v, ok
}

func refKVIfAny(t testing.TB, path string) map[string]int64 {
	if !fileExists(path) {
		return nil
	}
	return refKV(t, path)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func mustGlob(p string) []string { m, _ := filepath.Glob(p); return m }

// checkNodeRead enables all events, reads, and compares every value with the
// reference parse of the node's files.
func checkNodeRead(t *testing.T, root string, s Sensor) {
	t.Helper()
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatalf("%s: Read: %v", root, err)
	}
	ns := len(s.Sources())
	ns2 := s.(*nodeSensor)
	for k, e := range s.Events() {
		for si, src := range s.Sources() {
			want, _ := nodeRef(t, root, src, e, ns2.evs[k].kind)
			if got := dst[k*ns+si]; got != want {
				t.Errorf("%s: node %s %s = %d, file says %d", root, src, e.Name, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(20, func() { s.Read(dst) }); a != 0 {
		t.Errorf("%s: Read allocates %v times per call", root, a)
	}
}

func TestNodeEvents(t *testing.T) {
	root := "testdata/twonode"
	s := openSensor(t, "node", root, treeTopology(t, root))
	if got := s.Sources(); !reflect.DeepEqual(got, []string{"0", "1"}) {
		t.Fatalf("sources %q", got)
	}
	numastat := refKV(t, filepath.Join(root, nodeDir, "node0/numastat"))
	vmstat := refKV(t, filepath.Join(root, nodeDir, "node0/vmstat"))
	meminfo := refMeminfo(t, filepath.Join(root, nodeDir, "node0/meminfo"))
	dups := 0
	for n := range numastatDup {
		if _, ok := vmstat[n]; ok {
			dups++
		}
	}
	if dups != 6 {
		t.Fatalf("the captured node vmstat repeats %d numastat counters, want 6 (kernel 6.x)", dups)
	}
	evs := s.Events()
	if want := len(numastat) + len(vmstat) - dups + len(meminfo); len(evs) != want {
		t.Errorf("%d events, want %d numastat + %d vmstat - %d duplicates + %d meminfo",
			len(evs), len(numastat), len(vmstat), dups, len(meminfo))
	}
	seen := map[string]bool{}
	for i, e := range evs {
		if seen[e.Name] || strings.Contains(e.Name, ".") || e.Desc == "" || e.Unit == "" {
			t.Errorf("bad event %+v", e)
		}
		seen[e.Name] = true
		if i < 6 && (e.Kind != Counter || e.Unit != "pages") {
			t.Errorf("numastat event %s: %s %s, want counter pages", e.Name, e.Kind, e.Unit)
		}
	}
	for _, n := range []string{"numa_interleave", "numa_local", "numa_other"} {
		if seen[n] {
			t.Errorf("%s duplicates numastat and should be left out", n)
		}
	}
	for _, c := range []struct {
		name, unit string
		kind       ValueKind
	}{
		{"numa_hit", "pages", Counter},
		{"interleave_hit", "pages", Counter},
		{"local_node", "pages", Counter},
		{"other_node", "pages", Counter},
		{"nr_free_pages", "pages", Gauge},
		{"nr_dirtied", "pages", Counter},
		{"MemFree", "bytes", Gauge},
		{"Active(anon)", "bytes", Gauge},
		{"HugePages_Total", "hugepages", Gauge},
	} {
		e := evs[eventIndex(t, s, c.name)]
		if e.Unit != c.unit || e.Kind != c.kind {
			t.Errorf("%s: %s %s, want %s %s", c.name, e.Kind, e.Unit, c.kind, c.unit)
		}
	}
}

func TestNodeReadTwoNode(t *testing.T) {
	root := "testdata/twonode"
	s := openSensor(t, "node", root, treeTopology(t, root))
	checkNodeRead(t, root, s)
	// The derived node1 is a later capture: the sources must not be mixed up.
	dst := make([]int64, 2)
	s.Enable([]int{eventIndex(t, s, "numa_hit")})
	s.Read(dst)
	if dst[0] == dst[1] {
		t.Errorf("numa_hit equal on both nodes (%d): sources mixed up?", dst[0])
	}
	if want := []string{filepath.Join(root, nodeDir, "node0/numastat"), filepath.Join(root, nodeDir, "node1/numastat")}; !reflect.DeepEqual(files(s), want) {
		t.Errorf("numa_hit alone reads %q, want %q", files(s), want)
	}
}

// TestNodeFiles checks that an Enable set reads only the files it needs.
func TestNodeFiles(t *testing.T) {
	root := "testdata/twonode"
	s := openSensor(t, "node", root, treeTopology(t, root))
	for _, c := range []struct {
		events []string
		kinds  []string
	}{
		{[]string{"other_node", "numa_miss"}, []string{"numastat"}},
		{[]string{"MemFree"}, []string{"meminfo"}},
		{[]string{"nr_dirtied"}, []string{"vmstat"}},
		{[]string{"MemUsed", "numa_foreign"}, []string{"numastat", "meminfo"}},
		{nil, nil},
	} {
		var idx []int
		for _, n := range c.events {
			idx = append(idx, eventIndex(t, s, n))
		}
		if err := s.Enable(idx); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, nd := range []string{"0", "1"} {
			for _, k := range c.kinds {
				want = append(want, filepath.Join(root, nodeDir, "node"+nd, k))
			}
		}
		if got := files(s); !reflect.DeepEqual(got, want) {
			t.Errorf("events %q read %q, want %q", c.events, got, want)
		}
		dst := make([]int64, 2*len(idx))
		if err := s.Read(dst); err != nil {
			t.Fatal(err)
		}
		for k, n := range c.events {
			for si, nd := range []string{"0", "1"} {
				want, _ := nodeRef(t, root, nd, s.Events()[idx[k]], s.(*nodeSensor).evs[idx[k]].kind)
				if dst[k*2+si] != want {
					t.Errorf("node %s %s = %d, want %d", nd, n, dst[k*2+si], want)
				}
			}
		}
	}
}

// TestNodeMissing: node0 has only meminfo, node1 only numastat. Events are the
// union; what a node lacks reads 0 and its file is not read.
func TestNodeMissing(t *testing.T) {
	root := "testdata/missing"
	s := openSensor(t, "node", root, treeTopology(t, root))
	meminfo := refMeminfo(t, filepath.Join(root, nodeDir, "node0/meminfo"))
	if got, want := len(s.Events()), 6+len(meminfo); got != want {
		t.Errorf("%d events, want %d", got, want)
	}
	checkNodeRead(t, root, s)
	want := []string{filepath.Join(root, nodeDir, "node0/meminfo"), filepath.Join(root, nodeDir, "node1/numastat")}
	if got := files(s); !reflect.DeepEqual(got, want) {
		t.Errorf("Files() = %q, want %q", got, want)
	}
	s.Enable([]int{eventIndex(t, s, "numa_hit")})
	if got := files(s); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("numa_hit alone: Files() = %q, want %q", got, want[1:])
	}
}

func TestNodeAbsent(t *testing.T) {
	s, _ := New("node", Options{})
	if err := s.Open(Env{FS: fsAt("testdata/live1")}); err == nil || !strings.Contains(err.Error(), "topology") {
		t.Errorf("Open without a topology: %v", err)
	}
	numa := &topology.Topology{NUMA: true, Nodes: []topology.Node{{ID: 0}}}
	err := s.Open(Env{FS: fsAt(t.TempDir()), Topology: numa})
	if err == nil || !strings.Contains(err.Error(), "sys/devices/system/node not found: kernel built without NUMA, or /sys not mounted") {
		t.Errorf("Open without a node directory: %v", err)
	}
	// Node directories without any of the three files.
	root := t.TempDir()
	copyInto(t, root, nodeDir+"/node0/cpulist", "0")
	err = s.Open(Env{FS: fsAt(root), Topology: treeTopology(t, root)})
	if err == nil || !strings.Contains(err.Error(), "no node under") {
		t.Errorf("Open with empty node directories: %v", err)
	}
	// Not NUMA and no /proc/meminfo either.
	nonuma := &topology.Topology{Nodes: []topology.Node{{ID: 0}}}
	err = s.Open(Env{FS: fsAt("testdata/missing"), Topology: nonuma})
	if err == nil || !strings.Contains(err.Error(), "no NUMA nodes") || !strings.Contains(err.Error(), "proc/meminfo") {
		t.Errorf("Open without NUMA nor meminfo: %v", err)
	}
}

func copyInto(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNodeFallback: without NUMA the sensor serves one node 0 from /proc/meminfo.
func TestNodeFallback(t *testing.T) {
	root := "testdata/live1"
	topo := &topology.Topology{NUMA: false, Nodes: []topology.Node{{ID: 0, CPUs: []int{0, 1}}}}
	s := openSensor(t, "node", root, topo)
	if !reflect.DeepEqual(s.Sources(), []string{"0"}) {
		t.Errorf("sources %q", s.Sources())
	}
	ref := refMeminfo(t, filepath.Join(root, "proc/meminfo"))
	if len(s.Events()) != len(ref) {
		t.Errorf("%d events for %d lines", len(s.Events()), len(ref))
	}
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	for i, e := range s.Events() {
		if dst[i] != ref[e.Name] || e.Kind != Gauge {
			t.Errorf("%s = %d (%s), file says %d", e.Name, dst[i], e.Kind, ref[e.Name])
		}
	}
	if got := files(s); !reflect.DeepEqual(got, []string{filepath.Join(root, "proc/meminfo")}) {
		t.Errorf("Files() = %q", got)
	}
	if dst[eventIndex(t, s, "MemAvailable")] == 0 {
		t.Error("MemAvailable reads 0")
	}
}

func TestNodeGarbage(t *testing.T) {
	root := "testdata/garbage"
	s := openSensor(t, "node", root, treeTopology(t, root))
	for _, c := range []struct{ event, file, line string }{
		{"other_node", "numastat", "line 6"},
		{"nr_dirty", "vmstat", "line 38"},
		{"MemFree", "meminfo", "line 2"},
	} {
		if err := s.Enable([]int{eventIndex(t, s, c.event)}); err != nil {
			t.Fatal(err)
		}
		err := s.Read(make([]int64, 1))
		if err == nil {
			t.Errorf("%s: garbage read without error", c.event)
			continue
		}
		for _, want := range []string{filepath.Join(root, nodeDir, "node0", c.file), c.line, c.event} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", c.event, err, want)
			}
		}
	}
	s.Enable([]int{eventIndex(t, s, "numa_hit"), eventIndex(t, s, "MemTotal")})
	if err := s.Read(make([]int64, 2)); err != nil {
		t.Errorf("good lines of garbage files: %v", err)
	}
}

func TestNodeLayoutChange(t *testing.T) {
	root := testutil.CopyTree(t, "testdata/twonode")
	s := openSensor(t, "node", root, treeTopology(t, root))
	dst := enableAll(t, s)
	s.Read(dst)
	rewrite(t, filepath.Join(root, nodeDir, "node1/meminfo"), func(s string) string {
		return "Node 1 Brand_New:  5 kB\n" + s
	})
	rewrite(t, filepath.Join(root, nodeDir, "node0/vmstat"), func(s string) string {
		return strings.Replace(s, "nr_dirtied", "nr_fresh 1\nnr_dirtied", 1)
	})
	checkNodeRead(t, root, s)
}

// TestNodeHwloc runs the sensor on the captures of real machines: sparse node
// IDs, nodes without CPUs, old kernels without node vmstat or with extra
// meminfo lines.
func TestNodeHwloc(t *testing.T) {
	tested := 0
	for _, root := range hwlocTrees(t) {
		if len(mustGlob(filepath.Join(root, nodeDir, "node*/meminfo"))) == 0 {
			continue
		}
		tested++
		t.Run(filepath.Base(root), func(t *testing.T) {
			topo := treeTopology(t, root)
			s := openSensor(t, "node", root, topo)
			var ids []string
			for _, n := range topo.Nodes {
				ids = append(ids, strconv.Itoa(n.ID))
			}
			if !reflect.DeepEqual(s.Sources(), ids) {
				t.Errorf("sources %q, want %q", s.Sources(), ids)
			}
			checkNodeRead(t, root, s)
			// Every file read has an enabled line, every node file with
			// lines is read.
			var want []string
			for _, id := range ids {
				for _, k := range nodeKindFile {
					p := filepath.Join(root, nodeDir, "node"+id, k)
					if fileExists(p) && len(s.(*nodeSensor).files[slices.Index(ids, id)][kindOf(k)].lines) > 0 {
						want = append(want, p)
					}
				}
			}
			if got := files(s); !reflect.DeepEqual(got, want) {
				t.Errorf("Files() = %q, want %q", got, want)
			}
		})
	}
	if tested < 30 {
		t.Errorf("only %d captures with node meminfo", tested)
	}
}

func kindOf(file string) nodeKind {
	for k, f := range nodeKindFile {
		if f == file {
			return nodeKind(k)
		}
	}
	return nodeKinds
}

// TestNodeLive reads the running kernel's first node: its MemTotal is its
// meminfo file's. A kernel without NUMA has no node directory; the sensor's
// one node is then /proc/meminfo (TestNodeFallback), which is checked instead.
func TestNodeLive(t *testing.T) {
	topo := treeTopology(t, "")
	s := openSensor(t, "node", "", topo)
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	ns := len(s.Sources())
	file := "/sys/devices/system/node/node" + s.Sources()[0] + "/meminfo"
	if !topo.NUMA {
		file = "/proc/meminfo"
	}
	total := dst[eventIndex(t, s, "MemTotal")*ns]
	ref := refMeminfo(t, file)["MemTotal"]
	if total != ref || total == 0 {
		t.Errorf("MemTotal of node %s = %d, %s says %d", s.Sources()[0], total, file, ref)
	}
	if a := testing.AllocsPerRun(100, func() { s.Read(dst) }); a != 0 {
		t.Errorf("Read allocates %v times per call", a)
	}
}

func BenchmarkReadNode(b *testing.B) {
	s := openSensor(b, "node", "", treeTopology(b, ""))
	dst := enableAll(b, s)
	benchRead(b, s, dst)
}

// BenchmarkBaselineNode is the bare pread of the files BenchmarkReadNode reads.
func BenchmarkBaselineNode(b *testing.B) {
	s := openSensor(b, "node", "", treeTopology(b, ""))
	enableAll(b, s)
	benchBaseline(b, s)
}

// TestNodeBadFileFailsOnlyItsNode puts garbage into node 1's meminfo, first a
// value that is not a number, then a file with none of the expected lines:
// Read reports node 1 alone in a *SourceError, node 0's values are fresh, and
// once the file is good again Read succeeds with its new values.
func TestNodeBadFileFailsOnlyItsNode(t *testing.T) {
	root := testutil.CopyTree(t, "testdata/twonode")
	s := openSensor(t, "node", root, treeTopology(t, root))
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	meminfo := filepath.Join(root, nodeDir, "node1/meminfo")
	good, err := os.ReadFile(meminfo)
	if err != nil {
		t.Fatal(err)
	}
	bumpNode0 := func(v int) {
		rewrite(t, filepath.Join(root, nodeDir, "node0/numastat"), func(string) string {
			return "numa_hit " + strconv.Itoa(v) + "\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 0\nlocal_node 0\nother_node 0\n"
		})
	}
	hit := eventIndex(t, s, "numa_hit")
	for i, garbage := range []string{
		strings.Replace(string(good), "MemFree:         3543052", "MemFree:         35x3052", 1),
		"\x00\x01 this is not a meminfo file\n",
	} {
		rewrite(t, meminfo, func(string) string { return garbage })
		bumpNode0(1000 + i)
		err := s.Read(dst)
		se, ok := err.(*SourceError)
		if !ok {
			t.Fatalf("garbage %d: Read returned %T %v, want a *SourceError", i, err, err)
		}
		if !reflect.DeepEqual(se.Sources, []int{1}) || !strings.Contains(se.Error(), meminfo) {
			t.Errorf("garbage %d: failed sources %v, error %q; want node 1's meminfo", i, se.Sources, se)
		}
		if got := dst[hit*2+0]; got != int64(1000+i) {
			t.Errorf("garbage %d: node 0 numa_hit = %d, want the fresh 1000+%d", i, got, i)
		}
	}
	if err := os.WriteFile(meminfo, good, 0o644); err != nil {
		t.Fatal(err)
	}
	bumpNode0(2000)
	if err := s.Read(dst); err != nil {
		t.Fatalf("after the file was restored: %v", err)
	}
	checkNodeRead(t, root, s)
}
