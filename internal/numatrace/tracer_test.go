package numatrace

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
)

// TestOpenLive opens the Tracer on this machine. Where the kernel has no
// kprobe events (CONFIG_KPROBE_EVENTS off, as on the build machines) the
// faults source must say so, and what top shows instead; where it has
// them, root gets the probe, and Close removes it. migrate:mm_migrate_pages
// opens wherever tracefs is (as root). The PMU source is read where a
// preset covers the CPU, and otherwise says why.
func TestOpenLive(t *testing.T) {
	tr, err := Open(sysfs.New(""), Options{PMU: true})
	if err != nil {
		t.Fatal(err)
	}
	srcs := tr.Sources()
	if len(srcs) != 3 || srcs[0].Name != SourceFaults || srcs[1].Name != SourceMigrations || srcs[2].Name != SourcePMU {
		t.Fatalf("sources %+v", srcs)
	}
	for _, s := range srcs {
		t.Logf("%+v", s)
		if s.OK == (s.Why != "") || strings.Contains(s.Why, "\n") {
			t.Errorf("source %s: OK %v, why %q: want a one-line reason exactly when not OK", s.Name, s.OK, s.Why)
		}
	}
	tracefs := ""
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if st, err := os.Stat(d + "/events"); err == nil && st.IsDir() {
			tracefs = d
			break
		}
	}
	f := srcs[0]
	switch _, err := os.Stat(tracefs + "/kprobe_events"); {
	case tracefs != "" && err != nil:
		if f.OK || !strings.Contains(f.Why, "no kprobe events") || !strings.Contains(f.Why, "CONFIG_KPROBE_EVENTS") ||
			!strings.Contains(f.Why, "remote share of the NUMA balancer's recent, decayed faults") {
			t.Errorf("a kernel without kprobe_events: faults source %+v", f)
		}
	case f.OK:
		b, _ := os.ReadFile(tracefs + "/kprobe_events")
		if !strings.Contains(string(b), "numascope_") {
			t.Errorf("faults source open, kprobe_events:\n%s", b)
		}
	default:
		testutil.NotPermitted(t, "the kprobe on task_numa_fault: %s", f.Why)
	}
	if !srcs[1].OK {
		testutil.NotPermitted(t, "migrate:mm_migrate_pages: %s", srcs[1].Why)
	}
	if p := srcs[2]; !p.OK && !strings.HasPrefix(p.Why, "PMU local/remote DRAM loads: ") {
		t.Errorf("PMU source %+v", p)
	}
	c := NewCounts()
	tr.Collect(c)
	if c.Malformed != 0 {
		t.Errorf("%d malformed records", c.Malformed)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	tr.Collect(c) // after Close: nothing, no panic
	if b, err := os.ReadFile(tracefs + "/kprobe_events"); err == nil && strings.Contains(string(b), groupPrefix+strconv.Itoa(os.Getpid())+"/") {
		t.Errorf("the kprobe is still there after Close:\n%s", b)
	}
}

// TestOpenPMUCaptured takes the PMU path as far as this machine allows:
// the presets and the PMU of a real Skylake-SP capture (internal/perfevent's
// testdata) resolve local_dram and remote_dram, then perf_event_open runs
// on this kernel. On a machine without a PMU (the build machines) it fails,
// and the reason names the event, the CPU and the error; on one with a core
// PMU the raw events open. The kernel's events are read only on the live
// system, so the other sources say so.
func TestOpenPMUCaptured(t *testing.T) {
	tr, err := Open(sysfs.New("../perfevent/testdata/intel-skx"), Options{PMU: true, CPUs: []int{0}, PMUPeriod: 100003})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	srcs := tr.Sources()
	for _, s := range srcs[:2] {
		if s.OK || !strings.Contains(s.Why, "only on the live system") {
			t.Errorf("source %+v on a captured tree", s)
		}
	}
	p := srcs[2]
	t.Logf("%+v", p)
	switch {
	case p.OK:
		if tr.PMUPeriod() != 100003 {
			t.Errorf("PMU period %d", tr.PMUPeriod())
		}
	case strings.Contains(p.Why, "perf_event_open(dummy"):
		testutil.NotPermitted(t, "the ring's event: %s", p.Why)
	case !strings.HasPrefix(p.Why, "PMU local/remote DRAM loads: perf_event_open(local_dram, cpu 0): "):
		t.Errorf("PMU reason %q, want the refused perf_event_open of local_dram on cpu 0", p.Why)
	}
	if !p.OK && tr.PMUPeriod() != 0 {
		t.Errorf("PMU period %d without a PMU", tr.PMUPeriod())
	}
}

// TestOpenNoPMU: a captured tree of a VM without a PMU: every source has
// its reason, none an error, and the PMU's says there is no PMU.
func TestOpenNoPMU(t *testing.T) {
	tr, err := Open(sysfs.New("../perfevent/testdata/vm-nopmu"), Options{PMU: true, CPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	p := tr.Sources()[2]
	// It says there is no PMU; it does not blame a preset (issue 31).
	if p.OK || !strings.HasPrefix(p.Why, "PMU local/remote DRAM loads: this machine has no PMU") || strings.Contains(p.Why, "preset") {
		t.Errorf("PMU source %+v, want it to say this machine has no PMU", p)
	}
	t.Logf("%s", p.Why)
	if got := len(tr.Missing()); got != 3 {
		t.Errorf("%d missing, want 3: %v", got, tr.Missing())
	}
}

// TestEventsCountOnlyWhatTheyWrite: the counted kinds find their losses
// from their counts (hits less samples decoded), so an event may count a
// hit only where it can also write its sample. Between an event's
// perf_event_open and its redirection into a ring (openedHook) this
// thread, pinned to that event's CPU, calls getppid 1 000 times; then
// 500 times on every CPU once all are open. The counts must hold the 500
// per CPU, and every hit counted must be in the rings, less at most one in
// flight per CPU (a sample counted while its ring was read, written
// after). Opened enabled, each event counted the 1 000 calls of its window
// with nothing written: a deficit of 1 000 per CPU.
func TestEventsCountOnlyWhatTheyWrite(t *testing.T) {
	const inWindow, after = 1000, 500
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &all)
	pin := func(cpu int) {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Fatalf("pinning to cpu %d: %v", cpu, err)
		}
	}
	getppid := func(n int) {
		for range n {
			unix.Syscall(unix.SYS_GETPPID, 0, 0, 0)
		}
	}

	var cpus []int
	for c := range 1024 {
		if all.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	tr := &Tracer{}
	if why := tr.openRings(cpus, Options{RingBytes: 1 << 20}); why != "" {
		testutil.NotPermitted(t, "the rings: %s", why)
	}
	defer tr.closeRings()
	tp, err := perfevent.ReadTracepoint(sysfs.New(""), "syscalls", "sys_enter_getppid")
	if err != nil {
		testutil.NotPermitted(t, "tracepoint syscalls:sys_enter_getppid: %v", err)
	}
	openedHook = func(cpu int) { pin(cpu); getppid(inWindow) }
	defer func() { openedHook = nil }()
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      tp.ID,
		Sample:      1,
		Sample_type: sampleType | unix.PERF_SAMPLE_RAW,
		Read_format: countedReadFormat,
		Bits:        unix.PerfBitExcludeHv,
	}
	if err := tr.openOnRings(&attr, kindMigrate, "tracepoint"); err != nil {
		testutil.NotPermitted(t, "%v", err)
	}
	openedHook = nil
	for _, c := range cpus {
		pin(c)
		getppid(after)
	}

	c := NewCounts()
	for _, r := range tr.rings {
		hits := tr.readHits(r, c)
		var samples, lost uint64
		r.r.Drain(func(rec *perfring.Record) {
			switch rec.Type {
			case unix.PERF_RECORD_SAMPLE:
				if r.evs.find(binary.LittleEndian.Uint64(rec.Raw[8:])) == 0 {
					samples++
				}
			case unix.PERF_RECORD_LOST:
				lost += rec.LostSamples
			}
		})
		t.Logf("cpu %d: %d getppid counted, %d samples, %d lost", r.r.CPU, hits, samples, lost)
		if hits < after || hits > samples+lost+1 || c.Malformed != 0 {
			t.Errorf("cpu %d: %d getppid counted, %d samples in its ring, %d lost: want at least the %d made after all were open, each with its sample (one may be in flight)",
				r.r.CPU, hits, samples, lost, after)
		}
	}
}
