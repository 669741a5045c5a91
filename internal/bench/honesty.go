package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/topology"
)

// What a figure does not show by itself: a buffer the caches hold, a host
// busy with other work, a loaded-latency curve that goes the wrong way, two
// bandwidths of one kernel that differ. Each becomes a note (text and
// JSON) beside the figures, so that nobody takes them for what they are
// not (issue 30, finding 5).

// bandwidthMethod and peakMethod say how the two bandwidths are measured,
// in the JSON (Matrix.Method) and, in short, in the text: they differ on
// purpose, and by how much says how alike the threads streamed.
const (
	bandwidthMethod = "best of the repeats; one repeat is one pass of every thread over its part of the arrays, " +
		"timed from the moment they are released together, all awake, to the last one's finish, so " +
		"stragglers and uneven parts count"
	peakMethod = "best of the repeats; one repeat is a 200 ms window that starts once every thread is streaming " +
		"at full rate and counts the bytes they streamed meanwhile: the steady-state throughput, with no start " +
		"or finish in it"
)

// peakAgainstBandwidth is the text's explanation under the peak matrix.
const peakAgainstBandwidth = "Peak injection is not Bandwidth: peak is what all the threads stream together over a 200 ms window " +
	"once every one is streaming (the sustained throughput); Bandwidth is the best of whole passes, each timed from the " +
	"threads' common start to the last one's finish (start-up and stragglers count, but a short pass may escape other tasks). " +
	"On a quiet machine with --size beyond the caches they agree within some percent; a bigger gap means the threads did " +
	"not stream alike or were interrupted (another task on a CPU, an uneven node), or that the caches " +
	"served part of the passes."

// llcFactor is how many times the last-level cache a buffer must exceed
// for its figure to be the memory's: a buffer of 4× the cache is at most
// a quarter cached, whatever the replacement policy.
const llcFactor = 4

// sizeNotes warn when --size leaves a measurement in reach of the
// last-level cache (the default never does).
func (p *plan) sizeNotes() []string {
	if p.opt.Size == 0 {
		return nil
	}
	var sizes []string
	var least uint64
	if p.opt.Kinds.Latency || p.opt.Kinds.Loaded {
		sizes = append(sizes, "the latency chain "+FormatSize(p.latSize))
		least = p.latSize
	}
	if p.opt.Kinds.Bandwidth || p.opt.Kinds.Loaded {
		arrays := uint64(p.stream.arrays()) * p.bwPerArray
		sizes = append(sizes, fmt.Sprintf("the %s kernel's arrays %s", p.stream.Name(), FormatSize(arrays)))
		if least == 0 || arrays < least {
			least = arrays
		}
	}
	if p.llc == 0 {
		return []string{"the last-level cache's size is unknown (sysfs shows no cache): numascope cannot check that --size " +
			FormatSize(p.opt.Size) + " is beyond the caches; give at least 4× the last-level cache"}
	}
	need := llcFactor * p.llc
	if least >= need {
		return nil
	}
	return []string{fmt.Sprintf("--size %s is below 4× the last-level cache (%s of it, so at least %s): %s; the figures are partly the cache's, not the memory's; give --size %s or more, or leave --size out",
		FormatSize(p.opt.Size), FormatSize(p.llc), FormatSize(roundUp(need, 1<<20)), strings.Join(sizes, ", "), FormatSize(roundUp(need, 1<<20)))}
}

// HostLoad is what else ran on the machine during the run (JSON
// conditions.host_load). A task runnable beside a measurement takes a CPU,
// memory bandwidth or the last-level cache from it; steal time is a
// hypervisor running another guest on this one's CPUs.
type HostLoad struct {
	// OtherRunnableMean and OtherRunnableMax are the tasks runnable
	// besides numascope's own thread (/proc/stat's procs_running less
	// one), sampled before each measurement and at the end.
	OtherRunnableMean float64 `json:"other_runnable_mean"`
	OtherRunnableMax  int     `json:"other_runnable_max"`
	Samples           int     `json:"samples"`
	// OnlineCPUs are the machine's (not only the initiators').
	OnlineCPUs int `json:"online_cpus"`
	// LoadAvg1 is the one-minute load average when the run started
	// (/proc/loadavg), null when unreadable.
	LoadAvg1 *float64 `json:"loadavg_1m"`
	// StealPercent is the steal time over the run, in percent of all
	// CPUs' time (/proc/stat); null when the kernel does not count it.
	StealPercent *float64 `json:"steal_percent"`
	// Busy is the verdict: at least one other task runnable on average,
	// or over 1% steal time.
	Busy bool `json:"busy"`
}

// Busy's thresholds.
const (
	busyRunnable = 1.0
	busySteal    = 1.0
)

// cpuTimes are /proc/stat's all-CPU times, in ticks.
type cpuTimes struct {
	total, steal uint64
	hasSteal     bool
}

// readStat reads procs_running and the all-CPU times from /proc/stat.
func readStat(path string) (running int, t cpuTimes, err error) {
	text := readTrim(path)
	if text == "" {
		return 0, t, fmt.Errorf("%s is empty or unreadable", path)
	}
	found := 0
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "cpu":
			// user nice system idle iowait irq softirq steal (guest
			// time is inside user and nice already).
			for i, v := range f[1:min(len(f), 9)] {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return 0, t, fmt.Errorf("%s: cpu line: %v", path, err)
				}
				t.total += n
				if i == 7 {
					t.steal, t.hasSteal = n, true
				}
			}
			found++
		case "procs_running":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return 0, t, fmt.Errorf("%s: procs_running: %v", path, err)
			}
			running = n
			found++
		}
	}
	if found != 2 {
		return 0, t, fmt.Errorf("%s has no cpu or procs_running line", path)
	}
	return running, t, nil
}

// loadSampler gathers HostLoad over a run.
type loadSampler struct {
	ok       bool
	sum, n   int
	max      int
	start    cpuTimes
	last     cpuTimes
	loadavg  *float64
	online   int
	statPath string
}

// startLoad takes the first sample, before anything is measured.
func startLoad(topo *topology.Topology) *loadSampler {
	s := &loadSampler{statPath: conditionPaths.stat}
	for _, c := range topo.CPUs {
		if c.Online {
			s.online++
		}
	}
	if f := strings.Fields(readTrim(conditionPaths.loadavg)); len(f) > 0 {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			s.loadavg = &v
		}
	}
	_, t, err := readStat(s.statPath)
	s.ok = err == nil
	s.start, s.last = t, t
	s.sample()
	return s
}

// sample counts the tasks runnable now besides the calling thread. It is
// called between measurements, when numascope's measuring threads have
// stopped: only the caller is running.
func (s *loadSampler) sample() {
	if !s.ok {
		return
	}
	running, t, err := readStat(s.statPath)
	if err != nil {
		s.ok = false
		return
	}
	other := max(running-1, 0)
	s.sum += other
	s.n++
	s.max = max(s.max, other)
	s.last = t
}

// finish returns the run's HostLoad, nil when /proc/stat was unreadable.
func (s *loadSampler) finish() *HostLoad {
	if !s.ok || s.n == 0 {
		return nil
	}
	h := &HostLoad{OtherRunnableMean: float64(s.sum) / float64(s.n), OtherRunnableMax: s.max, Samples: s.n, OnlineCPUs: s.online, LoadAvg1: s.loadavg}
	if s.start.hasSteal && s.last.total > s.start.total {
		v := 100 * float64(s.last.steal-s.start.steal) / float64(s.last.total-s.start.total)
		h.StealPercent = &v
	}
	h.Busy = h.OtherRunnableMean >= busyRunnable || (h.StealPercent != nil && *h.StealPercent > busySteal)
	return h
}

// describe is the host load in a phrase.
func (h *HostLoad) describe() string {
	s := fmt.Sprintf("%.1f other tasks runnable on average (at most %d, %d CPUs online", h.OtherRunnableMean, h.OtherRunnableMax, h.OnlineCPUs)
	if h.LoadAvg1 != nil {
		s += fmt.Sprintf("; load average %.2f at the start", *h.LoadAvg1)
	}
	s += ")"
	if h.StealPercent != nil {
		s += fmt.Sprintf(", steal time %.1f%% of the CPUs' time", *h.StealPercent)
	} else {
		s += ", steal time not counted by this kernel"
	}
	return s
}

// spreadLimit is the spread of a latency's repeats, over their median,
// beyond which it is flagged even on a host that looked quiet.
const spreadLimit = 0.10

// spread is the widest spread of a matrix's pairs: the pair, its min,
// median and max.
func (m *Matrix) spread(unit string) (desc string, rel float64) {
	for r, i := range m.Initiators {
		for c, t := range m.Targets {
			lo, med, hi := m.Min[r][c], m.Median[r][c], m.Max[r][c]
			if lo == nil || med == nil || hi == nil || *med == 0 {
				continue
			}
			if x := (*hi - *lo) / *med; x >= rel {
				rel = x
				desc = fmt.Sprintf("node %d -> node %d %s-%s %s (median %s, the spread %.0f%% of it)", i, t, fmtFig(*lo), fmtFig(*hi), unit, fmtFig(*med), 100*x)
			}
		}
	}
	return desc, rel
}

func fmtFig(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// honestyNotes are the notes a finished run's figures need: a busy host
// (or a wide spread) with the load beside the spread, loaded curves that
// are not monotonic, and peak injection far from bandwidth.
func (r *Result) honestyNotes() []string {
	var notes []string
	h := r.Conditions.HostLoad
	var spreads []string
	wide := false
	for _, x := range []struct {
		name string
		m    *Matrix
		unit string
	}{{"idle latency", r.Latency, "ns"}, {"bandwidth", r.Bandwidth, "MB/s"}, {"peak injection", r.PeakInjection, "MB/s"}} {
		if x.m == nil || x.m.Repeat < 2 {
			continue
		}
		if d, rel := x.m.spread(x.unit); d != "" {
			spreads = append(spreads, x.name+" "+d)
			if x.m == r.Latency && rel > spreadLimit {
				wide = true
			}
		}
	}
	if d, _ := r.C2C.spread(); d != "" && r.C2C.Repeat > 1 {
		spreads = append(spreads, "core-to-core "+d)
	}
	spread := "the repeats' widest spread: " + strings.Join(spreads, "; ")
	if len(spreads) == 0 {
		spread = "one repeat, so no spread to judge by (give --repeat 3 or more)"
	}
	switch {
	case h != nil && h.Busy:
		notes = append(notes, fmt.Sprintf("the host was busy during the run: %s; the figures are slowed and spread by it, %s; measure on a quiet machine",
			h.describe(), spread))
	case wide && h != nil:
		notes = append(notes, fmt.Sprintf("idle latency varied by more than %.0f%% between repeats: %s; host load: %s", 100*spreadLimit, spread, h.describe()))
	case wide:
		notes = append(notes, fmt.Sprintf("idle latency varied by more than %.0f%% between repeats: %s; the host's load could not be read (/proc/stat)", 100*spreadLimit, spread))
	}
	if l := r.Loaded; l != nil {
		for _, p := range l.Pairs {
			if p.NotMonotonic != "" {
				notes = append(notes, fmt.Sprintf("the loaded-latency curve node %d -> node %d is not monotonic: %s; a busy host or too few --repeat make steps overtake each other",
					p.Initiator, p.Target, p.NotMonotonic))
			}
		}
	}
	if pk, bw := r.PeakInjection, r.Bandwidth; pk != nil && bw != nil && pk.Kernel == bw.Kernel && pk.Mix == bw.Mix {
		for ri, i := range bw.Initiators {
			for ci, t := range bw.Targets {
				if ri >= len(pk.Matrix) || ci >= len(pk.Matrix[ri]) {
					continue
				}
				a, b := pk.Matrix[ri][ci], bw.Matrix[ri][ci]
				if a == nil || b == nil || *b <= 0 || math.Abs(*a / *b - 1) <= 0.10 {
					continue
				}
				notes = append(notes, fmt.Sprintf("node %d -> node %d: peak injection %.0f MB/s is %+.0f%% against bandwidth %.0f MB/s of the same kernel: peak is sustained over a 200 ms window while every thread streams, bandwidth the best of whole passes from a common start to the last finish, so a gap this big means the threads did not stream alike or were interrupted (another task on a CPU, an uneven node), or that the caches served part of the passes",
					i, t, *a, 100*(*a / *b - 1), *b))
			}
		}
	}
	return notes
}

// checkMonotonic checks a loaded-latency curve from idle to full rate: the
// latency should not fall, nor the injected bandwidth, as the wait after
// each piece shortens. A fall counts when it is beyond the repeats'
// spread (latency: a step's worst repeat below an earlier step's best) or,
// for the bandwidth, whose median alone is kept, beyond 10%. It returns
// the first fall in words, or "" for a monotonic curve.
func checkMonotonic(lp *LoadedPair) string {
	step := func(k int) string {
		if k < len(lp.DelayNS) && lp.DelayNS[k] != nil {
			return fmt.Sprintf("the step waiting %.0f ns", *lp.DelayNS[k])
		}
		return "the idle step"
	}
	best, bestBW := -1, -1
	for k := range lp.LatencyNS {
		if best >= 0 && lp.LatencyMaxNS[k] < lp.LatencyMinNS[best] {
			return fmt.Sprintf("latency falls from %.1f-%.1f ns at %s (%.0f MB/s injected) to %.1f-%.1f ns at %s (%.0f MB/s)",
				lp.LatencyMinNS[best], lp.LatencyMaxNS[best], step(best), lp.BandwidthMBs[best],
				lp.LatencyMinNS[k], lp.LatencyMaxNS[k], step(k), lp.BandwidthMBs[k])
		}
		if best < 0 || lp.LatencyMinNS[k] > lp.LatencyMinNS[best] {
			best = k
		}
		if k < len(lp.DelayNS) && lp.DelayNS[k] == nil {
			continue // idle: nothing injected
		}
		if bestBW >= 0 && lp.BandwidthMBs[k] < 0.9*lp.BandwidthMBs[bestBW] {
			return fmt.Sprintf("the injected bandwidth falls from %.0f MB/s at %s to %.0f MB/s at %s, with a shorter wait",
				lp.BandwidthMBs[bestBW], step(bestBW), lp.BandwidthMBs[k], step(k))
		}
		if bestBW < 0 || lp.BandwidthMBs[k] > lp.BandwidthMBs[bestBW] {
			bestBW = k
		}
	}
	return ""
}
