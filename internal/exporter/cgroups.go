package exporter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// CgroupConfig says which cgroups numascope exporter --cgroups exports,
// and how many series it may give them.
type CgroupConfig struct {
	// Root is the cgroup v2 mount; "" finds it: the sys directory's
	// fs/cgroup, or fs/cgroup/unified on a hybrid (v1 and v2) machine. On
	// a hybrid machine whose memory controller is on cgroup v1, the v1
	// memory hierarchy at fs/cgroup/memory is walked instead (V1).
	Root string
	// V1 says that Root is a cgroup v1 memory hierarchy: memory.numa_stat
	// in v1's format (pages), a cgroup's threads in "tasks".
	V1 bool
	// CpusetV1, with V1, is the v1 cpuset hierarchy whose cgroups of the
	// same paths as Root's give the cpuset series ("" finds it at the sys
	// directory's fs/cgroup/cpuset when Root is found too; none where it
	// is not a directory).
	CpusetV1 string
	// Depth is how many levels below the root are exported: 1 is the
	// root's children only. The root itself is not exported (its memory
	// is the machine's, which the per-node series give).
	Depth int
	// Include and Exclude, when set, are matched against the cgroup label
	// (its path from the root, "/a/b") as a whole: a cgroup is exported
	// when Include matches it (or is nil) and Exclude does not.
	Include, Exclude *regexp.Regexp
	// MaxSeries caps the per-cgroup series of a read. A cgroup whose
	// series would go over it is left out whole, and so is every cgroup
	// after it in the walk (sorted by path, parents first), so that the
	// set exported is stable from read to read; numascope_cgroups_left_out
	// says how many were.
	MaxSeries int
	// Faults sums the NUMA hinting faults of /proc/TID/sched over the
	// threads of each cgroup and its descendants (numascope_cgroup_numa_faults).
	// It reads one file per thread, so it is off unless asked for.
	Faults bool
}

// Defaults of the --cgroup-* flags.
const (
	DefaultCgroupDepth     = 4 // kubepods.slice/kubepods-burstable.slice/<pod>.slice/<container>.scope
	DefaultCgroupMaxSeries = 10000
	// maxCgroupWalk bounds the levels walked below the root (for the
	// faults of descendants below Depth), whatever the tree's depth.
	maxCgroupWalk = 64
)

// numaStatSkipped are the lines of memory.numa_stat that are not exported
// as numascope_cgroup_memory_bytes: the workingset_* lines count events,
// not bytes, and the LRU lists (active_anon, ...) split anon and file
// again, doubling the series for little.
func numaStatSkipped(name string) bool {
	return strings.HasPrefix(name, "workingset_") || strings.HasPrefix(name, "active_") || strings.HasPrefix(name, "inactive_")
}

// cgroupStatKeys are the lines of memory.stat exported as counters, each
// numascope_cgroup_<key>_total; a kernel without a line gives no series
// for it (they are recent: Debian 12's 6.1 has none; numa_* need
// CONFIG_NUMA_BALANCING, pgpromote and pgdemote memory tiering).
var cgroupStatKeys = []struct{ key, help string }{
	{"numa_hint_faults", "NUMA hinting faults taken by the cgroup's tasks"},
	{"numa_pte_updates", "pages NUMA balancing marked for a hinting fault in the cgroup's memory"},
	{"numa_pages_migrated", "pages NUMA balancing migrated for the cgroup (pages)"},
	{"pgpromote_success", "pages of the cgroup promoted to a faster memory tier (pages)"},
	{"pgdemote_kswapd", "pages of the cgroup demoted to a slower tier by kswapd (pages)"},
	{"pgdemote_direct", "pages of the cgroup demoted to a slower tier by direct reclaim (pages)"},
	{"pgdemote_khugepaged", "pages of the cgroup demoted to a slower tier by khugepaged (pages)"},
	{"pgdemote_proactive", "pages of the cgroup demoted to a slower tier by proactive reclaim (pages)"},
}

// cgEntry is one exported cgroup, kept from read to read so that its
// label sets are made once; it is dropped in the first read that does
// not find the cgroup.
type cgEntry struct {
	label string // "/a/b", invalid UTF-8 bytes written \xNN
	gen   uint64 // the last read that found it
	ls    *labelSet
	// memLS[type][node] is the label set {cgroup,numa_node,type}, made
	// when first needed.
	memLS [][]*labelSet
	mem   []cgSample // this read's memory series
	stat  [8]float64
	have  uint8 // bit i: stat[i] was read
	// cpuset info: the contents its label set was made of.
	cpus, mems string
	infoLS     *labelSet
	hasInfo    bool
	allowed    []bool  // by node: in mems (nil: the list did not parse)
	outside    float64 // anon and file bytes on nodes not in mems
	hasOutside bool
	faultLS    [2]*labelSet // locality local, remote
	faults     [2]uint64
	// fds holds the cgroup's cgFiles open from scrape to scrape (-1: not
	// held), read again with pread at 0, which cgroupfs answers by printing
	// the file anew: an open and a close of a kernfs file cost more than
	// the read (docs/performance.md). ino is the cgroup directory's inode
	// they were opened in: a cgroup renamed away and another made under
	// its name is another inode, whose files are opened anew.
	fds [len(cgFiles)]int
	ino uint64
}

// cgFiles are the files read in each exported cgroup, in cgEntry.fds's order.
var cgFiles = [...]string{"memory.numa_stat", "memory.stat", "cpuset.cpus.effective", "cpuset.mems.effective"}

const (
	fileNUMAStat = iota
	fileStat
	fileCPUs
	fileMems
)

// maxHeldFiles bounds the descriptors the collector holds (four per
// exported cgroup); past it, or half of RLIMIT_NOFILE, files are opened
// and closed at each read, as before.
const maxHeldFiles = 16384

type cgSample struct {
	ls *labelSet
	v  float64
}

// cgroupCollector exports cgroups' memory per node (memory.numa_stat),
// NUMA balancing and tiering counters (memory.stat), allowed CPUs and
// nodes (cpuset.*.effective) and, when asked, NUMA faults (/proc/TID/sched).
// It walks the tree at each read with openat from the root, so that a path
// longer than PATH_MAX (4 KiB) is still read, and follows no symbolic link.
type cgroupCollector struct {
	cfg   CgroupConfig
	root  string
	proc  string
	nodes []bool // a node ID the topology has; nil: every node
	gen   uint64

	entries map[string]*cgEntry // by path below the root, as the kernel spells it
	byLabel map[string]*cgEntry // by label, to tell two paths of one label apart
	order   []*cgEntry          // this read's, in walk order

	types   []string       // memory.numa_stat lines, interned
	typeIdx map[string]int //
	numa    procnuma.CgroupNUMA
	sched   procnuma.Sched

	path  []byte // "/a/b" of the cgroup being read
	names []byte // the walk's directory names, a stack of them
	dents []byte // getdents buffer
	buf   []byte // file buffer
	tids  []byte // cgroup.threads buffer
	pbuf  []byte // /proc/TID/sched
	cpus  []byte // cpuset.cpus.effective, while mems is read
	// procsA and procsB are the two cgroup.procs sameProcs compares (v1).
	procsA, procsB []int

	series, leftOut int
	full            bool // the cap was reached in this read
	// held counts the descriptors of entries' fds, at most maxHeld.
	held, maxHeld int
	// visited counts the directories of this read's walk; past maxVisit
	// the walk stops (an error): a user with a delegated subtree could
	// otherwise make every scrape walk millions of cgroups it creates.
	visited, maxVisit int
	err               error

	memFam, outFam, infoFam, faultFam, countFam, leftFam *family
	statFams                                             []*family
}

// cgroupV2Root finds the cgroup v2 mount under fs: fs/cgroup, or
// fs/cgroup/unified on a hybrid machine; memory says whether the memory
// controller is on it.
func cgroupV2Root(fs sysfs.FS) (root string, memory bool, err error) {
	for _, d := range []string{fs.Sys("fs", "cgroup"), fs.Sys("fs", "cgroup", "unified")} {
		if ctl, err := os.ReadFile(d + "/cgroup.controllers"); err == nil {
			return d, slices.Contains(strings.Fields(string(ctl)), "memory"), nil
		}
	}
	return "", false, fmt.Errorf("no cgroup v2 hierarchy at %s or %s/unified", fs.Sys("fs", "cgroup"), fs.Sys("fs", "cgroup"))
}

// cgroupRoot finds the hierarchy to walk under fs: the cgroup v2 mount
// when it has the memory controller, or is fs/cgroup itself; else (a
// hybrid machine, the memory controller on v1, or a v1-only one) the v1
// memory hierarchy at fs/cgroup/memory where there is one (v1 true); else
// the v2 mount without it.
func cgroupRoot(fs sysfs.FS) (root string, v1 bool, err error) {
	root, memory, err := cgroupV2Root(fs)
	if err == nil && (memory || root == fs.Sys("fs", "cgroup")) {
		return root, false, nil
	}
	m := fs.Sys("fs", "cgroup", "memory")
	if fi, err := os.Lstat(m); err == nil && fi.IsDir() {
		return m, true, nil
	}
	if err == nil {
		return root, false, nil
	}
	return "", false, fmt.Errorf("--cgroups: %v, nor a v1 memory hierarchy at %s: mount one (mount -t cgroup2 none %s) or leave --cgroups out", err, m, fs.Sys("fs", "cgroup"))
}

// newCgroupCollector checks the configuration and the root; log receives
// one line when the memory controller is not in the v2 hierarchy (a hybrid
// machine), where only the faults can be exported.
func newCgroupCollector(cfg CgroupConfig, fs sysfs.FS, topo *topology.Topology, log func(string)) (*cgroupCollector, error) {
	if cfg.Depth < 1 || cfg.Depth > maxCgroupWalk {
		return nil, fmt.Errorf("--cgroup-depth %d: give 1 (the root's children) to %d", cfg.Depth, maxCgroupWalk)
	}
	if cfg.MaxSeries < 1 {
		return nil, fmt.Errorf("--cgroup-max-series %d: give at least 1", cfg.MaxSeries)
	}
	root := cfg.Root
	if root == "" {
		r, v1, err := cgroupRoot(fs)
		if err != nil {
			return nil, err
		}
		root, cfg.V1 = r, v1
		if v1 && cfg.CpusetV1 == "" {
			// A real directory, as systemd mounts it (not a link).
			if fi, err := os.Lstat(fs.Sys("fs", "cgroup", "cpuset")); err == nil && fi.IsDir() {
				cfg.CpusetV1 = fs.Sys("fs", "cgroup", "cpuset")
			}
		}
	}
	if cfg.V1 {
		if log != nil {
			cpusets := "no v1 cpuset hierarchy is mounted at " + fs.Sys("fs", "cgroup", "cpuset") + ", so no cpuset series"
			if cfg.CpusetV1 != "" {
				cpusets = "the cpuset series come from the cgroup of the same path in the cpuset hierarchy at " + cfg.CpusetV1 + ", where there is one"
			}
			log(fmt.Sprintf("exporter: cgroups: the memory controller is on cgroup v1 (a hybrid machine): the cgroups are those of its hierarchy at %s; its memory.stat has no numa_* counters; %s", root, cpusets))
		}
	} else if ctl, err := os.ReadFile(root + "/cgroup.controllers"); err != nil {
		return nil, fmt.Errorf("--cgroups: %v: is %s a cgroup v2 mount?", errors.Unwrap(err), root)
	} else if !slices.Contains(strings.Fields(string(ctl)), "memory") && log != nil {
		log(fmt.Sprintf("exporter: cgroups: the memory controller is not in the cgroup v2 hierarchy at %s (controllers: %q; a cgroup v1 or hybrid machine): no numascope_cgroup_memory_bytes nor memory.stat counters", root, strings.TrimSpace(string(ctl))))
	}
	c := &cgroupCollector{
		cfg: cfg, root: root, proc: fs.Proc(), maxVisit: max(100000, 4*cfg.MaxSeries),
		entries: map[string]*cgEntry{}, byLabel: map[string]*cgEntry{}, typeIdx: map[string]int{},
		dents: make([]byte, 32<<10), buf: make([]byte, 16<<10), tids: make([]byte, 4<<10),
		memFam: newFamily("numascope_cgroup_memory_bytes",
			"memory charged to the cgroup and its descendants on each NUMA node, by type (bytes; the lines of memory.numa_stat)", gauge),
		outFam: newFamily("numascope_cgroup_memory_outside_cpuset_bytes",
			"the cgroup's anon and file memory on nodes its cpuset.mems.effective (v1: cpuset.effective_mems) does not allow (bytes; memory.numa_stat against it): memory placed before a pinning, or by a policy that ignores it", gauge),
		infoFam: newFamily("numascope_cgroup_cpuset_info",
			"one series per cgroup with a cpuset, always 1: the CPUs and memory nodes it may use (cpuset.cpus.effective, cpuset.mems.effective; on cgroup v1 the cpuset hierarchy's cpuset.effective_cpus and cpuset.effective_mems; kernel list format)", gauge),
		faultFam: newFamily("numascope_cgroup_numa_faults",
			"NUMA hinting faults of the cgroup's threads and its descendants', on memory of the node each thread runs on (local) or another (remote): the kernel's decayed per-task averages, summed (source: sched, /proc/TID/sched numa_faults)", gauge),
		countFam: newFamily("numascope_cgroups",
			"cgroups exported in the last read (--cgroup-depth, --cgroup-include, --cgroup-exclude)", gauge),
		leftFam: newFamily("numascope_cgroups_left_out",
			"cgroups that --cgroup-include and --cgroup-exclude select but that were not exported in the last read, their series being over --cgroup-max-series", gauge),
	}
	c.maxHeld = maxHeldFiles
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur/2 < uint64(c.maxHeld) {
		c.maxHeld = int(rl.Cur / 2)
	}
	for _, k := range cgroupStatKeys {
		c.statFams = append(c.statFams, newFamily("numascope_cgroup_"+k.key+"_total", k.help+" (memory.stat "+k.key+")", counter))
	}
	if topo != nil && topo.NUMA {
		for _, n := range topo.Nodes {
			for len(c.nodes) <= n.ID {
				c.nodes = append(c.nodes, false)
			}
			c.nodes[n.ID] = true
		}
	}
	return c, nil
}

func (c *cgroupCollector) Name() string { return "cgroups" }

// Close closes the descriptors the entries hold.
func (c *cgroupCollector) Close() error {
	for _, e := range c.entries {
		c.closeFiles(e)
	}
	return nil
}

// closeFiles closes the descriptors e holds.
func (c *cgroupCollector) closeFiles(e *cgEntry) {
	for i, fd := range e.fds {
		if fd >= 0 {
			unix.Close(fd)
			e.fds[i] = -1
			c.held--
		}
	}
}

func (c *cgroupCollector) Update(b *builder) error {
	c.gen++
	c.order, c.series, c.leftOut, c.full, c.err, c.visited = c.order[:0], 0, 0, false, nil, 0
	fd, err := unix.Open(c.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %v", c.root, err)
	}
	cpusetFd := -1
	if c.cfg.V1 && c.cfg.CpusetV1 != "" {
		if cpusetFd, err = unix.Open(c.cfg.CpusetV1, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
			c.err = fmt.Errorf("the v1 cpuset hierarchy %s: %v (no cpuset series this read)", c.cfg.CpusetV1, err)
			cpusetFd = -1
		}
	}
	c.path = append(c.path[:0], '/')
	c.names = c.names[:0]
	c.walk(fd, cpusetFd, 0)
	unix.Close(fd)
	if cpusetFd >= 0 {
		unix.Close(cpusetFd)
	}
	for k, e := range c.entries {
		if e.gen != c.gen {
			c.closeFiles(e)
			delete(c.entries, k)
			if c.byLabel[e.label] == e {
				delete(c.byLabel, e.label)
			}
		}
	}
	c.emit(b)
	return c.err
}

// emit adds this read's families, each with its series in walk order.
func (c *cgroupCollector) emit(b *builder) {
	b.begin(c.memFam)
	for _, e := range c.order {
		for _, s := range e.mem {
			b.add(s.ls, s.v)
		}
	}
	b.begin(c.outFam)
	for _, e := range c.order {
		if e.hasOutside {
			b.add(e.ls, e.outside)
		}
	}
	for i, f := range c.statFams {
		b.begin(f)
		for _, e := range c.order {
			if e.have&(1<<i) != 0 {
				b.add(e.ls, e.stat[i])
			}
		}
	}
	b.begin(c.infoFam)
	for _, e := range c.order {
		if e.hasInfo {
			b.add(e.infoLS, 1)
		}
	}
	if c.cfg.Faults {
		b.begin(c.faultFam)
		for _, e := range c.order {
			b.add(e.faultLS[0], float64(e.faults[0]))
			b.add(e.faultLS[1], float64(e.faults[1]))
		}
	}
	b.begin(c.countFam)
	b.add(nil, float64(len(c.order)))
	b.begin(c.leftFam)
	b.add(nil, float64(c.leftOut))
}

// fail keeps the read's first error that is not a cgroup going away
// while it is read (which is churn, not a failure).
func (c *cgroupCollector) fail(what string, err error) {
	if c.err == nil && !gone(err) {
		c.err = fmt.Errorf("%s%s: %v", c.root, what, err)
	}
}

func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ESRCH)
}

// walk reads the cgroup open at dirfd (c.path), at depth below the root,
// and its children; it returns the faults of its subtree. On v1, cpusetFd
// is the cgroup of the same path in the cpuset hierarchy (-1: none), walked
// alongside.
func (c *cgroupCollector) walk(dirfd, cpusetFd, depth int) (local, remote uint64) {
	if c.visited++; c.visited > c.maxVisit {
		if c.visited == c.maxVisit+1 {
			c.err = fmt.Errorf("%s: more than %d cgroups: the walk stopped there (the others are neither exported nor counted); narrow it with --cgroup-depth", c.root, c.maxVisit)
		}
		return 0, 0
	}
	var e *cgEntry
	if depth >= 1 && depth <= c.cfg.Depth && c.selected() {
		if c.full {
			c.leftOut++
		} else {
			e = c.read(dirfd, cpusetFd)
		}
	}
	if c.cfg.Faults {
		local, remote = c.threadFaults(dirfd)
	}
	if depth < c.cfg.Depth || (c.cfg.Faults && depth < maxCgroupWalk) {
		start := len(c.names)
		c.children(dirfd)
		end := len(c.names)
		// names[start:end] is a run of NUL-terminated names, sorted below.
		var offs []int
		offs = c.sortedNames(start, end, offs)
		plen := len(c.path)
		for _, o := range offs {
			name := c.names[o:]
			name = name[:bytes.IndexByte(name, 0)]
			fd, err := unix.Openat(dirfd, string(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
			if err != nil {
				c.path = append(append(c.path[:plen], name...), '/')
				c.fail(string(c.path), err)
				c.path = c.path[:plen]
				continue
			}
			if plen > 1 {
				c.path = append(c.path, '/')
			}
			c.path = append(c.path, name...)
			childCpuset := -1
			if cpusetFd >= 0 {
				// Absent (ENOENT) where nothing made that cgroup there.
				if cfd, err := unix.Openat(cpusetFd, string(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err == nil {
					childCpuset = cfd
				}
			}
			l, r := c.walk(fd, childCpuset, depth+1)
			unix.Close(fd)
			if childCpuset >= 0 {
				unix.Close(childCpuset)
			}
			c.path = c.path[:plen]
			local += l
			remote += r
		}
		c.names = c.names[:start]
	}
	if e != nil && c.cfg.Faults {
		e.faults = [2]uint64{local, remote}
	}
	return local, remote
}

// sortedNames returns the offsets of the names in c.names[start:end],
// sorted by name: the walk's order, and so which cgroups the cap leaves
// out, does not depend on the directory's hash order.
func (c *cgroupCollector) sortedNames(start, end int, offs []int) []int {
	for i := start; i < end; {
		offs = append(offs, i)
		i += bytes.IndexByte(c.names[i:end], 0) + 1
	}
	name := func(o int) []byte { n := c.names[o:]; return n[:bytes.IndexByte(n, 0)] }
	slices.SortFunc(offs, func(a, b int) int { return bytes.Compare(name(a), name(b)) })
	return offs
}

// children appends the names of dirfd's subdirectories to c.names, each
// followed by a NUL. dirfd was opened for the walk and not read before.
func (c *cgroupCollector) children(dirfd int) {
	for {
		n, err := unix.Getdents(dirfd, c.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			c.fail(string(c.path), err)
			return
		}
		if n <= 0 {
			return
		}
		for buf := c.dents[:n]; len(buf) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(buf[16:18])) // struct linux_dirent64
			if reclen < 19 || reclen > len(buf) {
				return
			}
			typ, name := buf[18], buf[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			buf = buf[reclen:]
			if typ != unix.DT_DIR || string(name) == "." || string(name) == ".." {
				continue
			}
			c.names = append(append(c.names, name...), 0)
		}
	}
}

// selected says whether the cgroup at c.path passes --cgroup-include and
// --cgroup-exclude (matched against its label).
func (c *cgroupCollector) selected() bool {
	p := c.path
	if c.cfg.Include == nil && c.cfg.Exclude == nil {
		return true
	}
	var lb []byte = p
	if !utf8.Valid(p) {
		lb = []byte(cgroupLabel(p))
	}
	return (c.cfg.Include == nil || c.cfg.Include.Match(lb)) && (c.cfg.Exclude == nil || !c.cfg.Exclude.Match(lb))
}

// cgroupLabel is the label value of a cgroup path: the path, with each
// byte that is not valid UTF-8 written \xNN (a label value is UTF-8).
func cgroupLabel(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	var sb strings.Builder
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n <= 1 {
			fmt.Fprintf(&sb, `\x%02x`, p[0])
			p = p[1:]
			continue
		}
		sb.Write(p[:n])
		p = p[n:]
	}
	return sb.String()
}

// readFile reads name in dirfd into c.buf; the data is valid until the
// next call.
func (c *cgroupCollector) readFile(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return c.readFd(fd)
}

// readCgFile reads e's file i (cgFiles) in the cgroup open at dirfd into
// c.buf, through the descriptor e holds, or else opened, and then held
// while fewer than maxHeld are. The data is valid until the next read.
func (c *cgroupCollector) readCgFile(dirfd int, e *cgEntry, i int) ([]byte, error) {
	if fd := e.fds[i]; fd >= 0 {
		if data, err := c.readFd(fd); err == nil {
			return data, nil
		}
		// The file is gone (ENODEV: its controller was turned off, or the
		// cgroup removed): drop it, and see whether it is there anew.
		unix.Close(fd)
		e.fds[i] = -1
		c.held--
	}
	fd, err := unix.Openat(dirfd, cgFiles[i], unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	data, err := c.readFd(fd)
	if err == nil && c.held < c.maxHeld {
		e.fds[i] = fd
		c.held++
	} else {
		unix.Close(fd)
	}
	return data, err
}

// readFd reads fd whole from offset 0 (pread: a held descriptor is read
// again from its start) into c.buf; the data is valid until the next call.
func (c *cgroupCollector) readFd(fd int) ([]byte, error) {
	n := 0
	for {
		if n == len(c.buf) {
			if len(c.buf) >= 1<<20 {
				return nil, errors.New("larger than 1 MiB, not a kernel file")
			}
			c.buf = append(c.buf, make([]byte, len(c.buf))...)
		}
		m, err := unix.Pread(fd, c.buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		n += m
		// A read that leaves a page of the buffer unfilled is the end:
		// seq_file (cgroupfs, procfs) stops short of the buffer only at
		// the end or before a record that does not fit, and records
		// (a line of cgroup.threads, a whole memory.stat) fit in a page.
		// It saves the read that would return 0: a quarter of the system
		// calls of a scrape.
		if m == 0 || len(c.buf)-n >= 4096 {
			return c.buf[:n], nil
		}
	}
}

// read reads one selected cgroup's files (on v1, its cpuset's from
// cpusetFd); it returns its entry, or nil when it has nothing to export or
// does not fit under the cap.
func (c *cgroupCollector) read(dirfd, cpusetFd int) *cgEntry {
	e := c.entries[string(c.path)]
	if e == nil {
		label := cgroupLabel(c.path)
		e = &cgEntry{label: label, ls: newLabels([]string{"cgroup"}, []string{label}), fds: [len(cgFiles)]int{-1, -1, -1, -1}}
		if c.cfg.Faults {
			e.faultLS[0] = newLabels([]string{"cgroup", "locality", "source"}, []string{label, "local", "sched"})
			e.faultLS[1] = newLabels([]string{"cgroup", "locality", "source"}, []string{label, "remote", "sched"})
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil || st.Ino != e.ino {
		c.closeFiles(e) // another cgroup under this path: its own files
		e.ino = st.Ino
	}
	r := c.readEntry(dirfd, cpusetFd, e)
	if r == nil && e.gen == 0 {
		c.closeFiles(e) // not kept: nothing may hold its descriptors
	}
	return r
}

// readEntry reads e's files from the cgroup open at dirfd; it returns e,
// or nil as read does.
func (c *cgroupCollector) readEntry(dirfd, cpusetFd int, e *cgEntry) *cgEntry {
	e.mem, e.have, e.hasInfo, e.faults, e.hasOutside = e.mem[:0], 0, false, [2]uint64{}, false
	numaOK := false
	if data, err := c.readCgFile(dirfd, e, fileNUMAStat); err == nil {
		if err := c.parseNUMAStat(data); err != nil {
			c.fail(string(c.path)+"/memory.numa_stat", err)
		} else {
			c.memSeries(e)
			numaOK = true
		}
	} else if !gone(err) {
		c.fail(string(c.path)+"/memory.numa_stat", err)
	}
	if data, err := c.readCgFile(dirfd, e, fileStat); err == nil {
		c.statValues(e, data)
	} else if !gone(err) {
		c.fail(string(c.path)+"/memory.stat", err)
	}
	if c.cfg.V1 {
		c.cpusetV1(cpusetFd, e, dirfd)
	} else {
		c.cpuset(dirfd, e)
	}
	if numaOK && e.hasInfo && e.allowed != nil {
		e.outside, e.hasOutside = 0, true
		for _, l := range [][]uint64{c.numa.Anon, c.numa.File} {
			for node, v := range l {
				if node >= len(e.allowed) || !e.allowed[node] {
					e.outside += float64(v)
				}
			}
		}
	}
	n := len(e.mem)
	if e.hasOutside {
		n++
	}
	for i := range cgroupStatKeys {
		if e.have&(1<<i) != 0 {
			n++
		}
	}
	if e.hasInfo {
		n++
	}
	if c.cfg.Faults {
		n += 2
	}
	if n == 0 {
		return nil // nothing to say (no controller there): not counted
	}
	if c.series+n > c.cfg.MaxSeries {
		c.full = true
		c.leftOut++
		return nil
	}
	if o := c.byLabel[e.label]; o != nil && o != e && o.gen == c.gen {
		// Another path of this read has the same label: "\xff" written
		// out, and the byte 0xff. The first one walked is exported.
		c.leftOut++
		return nil
	}
	c.series += n
	if e.gen == 0 {
		c.entries[string(c.path)] = e
	}
	c.byLabel[e.label] = e
	e.gen = c.gen
	c.order = append(c.order, e)
	return e
}

// parseNUMAStat parses a memory.numa_stat into c.numa, in v2's format
// or, on a v1 hierarchy, in v1's (pages, made bytes).
func (c *cgroupCollector) parseNUMAStat(data []byte) error {
	if c.cfg.V1 {
		return procnuma.ParseCgroupV1NUMA(data, &c.numa, uint64(os.Getpagesize()))
	}
	return procnuma.ParseCgroupNUMA(data, &c.numa)
}

// memType is the type label of a memory.numa_stat line, ok false for a
// line not exported (numaStatSkipped). On v1 only the hierarchical_ lines
// are, named as v2 names them (anon, file, unevictable: the cgroup and its
// descendants, as v2's lines count); their sum, total, is not.
func (c *cgroupCollector) memType(name string) (string, bool) {
	if c.cfg.V1 {
		t, ok := strings.CutPrefix(name, "hierarchical_")
		return t, ok && t != "total"
	}
	return name, !numaStatSkipped(name)
}

// memSeries fills e.mem from c.numa, making the label sets it lacks.
func (c *cgroupCollector) memSeries(e *cgEntry) {
	for _, it := range c.numa.Items {
		name, ok := c.memType(it.Name)
		if !ok {
			continue
		}
		ti, ok := c.typeIdx[name]
		if !ok {
			if len(c.types) >= 64 {
				continue // not a kernel's file: it has some 20 lines
			}
			ti = len(c.types)
			c.types = append(c.types, name)
			c.typeIdx[name] = ti
		}
		for len(e.memLS) <= ti {
			e.memLS = append(e.memLS, nil)
		}
		for node, v := range it.ByNode {
			if c.nodes != nil && (node >= len(c.nodes) || !c.nodes[node]) {
				continue // a gap in the file's N<id>, or a node the topology lacks
			}
			for len(e.memLS[ti]) <= node {
				e.memLS[ti] = append(e.memLS[ti], nil)
			}
			ls := e.memLS[ti][node]
			if ls == nil {
				ls = newLabels([]string{"cgroup", "numa_node", "type"}, []string{e.label, strconv.Itoa(node), c.types[ti]})
				e.memLS[ti][node] = ls
			}
			e.mem = append(e.mem, cgSample{ls: ls, v: float64(v)})
		}
	}
}

// statValues picks cgroupStatKeys' lines out of memory.stat.
func (c *cgroupCollector) statValues(e *cgEntry, data []byte) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			continue
		}
		for i, sk := range cgroupStatKeys {
			if string(k) == sk.key {
				u, err := strconv.ParseUint(string(v), 10, 64)
				if err == nil {
					e.stat[i] = float64(u)
					e.have |= 1 << i
				}
				break
			}
		}
	}
}

// cpuset reads cpuset.cpus.effective and cpuset.mems.effective into e's
// info series.
func (c *cgroupCollector) cpuset(dirfd int, e *cgEntry) {
	cpus, err := c.readCgFile(dirfd, e, fileCPUs)
	if err == nil {
		c.cpus = append(c.cpus[:0], bytes.TrimSpace(cpus)...)
		var mems []byte
		if mems, err = c.readCgFile(dirfd, e, fileMems); err == nil {
			c.setCpuset(e, bytes.TrimSpace(mems))
			return
		}
	}
	if !gone(err) {
		c.fail(string(c.path)+"/cpuset.*.effective", err)
	}
}

// cpusetV1 reads, on v1, the cpuset of the same path in the cpuset
// hierarchy, open at fd (-1: there is none): cpuset.effective_cpus and
// cpuset.effective_mems, or where a kernel lacks them v1's cpuset.cpus and
// cpuset.mems, which v1 keeps within the parent's. The two hierarchies are
// apart: Slurm, Docker, containerd and Kubernetes make the same paths in
// both, but nothing makes a path name the same processes in each. So the
// cpuset is taken only where the two cgroups hold the same processes
// (cgroup.procs), and not where it has no CPU or no node (no task can be
// in it). Its files are opened at each read, not held: the cgroup of that
// path in the cpuset hierarchy may be removed and made anew apart from
// the memory one.
func (c *cgroupCollector) cpusetV1(fd int, e *cgEntry, dirfd int) {
	if fd < 0 {
		return
	}
	failed := func(err error) {
		if c.err == nil && !gone(err) {
			c.err = fmt.Errorf("%s%s: %v", c.cfg.CpusetV1, c.path, err)
		}
	}
	same, err := c.sameProcs(dirfd, fd)
	if err != nil {
		failed(err)
		return
	}
	if !same {
		return
	}
	for _, f := range [][2]string{{"cpuset.effective_cpus", "cpuset.effective_mems"}, {"cpuset.cpus", "cpuset.mems"}} {
		var cpus, mems []byte
		if cpus, err = c.readFile(fd, f[0]); err != nil {
			continue
		}
		c.cpus = append(c.cpus[:0], bytes.TrimSpace(cpus)...)
		if mems, err = c.readFile(fd, f[1]); err != nil {
			continue
		}
		if mems = bytes.TrimSpace(mems); len(c.cpus) > 0 && len(mems) > 0 {
			c.setCpuset(e, mems)
		}
		return
	}
	failed(err)
}

// sameProcs says whether the cgroups open at a and b list the same
// processes in cgroup.procs (as sets: v1 does not promise them sorted).
func (c *cgroupCollector) sameProcs(a, b int) (bool, error) {
	data, err := c.readFile(a, "cgroup.procs")
	if err != nil {
		return false, err
	}
	c.procsA = appendIDs(c.procsA[:0], data)
	if data, err = c.readFile(b, "cgroup.procs"); err != nil {
		return false, err
	}
	c.procsB = appendIDs(c.procsB[:0], data)
	return slices.Equal(c.procsA, c.procsB), nil
}

// appendIDs appends the numbers of a cgroup.procs to dst, sorted, each once
// (a line that is no number is kept as -1, so that two such files still
// differ from a clean one).
func appendIDs(dst []int, data []byte) []int {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		n := 0
		for _, d := range line {
			if d < '0' || d > '9' || n > 1<<40 {
				n = -1
				break
			}
			n = n*10 + int(d-'0')
		}
		dst = append(dst, n)
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}

// setCpuset gives e the info series of c.cpus and mems, making its label
// set anew when they changed.
func (c *cgroupCollector) setCpuset(e *cgEntry, mems []byte) {
	if e.infoLS == nil || string(c.cpus) != e.cpus || string(mems) != e.mems {
		e.cpus, e.mems = string(c.cpus), string(mems)
		e.infoLS = newLabels([]string{"cgroup", "cpus", "mems"}, []string{e.label, e.cpus, e.mems})
		e.allowed = nil
		if ns, err := sysfs.ParseCPUList(e.mems); err == nil {
			for _, n := range ns {
				if n >= 0 && n <= procnuma.MaxNode {
					for len(e.allowed) <= n {
						e.allowed = append(e.allowed, false)
					}
					e.allowed[n] = true
				}
			}
			if e.allowed == nil {
				e.allowed = []bool{} // an empty mems: every node is outside
			}
		}
	}
	e.hasInfo = true
}

// threadFaults sums, over the threads of cgroup.threads (v1: tasks), the
// hinting faults of /proc/TID/sched on memory of the thread's current
// node (local) and of the others (remote), as numascope top does.
func (c *cgroupCollector) threadFaults(dirfd int) (local, remote uint64) {
	threads := "cgroup.threads"
	if c.cfg.V1 {
		threads = "tasks"
	}
	data, err := c.readFile(dirfd, threads)
	if err != nil {
		if !gone(err) {
			c.fail(string(c.path)+"/"+threads, err)
		}
		return 0, 0
	}
	c.tids = append(c.tids[:0], data...)
	for t := c.tids; len(t) > 0; {
		line := t
		if i := bytes.IndexByte(t, '\n'); i >= 0 {
			line, t = t[:i], t[i+1:]
		} else {
			t = nil
		}
		if len(line) == 0 || len(line) > 10 {
			continue
		}
		c.pbuf = append(append(append(c.pbuf[:0], c.proc...), '/'), line...)
		c.pbuf = append(c.pbuf, "/sched"...)
		data, err := c.readFile(unix.AT_FDCWD, string(c.pbuf))
		if err != nil || procnuma.ParseSched(data, &c.sched) != nil || !c.sched.NUMA {
			continue // exited, or a kernel without NUMA balancing
		}
		for _, f := range c.sched.Faults {
			if f.Node == c.sched.CurrentNode {
				local += f.TaskPrivate + f.TaskShared
			} else {
				remote += f.TaskPrivate + f.TaskShared
			}
		}
	}
	return local, remote
}
