package sensor

// This file holds the counting engine the perf and uncore sensors share:
// perf_event_open groups, one read() per group per sample, multiplexing
// correction with time_enabled/time_running, and the sums per source.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
)

// perfReadFormat asks the kernel for one record per group: nr, time_enabled,
// time_running, then the value of every member.
const perfReadFormat = unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING

// ppm is the unit of the multiplexing ratio: running/enabled in millionths.
const ppm = 1_000_000

// perfEv is one event a perf-based sensor offers.
type perfEv struct {
	ev      *perfevent.Event // nil for a mux event or an unavailable one
	event   Event
	unavail error  // why the event cannot be counted here (Enable refuses it)
	class   string // group class: events of one class share a group per CPU
	mux     string // for a mux event: the class it reports on
	scale   float64
}

// perfGroup is one perf_event group: a leader and its members on one CPU
// (or uncore PMU instance), read with one read().
type perfGroup struct {
	fds                      []int // fds[0] is the leader; none while off
	members                  []groupMember
	cpu                      int
	src                      int
	class                    string
	buf                      []byte
	slots                    []int    // member -> output slot (index into counters.sum)
	prev                     []uint64 // member -> raw value at the previous read
	acc                      []uint64 // member -> multiplex-corrected count since Enable
	prevEnabled, prevRunning uint64
	ratio                    uint64 // running/enabled of the last interval, in ppm
	muxSlot                  int    // output slot of this class's mux event, or -1
	// muxDiv is the number of groups the class was split into on this
	// CPU: each reports its share of the CPU's one ratio.
	muxDiv uint64
	primed bool
	// off marks a group whose CPU is offline (see counters.read): it has
	// no file descriptors, and its counts stay what they were. stuck says
	// that reopening it on its CPU, online again, failed and was said;
	// reopened, that it was reopened (and its baseline taken) in this read.
	off, stuck, reopened bool
}

// groupMember is what opening one member of a group takes.
type groupMember struct {
	attr perfevent.Attr
	typ  uint32
}

// open opens g's members on its CPU and enables the group; the next read
// sets the baseline. On failure it returns the member that failed (-1 when
// enabling failed) and leaves g without file descriptors.
func (g *perfGroup) open() (int, error) {
	g.closeFDs()
	if len(g.members) == 0 {
		return -1, errors.New("a group without members")
	}
	for i, m := range g.members {
		leader := -1
		if i > 0 {
			leader = g.fds[0]
		}
		fd, err := perfOpen(m.attr, m.typ, g.cpu, leader)
		if err != nil {
			g.closeFDs()
			return i, err
		}
		g.fds = append(g.fds, fd)
	}
	if err := unix.IoctlSetInt(g.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		g.closeFDs()
		return -1, fmt.Errorf("enabling: %w", err)
	}
	g.primed, g.prevEnabled, g.prevRunning = false, 0, 0
	return 0, nil
}

func (g *perfGroup) closeFDs() error {
	var errs []error
	for i := len(g.fds) - 1; i >= 0; i-- {
		if err := unix.Close(g.fds[i]); err != nil {
			errs = append(errs, err)
		}
	}
	g.fds = g.fds[:0]
	return errors.Join(errs...)
}

// counters is the set of open groups for one Enable set.
type counters struct {
	groups []*perfGroup
	nsrc   int
	fs     sysfs.FS
	// CPU hotplug (read): the groups whose CPU is offline, when to look
	// for CPUs back online next, the online CPUs last read, and the
	// per-source error Read returns, reused.
	offs      int
	nextCheck time.Time
	onlineR   *sysfs.OnlineReader
	online    []bool
	se        SourceError
	// out maps output slot -> index into dst; scale per slot.
	slotDst   []int
	slotScale []float64
	slotMux   []bool
	sum       []uint64 // per slot, per read
}

func (c *counters) close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, g := range c.groups {
		errs = append(errs, g.closeFDs())
	}
	c.groups = nil
	if c.onlineR != nil {
		errs = append(errs, c.onlineR.Close())
		c.onlineR = nil
	}
	return errors.Join(errs...)
}

// unixAttr builds the kernel's attribute struct for an event.
func unixAttr(a perfevent.Attr, typ uint32, leader bool) (*unix.PerfEventAttr, error) {
	if a.Config[3] != 0 {
		return nil, errors.New("config3 is not supported by this build")
	}
	ua := &unix.PerfEventAttr{
		Type:        typ,
		Size:        uint32(unix.PERF_ATTR_SIZE_VER5),
		Config:      a.Config[0],
		Ext1:        a.Config[1],
		Ext2:        a.Config[2],
		Read_format: perfReadFormat,
	}
	if leader {
		ua.Bits |= unix.PerfBitDisabled
	}
	if a.Mods.ExcludeUser {
		ua.Bits |= unix.PerfBitExcludeUser
	}
	if a.Mods.ExcludeKernel {
		ua.Bits |= unix.PerfBitExcludeKernel
	}
	if a.Mods.ExcludeHV {
		ua.Bits |= unix.PerfBitExcludeHv
	}
	return ua, nil
}

// perfOpen opens one event on cpu (pid -1: every task on that CPU).
func perfOpen(a perfevent.Attr, typ uint32, cpu, group int) (int, error) {
	ua, err := unixAttr(a, typ, group < 0)
	if err != nil {
		return -1, err
	}
	for {
		fd, err := unix.PerfEventOpen(ua, -1, cpu, group, unix.PERF_FLAG_FD_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// errStalled is what read returns for a group whose enabled time did not
// move between two reads: the kernel turned it off, as it does to a
// CPU's events when the CPU goes offline (and leaves them off when it
// comes back).
var errStalled = errors.New("the group stopped counting")

// errShortRead is a group record with fewer values than the group has: a
// CPU going offline detaches the members of its groups from their leader.
var errShortRead = errors.New("short perf read")

// read reads g's record with one read() and accounts it.
func (g *perfGroup) read() error {
	for {
		n, err := unix.Read(g.fds[0], g.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n != len(g.buf) {
			return fmt.Errorf("%w: %d of %d bytes", errShortRead, n, len(g.buf))
		}
		break
	}
	return g.account(g.buf)
}

// account takes one group record (nr, time_enabled, time_running, values)
// and adds each member's count since the previous record to its total,
// scaled by enabled/running when the PMU multiplexed the group.
func (g *perfGroup) account(b []byte) error {
	nr := binary.NativeEndian.Uint64(b)
	if int(nr) != len(g.slots) {
		return fmt.Errorf("perf group on CPU %d has %d members, expected %d", g.cpu, nr, len(g.slots))
	}
	en := binary.NativeEndian.Uint64(b[8:])
	run := binary.NativeEndian.Uint64(b[16:])
	if g.primed && en == g.prevEnabled {
		return errStalled
	}
	dEn, dRun := en-g.prevEnabled, run-g.prevRunning
	g.prevEnabled, g.prevRunning = en, run
	switch {
	case dEn == 0:
		// No time passed for this group: keep the last ratio.
	case dRun >= dEn:
		g.ratio = ppm
	default:
		hi, lo := bits.Mul64(dRun, ppm)
		g.ratio, _ = bits.Div64(hi, lo, dEn)
	}
	for i := range g.slots {
		v := binary.NativeEndian.Uint64(b[24+8*i:])
		d := v - g.prev[i]
		g.prev[i] = v
		if !g.primed {
			continue // the first read sets the baseline
		}
		if dRun < dEn {
			if dRun == 0 {
				d = 0 // not scheduled at all in this interval: nothing known
			} else {
				hi, lo := bits.Mul64(d, dEn)
				if hi < dRun {
					d, _ = bits.Div64(hi, lo, dRun)
				}
			}
		}
		g.acc[i] += d
	}
	g.primed = true
	return nil
}

// hotplugRecheck is how often read looks for offline CPUs back online:
// one read of /sys/devices/system/cpu/online for all of them.
const hotplugRecheck = time.Second

// read reads every group and stores the per-source sums in dst. A group
// that cannot be read fails its source only (a *SourceError): the other
// sources' values are fresh.
//
// CPU hotplug: when a CPU goes offline the kernel turns its events off
// and detaches the members of its groups, and leaves them so when the CPU
// comes back. A group whose read fails or whose enabled time stopped is
// therefore looked up in the online CPUs: offline, its file descriptors
// are closed and its counts kept as they were (an offline CPU counts
// nothing; the sum over the source's other CPUs is its true figure); once
// a second read looks for it online again and reopens it. Online but
// stopped (offline and back between two reads), it is reopened at once.
// The source's value is missing in the sample of each change, whose
// interval lost some of that CPU's counts.
func (c *counters) read(dst []int64) error {
	for i := range c.sum {
		c.sum[i] = 0
	}
	c.se.Reset()
	if c.offs > 0 {
		if now := time.Now(); !now.Before(c.nextCheck) {
			c.nextCheck = now.Add(hotplugRecheck)
			if c.readOnline() == nil {
				for _, g := range c.groups {
					if g.off && g.cpu < len(c.online) && c.online[g.cpu] {
						c.reopen(g, "came back online")
					}
				}
			}
		}
	}
	for _, g := range c.groups {
		if !g.off && !g.reopened {
			if err := g.read(); err != nil {
				c.failed(g, err)
			}
		}
		g.reopened = false
		for i, s := range g.slots {
			c.sum[s] += g.acc[i]
		}
		if g.muxSlot >= 0 {
			c.sum[g.muxSlot] += g.ratio / g.muxDiv
		}
	}
	for s, d := range c.slotDst {
		v := c.sum[s]
		if sc := c.slotScale[s]; sc != 0 && sc != 1 {
			dst[d] = int64(float64(v) * sc)
		} else {
			dst[d] = int64(v)
		}
	}
	if c.se.Failed() {
		return &c.se
	}
	return nil
}

// failed handles a group that could not be read: its CPU went offline, or
// went offline and came back, or the read failed for another reason.
func (c *counters) failed(g *perfGroup, err error) {
	if c.readOnline() == nil && (g.cpu >= len(c.online) || !c.online[g.cpu]) {
		g.closeFDs()
		g.off = true
		c.offs++
		c.nextCheck = time.Now().Add(hotplugRecheck)
		c.se.Add(g.src, fmt.Errorf("CPU %d went offline: its %s counts stop there, and are counted again once it is back online", g.cpu, g.class))
		return
	}
	if errors.Is(err, errStalled) || errors.Is(err, errShortRead) {
		c.reopen(g, "went offline and came back")
		return
	}
	c.se.Add(g.src, fmt.Errorf("reading the %s counters of CPU %d: %w", g.class, g.cpu, err))
}

// reopen opens g again on its CPU, which is online, and takes its
// baseline; g's counts so far are kept. Where that fails, g is off and
// tried again later.
func (c *counters) reopen(g *perfGroup, what string) {
	if g.off {
		g.off = false
		c.offs--
	}
	_, err := g.open()
	if err == nil {
		if err = g.read(); err != nil {
			g.closeFDs()
		}
	}
	if err != nil {
		g.off = true
		c.offs++
		c.nextCheck = time.Now().Add(hotplugRecheck)
		if !g.stuck { // said once; tried again quietly
			g.stuck = true
			c.se.Add(g.src, fmt.Errorf("CPU %d %s, but its %s counters could not be reopened (tried again every %v): %w", g.cpu, what, g.class, hotplugRecheck, err))
		}
		return
	}
	g.stuck, g.reopened = false, true
	c.se.Add(g.src, fmt.Errorf("CPU %d %s: its %s counters were reopened, and this interval's counts are missing", g.cpu, what, g.class))
}

// readOnline reads the online CPUs into c.online.
func (c *counters) readOnline() error {
	if c.onlineR == nil {
		c.onlineR = sysfs.NewOnlineReader(c.fs)
	}
	var err error
	c.online, err = c.onlineR.Read(c.online)
	return err
}

// perfParanoid reads kernel.perf_event_paranoid; ok is false when unknown.
func perfParanoid(fs sysfs.FS) (int, bool) {
	v, err := sysfs.ReadInt(fs.Proc("sys/kernel/perf_event_paranoid"))
	return int(v), err == nil
}

// hasCapPerfmon reports whether the process has CAP_PERFMON (38) or
// CAP_SYS_ADMIN (21) in its effective set.
func hasCapPerfmon(fs sysfs.FS) bool {
	data, err := sysfs.ReadFile(fs.Proc("self/status"))
	if err != nil {
		return false
	}
	v, ok := procnuma.StatusField(data, "CapEff")
	if !ok {
		return false
	}
	caps, err := strconv.ParseUint(v, 16, 64)
	return err == nil && (caps&(1<<38) != 0 || caps&(1<<21) != 0)
}

// diagnose turns a perf_event_open error into a reason and a fix.
func diagnose(fs sysfs.FS, spec string, err error) *perfevent.Unavailable {
	u := &perfevent.Unavailable{Spec: spec}
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		par, ok := perfParanoid(fs)
		u.Reason = "permission denied"
		if ok {
			u.Reason += fmt.Sprintf(": kernel.perf_event_paranoid is %d", par)
		}
		if !hasCapPerfmon(fs) {
			u.Reason += " and the process lacks CAP_PERFMON"
		}
		u.Reason += " (counting every task on a CPU needs paranoid <= 0, tracepoints <= -1, or CAP_PERFMON)"
		u.Fix = "run as root, or grant the capability (setcap cap_perfmon+ep $(command -v numascope)), or sysctl kernel.perf_event_paranoid=-1"
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		u.Reason = "the kernel rejects the event (" + err.Error() + "): this CPU or PMU does not support that encoding"
		u.Fix = "check the encoding against the CPU's event list (numascope events, perf list)"
	case errors.Is(err, unix.ENODEV):
		u.Reason = "the PMU has no counters on this CPU (" + err.Error() + ")"
	case errors.Is(err, unix.EBUSY):
		u.Reason = "the counter is in use (" + err.Error() + ")"
		u.Fix = "stop the other profiler, or the NMI watchdog (sysctl kernel.nmi_watchdog=0)"
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		u.Reason = "out of file descriptors (" + err.Error() + ")"
		u.Fix = "raise the limit: ulimit -n 65536"
	default:
		u.Reason = "perf_event_open failed: " + err.Error()
	}
	return u
}
