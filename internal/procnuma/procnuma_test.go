package procnuma

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/sysfs"

	"github.com/numascope/numascope/internal/testutil"
)

// The fixtures are real captures (testdata/README.md):
//   - vm4-compute and vm4-init: the NUMA VM (4 nodes × 1 CPU, Debian's 6.1
//     kernel, NUMA balancing on with numavm's fast scanner),
//     `firsttouch --serial --mb 32` (PID 139) in the cgroup "wl";
//   - onenode: a shell (PID 7718) on a one-node build machine (6.18 kernel).
const (
	vm4PID     = 139
	onenodePID = 7718
)

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSnapshotVM4(t *testing.T) {
	p, err := Snapshot(sysfs.New("testdata/vm4-compute"), vm4PID)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Stat.Comm) != "firsttouch" || p.Stat.State != 'S' || p.Stat.UTime != 194 || p.Stat.STime != 1708 || p.Stat.Processor != 0 {
		t.Errorf("stat = %+v (comm %q)", p.Stat, p.Stat.Comm)
	}
	st := p.Status
	if string(st.Name) != "firsttouch" || st.Threads != 5 || !st.HasRSS || st.RSS != 132036<<10 ||
		!slices.Equal(st.CPUsAllowed, []int{0}) || !slices.Equal(st.MemsAllowed, []int{0, 1, 2, 3}) {
		t.Errorf("status = %+v (name %q)", st, st.Name)
	}
	// The leader (the main thread) first-touched everything and now waits:
	// no hinting faults of its own.
	want := Sched{NUMA: true, PreferredNode: -1, ScanSeq: 2, Faults: []NodeFaults{{Node: 0}, {Node: 1}, {Node: 2}, {Node: 3}}}
	if p.SchedErr != nil || !sameSched(p.Sched, want) {
		t.Errorf("sched = %+v, %v; want %+v", p.Sched, p.SchedErr, want)
	}

	// numa_maps: 35 mappings; per node the sum of the N fields × 4 KiB
	// (summed independently with awk). Most of it is still on node 0, where
	// the main thread first-touched the four 32 MiB buffers.
	if p.MapsErr != nil || len(p.Mappings) != 35 || p.Memory.Mappings != 35 {
		t.Fatalf("numa_maps: %d mappings, %v", len(p.Mappings), p.MapsErr)
	}
	wantBytes := []uint64{24799 << 12, 3519 << 12, 3255 << 12, 1457 << 12}
	if !slices.Equal(p.Memory.Bytes, wantBytes) {
		t.Errorf("memory per node = %v, want %v", p.Memory.Bytes, wantBytes)
	}
	if 2*p.Memory.Bytes[0] <= p.Memory.Sum() {
		t.Errorf("node 0 holds %d of %d bytes: not most of it", p.Memory.Bytes[0], p.Memory.Sum())
	}
	kinds := map[Kind]int{}
	for _, m := range p.Mappings {
		kinds[m.Kind]++
		if string(m.Policy) != "default" {
			t.Errorf("%x: policy %q", m.Address, m.Policy)
		}
	}
	if kinds[KindHeap] != 1 || kinds[KindStack] != 1 || kinds[KindFile] != 5 || kinds[KindAnon] != 28 {
		t.Errorf("kinds = %v", kinds)
	}
	heap := p.Mappings[6]
	if heap.Address != 0x146ff000 || heap.Kind != KindHeap || heap.Anon != 5 || heap.PageSize != 4096 ||
		!slices.Equal(heap.Nodes, []NodePages{{0, 5}}) || heap.Bytes() != 5*4096 {
		t.Errorf("heap mapping = %+v", heap)
	}
	if f := p.Mappings[3]; string(f.Path) != "/data/firsttouch" || f.Kind != KindFile ||
		!slices.Equal(f.Nodes, []NodePages{{0, 2}, {2, 2}}) || f.Dirty != 4 {
		t.Errorf("file mapping = %+v (path %q)", f, f.Path)
	}
	if buf := p.Mappings[24]; buf.Address != 0x7fe2772e0000 || buf.Anon != 8192 ||
		!slices.Equal(buf.Nodes, []NodePages{{0, 6736}, {3, 1456}}) {
		t.Errorf("buffer mapping = %+v", buf)
	}

	// Threads: the leader, worker 0 (node 0) and the workers pinned to
	// nodes 1-3, which by now run there, prefer their node and have
	// migrated their buffer (8192 pages) home. Their decayed faults are a
	// few hundred at most, far fewer than the pages migrated.
	type th struct {
		tid, cur, pref int
		migrated       uint64
		total          uint64
		utime, stime   uint64
	}
	wantThreads := []th{
		{139, 0, -1, 0, 0, 7, 103},
		{157, 0, -1, 0, 0, 171, 351},
		{158, 1, 1, 8193, 185, 75, 510},
		{159, 2, 2, 8194, 54, 68, 466},
		{160, 3, 3, 8193, 134, 210, 517},
	}
	if len(p.Threads) != len(wantThreads) {
		t.Fatalf("%d threads, want %d", len(p.Threads), len(wantThreads))
	}
	for i, w := range wantThreads {
		got := p.Threads[i]
		s := got.Sched
		if got.TID != w.tid || got.SchedErr != nil || !s.NUMA || s.CurrentNode != w.cur || s.PreferredNode != w.pref ||
			s.PagesMigrated != w.migrated || s.TotalFaults != w.total || s.ScanSeq != 5 ||
			got.Stat.UTime != w.utime || got.Stat.STime != w.stime {
			t.Errorf("thread %d = %+v, want %+v", i, got, w)
		}
		// current_node against the independent sources: the CPU of field
		// 39 and the thread's own Cpus_allowed_list (one CPU per node).
		var ts Status
		if err := ParseStatus(readFixture(t, filepath.Join("vm4-compute/proc/139/task", strconv.Itoa(w.tid), "status")), &ts); err != nil {
			t.Fatal(err)
		}
		if got.Stat.Processor != s.CurrentNode || !slices.Equal(ts.CPUsAllowed, []int{s.CurrentNode}) {
			t.Errorf("thread %d: current_node %d, processor %d, Cpus_allowed_list %v", w.tid, s.CurrentNode, got.Stat.Processor, ts.CPUsAllowed)
		}
		if w.total > 0 {
			f, ok := s.FaultsOn(w.cur)
			if !ok || f != w.total {
				t.Errorf("thread %d: faults on node %d = %d, %v; want all %d", w.tid, w.cur, f, ok, w.total)
			}
		}
	}
	if g := p.Threads[1].Sched.GroupID; g != 157 {
		t.Errorf("thread 157: numa_group_id %d, want 157", g)
	}

	if p.CgroupErr != nil || p.Cgroup != "wl" || p.CgroupNUMA == nil {
		t.Fatalf("cgroup %q: %v", p.Cgroup, p.CgroupErr)
	}
	c := p.CgroupNUMA
	if !slices.Equal(c.Anon, []uint64{33755136, 33558528, 33562624, 33558528}) || !slices.Equal(c.File, []uint64{8192, 0, 0, 0}) || len(c.Items) != 27 {
		t.Errorf("memory.numa_stat: anon %v file %v, %d lines", c.Anon, c.File, len(c.Items))
	}
	if it := c.Items[2]; it.Name != "kernel_stack" || !slices.Equal(it.ByNode, []uint64{49152, 0, 16384, 0}) {
		t.Errorf("kernel_stack = %+v", it)
	}
}

func sameSched(a, b Sched) bool {
	return a.NUMA == b.NUMA && a.PagesMigrated == b.PagesMigrated && a.PreferredNode == b.PreferredNode &&
		a.TotalFaults == b.TotalFaults && a.CurrentNode == b.CurrentNode && a.GroupID == b.GroupID &&
		a.ScanSeq == b.ScanSeq && slices.Equal(a.Faults, b.Faults)
}

func TestSnapshotOneNode(t *testing.T) {
	p, err := Snapshot(sysfs.New("testdata/onenode"), onenodePID)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Stat.Comm) != "sh" || p.Stat.UTime != 0 || p.Stat.STime != 0 || p.Stat.Processor != 1 {
		t.Errorf("stat = %+v", p.Stat)
	}
	if !slices.Equal(p.Status.CPUsAllowed, []int{0, 1}) || !slices.Equal(p.Status.MemsAllowed, []int{0}) || p.Status.RSS != 1708<<10 {
		t.Errorf("status = %+v", p.Status)
	}
	want := Sched{NUMA: true, PreferredNode: -1, Faults: []NodeFaults{{Node: 0}}}
	if !sameSched(p.Sched, want) {
		t.Errorf("sched = %+v, want %+v", p.Sched, want)
	}
	if !slices.Equal(p.Memory.Bytes, []uint64{426 << 12}) || len(p.Mappings) != 24 {
		t.Errorf("memory = %v in %d mappings", p.Memory.Bytes, len(p.Mappings))
	}
	if len(p.Threads) != 1 || p.Threads[0].TID != onenodePID {
		t.Errorf("threads = %+v", p.Threads)
	}
	// "0::/": the root cgroup has no memory.numa_stat; said, not an error.
	if p.CgroupErr == nil || !strings.Contains(p.CgroupErr.Error(), "root cgroup") || p.CgroupNUMA != nil {
		t.Errorf("cgroup: %v", p.CgroupErr)
	}
}

// TestSnapshotLive reads this test process from the real /proc.
func TestSnapshotLive(t *testing.T) {
	p, err := Snapshot(sysfs.New(""), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Threads) == 0 || p.Threads[0].TID != os.Getpid() || p.Status.Threads < 1 || len(p.Status.CPUsAllowed) == 0 {
		t.Errorf("process = %+v", p)
	}
	if !strings.HasPrefix("procnuma.test", string(p.Stat.Comm)) || !bytes.Equal(p.Stat.Comm, p.Status.Name) {
		t.Errorf("comm %q, name %q", p.Stat.Comm, p.Status.Name)
	}
	if _, err := os.Stat("/proc/self/numa_maps"); err == nil {
		if p.MapsErr != nil || p.Memory.Sum() == 0 || p.Memory.Sum() > 2*p.Status.RSS+64<<20 {
			t.Errorf("numa_maps: %d bytes (RSS %d): %v", p.Memory.Sum(), p.Status.RSS, p.MapsErr)
		}
	}
}

func TestSnapshotGone(t *testing.T) {
	_, err := Snapshot(sysfs.New("testdata/vm4-compute"), 4242)
	var g *GoneError
	if !errors.As(err, &g) || g.PID != 4242 || !errors.Is(err, ErrGone) {
		t.Fatalf("missing process: %v, want a GoneError", err)
	}

	// A thread that exits between the listing and its read is left out;
	// the process goes on.
	root := testutil.CopyTree(t, "testdata/vm4-compute")
	if err := os.Remove(filepath.Join(root, "proc/139/task/158/stat")); err != nil {
		t.Fatal(err)
	}
	p, err := Snapshot(sysfs.New(root), vm4PID)
	if err != nil || len(p.Threads) != 4 || p.Threads[2].TID != 159 {
		t.Fatalf("thread gone: %v, %+v", err, p)
	}

	// The process exits after its stat was read: its status is gone.
	if err := os.Remove(filepath.Join(root, "proc/139/status")); err != nil {
		t.Fatal(err)
	}
	if _, err := Snapshot(sysfs.New(root), vm4PID); !errors.Is(err, ErrGone) {
		t.Fatalf("status gone: %v, want a GoneError", err)
	}
}

func TestSnapshotNoSchedFile(t *testing.T) {
	// A kernel before 6.15 built without CONFIG_SCHED_DEBUG
	// has no sched files: said per task, the rest is read.
	root := testutil.CopyTree(t, "testdata/onenode")
	for _, f := range []string{"proc/7718/sched", "proc/7718/task/7718/sched"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Snapshot(sysfs.New(root), onenodePID)
	if err != nil {
		t.Fatal(err)
	}
	if p.SchedErr == nil || !strings.Contains(p.SchedErr.Error(), "CONFIG_SCHED_DEBUG") || p.Sched.NUMA || errors.Is(p.SchedErr, ErrGone) {
		t.Errorf("sched: %v", p.SchedErr)
	}
	if len(p.Threads) != 1 || p.Threads[0].SchedErr == nil {
		t.Errorf("threads: %+v", p.Threads)
	}
}

func TestSnapshotRefusesSymlinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("00400000 default file=/secret N0=1 kernelpagesize_kB=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := testutil.CopyTree(t, "testdata/vm4-compute")
	maps := filepath.Join(root, "proc/139/numa_maps")
	os.Remove(maps)
	if err := os.Symlink(secret, maps); err != nil {
		t.Fatal(err)
	}
	numaStat := filepath.Join(root, "sys/fs/cgroup/wl/memory.numa_stat")
	os.Remove(numaStat)
	if err := os.Symlink(secret, numaStat); err != nil {
		t.Fatal(err)
	}
	p, err := Snapshot(sysfs.New(root), vm4PID)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(p.MapsErr, beneath.ErrSymlink) || len(p.Mappings) != 0 {
		t.Errorf("numa_maps through a symlink: %v, %d mappings", p.MapsErr, len(p.Mappings))
	}
	if !errors.Is(p.CgroupErr, beneath.ErrSymlink) || p.CgroupNUMA != nil {
		t.Errorf("memory.numa_stat through a symlink: %v", p.CgroupErr)
	}

	// The process directory itself a symlink to another tree.
	root2 := t.TempDir()
	os.MkdirAll(filepath.Join(root2, "proc"), 0o755)
	if err := os.Symlink(filepath.Join(root, "proc/139"), filepath.Join(root2, "proc/139")); err != nil {
		t.Fatal(err)
	}
	if _, err := Snapshot(sysfs.New(root2), vm4PID); !errors.Is(err, beneath.ErrSymlink) {
		t.Errorf("process directory through a symlink: %v", err)
	}

	// A cgroup path that climbs out of the cgroup mount.
	if err := os.WriteFile(filepath.Join(root, "proc/139/cgroup"), []byte("0::/../../../etc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = Snapshot(sysfs.New(root), vm4PID)
	if err != nil || !errors.Is(p.CgroupErr, beneath.ErrOutside) {
		t.Errorf("cgroup path with ..: %v, %v", err, p.CgroupErr)
	}
}

func TestSnapshotBoundsInput(t *testing.T) {
	root := testutil.CopyTree(t, "testdata/onenode")
	big := bytes.Repeat([]byte("x"), maxSmallFile+1)
	if err := os.WriteFile(filepath.Join(root, "proc/7718/status"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Snapshot(sysfs.New(root), onenodePID); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 1 MiB status: %v", err)
	}
}

// TestSnapshotVM4Init reads the capture TestProcNUMA made (testdata/README.md):
// numa_maps right after the first touch, the threads' sched two seconds
// into the compute phase, where NUMA groups have formed.
func TestSnapshotVM4Init(t *testing.T) {
	p, err := Snapshot(sysfs.New("testdata/vm4-init"), vm4PID)
	if err != nil {
		t.Fatal(err)
	}
	// 33023 pages on node 0 (the four buffers: 4 × 8192), 8 on node 3.
	if want := []uint64{33023 << 12, 0, 0, 8 << 12}; !slices.Equal(p.Memory.Bytes, want) || len(p.Mappings) != 35 {
		t.Errorf("memory per node = %v in %d mappings, want %v", p.Memory.Bytes, len(p.Mappings), want)
	}
	if st := p.Mappings[32]; st.Kind != KindStack || !slices.Equal(st.Nodes, []NodePages{{0, 16}, {3, 3}}) {
		t.Errorf("stack = %+v", st)
	}
	if c := p.CgroupNUMA; c == nil || !slices.Equal(c.Anon, []uint64{134406144, 0, 0, 32768}) {
		t.Errorf("memory.numa_stat = %+v, %v", c, p.CgroupErr)
	}
	type th struct {
		tid, cur, pref, group int
		migrated, total       uint64
	}
	wantThreads := []th{
		{139, 0, 0, 0, 11, 6},
		{156, 0, 0, 159, 1, 13217},
		{157, 1, 1, 0, 8193, 11483},
		{158, 2, 2, 159, 8193, 14635},
		{159, 3, 3, 159, 8193, 18428},
	}
	if len(p.Threads) != len(wantThreads) {
		t.Fatalf("%d threads", len(p.Threads))
	}
	for i, w := range wantThreads {
		s := p.Threads[i].Sched
		if p.Threads[i].TID != w.tid || s.CurrentNode != w.cur || s.PreferredNode != w.pref || s.GroupID != w.group ||
			s.PagesMigrated != w.migrated || s.TotalFaults != w.total || p.Threads[i].Stat.Processor != w.cur {
			t.Errorf("thread %d = %+v, want %+v", i, p.Threads[i], w)
		}
		// total_numa_faults is the sum of the task's per-node values.
		var sum uint64
		for _, f := range s.Faults {
			sum += f.TaskPrivate + f.TaskShared
		}
		if sum != s.TotalFaults {
			t.Errorf("thread %d: numa_faults sum to %d, total_numa_faults %d", w.tid, sum, s.TotalFaults)
		}
	}
	// Worker 3 (node 3), in group 159 with workers 0 and 2: its own faults
	// on node 3, the group's on nodes 0, 2 and 3.
	want := []NodeFaults{
		{Node: 0, TaskShared: 2, GroupPrivate: 13666, GroupShared: 4},
		{Node: 1},
		{Node: 2, GroupPrivate: 14634},
		{Node: 3, TaskPrivate: 18426, GroupPrivate: 18426},
	}
	if got := p.Threads[4].Sched.Faults; !slices.Equal(got, want) {
		t.Errorf("thread 159 numa_faults = %+v, want %+v", got, want)
	}
}

// sink keeps a read the compiler would otherwise drop.
var sink byte

// TestNUMAMapsPathWithCarriageReturn: numa_maps escapes only newline, tab,
// space and "=" in a path, so a carriage return is part of a file's name. A
// process that maps files named "x\rhuge" and "y\rheap" must not have its
// pages filed as hugetlb memory, nor its numa_maps refused as a line of two
// kinds: each is one file mapping, its path whole.
func TestNUMAMapsPathWithCarriageReturn(t *testing.T) {
	if _, err := os.Stat("/proc/self/numa_maps"); err != nil {
		t.Skipf("no numa_maps: %v", err)
	}
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"x\rhuge", "y\rheap"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(mem)
		sink += mem[0] // fault the page in: present in numa_maps
		paths = append(paths, p)
	}
	r := NewReader(sysfs.New(""))
	defer r.Close()
	found := 0
	err := r.ReadNUMAMaps(os.Getpid(), func(m *Mapping) error {
		if !slices.Contains(paths, string(m.Path)) {
			return nil
		}
		found++
		if m.Kind != KindFile || m.Huge || m.Category() != CategoryPrivate || m.Bytes() != 4096 {
			t.Errorf("%q: kind %v, huge %v, category %v, %d bytes; want one private file page", m.Path, m.Kind, m.Huge, m.Category(), m.Bytes())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading this process's numa_maps: %v", err)
	}
	if found != len(paths) {
		t.Errorf("%d of the %d files found by their whole path", found, len(paths))
	}
}

// TestSnapshotThreadsExitMidRead reads this test process from the real
// /proc while its threads start and exit as fast as they can: a thread
// that exits between the listing of task/ and the read of its files
// (ENOENT, or ESRCH from a file already open) is the kernel's contract,
// and is left out, never an error (issue 29: a cat of such a thread's
// sched failed the VM test).
func TestSnapshotThreadsExitMidRead(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				done := make(chan struct{})
				go func() {
					// A goroutine that exits locked to its thread takes
					// the thread with it: an OS thread exits.
					runtime.LockOSThread()
					time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
					close(done)
				}()
				<-done
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	_, err := os.Stat("/proc/self/sched") // a kernel without it says so in SchedErr
	hasSched := err == nil
	r := NewReader(sysfs.New(""))
	defer r.Close()
	var p Process
	seen := map[int]bool{}
	deadline := time.Now().Add(3 * time.Second)
	reads := 0
	for ; reads < 300 || len(seen) < 50; reads++ {
		if time.Now().After(deadline) && reads >= 50 {
			break
		}
		if err := r.Read(os.Getpid(), &p); err != nil {
			t.Fatalf("read %d of a process whose threads come and go: %v", reads, err)
		}
		for _, th := range p.Threads {
			seen[th.TID] = true
			if th.SchedErr != nil && hasSched {
				t.Fatalf("read %d: thread %d: sched: %v (a thread that exits is left out, not an error)", reads, th.TID, th.SchedErr)
			}
		}
	}
	t.Logf("%d reads, %d distinct threads seen", reads, len(seen))
	if len(seen) < 20 {
		t.Errorf("only %d distinct threads in %d reads: the threads did not come and go", len(seen), reads)
	}
}
