package top

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
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
}

func (r *cgroupReader) init(fs sysfs.FS) {
	r.fs, r.seen = fs, map[string]bool{}
	r.counts.init()
	_, errV2 := os.Stat(fs.Sys("fs", "cgroup", "cgroup.controllers"))
	fi, errV1 := os.Lstat(fs.Sys("fs", "cgroup", "memory")) // a symbolic link there is no hierarchy
	r.v1 = errV2 != nil && errV1 == nil && fi.IsDir()
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
			} else {
				st.cgroup, st.cgOK, _ = c.rd.CgroupOf(p.PID)
			}
			st.cgRead = true
		}
		if !st.cgOK {
			continue
		}
		p.Cgroup = "/" + st.cgroup
		// The prefixes of p.Cgroup that end before a '/' (and the whole
		// path), from the root down: "/", "/a", "/a/b", ...
		end, level := 1, 0
		for {
			path := p.Cgroup[:end]
			k, ok := index[path]
			if !ok && len(out) < maxCgroups {
				k, ok = len(out), true
				index[path] = k
				out = append(out, Cgroup{Path: path, HintFaults: -1, PagesMigrated: -1})
			}
			if ok {
				out[k].add(p)
			}
			if end >= len(p.Cgroup) || level == depth {
				break
			}
			next := strings.IndexByte(p.Cgroup[end+1:], '/')
			if next < 0 {
				end = len(p.Cgroup)
			} else {
				end += 1 + next
			}
			level++
		}
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
		// v1's memory.stat has no numa_* counters, and cpuacct is
		// another hierarchy, whose paths may differ: CPU% stays the
		// processes' sum.
		if data, err := c.rd.ReadCgroupV1File("memory", rel, "memory.numa_stat"); err == nil &&
			procnuma.ParseCgroupV1NUMA(data, &r.numa, uint64(os.Getpagesize())) == nil {
			g.MemoryByNode = r.byNode()
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
		at := r.counts.now()
		eachKV(data, func(k []byte, v uint64) {
			if string(k) == "usage_usec" {
				key := rel + "\x00cpu"
				had := r.counts.has(key)
				if pct := r.counts.rate(key, v, at) / 1e4; had {
					g.CPUPercent = pct
				}
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
	if r.v1 {
		out = append(out, fmt.Sprintf("per-cgroup CPU time and NUMA hinting faults (cpu.stat, memory.stat's numa_*): cgroup v1, where the rows follow the memory controller's hierarchy (%s); a row's CPU%% is its processes' sum, its memory memory.numa_stat's", r.fs.Sys("fs", "cgroup", "memory")))
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
