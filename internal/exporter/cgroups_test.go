package exporter

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// vm4 is procnuma's capture of a workload in a four-node VM: its cgroup's
// memory.numa_stat and its threads' sched files.
const vm4 = "../procnuma/testdata/vm4-compute"

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFixtureFile(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vm4, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cgroupTree makes a tree under a temporary root: /pod holding /pod/wl,
// whose files are the VM capture's memory.numa_stat, a memory.stat with
// the NUMA balancing lines, a cpuset and five threads (four of vm4's, and
// 158's sched again as thread 999, running on node 0: its 185 faults on
// node 1 are remote).
func cgroupTree(t testing.TB) (root string, fs sysfs.FS) {
	root = t.TempDir()
	cg := filepath.Join(root, "sys/fs/cgroup")
	writeFile(t, cg+"/cgroup.controllers", "cpuset cpu io memory pids\n")
	wl := cg + "/pod/wl"
	writeFile(t, wl+"/memory.numa_stat", readFixtureFile(t, "sys/fs/cgroup/wl/memory.numa_stat"))
	writeFile(t, wl+"/memory.stat", "anon 134434816\nfile 8192\nnuma_pages_migrated 42\nnuma_pte_updates 1000\nnuma_hint_faults 373\npgpromote_success 7\npgdemote_kswapd 3\npgdemote_direct 0\n")
	writeFile(t, wl+"/cpuset.cpus.effective", "0-3\n")
	writeFile(t, wl+"/cpuset.mems.effective", "1-2\n")
	writeFile(t, wl+"/cgroup.threads", "158\n159\n160\n999\n")
	writeFile(t, cg+"/pod/cgroup.threads", "")
	for _, tid := range []string{"158", "159", "160"} {
		writeFile(t, filepath.Join(root, "proc", tid, "sched"), readFixtureFile(t, "proc/139/task/"+tid+"/sched"))
	}
	s := strings.Replace(readFixtureFile(t, "proc/139/task/158/sched"), "current_node=1,", "current_node=0,", 1)
	writeFile(t, filepath.Join(root, "proc/999/sched"), s)
	return root, sysfs.New(root)
}

// cgExporter wraps a cgroup collector alone in an exporter.
func cgExporter(t testing.TB, cfg CgroupConfig, fs sysfs.FS) (*Exporter, *cgroupCollector) {
	t.Helper()
	if cfg.Depth == 0 {
		cfg.Depth = DefaultCgroupDepth
	}
	if cfg.MaxSeries == 0 {
		cfg.MaxSeries = DefaultCgroupMaxSeries
	}
	c, err := newCgroupCollector(cfg, fs, nil, func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	x := newExporter([]collector{c}, func(s string) { t.Log(s) })
	t.Cleanup(func() { x.Close() })
	return x, c
}

// scrapeText returns one read in the text format, and its families as
// prometheus/common's parser reads them back.
func scrapeText(t testing.TB, x *Exporter) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	r := x.acquire()
	body := bytes.Clone(r.encode(encText).body)
	x.release(r)
	tp := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the text format does not parse: %v\n%s", err, body)
	}
	return body, fams
}

// series maps each series of family name to its value, keyed by its
// labels written k=v,k=v in sorted order.
func seriesOf(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var ks []string
		for _, l := range m.GetLabel() {
			ks = append(ks, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ks)
		out[strings.Join(ks, ",")] = value(m)
	}
	return out
}

func TestCgroupsFixture(t *testing.T) {
	_, fs := cgroupTree(t)
	x, _ := cgExporter(t, CgroupConfig{Faults: true}, fs)
	_, fams := scrapeText(t, x)
	mem := seriesOf(fams, "numascope_cgroup_memory_bytes")
	for k, want := range map[string]float64{
		"cgroup=/pod/wl,numa_node=0,type=anon":               33755136,
		"cgroup=/pod/wl,numa_node=3,type=anon":               33558528,
		"cgroup=/pod/wl,numa_node=2,type=kernel_stack":       16384,
		"cgroup=/pod/wl,numa_node=3,type=slab_unreclaimable": 18136,
	} {
		if mem[k] != want {
			t.Errorf("memory_bytes{%s} = %v, want %v (memory.numa_stat)", k, mem[k], want)
		}
	}
	// 16 byte-valued lines of the 27 (no workingset_*, active_*, inactive_*), 4 nodes.
	if len(mem) != 16*4 {
		t.Errorf("%d memory series, want 64: %v", len(mem), mem)
	}
	for k := range mem {
		if strings.Contains(k, "workingset") || strings.Contains(k, "active") {
			t.Errorf("memory_bytes{%s}: not a byte count or a repeat of anon/file", k)
		}
	}
	for name, want := range map[string]float64{
		"numascope_cgroup_numa_pages_migrated_total": 42, "numascope_cgroup_numa_pte_updates_total": 1000,
		"numascope_cgroup_numa_hint_faults_total": 373, "numascope_cgroup_pgpromote_success_total": 7,
		"numascope_cgroup_pgdemote_kswapd_total": 3, "numascope_cgroup_pgdemote_direct_total": 0,
	} {
		got := seriesOf(fams, name)
		if len(got) != 1 || got["cgroup=/pod/wl"] != want {
			t.Errorf("%s = %v, want {cgroup=/pod/wl: %v}", name, got, want)
		}
	}
	if got := seriesOf(fams, "numascope_cgroup_pgdemote_khugepaged_total"); len(got) != 0 {
		t.Errorf("a counter memory.stat lacks is exported: %v", got)
	}
	// mems 1-2: nodes 0 and 3 are outside; anon 33755136+33558528, file 8192+0.
	if got := seriesOf(fams, "numascope_cgroup_memory_outside_cpuset_bytes"); len(got) != 1 || got["cgroup=/pod/wl"] != 33755136+33558528+8192 {
		t.Errorf("memory_outside_cpuset_bytes = %v, want {/pod/wl: %d}", got, 33755136+33558528+8192)
	}
	if got := seriesOf(fams, "numascope_cgroup_cpuset_info"); len(got) != 1 || got["cgroup=/pod/wl,cpus=0-3,mems=1-2"] != 1 {
		t.Errorf("cpuset_info = %v", got)
	}
	// 185 (node 1, on node 1) + 54 + 134 local; 999's 185 on node 1 while on node 0 remote;
	// /pod has no thread of its own and sums its child's.
	wantFaults := map[string]float64{}
	for _, cg := range []string{"/pod", "/pod/wl"} {
		wantFaults["cgroup="+cg+",locality=local,source=sched"] = 373
		wantFaults["cgroup="+cg+",locality=remote,source=sched"] = 185
	}
	if got := seriesOf(fams, "numascope_cgroup_numa_faults"); !mapsEqual(got, wantFaults) {
		t.Errorf("numa_faults = %v, want %v", got, wantFaults)
	}
	if got := seriesOf(fams, "numascope_cgroups"); got[""] != 2 {
		t.Errorf("numascope_cgroups = %v, want 2", got)
	}
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// cgroupsOf is the set of cgroup label values of a read.
func cgroupsOf(fams map[string]*dto.MetricFamily) []string {
	set := map[string]bool{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "numascope_cgroup_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cgroup" {
					set[l.GetValue()] = true
				}
			}
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCgroupsDepthIncludeExclude(t *testing.T) {
	_, fs := cgroupTree(t)
	for _, c := range []struct {
		cfg  CgroupConfig
		want []string
	}{
		{CgroupConfig{Faults: true, Depth: 1}, []string{"/pod"}},
		{CgroupConfig{Faults: true, Depth: 2}, []string{"/pod", "/pod/wl"}},
		{CgroupConfig{Faults: true, Include: regexp.MustCompile(`^(?:/pod/.*)$`)}, []string{"/pod/wl"}},
		{CgroupConfig{Faults: true, Exclude: regexp.MustCompile(`^(?:/pod/.*)$`)}, []string{"/pod"}},
		{CgroupConfig{Faults: true, Include: regexp.MustCompile(`^(?:/pod)$`), Exclude: regexp.MustCompile(`^(?:/pod)$`)}, nil},
		// Without --cgroup-faults, /pod has no file to export: no series.
		{CgroupConfig{}, []string{"/pod/wl"}},
	} {
		x, _ := cgExporter(t, c.cfg, fs)
		_, fams := scrapeText(t, x)
		if got := cgroupsOf(fams); !slices.Equal(got, c.want) {
			t.Errorf("depth %d include %v exclude %v faults %v: cgroups %q, want %q", c.cfg.Depth, c.cfg.Include, c.cfg.Exclude, c.cfg.Faults, got, c.want)
		}
	}
	if _, err := newCgroupCollector(CgroupConfig{Depth: 0, MaxSeries: 1}, fs, nil, nil); err == nil || !strings.Contains(err.Error(), "--cgroup-depth") {
		t.Errorf("depth 0: %v, want an error naming --cgroup-depth", err)
	}
	if _, err := newCgroupCollector(CgroupConfig{Depth: 1, MaxSeries: 1}, sysfs.New(t.TempDir()), nil, nil); err == nil || !strings.Contains(err.Error(), "no cgroup v2 hierarchy") {
		t.Errorf("no cgroup2 mount: %v, want an error saying so", err)
	}
}

// TestCgroupsCapAndGone: the series cap leaves whole cgroups out, the same
// ones from read to read, and says how many; a cgroup removed is gone from
// the next read and from the collector's memory.
func TestCgroupsCapAndGone(t *testing.T) {
	root, fs := cgroupTree(t)
	cg := filepath.Join(root, "sys/fs/cgroup")
	for i := range 10 {
		writeFile(t, fmt.Sprintf("%s/c%02d/memory.stat", cg, i), "numa_hint_faults 5\nnuma_pages_migrated 1\n")
	}
	// /c00../c09 have 2 series each; /pod/wl 64+6+1+1 = 72 and is walked last.
	x, c := cgExporter(t, CgroupConfig{MaxSeries: 13}, fs)
	for range 3 {
		_, fams := scrapeText(t, x)
		got := cgroupsOf(fams)
		want := []string{"/c00", "/c01", "/c02", "/c03", "/c04", "/c05"}
		if !slices.Equal(got, want) {
			t.Fatalf("cap 13: cgroups %q, want %q", got, want)
		}
		if lo := seriesOf(fams, "numascope_cgroups_left_out")[""]; lo != 6 {
			// Past the cap, the cgroups selected are counted, not read:
			// /pod, which has nothing to export, too.
			t.Errorf("left out %v, want 6 (c06..c09, /pod and /pod/wl)", lo)
		}
	}
	os.RemoveAll(cg + "/c00")
	os.RemoveAll(cg + "/c03")
	_, fams := scrapeText(t, x)
	if got, want := cgroupsOf(fams), []string{"/c01", "/c02", "/c04", "/c05", "/c06", "/c07"}; !slices.Equal(got, want) {
		t.Errorf("after removing c00 and c03: %q, want %q", got, want)
	}
	if len(c.entries) != 6 || len(c.byLabel) != 6 {
		t.Errorf("the collector keeps %d entries (%d labels), want 6", len(c.entries), len(c.byLabel))
	}
}

// TestCgroupsHeldFiles: the files of exported cgroups are held open from
// read to read and read again from offset 0, so a file's new contents
// show; a cgroup renamed away, and another made under its name, is read
// from its own files, not from the ones held under that path; a removed
// cgroup's descriptors are closed, and Close closes the rest; past
// maxHeld, files are opened and closed at each read.
func TestCgroupsHeldFiles(t *testing.T) {
	root, fs := cgroupTree(t)
	cg := filepath.Join(root, "sys/fs/cgroup")
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	hint := func(fams map[string]*dto.MetricFamily, cgroup string) float64 {
		return seriesOf(fams, "numascope_cgroup_numa_hint_faults_total")["cgroup="+cgroup]
	}
	base := fds()
	x, c := cgExporter(t, CgroupConfig{}, fs)
	for i, want := range []float64{373, 400} {
		if i == 1 {
			writeFile(t, cg+"/pod/wl/memory.stat", "numa_hint_faults 400\n")
		}
		_, fams := scrapeText(t, x)
		if v := hint(fams, "/pod/wl"); v != want {
			t.Errorf("read %d: /pod/wl numa_hint_faults %v, want %v", i, v, want)
		}
		if c.held != 4 || fds() != base+4 {
			t.Errorf("read %d: %d descriptors held, %d more open than before; want the 4 files of /pod/wl", i, c.held, fds()-base)
		}
	}
	if err := os.Rename(cg+"/pod/wl", cg+"/pod/old"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cg+"/pod/wl/memory.stat", "numa_hint_faults 7\n")
	_, fams := scrapeText(t, x)
	if v, o := hint(fams, "/pod/wl"), hint(fams, "/pod/old"); v != 7 || o != 400 {
		t.Errorf("after renaming /pod/wl to /pod/old and making a new /pod/wl: numa_hint_faults %v and %v, want 7 (the new one's) and 400", v, o)
	}
	for k := range seriesOf(fams, "numascope_cgroup_memory_bytes") {
		if strings.HasPrefix(k, "cgroup=/pod/wl,") {
			t.Fatalf("the new /pod/wl has no memory.numa_stat, but %s is exported: the old one's file was read", k)
		}
	}
	if c.held != 5 {
		t.Errorf("%d descriptors held, want 5 (/pod/old's 4, the new /pod/wl's memory.stat)", c.held)
	}
	if err := os.RemoveAll(cg + "/pod/old"); err != nil {
		t.Fatal(err)
	}
	scrapeText(t, x)
	if c.held != 1 || fds() != base+1 {
		t.Errorf("after removing /pod/old: %d held, %d more open than before; want 1", c.held, fds()-base)
	}
	c.Close()
	if c.held != 0 || fds() != base {
		t.Errorf("after Close: %d held, %d more open than before; want none", c.held, fds()-base)
	}

	x2, c2 := cgExporter(t, CgroupConfig{}, fs)
	c2.maxHeld = 0
	for range 2 {
		_, fams := scrapeText(t, x2)
		if v := hint(fams, "/pod/wl"); v != 7 || c2.held != 0 || fds() != base {
			t.Errorf("with maxHeld 0: numa_hint_faults %v (want 7), %d held, %d more open than before; want none", v, c2.held, fds()-base)
		}
	}
}

// TestCgroupsWalkBounded: a tree with more directories than the walk
// visits stops the walk with an error (counted, logged), and exports what
// it read.
func TestCgroupsWalkBounded(t *testing.T) {
	root, fs := cgroupTree(t)
	for i := range 10 {
		writeFile(t, fmt.Sprintf("%s/sys/fs/cgroup/c%02d/memory.stat", root, i), "numa_hint_faults 5\n")
	}
	x, c := cgExporter(t, CgroupConfig{}, fs)
	c.maxVisit = 5 // the root and c00..c03
	_, fams := scrapeText(t, x)
	if got, want := cgroupsOf(fams), []string{"/c00", "/c01", "/c02", "/c03"}; !slices.Equal(got, want) {
		t.Errorf("cgroups %q, want %q", got, want)
	}
	if errs := seriesOf(fams, "numascope_scrape_errors_total")["collector=cgroups"]; errs != 1 {
		t.Errorf("%v errors, want 1: the walk was cut short", errs)
	}
}

// promtoolCheck runs promtool check metrics on body; its lint findings fail
// the test.
func promtoolCheck(t *testing.T, body []byte) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		testutil.SkipUnless(t, testutil.PrometheusRequired, "promtool is not installed (sudo scripts/install-test-deps installs Debian's prometheus, which has it)")
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestCgroupsPromtool(t *testing.T) {
	_, fs := cgroupTree(t)
	x, _ := cgExporter(t, CgroupConfig{Faults: true}, fs)
	body, _ := scrapeText(t, x)
	promtoolCheck(t, body)
}

// hostileNames are cgroup names the kernel accepts (it refuses '/' and
// newline) that a label writer must escape or keep apart: quotes,
// backslashes, an escape written out and the byte it names, control
// characters, text that looks like exposition syntax, a 255-byte name.
var hostileNames = []string{
	`q"uote`, `back\slash\`, `x\xff`, "x\xff", "tab\tcr\rctl\x01\x1b[31m", `{a="b"} 1`, "# HELP x", strings.Repeat("z", 255), "ünï",
}

// hostileLabel is the label a hostile name's cgroup should have.
func hostileLabel(parent, name string) string {
	return parent + "/" + cgroupLabel([]byte(name))
}

// realCgroupRoot is this machine's cgroup v2 mount.
func realCgroupRoot(t *testing.T) string {
	t.Helper()
	testutil.RequireRoot(t, "to create cgroups")
	root, _, err := cgroupV2Root(sysfs.New(""))
	if err != nil {
		t.Fatalf("this machine has no cgroup v2 hierarchy: %v", err)
	}
	return root
}

// mkTestCgroup creates numascope-test-NNN under root, removed (with every
// cgroup under it, its processes moved back to the root) at the end.
func mkTestCgroup(t *testing.T, root string) string {
	t.Helper()
	dir, err := os.MkdirTemp(root, "numascope-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroupTree(t, root, dir) })
	return dir
}

// removeCgroupTree removes dir and the cgroups below it, deepest first
// (cgroupfs removes a directory with rmdir only), moving any process left
// in them to root. It works with openat and unlinkat, for paths past
// PATH_MAX.
func removeCgroupTree(t *testing.T, root, dir string) {
	fd, err := syscallOpenDir(dir)
	if err != nil {
		t.Errorf("removing the test cgroup %s: %v", dir, err)
		return
	}
	removeBelow(t, root, fd)
	closeFD(fd)
	if err := os.Remove(dir); err != nil {
		t.Errorf("removing the test cgroup %s: %v", dir, err)
	}
}

func removeBelow(t *testing.T, root string, fd int) {
	moveProcs(root, fd)
	f := os.NewFile(uintptr(must(unix.Dup(fd))), "cgroup")
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue // a file
		}
		removeBelow(t, root, sub)
		closeFD(sub)
		if err := unix.Unlinkat(fd, n, unix.AT_REMOVEDIR); err != nil {
			t.Errorf("removing the test cgroup %q: %v", n, err)
		}
	}
}

func must(fd int, err error) int {
	if err != nil {
		panic(err)
	}
	return fd
}

// moveProcs moves the processes of the cgroup open at fd to root.
func moveProcs(root string, fd int) {
	pf, err := unix.Openat(fd, "cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(pf), "cgroup.procs")
	b := make([]byte, 64<<10)
	n, _ := f.Read(b)
	f.Close()
	for _, pid := range strings.Fields(string(b[:n])) {
		os.WriteFile(root+"/cgroup.procs", []byte(pid), 0)
	}
}

// mkdirDeep creates a chain of 255-byte directories under dir, with
// openat, until the path from the cgroup root is longer than 4 KiB
// (PATH_MAX), and returns the chain's names.
func mkdirDeep(t *testing.T, dir string, levels int) []string {
	t.Helper()
	fd, err := syscallOpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range levels {
		name := fmt.Sprintf("%02d", i) + strings.Repeat("d", 253)
		next, err := mkdirAt(fd, name)
		closeFD(fd)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		fd = next
		names = append(names, name)
	}
	closeFD(fd)
	return names
}

// cgTouchEnv makes TestCgroupTouchHelper wait for a line on stdin (its
// move into a cgroup), touch that many pages, say "ok" and sleep.
const cgTouchEnv = "NUMASCOPE_TEST_CGTOUCH"

func TestCgroupTouchHelper(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(cgTouchEnv))
	if n == 0 {
		t.Skip("helper process for the cgroup tests")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	testutil.TouchPages(t, n)
	fmt.Println("ok")
	time.Sleep(10 * time.Minute)
	os.Exit(0)
}

// startInCgroup starts the touch helper, moves it into cg, and lets it
// touch pages; it is killed at the end of the test.
func startInCgroup(t *testing.T, cg string, pages int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupTouchHelper$")
	cmd.Env = append(os.Environ(), cgTouchEnv+"="+strconv.Itoa(pages))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := os.WriteFile(cg+"/cgroup.procs", []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatalf("moving the helper into %s: %v", cg, err)
	}
	fmt.Fprintln(in, "go")
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ok\n" {
		t.Fatalf("the helper did not touch its pages: %q, %v", line, err)
	}
	return cmd
}

// memoryInV2 enables the memory and cpuset controllers down to dir when
// the v2 hierarchy has them, and says whether memory is there.
func memoryInV2(t *testing.T, root, dir string) bool {
	ctl, _ := os.ReadFile(root + "/cgroup.controllers")
	f := strings.Fields(string(ctl))
	if !slices.Contains(f, "memory") {
		t.Logf("the memory controller is not in this machine's cgroup v2 hierarchy (%s has %q: a hybrid machine): memory.numa_stat is checked on the fixture and in the VM only", root, f)
		return false
	}
	for _, d := range []string{root, dir} {
		for _, c := range []string{"+memory", "+cpuset"} {
			if slices.Contains(f, c[1:]) {
				if err := os.WriteFile(d+"/cgroup.subtree_control", []byte(c), 0); err != nil {
					t.Fatalf("enabling %s in %s: %v", c, d, err)
				}
			}
		}
	}
	return true
}

// TestCgroupsReal creates cgroups with hostile names, a path past 4 KiB
// and a process touching memory under this machine's cgroup v2 hierarchy,
// and checks that each is exported under its own label, which reads back
// through both parsers, and that promtool accepts the result.
func TestCgroupsReal(t *testing.T) {
	root := realCgroupRoot(t)
	dir := mkTestCgroup(t, root)
	rel := strings.TrimPrefix(dir, root)
	mem := memoryInV2(t, root, dir)
	want := []string{rel}
	for _, n := range hostileNames {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatalf("mkdir %q: %v", n, err)
		}
		want = append(want, hostileLabel(rel, n))
	}
	if err := os.Mkdir(filepath.Join(dir, "a\nb"), 0o755); err == nil {
		want = append(want, rel+"/a\nb") // a kernel that allows it: the label keeps it
	}
	deep := mkdirDeep(t, dir, 17) // 17 × 256 bytes: past PATH_MAX
	p := rel
	for _, n := range deep {
		p += "/" + n
		want = append(want, p)
	}
	if len(p) <= 4096 {
		t.Fatalf("the deep path is %d bytes, want past 4096", len(p))
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	want = append(want, rel+"/work")
	const pages = 16384 // 64 MiB
	startInCgroup(t, work, pages)
	// `x\xff` written out and x with the byte 0xff have one label: the
	// first walked (by name, "x\\" < "x\xff") is exported, the other
	// counted as left out.
	want = slices.Compact(sortedCopy(want))

	include := regexp.MustCompile("^(?:" + regexp.QuoteMeta(rel) + "(/.*)?)$")
	x, _ := cgExporter(t, CgroupConfig{Root: root, Faults: true, Depth: 20, Include: include}, sysfs.New(""))
	body, fams := scrapeText(t, x)
	sameCgroups(t, "text format", cgroupsOf(fams), want)
	if errs := seriesOf(fams, "numascope_scrape_errors_total")["collector=cgroups"]; errs != 0 {
		t.Errorf("%v read errors", errs)
	}
	if lo := seriesOf(fams, "numascope_cgroups_left_out")[""]; lo != 1 {
		t.Errorf("%v cgroups left out, want 1 (the second of the two named x\\xff)", lo)
	}
	promtoolCheck(t, body)
	// OpenMetrics reads back the same labels (but the deep chain's, whose
	// 4 KiB labels its ABNF parser takes minutes over).
	deepRE := regexp.MustCompile(`^(?:.*/00d{253}.*)$`)
	xo, _ := cgExporter(t, CgroupConfig{Root: root, Faults: true, Depth: 20, Include: include, Exclude: deepRE}, sysfs.New(""))
	r := xo.acquire()
	om := bytes.Clone(r.encode(encOM).body)
	xo.release(r)
	var wantOM []string
	for _, w := range want {
		if !deepRE.MatchString(w) {
			wantOM = append(wantOM, w)
		}
	}
	sameCgroups(t, "OpenMetrics", omCgroups(t, om), wantOM)
	if mem {
		got := 0.0
		for k, v := range seriesOf(fams, "numascope_cgroup_memory_bytes") {
			if strings.HasPrefix(k, "cgroup="+rel+"/work,") && strings.HasSuffix(k, ",type=anon") {
				got += v
			}
		}
		if got < pages*float64(os.Getpagesize()) {
			t.Errorf("the work cgroup's anon memory is %v bytes, want at least the %d pages its process touched", got, pages)
		}
	}
}

func TestCgroupsChurn(t *testing.T) {
	root := realCgroupRoot(t)
	dir := mkTestCgroup(t, root)
	rel := strings.TrimPrefix(dir, root)
	x, c := cgExporter(t, CgroupConfig{Root: root, Faults: true, Depth: 3, Include: regexp.MustCompile("^(?:" + regexp.QuoteMeta(rel) + "/.*)$")}, sysfs.New(""))
	scrapeText(t, x)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	const total = 1000
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, maxSeen atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			x.Read()
			reads.Add(1)
		}
	}()
	// 1000 cgroups, 100 alive at a time: each created, then removed 100 later.
	for i := range total {
		name := filepath.Join(dir, fmt.Sprintf("c%04d", i))
		if err := os.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		if i >= 100 {
			if err := os.Remove(filepath.Join(dir, fmt.Sprintf("c%04d", i-100))); err != nil {
				t.Fatal(err)
			}
		}
		if i%100 == 0 {
			_, fams := scrapeText(t, x)
			n := seriesOf(fams, "numascope_cgroups")[""]
			if int64(n) > maxSeen.Load() {
				maxSeen.Store(int64(n))
			}
			if n > 101 {
				t.Errorf("%v cgroups exported with at most 101 alive", n)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	for i := total - 100; i < total; i++ {
		os.Remove(filepath.Join(dir, fmt.Sprintf("c%04d", i)))
	}
	_, fams := scrapeText(t, x)
	if got := cgroupsOf(fams); len(got) != 0 {
		t.Errorf("after the churn, with every cgroup removed, still exported: %q", got[:min(len(got), 5)])
	}
	if errs := seriesOf(fams, "numascope_scrape_errors_total")["collector=cgroups"]; errs != 0 {
		t.Errorf("%v reads failed during the churn: removed cgroups are not errors", errs)
	}
	if len(c.entries) != 0 || len(c.byLabel) != 0 {
		t.Errorf("the collector still holds %d entries, %d labels", len(c.entries), len(c.byLabel))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("%d reads during the churn of %d cgroups, at most %d exported at once; heap %d KiB before, %d KiB after", reads.Load(), total, maxSeen.Load(), before.HeapAlloc>>10, after.HeapAlloc>>10)
	if after.HeapAlloc > before.HeapAlloc+4<<20 {
		t.Errorf("the heap grew from %d to %d KiB over the churn", before.HeapAlloc>>10, after.HeapAlloc>>10)
	}
}

// omCgroups is the set of cgroup labels of an OpenMetrics body, read with
// prometheus/common's OpenMetrics parser.
func omCgroups(t *testing.T, body []byte) []string {
	t.Helper()
	fams := map[string]*dto.MetricFamily{}
	for _, f := range decode(t, body, fmtOM) {
		fams[f.GetName()] = f
	}
	return cgroupsOf(fams)
}

func syscallOpenDir(dir string) (int, error) {
	return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// mkdirAt makes name in dirfd and opens it.
func mkdirAt(dirfd int, name string) (int, error) {
	if err := unix.Mkdirat(dirfd, name, 0o755); err != nil {
		return -1, err
	}
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func closeFD(fd int) { unix.Close(fd) }

// sameCgroups fails, naming the differences (cut to 100 bytes each),
// unless got and want are the same labels.
func sameCgroups(t *testing.T, what string, got, want []string) {
	t.Helper()
	short := func(s string) string {
		if len(s) > 100 {
			return s[:100] + fmt.Sprintf("...(%d bytes)", len(s))
		}
		return s
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s: cgroup %q exported, not expected", what, short(g))
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: cgroup %q missing", what, short(w))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d cgroups, want %d", what, len(got), len(want))
	}
}

// TestPrometheusCgroups has Debian's Prometheus scrape the cgroup series
// of real cgroups with hostile names and a path past 4 KiB, checks through
// its HTTP API that each cgroup comes back under its own label, and that a
// cgroup removed is gone from the next scrape (a stale series, not a last
// value carried on).
func TestPrometheusCgroups(t *testing.T) {
	testutil.Prometheus(t)
	root := realCgroupRoot(t)
	dir := mkTestCgroup(t, root)
	rel := strings.TrimPrefix(dir, root)
	want := []string{rel}
	for _, n := range hostileNames {
		if n == "x\xff" {
			continue // one of the two x\xff, as TestCgroupsReal checks
		}
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatalf("mkdir %q: %v", n, err)
		}
		want = append(want, hostileLabel(rel, n))
	}
	p := rel
	for _, n := range mkdirDeep(t, dir, 17) {
		p += "/" + n
		want = append(want, p)
	}
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	want = sortedCopy(want)

	include := regexp.MustCompile("^(?:" + regexp.QuoteMeta(rel) + "(/.*)?)$")
	x, _ := cgExporter(t, CgroupConfig{Root: root, Faults: true, Depth: 20, Include: include}, sysfs.New(""))
	srv := httptest.NewServer(x.Handler())
	t.Cleanup(srv.Close)
	target := strings.TrimPrefix(srv.URL, "http://")
	prom := startPrometheus(t, target)
	sel := `numascope_cgroup_numa_faults{job="numascope",locality="local",cgroup=~"` + regexp.QuoteMeta(rel) + `.*"}`
	labels := func(at time.Time) []string {
		var got []string
		for _, s := range prom.query(t, sel, at) {
			got = append(got, s.Metric["cgroup"])
		}
		return sortedCopy(got)
	}
	at := prom.waitSample(t, time.Now())
	sameCgroups(t, "Prometheus", labels(at), append(slices.Clone(want), rel+"/gone"))

	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	at = prom.waitSample(t, time.Now())
	sameCgroups(t, "Prometheus after removing /gone", labels(at), want)
	if res := prom.query(t, `numascope_cgroups{job="numascope"}`, at); len(res) != 1 || res[0].value(t) != float64(len(want)) {
		t.Errorf("numascope_cgroups = %v, want %d", res, len(want))
	}
}

// TestCgroupNamesDocumented: every family of the cgroup collector is named
// in docs/exporter.md.
func TestCgroupNamesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/exporter.md")
	if err != nil {
		t.Fatal(err)
	}
	_, fs := cgroupTree(t)
	_, c := cgExporter(t, CgroupConfig{Faults: true}, fs)
	fams := append([]*family{c.memFam, c.outFam, c.infoFam, c.faultFam, c.countFam, c.leftFam}, c.statFams...)
	for _, f := range fams {
		if !strings.Contains(string(doc), "`"+f.name+"`") {
			t.Errorf("%s is not in docs/exporter.md", f.name)
		}
	}
}

// BenchmarkCgroupScrape is the inner part of a scrape of --cgroups: a read
// of every cgroup and its OpenMetrics encoding, without HTTP. It reads the
// tree NUMASCOPE_BENCH_CGROUPS names (scripts/bench-cgroups --inner makes a
// tmpfs one; --profile runs it over the NUMA VM's cgroupfs with a CPU
// profile), or else 100 cgroups of the VM capture's files; cpu-µs/op is the
// process's CPU (getrusage). What a user pays, the whole process per HTTP
// scrape, is scripts/bench-cgroups's table (docs/performance.md).
func BenchmarkCgroupScrape(b *testing.B) {
	root := os.Getenv("NUMASCOPE_BENCH_CGROUPS")
	if root == "" {
		root = b.TempDir()
		writeFile(b, root+"/cgroup.controllers", "cpuset memory\n")
		numa := readFixtureFile(b, "sys/fs/cgroup/wl/memory.numa_stat")
		for i := range 100 {
			d := fmt.Sprintf("%s/c%04d", root, i)
			writeFile(b, d+"/memory.numa_stat", numa)
			writeFile(b, d+"/memory.stat", "numa_pages_migrated 42\nnuma_pte_updates 1000\nnuma_hint_faults 373\n")
			writeFile(b, d+"/cpuset.cpus.effective", "0-3\n")
			writeFile(b, d+"/cpuset.mems.effective", "0-1\n")
		}
	}
	c, err := newCgroupCollector(CgroupConfig{Root: root, Depth: DefaultCgroupDepth, MaxSeries: 1 << 20}, sysfs.New(""), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchScrape(b, c)
}

// BenchmarkCgroupScrapeV1 is BenchmarkCgroupScrape on cgroup v1: 100
// containers in 10 pods, each with the v1 VM capture's memory.numa_stat
// and two processes in a memory hierarchy, and a cpuset hierarchy with the
// same cgroups and processes, so that every cgroup's cpuset is read and exported. What a
// user pays on v1 is scripts/bench-cgroups --v1's table.
func BenchmarkCgroupScrapeV1(b *testing.B) {
	root := b.TempDir()
	data, err := os.ReadFile("../procnuma/testdata/vm2-v1/sys/fs/cgroup/memory/slurm/job_1/memory.numa_stat")
	if err != nil {
		b.Fatal(err)
	}
	numa := string(data)
	mem, cs := root+"/sys/fs/cgroup/memory", root+"/sys/fs/cgroup/cpuset"
	for i := range 110 {
		// 10 pods, each holding 10 containers, as kubepods has them.
		d, procs := fmt.Sprintf("/pod%d", i), ""
		if i >= 10 {
			d, procs = fmt.Sprintf("/pod%d/c%04d", i%10, i), fmt.Sprintf("%d\n%d\n", 1000+i, 5000+i)
		}
		writeFile(b, mem+d+"/memory.numa_stat", numa)
		writeFile(b, mem+d+"/memory.stat", "cache 0\nrss 8392704\nmapped_file 0\n")
		writeFile(b, mem+d+"/cgroup.procs", procs)
		writeFile(b, cs+d+"/cgroup.procs", procs)
		writeFile(b, cs+d+"/cpuset.effective_cpus", "0-3\n")
		writeFile(b, cs+d+"/cpuset.effective_mems", "0-1\n")
	}
	c, err := newCgroupCollector(CgroupConfig{Depth: DefaultCgroupDepth, MaxSeries: 1 << 20}, sysfs.New(root), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if !c.cfg.V1 || c.cfg.CpusetV1 == "" {
		b.Fatalf("v1 %v, cpuset hierarchy %q: want both", c.cfg.V1, c.cfg.CpusetV1)
	}
	benchScrape(b, c)
}

// benchScrape times reads and OpenMetrics encodings of collector c: the
// process's CPU per scrape (getrusage), the cgroups exported, the bytes.
func benchScrape(b *testing.B, c *cgroupCollector) {
	x := newExporter([]collector{c}, nil)
	defer x.Close()
	scrape := func() int {
		r := x.acquire()
		n := len(r.encode(encOM).body)
		x.release(r)
		return n
	}
	size := scrape()
	var ru0, ru1 unix.Rusage
	b.ReportAllocs()
	b.ResetTimer()
	unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	for b.Loop() {
		scrape()
	}
	unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	b.StopTimer()
	cpu := float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e3
	b.ReportMetric(cpu/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(len(c.order)), "cgroups")
	b.ReportMetric(float64(size), "bytes")
}

// dashboardExporter is the exporter TestPrometheus scrapes: this
// machine's files, and --cgroups with --cgroup-faults over cgroupTree's
// fixture (this machine's v2 hierarchy may lack the memory controller), so
// that the dashboard's per-cgroup panels have series. It returns the
// cgroups the dashboard's cgroup variable should list.
func dashboardExporter(t *testing.T) (*Exporter, []string) {
	t.Helper()
	root, _ := cgroupTree(t)
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's memory.numa_stat has nodes 0 to 3; keep the ones this
	// machine has, as the exporter does.
	x, err := New(Config{Env: sensor.Env{FS: fs, Topology: topo}, Log: func(s string) { t.Log(s) },
		Cgroups: &CgroupConfig{Root: filepath.Join(root, "sys/fs/cgroup"), Depth: DefaultCgroupDepth, MaxSeries: DefaultCgroupMaxSeries, Faults: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x, []string{"/pod/wl"}
}

// TestCgroupsV1Cpuset: on cgroup v1 the cpuset series come from the
// cgroup of the same path in the cpuset hierarchy (fs/cgroup/cpuset),
// walked beside the memory one, and only where the two hold the same
// processes: /slurm/job_1 (the same PIDs, listed in another order; mems 0
// while 3 pages sit on node 1, which are outside it), /slurm (no process
// of its own in either). Not: job_2, whose cpuset cgroup holds another
// process; /svc, which has no cpuset cgroup; /idle, whose cpuset has no
// node (no task can be in it); /link, a symbolic link in the cpuset
// hierarchy to a cpuset elsewhere.
func TestCgroupsV1Cpuset(t *testing.T) {
	const page = 4096
	root := t.TempDir()
	mem := filepath.Join(root, "sys/fs/cgroup/memory")
	cs := filepath.Join(root, "sys/fs/cgroup/cpuset")
	numa := func(n0, n1 int) string {
		return fmt.Sprintf("total=%d N0=%d N1=%d\nanon=0 N0=0 N1=0\nfile=0 N0=0 N1=0\nhierarchical_total=%d N0=%d N1=%d\nhierarchical_anon=%d N0=%d N1=%d\nhierarchical_file=0 N0=0 N1=0\n",
			n0+n1, n0, n1, n0+n1, n0, n1, n0+n1, n0, n1)
	}
	for cg, f := range map[string]struct {
		n0, n1 int
		procs  string
	}{"slurm": {12, 5, ""}, "slurm/job_1": {10, 3, "100\n101\n"}, "slurm/job_2": {2, 2, "200\n"}, "svc": {4, 0, "300\n"}, "idle": {1, 1, ""}, "link": {1, 1, ""}} {
		writeFile(t, filepath.Join(mem, cg, "memory.numa_stat"), numa(f.n0, f.n1))
		writeFile(t, filepath.Join(mem, cg, "cgroup.procs"), f.procs)
	}
	cpuset := func(dir, cpus, mems, procs string) {
		writeFile(t, filepath.Join(dir, "cpuset.effective_cpus"), cpus+"\n")
		writeFile(t, filepath.Join(dir, "cpuset.effective_mems"), mems+"\n")
		writeFile(t, filepath.Join(dir, "cgroup.procs"), procs)
	}
	cpuset(filepath.Join(cs, "slurm"), "0-3", "0-1", "")
	cpuset(filepath.Join(cs, "slurm/job_1"), "0-1", "0", "101\n100\n")
	cpuset(filepath.Join(cs, "slurm/job_2"), "2-3", "1", "201\n")
	cpuset(filepath.Join(cs, "idle"), "0", "", "")
	cpuset(filepath.Join(root, "elsewhere"), "0", "0", "")
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(cs, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "sys/fs/cgroup/unified/cgroup.controllers"), "pids\n")
	x, c := cgExporter(t, CgroupConfig{}, sysfs.New(root))
	if !c.cfg.V1 || c.cfg.CpusetV1 != cs {
		t.Fatalf("v1 %v, cpuset hierarchy %q: want v1 and %s", c.cfg.V1, c.cfg.CpusetV1, cs)
	}
	_, fams := scrapeText(t, x)
	if c.err != nil {
		t.Errorf("the scrape failed: %v", c.err)
	}
	info := seriesOf(fams, "numascope_cgroup_cpuset_info")
	if want := map[string]float64{"cgroup=/slurm,cpus=0-3,mems=0-1": 1, "cgroup=/slurm/job_1,cpus=0-1,mems=0": 1}; !reflect.DeepEqual(info, want) {
		t.Errorf("cpuset info %v\nwant %v", info, want)
	}
	out := seriesOf(fams, "numascope_cgroup_memory_outside_cpuset_bytes")
	if want := map[string]float64{"cgroup=/slurm": 0, "cgroup=/slurm/job_1": 3 * page}; !reflect.DeepEqual(out, want) {
		t.Errorf("memory outside the cpuset %v\nwant %v", out, want)
	}

	// Attacks from a user who can make cgroups in the cpuset hierarchy:
	// a cgroup.procs that is a FIFO nobody writes (the scrape must not
	// block), one far larger than a kernel's, a cpuset.effective_mems
	// that is a FIFO, and a cgroup named with escape sequences and HTML
	// (a label, as text). None gives a cpuset; the name's own does.
	for _, d := range []string{"fifo", "huge", "fifomems", "\x1b[2J<b>x</b>"} {
		writeFile(t, filepath.Join(mem, d, "memory.numa_stat"), numa(1, 1))
		writeFile(t, filepath.Join(mem, d, "cgroup.procs"), "")
	}
	cpuset(filepath.Join(cs, "huge"), "0", "0", strings.Repeat("\n", 2<<20))
	cpuset(filepath.Join(cs, "\x1b[2J<b>x</b>"), "0", "1", "")
	for _, f := range []string{"fifo/cgroup.procs", "fifomems/cpuset.effective_mems"} {
		cpuset(filepath.Join(cs, filepath.Dir(f)), "0", "0", "")
		os.Remove(filepath.Join(cs, f))
		if err := unix.Mkfifo(filepath.Join(cs, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan map[string]*dto.MetricFamily)
	go func() { _, fams := scrapeText(t, x); done <- fams }()
	select {
	case fams = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO in the cpuset hierarchy blocked the scrape")
	}
	info = seriesOf(fams, "numascope_cgroup_cpuset_info")
	for k := range info {
		if strings.Contains(k, "fifo") || strings.Contains(k, "huge") {
			t.Errorf("a cpuset from a FIFO or an oversized file: %s", k)
		}
	}
	if info["cgroup=/\x1b[2J<b>x</b>,cpus=0,mems=1"] != 1 {
		t.Errorf("the hostile name's own cpuset: %v", info)
	}

	// Without a cpuset hierarchy (and where "cpuset" is a symbolic link
	// to one elsewhere): no cpuset series, and no error.
	if err := os.Rename(cs, filepath.Join(root, "cpuset-elsewhere")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "cpuset-elsewhere"), cs); err != nil {
		t.Fatal(err)
	}
	x, c = cgExporter(t, CgroupConfig{}, sysfs.New(root))
	if c.cfg.CpusetV1 != "" {
		t.Errorf("cpuset hierarchy %q taken from a symbolic link", c.cfg.CpusetV1)
	}
	if _, fams := scrapeText(t, x); len(seriesOf(fams, "numascope_cgroup_cpuset_info")) != 0 || c.err != nil {
		t.Errorf("without a cpuset hierarchy: cpuset series %v, error %v; want neither", seriesOf(fams, "numascope_cgroup_cpuset_info"), c.err)
	}
}

// TestCgroupsV1: on a hybrid machine whose memory controller is on cgroup
// v1 (the VM capture of internal/procnuma/testdata/vm2-v1: no cgroup2 at
// sys/fs/cgroup, a memory hierarchy, two Slurm-like jobs), the exporter
// walks the v1 memory hierarchy: each cgroup's memory by node and type
// from the hierarchical_ lines of its memory.numa_stat, pages made bytes
// and named as v2 names them (so /slurm, with no page of its own, holds
// its jobs'), no total; no memory.stat counter or cpuset info (v1 has
// neither there); and it says so once. With --cgroup-faults the threads
// are v1's "tasks".
func TestCgroupsV1(t *testing.T) {
	const page = 4096
	fs := sysfs.New("../procnuma/testdata/vm2-v1")
	var said []string
	c, err := newCgroupCollector(CgroupConfig{Depth: DefaultCgroupDepth, MaxSeries: DefaultCgroupMaxSeries}, fs, nil, func(s string) { said = append(said, s) })
	if err != nil {
		t.Fatal(err)
	}
	if !c.cfg.V1 || !strings.HasSuffix(c.root, "sys/fs/cgroup/memory") {
		t.Fatalf("root %s, v1 %v: want the v1 memory hierarchy", c.root, c.cfg.V1)
	}
	if len(said) != 1 || !strings.Contains(said[0], "cgroup v1") {
		t.Errorf("said %q, want one line naming cgroup v1", said)
	}
	x := newExporter([]collector{c}, func(s string) { t.Log(s) })
	t.Cleanup(func() { x.Close() })
	_, fams := scrapeText(t, x)
	mem := seriesOf(fams, "numascope_cgroup_memory_bytes")
	want := map[string]float64{}
	for cg, pages := range map[string][2]float64{"/slurm": {2131, 4249}, "/slurm/job_1": {2049, 2165}, "/slurm/job_2": {82, 2084}} {
		for node := range 2 {
			want[fmt.Sprintf("cgroup=%s,numa_node=%d,type=anon", cg, node)] = pages[node] * page
			want[fmt.Sprintf("cgroup=%s,numa_node=%d,type=file", cg, node)] = 0
			want[fmt.Sprintf("cgroup=%s,numa_node=%d,type=unevictable", cg, node)] = 0
		}
	}
	if !reflect.DeepEqual(mem, want) {
		t.Errorf("memory series %v\nwant %v", mem, want)
	}
	for name := range fams {
		if strings.HasPrefix(name, "numascope_cgroup_") && name != "numascope_cgroup_memory_bytes" {
			t.Errorf("family %s on cgroup v1 (without a cpuset hierarchy in the capture), which has no such figure there", name)
		}
	}

	// --cgroup-faults: a tree of v1's shape, threads in "tasks".
	root := t.TempDir()
	wl := filepath.Join(root, "sys/fs/cgroup/memory/job")
	writeFile(t, wl+"/memory.numa_stat", "total=1 N0=1\nanon=1 N0=1\nfile=0 N0=0\nhierarchical_total=1 N0=1\nhierarchical_anon=1 N0=1\nhierarchical_file=0 N0=0\n")
	writeFile(t, wl+"/tasks", "158\n")
	writeFile(t, filepath.Join(root, "proc/158/sched"), readFixtureFile(t, "proc/139/task/158/sched"))
	writeFile(t, filepath.Join(root, "sys/fs/cgroup/unified/cgroup.controllers"), "cpuset cpu io pids\n")
	x, c = cgExporter(t, CgroupConfig{Faults: true}, sysfs.New(root))
	if !c.cfg.V1 {
		t.Fatalf("a hybrid tree (cgroup2 without memory at unified, a memory hierarchy): root %s, not v1", c.root)
	}
	_, fams = scrapeText(t, x)
	faults := seriesOf(fams, "numascope_cgroup_numa_faults")
	if faults["cgroup=/job,locality=local,source=sched"]+faults["cgroup=/job,locality=remote,source=sched"] == 0 {
		t.Errorf("faults %v: want thread 158's, listed in tasks", faults)
	}
}
