package top

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/term"
)

// maxCgroups bounds the cgroups of one frame.
const maxCgroups = 4096

// cgroupReader groups processes by cgroup and reads each cgroup's
// cpu.stat, memory.numa_stat and memory.stat: cgroup v2's, or on a machine
// whose memory controller is on cgroup v1 (a hybrid layout: RHEL and
// CentOS 7 and 8, Ubuntu before 21.10, many Slurm clusters), the v1 memory
// hierarchy's memory.numa_stat, the rows then following that hierarchy.
type cgroupReader struct {
	fs     sysfs.FS
	numa   procnuma.CgroupNUMA
	counts counters // "path\x00key" → a counter's last value and read
	seen   map[string]bool
	// v1: /sys/fs/cgroup is no cgroup2 mount, and the memory controller
	// has a v1 hierarchy at /sys/fs/cgroup/memory.
	v1 bool
	// cpuacct is, on v1, the directory under /sys/fs/cgroup of the
	// hierarchy with the cpuacct controller ("cpu,cpuacct" as systemd
	// mounts it, the names "cpu" and "cpuacct" being symbolic links to
	// it), "" where there is none.
	cpuacct string
	// mixed holds, on v1, the rows whose processes cpuacct's hierarchy
	// does not place at the same paths as the memory one's (rowsV1CPU).
	mixed map[string]bool
}

// cpuacctDirs are the names the v1 hierarchy of cpuacct is mounted under,
// the controllers it holds joined by commas: systemd's, then alone.
var cpuacctDirs = []string{"cpu,cpuacct", "cpuacct,cpu", "cpuacct"}

func (r *cgroupReader) init(fs sysfs.FS) {
	r.fs, r.seen, r.mixed = fs, map[string]bool{}, map[string]bool{}
	r.counts.init()
	_, errV2 := os.Stat(fs.Sys("fs", "cgroup", "cgroup.controllers"))
	fi, errV1 := os.Lstat(fs.Sys("fs", "cgroup", "memory")) // a symbolic link there is no hierarchy
	r.v1 = errV2 != nil && errV1 == nil && fi.IsDir()
	if r.v1 {
		for _, d := range cpuacctDirs {
			if fi, err := os.Lstat(fs.Sys("fs", "cgroup", d)); err == nil && fi.IsDir() {
				r.cpuacct = d
				break
			}
		}
	}
}

// group sums procs by cgroup (v2, or v1's memory hierarchy: init), as the
// kernel's own per-cgroup figures count: each row is a cgroup and everything below it. A process counts in
// the root "/" and in each cgroup on its path down to depth levels below
// the root (a deeper cgroup's processes count in its ancestor at depth),
// so that a pod's row holds its containers' processes, as its
// memory.numa_stat holds their memory. A process's cgroup is read once (a
// process that moves to another cgroup is seen in the old one until it
// exits).
func (r *cgroupReader) group(c *Collector, procs []Process) []Cgroup {
	index := map[string]int{}
	var out []Cgroup
	depth := c.opts.CgroupDepth
	if depth <= 0 {
		depth = DefaultCgroupDepth
	}
	for i := range procs {
		p := &procs[i]
		st := c.procs[p.PID]
		if st == nil {
			continue
		}
		if !st.cgRead {
			if r.v1 {
				st.cgroup, st.cgOK, _ = c.rd.CgroupV1Of(p.PID, "memory")
				if r.cpuacct != "" {
					st.cpuacct, st.cpuacctOK, _ = c.rd.CgroupV1Of(p.PID, "cpuacct")
				}
			} else {
				st.cgroup, st.cgOK, _ = c.rd.CgroupOf(p.PID)
			}
			st.cgRead = true
		}
		if !st.cgOK {
			continue
		}
		p.Cgroup = "/" + st.cgroup
		eachRow(p.Cgroup, depth, func(path string) {
			k, ok := index[path]
			if !ok && len(out) < maxCgroups {
				k, ok = len(out), true
				index[path] = k
				out = append(out, Cgroup{Path: path, HintFaults: -1, PagesMigrated: -1})
			}
			if ok {
				out[k].add(p)
			}
		})
	}
	if r.v1 && r.cpuacct != "" {
		r.rowsV1CPU(c, procs, depth)
	}
	clear(r.seen)
	for i := range out {
		g := &out[i]
		rel := g.Path[1:]
		r.seen[rel] = true
		if rel == "" {
			continue // the root cgroup has none of the files (its cpu.stat is the machine's)
		}
		r.kernelFigures(c, g, rel)
	}
	r.counts.forget(func(k string) bool {
		rel, _, _ := cut0(k)
		return r.seen[rel]
	})
	return out
}

// kernelFigures fills row g (cgroup rel, below the root) with the
// kernel's own figures for the cgroup: memory by node, and on v2 its CPU%
// from cpu.stat and its NUMA balancing rates from memory.stat.
func (r *cgroupReader) kernelFigures(c *Collector, g *Cgroup, rel string) {
	if r.v1 {
		// v1's memory.stat has no numa_* counters; CPU% is cpuacct's
		// where that hierarchy agrees (rowsV1CPU).
		if data, err := c.rd.ReadCgroupV1File("memory", rel, "memory.numa_stat"); err == nil &&
			procnuma.ParseCgroupV1NUMA(data, &r.numa, uint64(os.Getpagesize())) == nil {
			g.MemoryByNode = r.byNode()
		}
		if r.cpuacct == "" {
			return
		}
		// cpuacct.usage: the nanoseconds the cgroup's tasks ran, those
		// below it and those that exited included, as v2's usage_usec.
		// Read whether or not the row is mixed this frame, so that its
		// rate is always over the last interval.
		if data, err := c.rd.ReadCgroupV1File(r.cpuacct, rel, "cpuacct.usage"); err == nil {
			if v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil {
				r.cpuTime(g, rel, v, 1e7, !r.mixed[g.Path])
			}
		}
		return
	}
	if data, err := c.rd.ReadCgroupFile(rel, "memory.numa_stat"); err == nil &&
		procnuma.ParseCgroupNUMA(data, &r.numa) == nil {
		g.MemoryByNode = r.byNode()
	}
	if data, err := c.rd.ReadCgroupFile(rel, "cpu.stat"); err == nil {
		// The kernel's run time of the cgroup's tasks, those that
		// exited within the interval included (their last ticks are
		// in no /proc/PID/stat): the processes' sum stands only for a
		// cgroup's first frame, which has no earlier reading.
		eachKV(data, func(k []byte, v uint64) {
			if string(k) == "usage_usec" {
				r.cpuTime(g, rel, v, 1e4, true)
			}
		})
	}
	if data, err := c.rd.ReadCgroupFile(rel, "memory.stat"); err == nil {
		at := r.counts.now()
		eachKV(data, func(k []byte, v uint64) {
			switch string(k) {
			case "numa_hint_faults":
				g.HintFaults = r.counts.rate(rel+"\x00hint", v, at)
			case "numa_pages_migrated":
				g.PagesMigrated = r.counts.rate(rel+"\x00migr", v, at)
			}
		})
	}
}

// eachRow calls fn with each row cgroup path p (as "/a/b/c") counts in:
// the prefixes of p that end before a '/' and p itself, from the root
// down ("/", "/a", "/a/b", ...), at most depth levels below the root.
func eachRow(p string, depth int, fn func(row string)) {
	end, level := 1, 0
	for {
		fn(p[:end])
		if end >= len(p) || level == depth {
			return
		}
		next := strings.IndexByte(p[end+1:], '/')
		if next < 0 {
			end = len(p)
		} else {
			end += 1 + next
		}
		level++
	}
}

// rowsV1CPU finds, on v1, the rows whose CPU% cpuacct.usage may give:
// cpuacct.usage of a path counts the tasks under that path in the cpuacct
// hierarchy, and a row the processes under it in the memory one, which
// are one set only where every process's two paths agree on the row. The
// container runtimes, Kubernetes and Slurm make the same paths in every
// hierarchy, but systemd makes a service's cpuacct cgroup only with CPU
// accounting on, leaving its processes higher up there. A row is mixed
// when a process counts in it by one hierarchy and not by the other (or
// has no cpuacct path): its CPU% stays its processes' sum.
func (r *cgroupReader) rowsV1CPU(c *Collector, procs []Process, depth int) {
	clear(r.mixed)
	var memRows, cpuRows []string
	for i := range procs {
		st := c.procs[procs[i].PID]
		if st == nil || !st.cgOK || (st.cpuacctOK && st.cpuacct == st.cgroup) {
			continue
		}
		memRows, cpuRows = memRows[:0], cpuRows[:0]
		eachRow("/"+st.cgroup, depth, func(row string) { memRows = append(memRows, row) })
		if st.cpuacctOK {
			eachRow("/"+st.cpuacct, depth, func(row string) { cpuRows = append(cpuRows, row) })
		}
		for _, row := range memRows {
			if !slices.Contains(cpuRows, row) {
				r.mixed[row] = true
			}
		}
		for _, row := range cpuRows {
			if !slices.Contains(memRows, row) {
				r.mixed[row] = true
			}
		}
	}
}

// cpuTime records v, cgroup rel's cumulative CPU time in units of which
// perPercent a second are 1% (ns: 1e7, µs: 1e4), and where use says so
// gives row g its CPU% over the time since the last read: from the
// counter's second read on, the first leaving the processes' sum.
func (r *cgroupReader) cpuTime(g *Cgroup, rel string, v uint64, perPercent float64, use bool) {
	key := rel + "\x00cpu"
	had := r.counts.has(key)
	if pct := r.counts.rate(key, v, r.counts.now()) / perPercent; had && use {
		g.CPUPercent = pct
	}
}

func cut0(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// byNode is anon + file of the memory.numa_stat last parsed, in bytes by
// node ("0", "1", ...), the nodes without any left out.
func (r *cgroupReader) byNode() map[string]uint64 {
	m := map[string]uint64{}
	for n := range max(len(r.numa.Anon), len(r.numa.File)) {
		var b uint64
		if n < len(r.numa.Anon) {
			b += r.numa.Anon[n]
		}
		if n < len(r.numa.File) {
			b += r.numa.File[n]
		}
		if b > 0 {
			m[strconv.Itoa(n)] = b
		}
	}
	return m
}

// missing says what the cgroup table lacks and why, one line each.
func (r *cgroupReader) missing(gs []Cgroup) []string {
	var out []string
	switch {
	case r.v1 && r.cpuacct == "":
		out = append(out, fmt.Sprintf("per-cgroup CPU time and NUMA hinting faults (cpu.stat, memory.stat's numa_*): cgroup v1, where the rows follow the memory controller's hierarchy (%s) and no cpuacct hierarchy is mounted; a row's CPU%% is its processes' sum, its memory memory.numa_stat's", r.fs.Sys("fs", "cgroup", "memory")))
	case r.v1:
		n := 0
		for _, g := range gs {
			if g.Path != "/" && r.mixed[g.Path] {
				n++
			}
		}
		line := fmt.Sprintf("per-cgroup NUMA hinting faults (memory.stat's numa_*): cgroup v1, where the rows follow the memory controller's hierarchy (%s); a row's memory is memory.numa_stat's, its CPU%% cpuacct.usage's (%s)", r.fs.Sys("fs", "cgroup", "memory"), r.fs.Sys("fs", "cgroup", r.cpuacct))
		if n > 0 {
			line += fmt.Sprintf(", except in %s whose processes the cpuacct hierarchy places elsewhere: their processes' sum", term.Plural(n, "row", "rows"))
		}
		out = append(out, line)
	}
	for _, g := range gs {
		if g.MemoryByNode != nil {
			return out
		}
	}
	if r.v1 {
		return append(out, fmt.Sprintf("memory per node by cgroup: no memory.numa_stat under %s", r.fs.Sys("fs", "cgroup", "memory")))
	}
	return append(out, fmt.Sprintf("memory per node by cgroup: no cgroup v2 memory.numa_stat under %s, and no cgroup v1 memory hierarchy at %s (the memory controller is not enabled there): --cgroup groups by the cgroup v2 path only", r.fs.Sys("fs", "cgroup"), r.fs.Sys("fs", "cgroup", "memory")))
}

// add counts process p in the row.
func (g *Cgroup) add(p *Process) {
	g.Processes++
	g.CPUPercent += p.CPUPercent
	if p.NUMAFaults != nil {
		if g.NUMAFaults == nil {
			g.NUMAFaults = &Faults{}
		}
		g.NUMAFaults.Local += p.NUMAFaults.Local
		g.NUMAFaults.Remote += p.NUMAFaults.Remote
	}
}
