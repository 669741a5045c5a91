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
	fds                      []int // fds[0] is the leader
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
}

// counters is the set of open groups for one Enable set.
type counters struct {
	groups []*perfGroup
	nsrc   int
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
		for i := len(g.fds) - 1; i >= 0; i-- {
			if err := unix.Close(g.fds[i]); err != nil {
				errs = append(errs, err)
			}
		}
		g.fds = nil
	}
	c.groups = nil
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
			return fmt.Errorf("short perf read: %d of %d bytes", n, len(g.buf))
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

// read reads every group and stores the per-source sums in dst.
func (c *counters) read(dst []int64) error {
	for i := range c.sum {
		c.sum[i] = 0
	}
	var firstErr error
	for _, g := range c.groups {
		if err := g.read(); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("reading the %s counters of CPU %d: %w", g.class, g.cpu, err)
			}
		}
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
	return firstErr
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
