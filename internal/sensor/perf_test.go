package sensor

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/cpuratio"
	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// livePerf opens a perf sensor on this machine with opts. A kernel that does
// not let this process count per CPU fails the test as root (CI), and skips
// it only under NUMASCOPE_TEST_NO_ROOT (testutil.NotPermitted).
func livePerf(t testing.TB, opts PerfOptions) *perfSensor {
	t.Helper()
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	s := &perfSensor{opts: opts}
	if err := s.Open(Env{FS: fs, Topology: topo}); err != nil {
		t.Fatalf("perf sensor: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	i := s.index("page-faults")
	if s.events[i].unavail != nil {
		testutil.NotPermitted(t, "this process may not count per CPU here: %v", s.events[i].unavail)
	}
	return s
}

func (p *perfSensor) index(name string) int {
	for i, e := range p.evs {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// pinTo locks the goroutine to its thread and the thread to one CPU, so
// that work it does is counted at that CPU's source.
func pinTo(t testing.TB, cpu int) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatalf("pinning to CPU %d: %v", cpu, err)
	}
}

// faultPages takes exactly pages*rounds minor page faults: it maps pages
// anonymous pages without huge pages and, rounds times, writes one byte to
// each and then drops them with MADV_DONTNEED, so that the next write faults
// again. Re-faulting one region makes the known work large against what
// other tasks on the same CPU add, without needing more memory.
func faultPages(t testing.TB, pages, rounds int) {
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, pages*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rounds; r++ {
		for i := 0; i < pages; i++ {
			mem[i*ps] = 1
		}
		if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPerfCountsKnownWork counts the page faults of a workload that takes
// exactly N of them, per CPU source and summed per node, with the software
// event, its minor-fault split and the page-fault tracepoint; and the
// syscalls of a workload that makes exactly N getppid calls, through a
// tracepoint named with PerfOptions.Events.
func TestPerfCountsKnownWork(t *testing.T) {
	for _, perCPU := range []bool{false, true} {
		name := "per-node"
		if perCPU {
			name = "per-cpu"
		}
		t.Run(name, func(t *testing.T) {
			s := livePerf(t, PerfOptions{PerCPU: perCPU, Events: []string{"syscalls:sys_enter_getppid"}})
			want := []string{"page-faults", "minor-faults", "exceptions:page_fault_user", "syscalls:sys_enter_getppid"}
			var idx []int
			for _, w := range want {
				i := s.index(w)
				if i < 0 {
					t.Fatalf("no event %s", w)
				}
				if s.events[i].unavail != nil {
					testutil.NotPermitted(t, "%s: %v", w, s.events[i].unavail)
				}
				idx = append(idx, i)
			}
			if err := s.Enable(idx); err != nil {
				t.Fatal(err)
			}
			cpu := s.srcCPUs[len(s.srcCPUs)-1][0] // the last source's first CPU
			src := s.srcOf[cpu]
			pinTo(t, cpu)
			nsrc := len(s.Sources())
			before := make([]int64, len(idx)*nsrc)
			after := make([]int64, len(idx)*nsrc)
			// The counts are per CPU, so other tasks on the pinned CPU (per
			// node: on any CPU of the node, all of them on a one-node
			// machine) add to them: a parallel go build adds tens of
			// thousands of faults a second, and a machine busy with several
			// such added 115 000 to the known work's 200 000 (issue 29). So
			// what they add is measured, not assumed small: the kernel's
			// count of every fault on the machine (/proc/vmstat pgfault),
			// read around the perf reads.
			const pages, rounds = 20000, 10
			const n = pages * rounds
			pgfault0 := refKV(t, "/proc/vmstat")["pgfault"]
			if err := s.Read(before); err != nil {
				t.Fatal(err)
			}
			faultPages(t, pages, rounds)
			for i := 0; i < n; i++ {
				unix.Getppid()
			}
			if err := s.Read(after); err != nil {
				t.Fatal(err)
			}
			machine := refKV(t, "/proc/vmstat")["pgfault"] - pgfault0
			for k, w := range want {
				got := after[k*nsrc+src] - before[k*nsrc+src]
				total := int64(0)
				for j := 0; j < nsrc; j++ {
					total += after[k*nsrc+j] - before[k*nsrc+j]
				}
				// At least the known work, at the source of the CPU that did
				// it.
				if got < n {
					t.Errorf("%s at source %s: %d, want at least the known work's %d", w, s.Sources()[src], got, n)
				}
				t.Logf("%s: %d at source %s (known work %d), %d summed; the machine took %d page faults meanwhile", w, got, s.Sources()[src], n, total, machine)
				if total < got {
					t.Errorf("%s: the sum over sources %d is below one source's %d", w, total, got)
				}
				if w == "syscalls:sys_enter_getppid" {
					// No other task calls getppid by the ten thousand.
					if got > n+n/2 {
						t.Errorf("%s at source %s: %d, want %d (plus a few from other tasks)", w, s.Sources()[src], got, n)
					}
					continue
				}
				// Summed over the sources, the faults are the machine's:
				// counted twice they would be 2(n + others), at least
				// n more than the machine's n + others. The n/2 allowed
				// above it is for the faults perf counts that never reach
				// the kernel's fault handler, and so not pgfault: those on
				// a bad address that end in a signal (a JIT's safepoint
				// polls, Go's nil checks), a few among the machine's.
				if total > machine+n/2 {
					t.Errorf("%s: %d summed over sources, but the machine took %d page faults meanwhile: counted twice?", w, total, machine)
				}
			}
		})
	}
}

func TestPerfReadNoAlloc(t *testing.T) {
	s := livePerf(t, PerfOptions{})
	var idx []int
	for i, pe := range s.events {
		if pe.unavail == nil && pe.mux == "" {
			idx = append(idx, i)
		}
	}
	if err := s.Enable(idx); err != nil {
		t.Fatal(err)
	}
	dst := make([]int64, len(idx)*len(s.Sources()))
	if a := testing.AllocsPerRun(200, func() {
		if err := s.Read(dst); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Read allocates %v times per call", a)
	}
}

// TestPerfGracefulAbsence: where the machine has no core PMU (this build
// machine is a VM without one), hardware events are listed as unavailable
// with the reason and the fix, Enable refuses them saying so, and the
// software events and tracepoints still count.
func TestPerfGracefulAbsence(t *testing.T) {
	if perfevent.CorePMU(sysfs.New("")) != nil {
		t.Skip("this machine has a core PMU")
	}
	s := livePerf(t, PerfOptions{})
	i := s.index("cycles")
	if i < 0 {
		t.Fatal("cycles is not listed")
	}
	d := s.evs[i].Desc
	if !strings.Contains(d, "UNAVAILABLE") || !strings.Contains(d, "no core PMU") || !strings.Contains(d, "pmu=on") {
		t.Errorf("cycles: description does not say why and what to do: %q", d)
	}
	err := s.Enable([]int{s.index("page-faults"), i})
	if err == nil || !strings.Contains(err.Error(), "no core PMU") {
		t.Errorf("Enable(cycles) = %v, want the reason", err)
	}
	if err := s.Enable([]int{s.index("page-faults"), s.index("context-switches")}); err != nil {
		t.Errorf("software events after a refused hardware one: %v", err)
	}
	if s.index("mux-cpu") >= 0 {
		t.Error("a mux event is offered for a PMU that is absent")
	}
	u := &perfSensor{uncore: true}
	topo, _ := topology.Discover(sysfs.New(""))
	if err := u.Open(Env{FS: sysfs.New(""), Topology: topo}); err == nil {
		if len(u.Events()) == 0 {
			t.Error("uncore opened with no events")
		}
	} else if !strings.Contains(err.Error(), "no uncore PMU") {
		t.Errorf("uncore: %v", err)
	}
}

func TestPerfDiagnose(t *testing.T) {
	fs := sysfs.New("")
	u := diagnose(fs, "cycles", unix.EACCES)
	if !strings.Contains(u.Reason, "perf_event_paranoid") || !strings.Contains(u.Fix, "cap_perfmon") {
		t.Errorf("EACCES: %v", u)
	}
	if u := diagnose(fs, "x", unix.ENOENT); !strings.Contains(u.Reason, "rejects the event") {
		t.Errorf("ENOENT: %v", u)
	}
	if u := diagnose(fs, "x", unix.EMFILE); !strings.Contains(u.Fix, "ulimit") {
		t.Errorf("EMFILE: %v", u)
	}
}

func TestPerfCapturedTree(t *testing.T) {
	s := &perfSensor{}
	err := s.Open(Env{FS: sysfs.New("testdata"), Topology: &topology.Topology{}})
	if err == nil || !strings.Contains(err.Error(), "running kernel only") {
		t.Errorf("Open on a captured tree: %v", err)
	}
}

func TestPerfBadUserSpec(t *testing.T) {
	fs := sysfs.New("")
	topo, _ := topology.Discover(fs)
	s := NewPerf(PerfOptions{Events: []string{"cpu/event=0xd3"}})
	err := s.Open(Env{FS: fs, Topology: topo})
	if err == nil || !strings.Contains(err.Error(), "--perf-events") || !strings.Contains(err.Error(), "closing '/'") {
		t.Errorf("Open with a malformed --perf-events: %v", err)
	}
}

// record builds a PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING record.
func record(enabled, running uint64, vals ...uint64) []byte {
	b := make([]byte, 8*(3+len(vals)))
	binary.NativeEndian.PutUint64(b, uint64(len(vals)))
	binary.NativeEndian.PutUint64(b[8:], enabled)
	binary.NativeEndian.PutUint64(b[16:], running)
	for i, v := range vals {
		binary.NativeEndian.PutUint64(b[24+8*i:], v)
	}
	return b
}

// TestPerfMultiplexCorrection feeds records to a group: counts of an
// interval are scaled by Δenabled/Δrunning of that interval, the ratio is
// reported in ppm, an interval in which the group never ran adds nothing,
// and totals never go backwards.
func TestPerfMultiplexCorrection(t *testing.T) {
	g := &perfGroup{slots: []int{0, 1}, prev: make([]uint64, 2), acc: make([]uint64, 2)}
	steps := []struct {
		rec       []byte
		acc       []uint64
		ratio     uint64
		wantError bool
	}{
		{record(1000, 1000, 50, 7), []uint64{0, 0}, ppm, false},                    // baseline
		{record(2000, 2000, 150, 17), []uint64{100, 10}, ppm, false},               // counted all the time
		{record(3000, 2500, 200, 27), []uint64{200, 30}, 500000, false},            // half the time: ×2
		{record(4000, 2500, 200, 27), []uint64{200, 30}, 0, false},                 // not scheduled
		{record(5000, 2750, 230, 30), []uint64{320, 42}, 250000, false},            // a quarter: ×4
		{record(5000, 2750, 230), []uint64{320, 42}, 250000, true},                 // wrong member count
		{record(6000, 3750, 1<<40+230, 30), []uint64{320 + 1<<40, 42}, ppm, false}, // big values
	}
	g.ratio = ppm
	for i, st := range steps {
		err := g.account(st.rec)
		if (err != nil) != st.wantError {
			t.Fatalf("step %d: error %v", i, err)
		}
		if !g.primed {
			t.Fatalf("step %d: not primed", i)
		}
		if !reflect.DeepEqual(g.acc, st.acc) || g.ratio != st.ratio {
			t.Errorf("step %d: acc %v ratio %d, want %v %d", i, g.acc, g.ratio, st.acc, st.ratio)
		}
	}
}

func TestSplitPerfSpecs(t *testing.T) {
	got := SplitPerfSpecs("cycles,cpu/event=0xd3,umask=0x01,name=local_dram/; sched:sched_move_numa  uncore_imc/cas_count_read/,")
	want := []string{"cycles", "cpu/event=0xd3,umask=0x01,name=local_dram/", "sched:sched_move_numa", "uncore_imc/cas_count_read/"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExpandPresets(t *testing.T) {
	p := &perfSensor{presets: map[string][]string{"numa-traffic": {"local_dram", "remote_dram"}}}
	u := &perfSensor{uncore: true, presets: map[string][]string{"numa-traffic": {"upi_tx_data"}, "memory-bandwidth": {"imc_read"}}}
	got, err := ExpandPresets([]string{"node.numa_miss", "@numa-traffic"}, map[string]Sensor{"perf": p, "uncore": u, "vmstat": &vmstatSensor{}})
	want := []string{"node.numa_miss", "perf.local_dram", "perf.remote_dram", "uncore.upi_tx_data"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q %v, want %q", got, err, want)
	}
	p.presetNote = "no preset model covers this CPU (x): add one with --presets FILE"
	_, err = ExpandPresets([]string{"@interconnect"}, map[string]Sensor{"perf": p, "uncore": u})
	if err == nil || !strings.Contains(err.Error(), "@memory-bandwidth") || !strings.Contains(err.Error(), "--presets") {
		t.Errorf("unknown preset: %v", err)
	}
}

// BenchmarkPerfRead measures Read of every available software event and
// NUMA tracepoint; BenchmarkPerfReadBare does only the read() calls Read
// makes (one per group), for the overhead ratio.
func BenchmarkPerfRead(b *testing.B) {
	s := benchPerf(b)
	dst := make([]int64, len(s.c.slotDst))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Read(dst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(s.c.groups)), "groups")
	b.ReportMetric(float64(len(dst)), "values")
}

func BenchmarkPerfReadBare(b *testing.B) {
	s := benchPerf(b)
	buf := make([]byte, 4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, g := range s.c.groups {
			if _, err := unix.Read(g.fds[0], buf[:len(g.buf)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(s.c.groups)), "groups")
}

// BenchmarkPerfReadVsKernel is the hot-path figure of docs/performance.md:
// the thread CPU time of Read against the bare read() calls it makes (one
// per group), alternated in chunks within one run so that noise hits both.
func BenchmarkPerfReadVsKernel(b *testing.B) {
	s := benchPerf(b)
	dst := make([]int64, len(s.c.slotDst))
	buf := make([]byte, 4096)
	bare := func() {
		for _, g := range s.c.groups {
			if _, err := unix.Read(g.fds[0], buf[:len(g.buf)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	read := func() {
		if err := s.Read(dst); err != nil {
			b.Fatal(err)
		}
	}
	cpuratio.Compare(b, "read", read, "bare-read", bare)
	b.ReportMetric(float64(len(s.c.groups)), "groups")
}

func benchPerf(b *testing.B) *perfSensor {
	s := livePerf(b, PerfOptions{})
	var idx []int
	for i, pe := range s.events {
		if pe.unavail == nil && pe.mux == "" {
			idx = append(idx, i)
		}
	}
	if err := s.Enable(idx); err != nil {
		b.Fatal(err)
	}
	return s
}

// TestUncoreInstances resolves an uncore event written without its
// instance number on the Skylake-SP fixture (uncore_imc_0 and _1, cpumask
// 0,4: one CPU per socket) and checks that the uncore sensor opens it once
// per instance on each socket's cpumask CPU, with each instance's own PMU
// type, at that socket's source.
func TestUncoreInstances(t *testing.T) {
	sp, err := perfevent.Parse("uncore_imc/cas_count_read/")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := perfevent.Resolve(sysfs.New("../perfevent/testdata/intel-skx"), sp)
	if err != nil {
		t.Fatal(err)
	}
	p := &perfSensor{uncore: true, sources: []string{"0", "1"}, srcCPUs: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}},
		srcOf: map[int]int{0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}}
	for s, want := range []struct {
		cpus  []int
		types []uint32
	}{{[]int{0, 0}, []uint32{14, 15}}, {[]int{4, 4}, []uint32{14, 15}}} {
		cpus, types := p.eventCPUs(ev, s)
		if !reflect.DeepEqual(cpus, want.cpus) || !reflect.DeepEqual(types, want.types) {
			t.Errorf("source %d: CPUs %v types %v, want %v %v", s, cpus, types, want.cpus, want.types)
		}
	}
	if n := p.groupsPerSource("uncore_imc", 0); n != 0 {
		t.Errorf("groupsPerSource with no events = %d", n)
	}
	// A per-CPU event of the perf sensor goes to every CPU of the source.
	g, _ := perfevent.Parse("page-faults")
	pf, err := perfevent.Resolve(sysfs.New("../perfevent/testdata/intel-skx"), g)
	if err != nil {
		t.Fatal(err)
	}
	if cpus, _ := p.eventCPUs(pf, 1); !reflect.DeepEqual(cpus, []int{4, 5, 6, 7}) {
		t.Errorf("page-faults on source 1: CPUs %v", cpus)
	}
	if uncoreName(sp) != true || uncoreName(g) != false {
		t.Error("uncoreName misclassifies")
	}
}

// TestCountersRead drives counters.read with group records written into
// pipes (a read() of a pipe returns the record as a perf fd would): two
// CPUs of one source, one multiplexed at 50%, a scaled event and the mux
// event, summed per source.
func TestCountersRead(t *testing.T) {
	pipe := func() (r, w int) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[1]) })
		return p[0], p[1]
	}
	// Enabled events: k=0 "imc" (scale 64), k=1 "mux"; one source.
	c := &counters{nsrc: 1, slotDst: []int{0, 1}, slotScale: []float64{64, 0}, sum: make([]uint64, 2)}
	var writers []int
	for cpu := 0; cpu < 2; cpu++ {
		r, w := pipe()
		writers = append(writers, w)
		c.groups = append(c.groups, &perfGroup{fds: []int{r}, cpu: cpu, class: "cpu", buf: make([]byte, 8*4),
			slots: []int{0}, prev: make([]uint64, 1), acc: make([]uint64, 1), muxSlot: 1, muxDiv: 1, ratio: ppm})
	}
	defer c.close()
	dst := make([]int64, 2)
	step := func(recs ...[]byte) {
		t.Helper()
		for i, rec := range recs {
			if _, err := unix.Write(writers[i], rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.read(dst); err != nil {
			t.Fatal(err)
		}
	}
	step(record(100, 100, 10), record(100, 50, 5)) // baselines
	if dst[0] != 0 || dst[1] != ppm+ppm/2 {
		t.Errorf("after the baselines: %v", dst)
	}
	step(record(200, 200, 20), record(200, 100, 10)) // CPU 1 counted half the time
	// CPU 0: 10 counts; CPU 1: 5 counts ×2 = 10; ×64 bytes.
	if dst[0] != 20*64 || dst[1] != ppm+ppm/2 {
		t.Errorf("after one interval: %v, want [%d %d]", dst, 20*64, ppm+ppm/2)
	}
	// No new counts, time going on (a group whose enabled time stops has
	// been turned off: TestCountersHotplug).
	var same [21][2][]byte
	for k := range same {
		same[k] = [2][]byte{record(uint64(300+k), uint64(300+k), 20), record(uint64(300+k), 100, 10)}
	}
	k := 0
	if a := testing.AllocsPerRun(20, func() {
		for i, w := range writers {
			unix.Write(w, same[k][i])
		}
		k++
		if err := c.read(dst); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("counters.read allocates %v times", a)
	}
	if dst[0] != 20*64 {
		t.Errorf("counts changed without new counts: %v", dst)
	}
}

// BenchmarkPerfAccount is the user-space part of Read per group: decoding
// a 13-member record and accounting it (multiplexed, so with the scaling).
func BenchmarkPerfAccount(b *testing.B) {
	const n = 13
	g := &perfGroup{slots: make([]int, n), prev: make([]uint64, n), acc: make([]uint64, n)}
	recs := [2][]byte{record(1000, 500, make([]uint64, n)...), record(2000, 1000, make([]uint64, n)...)}
	for i := range n {
		binary.NativeEndian.PutUint64(recs[1][24+8*i:], uint64(1000+i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = g.account(recs[i&1])
	}
}

// TestCountersHotplug: a group whose CPU went offline (its record comes
// back short, as when the kernel detaches a group's members) fails its
// source once, saying so, then keeps its counts as they were, and the
// other source reads on; a group whose enabled time stopped while its CPU
// is online (offline and back between two reads) is reopened at once, or,
// where that fails, said so and kept off. The reopening itself is held in
// the NUMA VM (TestPerfCPUHotplug, internal/vmtest).
func TestCountersHotplug(t *testing.T) {
	root := t.TempDir()
	online := filepath.Join(root, "sys/devices/system/cpu/online")
	if err := os.MkdirAll(filepath.Dir(online), 0o755); err != nil {
		t.Fatal(err)
	}
	setOnline := func(list string) {
		if err := os.WriteFile(online, []byte(list+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setOnline("0-1")
	c := &counters{nsrc: 2, fs: sysfs.New(root), slotDst: []int{0, 1}, slotScale: []float64{0, 0}, sum: make([]uint64, 2)}
	var writers []int
	for cpu := 0; cpu < 2; cpu++ {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[1]) })
		writers = append(writers, p[1])
		c.groups = append(c.groups, &perfGroup{fds: []int{p[0]}, cpu: cpu, src: cpu, class: "sw", buf: make([]byte, 8*4),
			slots: []int{cpu}, prev: make([]uint64, 1), acc: make([]uint64, 1), muxSlot: -1, muxDiv: 1, ratio: ppm})
	}
	defer c.close()
	dst := make([]int64, 2)
	step := func(recs ...[]byte) error {
		t.Helper()
		for i, rec := range recs {
			if rec == nil {
				continue
			}
			if _, err := unix.Write(writers[i], rec); err != nil {
				t.Fatal(err)
			}
		}
		return c.read(dst)
	}
	sourceErr := func(err error, src int, want string) {
		t.Helper()
		se, ok := err.(*SourceError)
		if !ok || len(se.Sources) != 1 || se.Sources[0] != src || !strings.Contains(se.Errs[0].Error(), want) {
			t.Errorf("read: %v, want source %d failed with %q", err, src, want)
		}
	}
	if err := step(record(100, 100, 10), record(100, 100, 50)); err != nil {
		t.Fatal(err)
	}
	if err := step(record(200, 200, 20), record(200, 200, 60)); err != nil || dst[0] != 10 || dst[1] != 10 {
		t.Fatalf("one interval: %v, %v", dst, err)
	}
	// CPU 1 goes offline: its leader's record has lost its member.
	setOnline("0")
	sourceErr(step(record(300, 300, 30), record(300, 300)[:24]), 1, "CPU 1 went offline")
	if dst[0] != 20 || dst[1] != 10 || !c.groups[1].off || len(c.groups[1].fds) != 0 || c.offs != 1 {
		t.Errorf("after CPU 1 went offline: %v, off %v, fds %v, offs %d; want [20 10], off, no fds, 1", dst, c.groups[1].off, c.groups[1].fds, c.offs)
	}
	if err := step(record(400, 400, 40), nil); err != nil || dst[0] != 30 || dst[1] != 10 {
		t.Errorf("with CPU 1 offline: %v, %v; want [30 10] and no error", dst, err)
	}
	// CPU 0's group stops counting while its CPU is online: it is
	// reopened at once (here that fails: the test's group has no event).
	sourceErr(step(record(400, 400, 40), nil), 0, "CPU 0 went offline and came back, but its sw counters could not be reopened")
	if !c.groups[0].off || c.offs != 2 || dst[0] != 30 {
		t.Errorf("after CPU 0 stopped: off %v, offs %d, %v", c.groups[0].off, c.offs, dst)
	}
	// Tried again once a second, quietly: a failure is said once.
	c.nextCheck = time.Time{}
	if err := step(nil, nil); err != nil || !c.groups[0].off || !c.nextCheck.After(time.Now()) {
		t.Errorf("retrying CPU 0: %v, off %v, next check %v", err, c.groups[0].off, c.nextCheck)
	}
	// A CPU that stays offline (nosmt) is looked for once a second for
	// as long as the sensor runs: without allocating.
	setOnline("2")
	if a := testing.AllocsPerRun(20, func() {
		c.nextCheck = time.Time{}
		if err := c.read(dst); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("looking for offline CPUs allocates %v times a read", a)
	}
}
