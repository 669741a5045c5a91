package numatrace

import (
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/sysfs"
)

// CPU hotplug. When a CPU goes offline the kernel turns off every perf
// event bound to it, and leaves them off when it comes back: a tracer
// opened before would count nothing more on that CPU, and a CPU brought
// online after Open (SMT turned on) would never be traced. So at the end
// of each Collect, where a counted event's enabled time stopped (readHits)
// or a ring is down, and on every Collect when every online CPU is
// traced, the online CPUs are read (one file): a ring whose CPU is
// offline is marked down and keeps what it counted; a ring whose CPU is
// online again, or whose events stopped while it stayed online (offline
// and back within one refresh), is replaced by a new ring with every
// event opened anew; an online CPU without a ring gets one. What the
// kernel turned off between a CPU's return and this look (at most one
// refresh) is not counted.

// hotplug keeps the rings on the online CPUs; see above.
func (t *Tracer) hotplug() {
	if len(t.rings) == 0 || !t.fs.Live() {
		return
	}
	need := t.allCPUs
	for _, r := range t.rings {
		need = need || r.down || r.stalled
	}
	if !need || t.readOnline() != nil {
		return
	}
	for _, r := range t.rings {
		cpu := r.r.CPU
		switch on := cpu < len(t.online) && t.online[cpu]; {
		case !on:
			r.down = true
		case r.down || r.stalled:
			if nr := t.newRing(cpu); nr != nil {
				r.close()
				*r = *nr
			} else {
				r.down = true
			}
		}
		r.stalled = false
	}
	if !t.allCPUs {
		return
	}
	for cpu, on := range t.online {
		if on && !t.traces(cpu) {
			if nr := t.newRing(cpu); nr != nil {
				t.rings = append(t.rings, nr)
			}
		}
	}
}

// newRing opens a ring on cpu with every event of t.opened writing into
// it, or returns nil (tried again at the next Collect).
func (t *Tracer) newRing(cpu int) *ring {
	rs, err := perfring.Open(&t.ringAttr, -1, []int{cpu}, t.pages, minRingPages)
	if err != nil {
		return nil
	}
	r := &ring{r: rs[0]}
	for i := range t.opened {
		o := &t.opened[i]
		if _, err := openInto(r, &o.attr, o.k, o.what); err != nil {
			r.close()
			return nil
		}
	}
	return r
}

func (r *ring) close() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
	r.r.Close()
}

func (t *Tracer) traces(cpu int) bool {
	for _, r := range t.rings {
		if r.r.CPU == cpu {
			return true
		}
	}
	return false
}

// readOnline reads the online CPUs into t.online.
func (t *Tracer) readOnline() error {
	if t.onlineR == nil {
		t.onlineR = sysfs.NewOnlineReader(t.fs)
	}
	var err error
	t.online, err = t.onlineR.Read(t.online)
	return err
}
