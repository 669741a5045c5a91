package top

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
)

// The known mix of testdata/memmix.c, in MiB.
const (
	mixHeapMiB  = 48
	mixStackMiB = 16
	mixAnonMiB  = 64
	mixHuge     = 4 // huge pages asked for
)

// TestMemoryMatchesNumastat is the fidelity check of top's memory per node
// (docs/fidelity.md): a process with a known mix of heap, stack, anonymous
// memory and hugetlb pages, stopped (SIGSTOP) once it has touched it all,
// is read by the Collector (the table's row, its JSON, and the drill-down)
// and by numactl's numastat -p, which parses numa_maps with its own code.
// Every cell of numastat's table (each category and the total, on each node
// and in all) must print the same as numascope's bytes do at numastat's
// precision.
//
// The tolerance: numastat prints MB (MiB) with two decimals, rounded from
// exact values (page counts times a power of two, exact in a double), so
// the same bytes print the same, and any two figures that print alike
// differ by less than 0.01 MB: 10.5 KB, under three 4 KiB pages. Nothing
// else may differ: the process is stopped, and a numastat read before and
// after numascope's must agree, or the reads are taken again (reclaim or
// khugepaged can change a stopped process's pages).
func TestMemoryMatchesNumastat(t *testing.T) {
	numastat, err := exec.LookPath("numastat")
	if err != nil {
		testutil.SkipUnless(t, testutil.VMRequired, "numactl's numastat is not installed (sudo scripts/install-test-deps installs Debian's numactl)")
	}
	bin := buildC(t, "memmix")
	hugeSize, nHuge := reserveHugePages(t, mixHuge)

	cmd := exec.Command(bin, strconv.Itoa(mixHeapMiB), strconv.Itoa(mixStackMiB), strconv.Itoa(mixAnonMiB),
		strconv.FormatUint(uint64(nHuge)*hugeSize, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) // SIGKILL ends a stopped process too
	pid := cmd.Process.Pid

	// The phase marker: memmix prints its line once every page is touched.
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "ready") {
			t.Fatalf("memmix: %q, stderr %s", l, stderr.String())
		}
		if strings.Contains(l, "huge=0") {
			t.Logf("the kernel refused MAP_HUGETLB (%s): the Huge category is compared at 0 only", strings.TrimSpace(l))
			nHuge = 0
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("memmix did not say ready in 60 s; stderr %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)

	c, err := NewCollector(sysfs.New(""), Options{Filter: strconv.Itoa(pid), Detailed: 1, MapsEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		ref    testutil.NumastatTable
		frame  *Frame
		detail *Detail
	)
	for try := 1; ; try++ {
		before := readNumastat(t, numastat, pid)
		frame, err = c.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		if detail, err = c.Detail(pid); err != nil {
			t.Fatal(err)
		}
		after := readNumastat(t, numastat, pid)
		if fmt.Sprint(before) == fmt.Sprint(after) {
			ref = after
			break
		}
		if try == 3 {
			t.Fatalf("numastat's figures of the stopped process changed between two reads three times:\n%v\n%v", before, after)
		}
	}
	t.Logf("numastat -p %d: %v", pid, ref)

	if len(frame.Processes) != 1 || frame.Processes[0].PID != pid {
		t.Fatalf("filtered by PID %d: %d rows", pid, len(frame.Processes))
	}
	row := frame.Processes[0]
	if row.MemoryError != "" || row.MemoryByCategory == nil {
		t.Fatalf("the row has no memory by category: %q", row.MemoryError)
	}
	// The JSON stream's keys (docs/top.md) hold the same figures.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, frame); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Processes []struct {
			ByNode map[string]uint64            `json:"memory_bytes_by_node"`
			ByCat  map[string]map[string]uint64 `json:"memory_bytes_by_category"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	jsCats := &MemoryCategories{Huge: js.Processes[0].ByCat["huge"], Heap: js.Processes[0].ByCat["heap"],
		Stack: js.Processes[0].ByCat["stack"], Private: js.Processes[0].ByCat["private"]}
	if len(js.Processes[0].ByCat) != 4 {
		t.Errorf("memory_bytes_by_category has keys %v, want huge, heap, stack, private", js.Processes[0].ByCat)
	}

	for _, v := range []struct {
		what   string
		byNode map[string]uint64
		cats   *MemoryCategories
	}{
		{"top's row", row.MemoryByNode, row.MemoryByCategory},
		{"top --format json", js.Processes[0].ByNode, jsCats},
		{"the drill-down", detail.MemoryByNode, detail.MemoryByCategory},
	} {
		if v.cats == nil {
			t.Errorf("%s: no memory by category", v.what)
			continue
		}
		for _, d := range testutil.CompareNumastat(ref, v.byNode, byName(v.cats)) {
			t.Errorf("%s: %s", v.what, d)
		}
	}

	// The mix is there, each part in its category: a breakdown that put
	// everything in one row would fail here even if numastat agreed.
	cats := row.MemoryByCategory
	for _, w := range []struct {
		name string
		got  uint64
		min  uint64
	}{
		{"heap", sum(cats.Heap), mixHeapMiB << 20},
		{"stack", sum(cats.Stack), mixStackMiB << 20},
		{"private", sum(cats.Private), mixAnonMiB << 20},
	} {
		if w.got < w.min || w.got > w.min+32<<20 {
			t.Errorf("%s: %d bytes, want %d MiB and at most 32 MiB more", w.name, w.got, w.min>>20)
		}
	}
	if want := uint64(nHuge) * hugeSize; sum(cats.Huge) != want {
		t.Errorf("huge: %d bytes, want %d (%d pages of %d)", sum(cats.Huge), want, nHuge, hugeSize)
	}
}

func sum(m map[string]uint64) uint64 {
	var s uint64
	for _, v := range m {
		s += v
	}
	return s
}

// byName keys the categories by their names (memory_bytes_by_category's
// keys), as testutil.CompareNumastat takes them.
func byName(c *MemoryCategories) map[string]map[string]uint64 {
	m := map[string]map[string]uint64{}
	for k := range procnuma.Categories {
		m[k.String()] = c.Category(k)
	}
	return m
}

// readNumastat runs numastat -p pid and returns its table.
func readNumastat(t *testing.T, numastat string, pid int) testutil.NumastatTable {
	t.Helper()
	cmd := exec.Command(numastat, "-p", strconv.Itoa(pid))
	cmd.Env = append(os.Environ(), testutil.NumastatEnv)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("numastat -p %d: %v\n%s", pid, err, out)
	}
	table, err := testutil.ParseNumastat(out)
	if err != nil {
		t.Fatalf("numastat -p %d: %v:\n%s", pid, err, out)
	}
	return table
}

// waitStopped waits until process pid is in the stopped state (T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for i := 0; ; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if j := bytes.LastIndexByte(b, ')'); j > 0 && j+2 < len(b) && b[j+2] == 'T' {
			return
		}
		if i == 500 {
			t.Fatalf("process %d is not stopped 5 s after SIGSTOP: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reserveHugePages raises vm.nr_hugepages by n for the test (root only),
// restoring it after, and returns the default huge page size and how many
// pages are free to map. A kernel that has none to give leaves the Huge
// category at 0, said in the log.
func reserveHugePages(t *testing.T, n int) (size uint64, free int) {
	t.Helper()
	size = meminfoKB(t, "Hugepagesize") << 10
	if size == 0 {
		t.Logf("no Hugepagesize in /proc/meminfo (no hugetlb): the Huge category is compared at 0 only")
		return 0, 0
	}
	testutil.RequireRoot(t, "to reserve huge pages (vm.nr_hugepages)")
	const knob = "/proc/sys/vm/nr_hugepages"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Logf("%s: %v: the Huge category is compared at 0 only", knob, err)
		return size, 0
	}
	was, err := strconv.Atoi(strings.TrimSpace(string(old)))
	if err != nil {
		t.Fatalf("%s: %q", knob, old)
	}
	// Cleanups run last first: this one after the workload's kill.
	t.Cleanup(func() {
		if err := os.WriteFile(knob, old, 0); err != nil {
			t.Errorf("restoring %s to %d: %v", knob, was, err)
		}
	})
	if err := os.WriteFile(knob, []byte(strconv.Itoa(was+n)), 0); err != nil {
		t.Logf("raising %s to %d: %v: the Huge category is compared at 0 only", knob, was+n, err)
		return size, 0
	}
	free = min(n, int(meminfoKB(t, "HugePages_Free")))
	if free < n {
		t.Logf("the kernel gave %d of %d huge pages (fragmented memory): the Huge category is compared with %d", free, n, free)
	}
	return size, free
}

// meminfoKB is a field of /proc/meminfo (kB, or a count), 0 when absent.
func meminfoKB(t *testing.T, key string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
