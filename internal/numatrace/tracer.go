// Package numatrace is the kernel event source of numascope top: it counts,
// per process, per thread and per memory node, the NUMA hinting faults
// (local and remote, exactly), the pages migrated by reason, and, where the
// CPU has a preset for them, PMU samples of loads served by local and
// remote DRAM (numatop's LMA and RMA).
//
// Sources, each opened on every CPU with pid -1 (every task):
//
//   - a kprobe event on task_numa_fault, made through tracefs's
//     kprobe_events in a group of its own (numascope_PID) and removed by
//     Close, fetching its mem_node, pages and flags arguments;
//   - the tracepoint migrate:mm_migrate_pages (pages that succeeded, by
//     reason; numa_misplaced ones also to the process that was running);
//   - the presets local_dram and remote_dram of internal/perfevent, sampled
//     every PMUPeriod loads.
//
// Every event of a CPU writes into one ring buffer there (a dummy event
// owns it), read by Collect: the caller drains the rings once per refresh,
// so the rings are sized for an interval of a fault storm and nobody is
// woken per sample. What cannot be opened (no tracefs, no kprobe events,
// not root, perf_event_paranoid, lockdown, no PMU) is no error: Open returns
// a Tracer with the sources that work, and Sources says, for each missing
// one, what is missing, why and what to do.
package numatrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/sysfs"
)

// The names of the sources, in Sources's order.
const (
	SourceFaults     = "faults"
	SourceMigrations = "migrations"
	SourcePMU        = "pmu"
)

// DefaultPMUPeriod is the PMU sample period: one sample per this many
// loads (a prime, so that it does not beat with loops).
const DefaultPMUPeriod = 10007

// Options say what to open.
type Options struct {
	// CPUs to open the events on; nil: every online CPU.
	CPUs []int
	// PMU: also sample local_dram and remote_dram where a preset exists.
	PMU bool
	// PMUPeriod is the PMU's sample period; 0: DefaultPMUPeriod.
	PMUPeriod uint64
	// RingBytes is each CPU's ring size (rounded down to a power of two
	// pages); 0: ringBudget shared by the CPUs (see ringBytesFor).
	RingBytes int
	// Presets are extra preset files (--presets).
	Presets []string
}

// SourceStatus says whether a source is read, and if not, why.
type SourceStatus struct {
	// Name is SourceFaults, SourceMigrations or SourcePMU.
	Name string `json:"name"`
	// Event names what is read: "kprobe:task_numa_fault",
	// "tracepoint:migrate:mm_migrate_pages", "pmu:local_dram,remote_dram".
	Event string `json:"event"`
	OK    bool   `json:"ok"`
	// Why is one line for a source that is not read: what is missing, why
	// and what to do (or what numascope top shows instead).
	Why string `json:"why,omitempty"`
}

// Tracer reads the sources that could be opened.
type Tracer struct {
	mu      sync.Mutex
	sources []SourceStatus
	rings   []*ring
	probe   *kprobe
	dec     *decoder
	period  uint64
	// Stale lists the kprobe events of dead numascopes that Open removed.
	Stale []string

	// The record handler and what it works on, set for one Collect: a
	// method value made once, so that draining allocates nothing.
	handler func(rec *perfring.Record)
	cur     *Counts
	curEvs  *events
	closed  bool
	// lost is the tracepoints' losses reported so far; deficit their
	// hits less samples decoded at the last Collect.
	lost, deficit uint64
	buf           [16]byte

	// What reopening a CPU's ring and events takes (hotplug.go): the
	// ring's dummy event and size, every event opened on the rings, the
	// system, whether every online CPU is traced, and the online CPUs
	// last read.
	ringAttr unix.PerfEventAttr
	pages    int
	opened   []openedEvent
	fs       sysfs.FS
	allCPUs  bool
	onlineR  *sysfs.OnlineReader
	online   []bool
}

// ring is one CPU's buffer and the events writing into it.
type ring struct {
	r   *perfring.Ring
	fds []int
	evs events
	// down: the CPU was offline at the last look, or its events could not
	// be reopened; stalled: a counted event's enabled time stopped since
	// the last Collect (the CPU went offline, and perhaps came back).
	down, stalled bool
}

// Ring sizes: each CPU's ring is ringBudget over the CPUs, a power of two
// from minRingBytes to maxRingBytes. A hinting-fault sample is 56 bytes, so
// 8 MiB (4 CPUs) hold 150,000 faults per CPU per interval, 1 MiB (32 CPUs)
// 19,000 per CPU, 600,000 over the machine.
const (
	ringBudget   = 32 << 20
	maxRingBytes = 8 << 20
	minRingBytes = 256 << 10
	minRingPages = 4
)

func ringPagesFor(opts Options, ncpu, pageSize int) int {
	b := opts.RingBytes
	if b <= 0 {
		b = min(max(ringBudget/max(ncpu, 1), minRingBytes), maxRingBytes)
	}
	n := 1
	for n*2*pageSize <= b {
		n *= 2
	}
	return n
}

// Open opens every source it can on the system fs describes. The error is
// only for nothing to open on (no CPUs); a source that cannot be opened is
// in Sources with its reason.
func Open(fs sysfs.FS, opts Options) (*Tracer, error) {
	cpus := opts.CPUs
	if cpus == nil {
		s, err := sysfs.ReadString(fs.Sys("devices/system/cpu/online"))
		if err == nil {
			cpus, err = sysfs.ParseCPUList(s)
		}
		if err != nil || len(cpus) == 0 {
			return nil, fmt.Errorf("numatrace: the online CPUs: %v", err)
		}
	}
	t := &Tracer{period: opts.PMUPeriod, fs: fs, allCPUs: opts.CPUs == nil}
	if t.period == 0 {
		t.period = DefaultPMUPeriod
	}
	t.handler = t.handle
	faultSt := SourceStatus{Name: SourceFaults, Event: "kprobe:" + probeFunc}
	migSt := SourceStatus{Name: SourceMigrations, Event: "tracepoint:migrate:mm_migrate_pages"}
	pmuSt := SourceStatus{Name: SourcePMU, Event: "pmu:local_dram,remote_dram"}

	// The rings: a dummy event per CPU owns each; the sources write into
	// it. Without them nothing else can be opened.
	ringWhy := t.openRings(cpus, opts)

	var fl faultLayout
	var ml migrateLayout
	var tracefs, traceWhy string
	switch {
	case !fs.Live():
		traceWhy = "the kernel's events are read only on the live system, not in " + fs.Sys()
	default:
		var err error
		if tracefs, err = perfevent.MountTracefs(fs); err != nil {
			traceWhy = err.Error()
		}
	}

	// NUMA hinting faults: the kprobe.
	const faultsInstead = "; numascope top shows the machine's fault rates from /proc/vmstat and, for the processes read in full, the remote share of the NUMA balancer's recent, decayed faults (/proc/PID/task/TID/sched) instead of per-process rates"
	switch {
	case traceWhy != "":
		faultSt.Why = "local/remote NUMA faults: " + traceWhy + faultsInstead
	default:
		// A probe that cannot be removed stays for the next Open to try;
		// this one goes on.
		t.Stale, _ = removeStale(tracefs)
		k, why := createProbe(tracefs)
		if k == nil {
			faultSt.Why = "local/remote NUMA faults: " + why + faultsInstead
			break
		}
		t.probe = k
		tp, layout, err := readEvent(tracefs, k.group, k.name, parseFaultFormat)
		if err == nil {
			fl = layout
			err = t.openTracepoint(tp, kindFault, ringWhy)
		}
		if err != nil {
			faultSt.Why = "local/remote NUMA faults: " + err.Error() + faultsInstead
			t.removeProbe()
			break
		}
		faultSt.OK = true
	}

	// Migrations by reason: the tracepoint.
	const migInstead = "; numascope top shows /proc/vmstat's numa_pages_migrated (no reasons) instead"
	switch {
	case traceWhy != "":
		migSt.Why = "migrations by reason: " + traceWhy + migInstead
	default:
		tp, layout, err := readEvent(tracefs, "migrate", "mm_migrate_pages", parseMigrateFormat)
		if err == nil {
			ml = layout
			err = t.openTracepoint(tp, kindMigrate, ringWhy)
		}
		if err != nil {
			migSt.Why = "migrations by reason: " + err.Error() + migInstead
			break
		}
		migSt.OK = true
	}

	// PMU.
	switch {
	case !opts.PMU:
		pmuSt.Why = "PMU local/remote DRAM loads: not asked for"
	default:
		if why := t.openPMU(fs, opts, ringWhy); why != "" {
			pmuSt.Why = "PMU local/remote DRAM loads: " + why
		} else {
			pmuSt.OK = true
		}
	}
	t.sources = []SourceStatus{faultSt, migSt, pmuSt}
	t.dec = newDecoder(fl, ml)
	if !faultSt.OK && !migSt.OK && !pmuSt.OK {
		t.closeRings()
	}
	return t, nil
}

// openRings opens the dummy event and maps the ring of every CPU. It
// returns why not, "" when every CPU has its ring.
func (t *Tracer) openRings(cpus []int, opts Options) string {
	pg := os.Getpagesize()
	pages := ringPagesFor(opts, len(cpus), pg)
	t.ringAttr = unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Sample_type: sampleType,
		Bits:        unix.PerfBitWatermark,
	}
	t.pages = pages
	rings, err := perfring.Open(&t.ringAttr, -1, cpus, pages, minRingPages)
	var oe *perfring.OpenError
	if errors.As(err, &oe) && !oe.Map {
		return perfRefused(fmt.Sprintf("perf_event_open(dummy, cpu %d)", oe.CPU), oe.Err)
	}
	if err != nil {
		return err.Error()
	}
	for _, r := range rings {
		t.rings = append(t.rings, &ring{r: r})
	}
	return ""
}

// perfRefused explains a refused perf_event_open.
func perfRefused(what string, err error) string {
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		p, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
		return fmt.Sprintf("%s: %v (kernel.perf_event_paranoid is %s: run as root, with CAP_PERFMON, or with kernel.perf_event_paranoid=-1)",
			what, err, strings.TrimSpace(string(p)))
	}
	return what + ": " + err.Error()
}

// refusedError is a refused perf_event_open: the explanation, and the
// errno for errors.Is.
type refusedError struct {
	msg string
	err error
}

func (e *refusedError) Error() string { return e.msg }
func (e *refusedError) Unwrap() error { return e.err }

// readEvent reads the id and format of events/sys/name and parses the
// format with parse.
func readEvent[L any](tracefs, sys, name string, parse func(string) (L, error)) (uint64, L, error) {
	var zero L
	base := "events/" + sys + "/" + name
	idText, err := readTracefs(tracefs, base+"/id")
	if err != nil {
		return 0, zero, fmt.Errorf("%s:%s: %w", sys, name, err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 64)
	if err != nil {
		return 0, zero, fmt.Errorf("%s:%s: id %q: %w", sys, name, idText, err)
	}
	format, err := readTracefs(tracefs, base+"/format")
	if err != nil {
		return 0, zero, fmt.Errorf("%s:%s: %w", sys, name, err)
	}
	l, err := parse(format)
	if err != nil {
		return 0, zero, fmt.Errorf("%s:%s: %s/%s/format: %w", sys, name, tracefs, base, err)
	}
	return id, l, nil
}

// openTracepoint opens tracepoint id on every ring's CPU, writing into the
// ring. On any failure it closes what it opened.
func (t *Tracer) openTracepoint(id uint64, k kind, ringWhy string) error {
	if ringWhy != "" {
		return errors.New(ringWhy)
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      id,
		Sample:      1,
		Sample_type: sampleType | unix.PERF_SAMPLE_RAW,
		Read_format: countedReadFormat,
		Bits:        unix.PerfBitExcludeHv,
	}
	return t.openOnRings(&attr, k, "tracepoint")
}

// openedHook, when set (by tests), runs between an event's
// perf_event_open and its redirection into a ring.
var openedHook func(cpu int)

// openOnRings opens attr on each ring's CPU and redirects it there.
//
// Each event opens disabled and is enabled only once it writes into its
// ring: enabled from its open, it counts every hit, but has no ring to
// write the sample into until PERF_EVENT_IOC_SET_OUTPUT, and the kernel
// drops such a sample silently (no PERF_RECORD_LOST). For the counted
// kinds Collect then saw a deficit that never closes and reported it as
// records lost (TestNUMATrace's "10 records lost" under load, issue 29:
// the window is two system calls, but a vCPU of a busy host can be
// descheduled between them); for sched_switch with 200 ms between the two
// calls, 890 hits of 4 944 had no sample.
func (t *Tracer) openOnRings(attr *unix.PerfEventAttr, k kind, what string) error {
	type opened struct {
		r  *ring
		fd int
	}
	var done []opened
	undo := func() {
		for _, o := range done {
			unix.Close(o.fd)
			o.r.fds = o.r.fds[:len(o.r.fds)-1]
			o.r.evs.remove(len(o.r.evs.ids) - 1)
		}
	}
	for _, r := range t.rings {
		fd, err := openInto(r, attr, k, what)
		if err != nil {
			undo()
			return err
		}
		done = append(done, opened{r, fd})
	}
	t.opened = append(t.opened, openedEvent{*attr, k, what})
	return nil
}

// countedReadFormat is what reading a counted event (readHits) returns:
// its count and its time enabled, whose stopping says that CPU hotplug
// turned it off (hotplug.go).
const countedReadFormat = unix.PERF_FORMAT_TOTAL_TIME_ENABLED

// openedEvent is an event opened on every ring, as hotplug.go reopens it.
type openedEvent struct {
	attr unix.PerfEventAttr
	k    kind
	what string
}

// openInto opens attr on r's CPU, disabled, redirects it into r, and then
// enables it (see openOnRings for why in that order).
func openInto(r *ring, attr *unix.PerfEventAttr, k kind, what string) (int, error) {
	a := *attr
	a.Bits |= unix.PerfBitDisabled
	fd, err := unix.PerfEventOpen(&a, -1, r.r.CPU, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, &refusedError{perfRefused(fmt.Sprintf("perf_event_open(%s, cpu %d)", what, r.r.CPU), err), err}
	}
	if openedHook != nil {
		openedHook(r.r.CPU)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.r.FD); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("redirecting %s into the ring of cpu %d: %w", what, r.r.CPU, err)
	}
	var id uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("the id of %s on cpu %d: %w", what, r.r.CPU, e)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("enabling %s on cpu %d: %w", what, r.r.CPU, err)
	}
	r.fds = append(r.fds, fd)
	r.evs.add(id, k)
	return fd, nil
}

// openPMU resolves the presets local_dram and remote_dram for this CPU and
// opens them sampling. It returns why not, "" when open.
func (t *Tracer) openPMU(fs sysfs.FS, opts Options, ringWhy string) string {
	// Without a core PMU no preset can help: say so, rather than blame
	// the presets for a CPU model (issue 31).
	if perfevent.CorePMU(fs) == nil {
		return "this machine has no PMU (" + fs.Sys(perfevent.DevicesDir) + " has no core PMU: a virtual machine without a virtual PMU, or a kernel without PMU support)"
	}
	ps, err := perfevent.LoadPresets(opts.Presets...)
	if err != nil {
		return err.Error()
	}
	id, err := perfevent.ReadCPUID(fs)
	if err != nil {
		return "cannot tell the CPU model: " + err.Error()
	}
	m := ps.Select(id)
	if m == nil {
		return fmt.Sprintf("no preset model covers this CPU (%s): add one with local_dram and remote_dram events (--presets FILE, see docs/perf.md)", id)
	}
	var evs [2]*perfevent.Event
	for i, name := range []string{"local_dram", "remote_dram"} {
		var pe *perfevent.PresetEvent
		for j := range m.Events {
			if m.Events[j].Name == name {
				pe = &m.Events[j]
			}
		}
		if pe == nil {
			return fmt.Sprintf("the preset model %s (%s, %s) has no %s event: add local_dram and remote_dram for this CPU in a --presets FILE (see docs/perf.md) where its PMU counts loads by DRAM locality", m.ID, m.Name, m.File, name)
		}
		sp, err := pe.ParseSpec()
		if err != nil {
			return fmt.Sprintf("preset %s of %s: %v", name, m.ID, err)
		}
		if evs[i], err = perfevent.Resolve(fs, sp); err != nil {
			return err.Error()
		}
	}
	if ringWhy != "" {
		return ringWhy
	}
	for i, ev := range evs {
		a := ev.Attr
		if a.Config[3] != 0 || ev.Uncore() {
			return fmt.Sprintf("%s (%s) is not a per-CPU core event numascope can sample", ev.Name, ev.Spec.Text)
		}
		attr := unix.PerfEventAttr{
			Type:        a.Type,
			Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Config:      a.Config[0],
			Ext1:        a.Config[1],
			Ext2:        a.Config[2],
			Sample:      t.period,
			Sample_type: sampleType,
			Bits:        unix.PerfBitExcludeHv,
		}
		k := kindLocalDRAM
		if i == 1 {
			k = kindRemoteDRAM
		}
		if err := t.openOnRings(&attr, k, ev.Name); err != nil {
			if i == 1 {
				t.closeKind(kindLocalDRAM)
			}
			why := err.Error()
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
				why += " (the kernel cannot count this event here: a virtual machine without a virtual PMU, or a kernel without support for this CPU's PMU)"
			}
			return why
		}
	}
	return ""
}

// closeKind closes the events of kind k on every ring.
func (t *Tracer) closeKind(k kind) {
	t.opened = slices.DeleteFunc(t.opened, func(o openedEvent) bool { return o.k == k })
	for _, r := range t.rings {
		for i := len(r.fds) - 1; i >= 0; i-- {
			if r.evs.kinds[i] == k {
				unix.Close(r.fds[i])
				r.fds = append(r.fds[:i], r.fds[i+1:]...)
				r.evs.remove(i)
			}
		}
	}
}

// Sources says, for each source, whether it is read and if not why.
func (t *Tracer) Sources() []SourceStatus { return append([]SourceStatus(nil), t.sources...) }

// Missing returns the Why of every source not read.
func (t *Tracer) Missing() []string {
	var out []string
	for _, s := range t.sources {
		if !s.OK {
			out = append(out, s.Why)
		}
	}
	return out
}

// PMUPeriod is the PMU's sample period, 0 when the PMU is not read.
func (t *Tracer) PMUPeriod() uint64 {
	for _, s := range t.sources {
		if s.Name == SourcePMU && s.OK {
			return t.period
		}
	}
	return 0
}

// Collect drains every ring into c. It takes the Tracer's lock once, not
// per record, and allocates nothing per record: only a process, thread or
// node new to c grows it.
func (t *Tracer) Collect(c *Counts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	c.init()
	c.PMUPeriod = t.PMUPeriod()
	t.cur = c
	var hits uint64
	for _, r := range t.rings {
		// The counts first: what the drain decodes then includes every
		// hit counted, so hits minus decoded is never more than was lost.
		hits += t.readHits(r, c)
		t.curEvs = &r.evs
		r.r.Drain(t.handler)
	}
	t.cur, t.curEvs = nil, nil
	t.dec.flush(c)
	var decoded uint64
	for _, r := range t.rings {
		for i, k := range r.evs.kinds {
			if k.counted() {
				decoded += r.evs.decoded[i]
			}
		}
	}
	// The deficit, hits less samples decoded, is what the kernel dropped
	// plus the samples in flight: counted, not yet in the ring when it was
	// drained (a sample is written after its hit is counted, and a vCPU
	// may be preempted in between). Those are decoded at the next Collect,
	// drops never: a deficit seen at two Collects in a row is a loss.
	// Samples decoded after their hits were counted only lower it.
	var deficit uint64
	if hits > decoded {
		deficit = hits - decoded
	}
	if lost := min(deficit, t.deficit); lost > t.lost {
		c.Lost += lost - t.lost
		t.lost = lost
	}
	t.deficit = deficit
	// Last: a ring reopened here starts its hits and samples afresh, both
	// counted from the next Collect.
	t.hotplug()
}

// readHits sums the counts of ring r's tracepoints: with a sample period
// of 1, and software events never throttled on their first overflow, each
// hit was a sample, decoded or lost.
func (t *Tracer) readHits(r *ring, c *Counts) uint64 {
	var n uint64
	for i, k := range r.evs.kinds {
		if !k.counted() {
			continue
		}
		if k, err := unix.Read(r.fds[i], t.buf[:]); err != nil || k != len(t.buf) {
			c.Malformed++
			continue
		}
		n += binary.LittleEndian.Uint64(t.buf[:])
		en := binary.LittleEndian.Uint64(t.buf[8:])
		if en == r.evs.enabled[i] && en != 0 {
			r.stalled = true
		}
		r.evs.enabled[i] = en
	}
	return n
}

func (t *Tracer) handle(rec *perfring.Record) { t.dec.record(rec.Raw, t.curEvs, t.cur) }

// Close closes the events and removes the kprobe.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	t.closeRings()
	if t.onlineR != nil {
		t.onlineR.Close()
	}
	return t.removeProbe()
}

func (t *Tracer) closeRings() {
	for _, r := range t.rings {
		r.close()
	}
	t.rings = nil
}

func (t *Tracer) removeProbe() error {
	if t.probe == nil {
		return nil
	}
	err := t.probe.remove()
	if err != nil {
		err = fmt.Errorf("removing the kprobe %s/%s: %w", t.probe.group, t.probe.name, err)
	}
	t.probe = nil
	return err
}
