package sensor

// Test helpers shared by the sensor tests: topologies built by hand from a
// tree's node directories (independent of package topology's discovery),
// simple reference parsers that read the fixture files the slow, obvious way,
// and the hwloc captures of real machines from ../shared.

import (
	"archive/tar"
	"compress/bzip2"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// treeTopology builds the topology of the tree at root ("" for the live
// system) from sys/devices/system/node/node*/cpulist (or cpumap). Without a
// node directory it is the non-NUMA topology: one node 0 with the CPUs of
// proc/stat.
func treeTopology(t testing.TB, root string) *topology.Topology {
	t.Helper()
	fs := sysfs.New(root)
	topo := &topology.Topology{}
	dirs, _ := filepath.Glob(fs.Sys("devices/system/node/node[0-9]*"))
	for _, d := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "node"))
		if err != nil {
			continue
		}
		var cpus []int
		if s, err := sysfs.ReadString(filepath.Join(d, "cpulist")); err == nil {
			cpus, err = sysfs.ParseCPUList(s)
			if err != nil {
				t.Fatalf("%s/cpulist: %v", d, err)
			}
		} else if s, err := sysfs.ReadString(filepath.Join(d, "cpumap")); err == nil {
			cpus, err = sysfs.ParseCPUMask(s)
			if err != nil {
				t.Fatalf("%s/cpumap: %v", d, err)
			}
		}
		topo.Nodes = append(topo.Nodes, topology.Node{ID: id, CPUs: cpus})
	}
	sort.Slice(topo.Nodes, func(i, j int) bool { return topo.Nodes[i].ID < topo.Nodes[j].ID })
	topo.NUMA = len(topo.Nodes) > 0
	if !topo.NUMA {
		var cpus []int
		for id := range refStat(t, fs.Proc("stat")) {
			cpus = append(cpus, id)
		}
		sort.Ints(cpus)
		topo.Nodes = []topology.Node{{ID: 0, CPUs: cpus}}
	}
	// One record per CPU; when buggy firmware puts a CPU on several nodes,
	// the first claims it.
	seen := map[int]bool{}
	for _, n := range topo.Nodes {
		for _, c := range n.CPUs {
			if !seen[c] {
				seen[c] = true
				topo.CPUs = append(topo.CPUs, topology.CPU{ID: c, Node: n.ID, Online: true})
			}
		}
	}
	return topo
}

// refKV parses a "name value" file with strings.Fields and strconv; the first
// occurrence of a name wins.
func refKV(t testing.TB, path string) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("%s: reference parser: %q: %v", path, line, err)
		}
		if _, dup := m[f[0]]; !dup {
			m[f[0]] = int64(v)
		}
	}
	return m
}

// refMeminfo parses a meminfo file ("Node 0 MemFree:  12 kB" or
// "MemFree:  12 kB") into bytes (or plain counts).
func refMeminfo(t testing.TB, path string) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Node" {
			f = f[2:]
		}
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		name := strings.TrimSuffix(f[0], ":")
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("%s: reference parser: %q: %v", path, line, err)
		}
		if len(f) == 3 && f[2] == "kB" {
			v *= 1024
		}
		if _, dup := m[name]; !dup {
			m[name] = v
		}
	}
	return m
}

// refStat parses the cpuN lines of a /proc/stat.
func refStat(t testing.TB, path string) map[int][nCPUFields]uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int][nCPUFields]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil {
			t.Fatalf("%s: %q", path, line)
		}
		var v [nCPUFields]uint64
		for i := 1; i < len(f) && i <= nCPUFields; i++ {
			if v[i-1], err = strconv.ParseUint(f[i], 10, 64); err != nil {
				t.Fatalf("%s: reference parser: %q: %v", path, line, err)
			}
		}
		m[id] = v
	}
	return m
}

// openSensor opens the named sensor on the tree at root.
func openSensor(t testing.TB, name, root string, topo *topology.Topology) Sensor {
	t.Helper()
	s, ok := New(name, Options{})
	if !ok {
		t.Fatalf("sensor %q not registered", name)
	}
	if err := s.Open(Env{FS: sysfs.New(root), Topology: topo}); err != nil {
		t.Fatalf("%s on %q: Open: %v", name, root, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// enableAll enables every event and returns a destination for Read.
func enableAll(t testing.TB, s Sensor) []int64 {
	t.Helper()
	idx := make([]int, len(s.Events()))
	for i := range idx {
		idx[i] = i
	}
	if err := s.Enable(idx); err != nil {
		t.Fatal(err)
	}
	return make([]int64, len(idx)*len(s.Sources()))
}

func eventIndex(t testing.TB, s Sensor, name string) int {
	t.Helper()
	for i, e := range s.Events() {
		if e.Name == name {
			return i
		}
	}
	t.Fatalf("%s: no event %q", s.Name(), name)
	return -1
}

func files(s Sensor) []string { return s.(FileReader).Files() }

// rewrite replaces a file's content in place (same inode), as the kernel's
// files change under an open descriptor.
func rewrite(t testing.TB, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---- hwloc captures of real machines ----

var (
	hwlocOnce  sync.Once
	hwlocDir   string // extracted trees
	hwlocRoots []string
	hwlocErr   string
)

// hwlocWanted selects the files of a capture the sensors read.
var hwlocWanted = regexp.MustCompile(`^[^/]+/(proc/(stat|vmstat|meminfo)|sys/devices/system/node/(online|node[0-9]+/(numastat|vmstat|meminfo|cpulist|cpumap)))$`)

// hwlocTrees extracts ../shared/fixtures/hwloc-linux/*.tar.bz2 (relative to
// the repository root) once per test binary and returns the roots of the
// captured trees. Without the captures it skips the test, or fails it when
// NUMASCOPE_HWLOC_REQUIRED is set; captures that do not extract, or that
// hold no tree, fail it: the cross-checks must not pass having read nothing.
func hwlocTrees(t *testing.T) []string {
	t.Helper()
	_, tarballs := testutil.HwlocFixtures(t)
	hwlocOnce.Do(func() {
		var err error
		hwlocDir, err = os.MkdirTemp("", "numascope-sensor-hwloc-")
		if err != nil {
			hwlocErr = err.Error()
			return
		}
		for _, tb := range tarballs {
			root, err := extractHwloc(tb, hwlocDir)
			if err != nil {
				hwlocErr = fmt.Sprintf("extracting %s: %v", tb, err)
				return
			}
			if root != "" {
				hwlocRoots = append(hwlocRoots, root)
			}
		}
		if len(hwlocRoots) == 0 {
			hwlocErr = fmt.Sprintf("none of the %d hwloc captures holds a tree the sensors read", len(tarballs))
		}
	})
	if hwlocErr != "" {
		t.Fatal("hwloc captures: " + hwlocErr)
	}
	return hwlocRoots
}

func extractHwloc(tarball, dst string) (root string, err error) {
	// The bzip2 program decompresses several times faster than
	// compress/bzip2 (much more so under -race); fall back on the latter.
	var in io.Reader
	if prog, err := exec.LookPath("bzip2"); err == nil {
		cmd := exec.Command(prog, "-dc", tarball)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return "", err
		}
		if err := cmd.Start(); err != nil {
			return "", err
		}
		defer func() {
			io.Copy(io.Discard, out)
			if werr := cmd.Wait(); werr != nil && err == nil {
				err = fmt.Errorf("bzip2 -dc %s: %v", tarball, werr)
			}
		}()
		in = out
	} else {
		f, err := os.Open(tarball)
		if err != nil {
			return "", err
		}
		defer f.Close()
		in = bzip2.NewReader(f)
	}
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return root, nil
		}
		if err != nil {
			return "", err
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag != tar.TypeReg || !hwlocWanted.MatchString(name) {
			continue
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
		root = filepath.Join(dst, strings.SplitN(name, "/", 2)[0])
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hwlocDir != "" {
		os.RemoveAll(hwlocDir)
	}
	os.Exit(code)
}

func fsAt(root string) sysfs.FS { return sysfs.New(root) }

// threadCPU returns the CPU time (user+system) of the calling OS thread.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs f b.N times on a locked thread and reports, besides the wall
// time, the thread's CPU time per call ("cpu-ns/op"), which other load on the
// machine does not inflate; that is the figure to compare with the baseline.
func measure(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start := threadCPU(b)
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(threadCPU(b)-start)/float64(b.N), "cpu-ns/op")
}

// benchRead measures Read with everything enabled.
func benchRead(b *testing.B, s Sensor, dst []int64) {
	measure(b, func() {
		if err := s.Read(dst); err != nil {
			b.Fatal(err)
		}
	})
}

// benchBaseline measures the bare kernel cost the sensor's Read stands on:
// one pread at offset 0 of each of its Files into a 64 KiB buffer.
func benchBaseline(b *testing.B, s Sensor) {
	var fds []int
	for _, p := range files(s) {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	buf := make([]byte, 64<<10)
	measure(b, func() {
		for _, fd := range fds {
			if _, err := unix.Pread(fd, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
