package topology

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/numascope/numascope/internal/sysfs"
)

// Unknown is the value of CPU.Package, CPU.Die, CPU.Core and CPU.Node when the
// kernel does not say (an offline CPU has no topology directory; old kernels
// have no die_id). It is -1 rather than 0 so that "unknown" can never be
// mistaken for "the first one".
const Unknown = -1

// Discover reads the topology of the machine (or captured tree) under fs.
//
// Discovery is deliberately tolerant: real sysfs trees are full of quirks
// (NUL padding, missing list files on old kernels, files that fail to read
// for permission reasons, garbage left by broken firmware), and a tool that
// gives up on the first odd file is useless exactly on the machines where a
// NUMA engineer needs it. Every quirk becomes one sentence in
// Topology.Warnings and discovery goes on with what it has. Discover fails
// only when it can read nothing at all: no CPU, no node and no memory.
func Discover(fs sysfs.FS) (*Topology, error) {
	d := &discoverer{fs: fs, seen: map[string]bool{}}
	return d.run()
}

type discoverer struct {
	fs            sysfs.FS
	warnings      []string
	seen          map[string]bool
	disagree      map[string]*disagreement
	disagreeOrder []string
}

// disagreement counts list/mask pairs of one kind that do not agree.
type disagreement struct {
	list, mask string
	count      int
	example    string
}

// flushDisagreements turns the counted list/mask disagreements into warnings.
func (d *discoverer) flushDisagreements() {
	for _, k := range d.disagreeOrder {
		dg := d.disagree[k]
		if dg.count == 1 {
			d.warnf("%s; using the mask", dg.example)
			continue
		}
		d.warnf("%d %s files disagree with their %s (first: %s); using the masks", dg.count, dg.list, dg.mask, dg.example)
	}
}

// warnf records a warning once. The same quirk in 256 CPU directories is one
// problem, not 256.
func (d *discoverer) warnf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if d.seen[s] {
		return
	}
	d.seen[s] = true
	d.warnings = append(d.warnings, s)
}

// notExist reports whether err means the file is simply absent. ENOTDIR
// counts: a path component that is a file means the directory is absent.
func notExist(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// read returns the cleaned content of a small file. ok is false when the file
// is absent or unreadable; unreadable files (permissions, I/O errors) are
// warned about because they hide information the user may expect.
func (d *discoverer) read(path string) (string, bool) {
	b, err := sysfs.ReadFile(path) // a FIFO in a --root tree is a warning, not a hang
	if err != nil {
		if nr := (*sysfs.NotRegularError)(nil); errors.As(err, &nr) {
			d.warnf("%v", nr)
		} else if !notExist(err) {
			d.warnf("cannot read %s: %v", path, unwrapPathError(err))
		}
		return "", false
	}
	return string(sysfs.Clean(b)), true
}

func unwrapPathError(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readInt reads a file holding one decimal integer. Garbage is warned about
// with the file's name and reported as absent.
func (d *discoverer) readInt(path string) (int, bool) {
	s, ok := d.read(path)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		d.warnf("%s: %q is not an integer; ignored", path, truncate(s, 40))
		return 0, false
	}
	return v, true
}

// readSet reads the first usable of several files describing a set of CPUs
// or nodes. Names ending in "list" (cpulist, shared_cpu_list, online) are in
// list format, the others (cpumap, thread_siblings) in mask format. The
// kernel has offered the list files only since 2.6.26ish and some
// architectures never had all of them, so callers give the mask as fallback.
// A garbled file is warned about and the next one is tried.
func (d *discoverer) readSet(dir string, names ...string) ([]int, bool) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		s, ok := d.read(p)
		if !ok {
			continue
		}
		var v []int
		var err error
		if isListFile(n) {
			v, err = sysfs.ParseCPUList(s)
		} else {
			v, err = sysfs.ParseCPUMask(s)
		}
		if err != nil {
			d.warnf("%s: %v; ignored", p, err)
			continue
		}
		return v, true
	}
	return nil, false
}

// readPair reads a set the kernel exposes twice, as a list file and as a
// mask file (cpulist/cpumap, shared_cpu_list/shared_cpu_map). On a real
// kernel both always agree; in captured or hand-edited trees they sometimes
// do not, and then the mask wins: it is the older file, present on every
// kernel, and the one hwloc and most tools read, so results stay comparable.
// The disagreement itself is reported.
func (d *discoverer) readPair(dir, list, mask string) ([]int, bool) {
	l, lok := d.readSet(dir, list)
	m, mok := d.readSet(dir, mask)
	switch {
	case lok && mok:
		if !slices.Equal(l, m) {
			// One edited tree disagrees in hundreds of files: count them
			// and report once per kind of file (see flushDisagreements).
			if d.disagree == nil {
				d.disagree = map[string]*disagreement{}
			}
			k := list + "/" + mask
			if dg := d.disagree[k]; dg != nil {
				dg.count++
			} else {
				d.disagree[k] = &disagreement{list: list, mask: mask, count: 1,
					example: fmt.Sprintf("%s says %q, %s %q", filepath.Join(dir, list), sysfs.FormatCPUList(l), mask, sysfs.FormatCPUList(m))}
				d.disagreeOrder = append(d.disagreeOrder, k)
			}
		}
		return m, true
	case mok:
		return m, true
	case lok:
		return l, true
	}
	return nil, false
}

func isListFile(name string) bool {
	return strings.HasSuffix(name, "list") || name == "online" || name == "possible" ||
		name == "present" || name == "offline" || strings.HasPrefix(name, "has_") ||
		name == "cpus" || name == "mems" || strings.HasPrefix(name, "cpuset.")
}

// numbered returns N for a directory entry named prefix+N (cpu12, node3,
// index0), rejecting names such as "cpufreq" or "cpu0x".
func numbered(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return 0, false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(rest)
	if err != nil {
		return 0, false
	}
	return v, true
}

// listNumbered lists the IDs of entries named prefix+N in dir, sorted.
// present is false when dir does not exist.
func (d *discoverer) listNumbered(dir, prefix string) (ids []int, present bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !notExist(err) {
			d.warnf("cannot list %s: %v", dir, unwrapPathError(err))
		}
		return nil, false
	}
	for _, e := range ents {
		if id, ok := numbered(e.Name(), prefix); ok {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids, true
}

// rawNode is what one nodeN directory says, before CPUs are cross-checked.
type rawNode struct {
	id       int
	cpus     []int
	memTotal uint64
	memFree  uint64
	dist     map[string]int
	access   []Access
	msc      []MemorySideCache
}

// cpuState is per-CPU discovery state that is not part of the public type.
type cpuState struct {
	topology bool  // the kernel exposes cpuN/topology (online CPUs only)
	pkgCPUs  []int // package_cpus / core_siblings: the kernel's CPUs of this CPU's package
}

func (d *discoverer) run() (*Topology, error) {
	t := &Topology{}
	cpuRoot := d.fs.Sys("devices/system/cpu")

	// 1. Nodes, as the kernel lists them.
	raw, numa := d.nodes()

	// 2. The CPU universe: one entry per cpuN directory. Offline CPUs keep
	// their directory (with online=0), so this includes them. Only when a
	// tree has no CPU directory at all do we fall back to the lists.
	dirIDs, _ := d.listNumbered(cpuRoot, "cpu")
	onlineList, haveOnlineList := d.readSet(cpuRoot, "online")
	universe := dirIDs
	if len(universe) == 0 {
		universe = onlineList
		if present, ok := d.readSet(cpuRoot, "present"); ok {
			universe = union(universe, present)
		}
		for _, n := range raw {
			universe = union(universe, n.cpus)
		}
	}
	inUniverse := make(map[int]bool, len(universe))
	for _, c := range universe {
		inUniverse[c] = true
	}

	// 3. Per-CPU facts.
	states := make(map[int]*cpuState, len(universe))
	t.CPUs = make([]CPU, 0, len(universe))
	onlineSet := make(map[int]bool, len(onlineList))
	for _, c := range onlineList {
		onlineSet[c] = true
	}
	var noTopo []int
	for _, id := range universe {
		c, st := d.cpu(cpuRoot, id, haveOnlineList, onlineSet)
		states[id] = st
		if c.Online && !st.topology && len(dirIDs) > 0 {
			noTopo = append(noTopo, id)
		}
		t.CPUs = append(t.CPUs, c)
	}
	if len(noTopo) > 0 {
		d.warnf("online CPUs %s have no topology directory under %s; their package, core and siblings are unknown",
			sysfs.FormatCPUList(noTopo), cpuRoot)
	}

	// 4. Nodes: keep only CPUs the CPU directory knows about, so that every
	// CPU of a node is also in Topology.CPUs; assign CPUs to nodes.
	if numa {
		owner := map[int]int{}
		var multi []int
		multiNodes := map[int]bool{}
		for _, n := range raw {
			var kept, dropped []int
			for _, c := range n.cpus {
				if inUniverse[c] {
					kept = append(kept, c)
				} else {
					dropped = append(dropped, c)
				}
			}
			if len(dropped) > 0 {
				d.warnf("node %d lists CPUs %s that have no directory under %s; they are left out",
					n.id, sysfs.FormatCPUList(dropped), cpuRoot)
			}
			for _, c := range kept {
				if o, dup := owner[c]; dup {
					multi = append(multi, c)
					multiNodes[o], multiNodes[n.id] = true, true
					continue
				}
				owner[c] = n.id
			}
			t.Nodes = append(t.Nodes, Node{
				ID:               n.id,
				CPUs:             nonNil(kept),
				MemoryTotal:      n.memTotal,
				MemoryFree:       n.memFree,
				Distances:        n.dist,
				CPULess:          len(n.cpus) == 0,
				Access:           n.access,
				MemorySideCaches: n.msc,
			})
		}
		if len(multi) > 0 {
			d.warnf("CPUs %s are listed by more than one of nodes %s; the firmware's NUMA description looks wrong (each CPU is attributed to its lowest node)",
				sysfs.FormatCPUList(slices.Sorted(maps.Keys(toSet(multi)))), sysfs.FormatCPUList(slices.Sorted(maps.Keys(multiNodes))))
		}
		nodeExists := map[int]bool{}
		for _, n := range t.Nodes {
			nodeExists[n.ID] = true
		}
		for i := range t.CPUs {
			c := &t.CPUs[i]
			if o, ok := owner[c.ID]; ok {
				c.Node = o
				continue
			}
			// Not in any node's cpulist: kernels drop offline CPUs from node
			// masks on some architectures. The cpuN/nodeM link survives.
			c.Node = Unknown
			if ids, _ := d.listNumbered(filepath.Join(cpuRoot, "cpu"+strconv.Itoa(c.ID)), "node"); len(ids) == 1 && nodeExists[ids[0]] {
				c.Node = ids[0]
			}
		}
		d.checkDistances(t.Nodes)
	} else {
		t.Nodes = []Node{d.syntheticNode(t.CPUs)}
		for i := range t.CPUs {
			t.CPUs[i].Node = 0
		}
	}
	t.NUMA = numa
	t.MemoryTiers = d.memoryTiers()
	d.assignTiers(t)

	if len(t.CPUs) == 0 && !numa && t.Nodes[0].MemoryTotal == 0 {
		return nil, fmt.Errorf("no CPU, NUMA node or memory information under %s and %s: is the root right?",
			d.fs.Sys(), d.fs.Proc())
	}

	// 5. Caches, one entry per instance.
	coreSiblings(t.CPUs, states)
	t.Caches = d.caches(cpuRoot, t.CPUs)

	// 6. What this process may use.
	t.AllowedCPUs, t.AllowedNodes, t.AllowedSource = d.allowed()
	applyAllowed(t)

	// 7. Packages.
	d.numberPackages(t.CPUs, states)
	t.Packages = packages(t.CPUs, states)

	d.flushDisagreements()
	t.Warnings = d.warnings
	return t, nil
}

// cpu reads one CPU's state and topology.
func (d *discoverer) cpu(cpuRoot string, id int, haveOnlineList bool, onlineSet map[int]bool) (CPU, *cpuState) {
	dir := filepath.Join(cpuRoot, "cpu"+strconv.Itoa(id))
	c := CPU{ID: id, Package: Unknown, Die: Unknown, Core: Unknown, Node: Unknown, Online: true, Allowed: true}
	st := &cpuState{}

	// Online state: the system-wide list is authoritative (it is what the
	// kernel's cpu_online_mask says). Without it, the per-CPU file; cpu0 often
	// has none because it cannot be offlined, and hwloc-gathered trees may
	// hold it empty: both mean online.
	if haveOnlineList {
		c.Online = onlineSet[id]
	} else if s, ok := d.read(filepath.Join(dir, "online")); ok && s != "" {
		switch s {
		case "0":
			c.Online = false
		case "1":
		default:
			d.warnf("%s: %q is neither 0 nor 1; CPU %d taken as online", filepath.Join(dir, "online"), truncate(s, 20), id)
		}
	}

	topo := filepath.Join(dir, "topology")
	if fi, err := os.Stat(topo); err == nil && fi.IsDir() {
		st.topology = true
		if v, ok := d.readInt(filepath.Join(topo, "physical_package_id")); ok {
			c.Package = v
		}
		st.pkgCPUs, _ = d.readSet(topo, "package_cpus_list", "core_siblings_list", "package_cpus", "core_siblings")
		if v, ok := d.readInt(filepath.Join(topo, "die_id")); ok {
			c.Die = v
		}
		if v, ok := d.readInt(filepath.Join(topo, "core_id")); ok {
			c.Core = v
		}
		sib, ok := d.readPair(topo, "thread_siblings_list", "thread_siblings")
		if !ok {
			sib, ok = d.readPair(topo, "core_cpus_list", "core_cpus")
		}
		if ok {
			c.Siblings = sib
		}
		if len(c.Siblings) == 0 {
			c.Siblings = []int{id}
		}
	}
	c.Siblings = nonNil(c.Siblings)
	return c, st
}

// nodes reads /sys/devices/system/node. numa is false when the kernel has no
// node directory (CONFIG_NUMA=n, s390, many embedded systems).
func (d *discoverer) nodes() (out []rawNode, numa bool) {
	root := d.fs.Sys("devices/system/node")
	ids, present := d.listNumbered(root, "node")
	if !present || len(ids) == 0 {
		return nil, false
	}

	// Each node's distance file has one column per online node, in
	// ascending ID order (the kernel prints for_each_online_node). IDs may
	// be sparse (0-2,33-34,...), so columns are matched to IDs through
	// node/online when present, else through the nodeN directories, which
	// the kernel creates for exactly the online nodes.
	order := ids
	if online, ok := d.readSet(root, "online"); ok && len(online) > 0 {
		if !slices.Equal(online, ids) {
			d.warnf("%s lists nodes %s but directories exist for nodes %s; distance columns follow the online list",
				filepath.Join(root, "online"), sysfs.FormatCPUList(online), sysfs.FormatCPUList(ids))
		}
		order = online
	}
	possible, _ := d.readSet(root, "possible")
	exists := toSet(ids)
	var noDistance []int

	for _, id := range ids {
		dir := filepath.Join(root, "node"+strconv.Itoa(id))
		n := rawNode{id: id}

		cpus, ok := d.readPair(dir, "cpulist", "cpumap")
		if !ok {
			// Neither file: the cpuM links are the last witness.
			cpus, _ = d.listNumbered(dir, "cpu")
			if len(cpus) == 0 {
				d.warnf("node %d: neither cpulist nor cpumap nor cpu links in %s; taken as having no CPUs", id, dir)
			}
		}
		n.cpus = cpus

		if s, ok := d.read(filepath.Join(dir, "meminfo")); ok {
			m, err := parseMeminfo([]byte(s))
			if err != nil {
				d.warnf("%s: %v; the rest of the file is used", filepath.Join(dir, "meminfo"), err)
			}
			total, haveTotal := m["MemTotal"]
			if !haveTotal {
				d.warnf("%s has no MemTotal line; node %d memory unknown", filepath.Join(dir, "meminfo"), id)
			}
			n.memTotal, n.memFree = total, m["MemFree"]
		} else {
			d.warnf("node %d has no readable meminfo in %s; its memory is unknown", id, dir)
		}

		n.dist = map[string]int{}
		if s, ok := d.read(filepath.Join(dir, "distance")); ok {
			row, err := parseInts(s)
			switch {
			case err != nil:
				d.warnf("%s: %v; distances of node %d unknown", filepath.Join(dir, "distance"), err, id)
			case len(row) == len(order):
				for i, v := range row {
					n.dist[strconv.Itoa(order[i])] = v
				}
			case len(row) == len(ids):
				for i, v := range row {
					n.dist[strconv.Itoa(ids[i])] = v
				}
			case len(row) == len(possible):
				// Trees edited by hand (or kernels racing a node
				// going offline) keep columns for every possible node;
				// only the columns of listed nodes are meaningful.
				d.warnf("%s has %d values, one per possible node (%s), not per online node; the columns of offline nodes are dropped",
					filepath.Join(dir, "distance"), len(row), sysfs.FormatCPUList(possible))
				for i, v := range row {
					if exists[possible[i]] {
						n.dist[strconv.Itoa(possible[i])] = v
					}
				}
			default:
				d.warnf("%s has %d values for %d nodes; distances of node %d unknown",
					filepath.Join(dir, "distance"), len(row), len(order), id)
			}
		} else if len(ids) > 1 {
			noDistance = append(noDistance, id)
		}
		n.access = d.access(dir)
		n.msc = d.memorySideCaches(dir)
		out = append(out, n)
	}
	if len(noDistance) > 0 {
		d.warnf("nodes %s have no distance file; their distances are unknown", sysfs.FormatCPUList(noDistance))
	}
	return out, true
}

// checkDistances warns about matrices that cannot be right: a node farther
// from itself than from another node. The values are still reported as read.
func (d *discoverer) checkDistances(nodes []Node) {
	for _, n := range nodes {
		self, ok := n.Distances[strconv.Itoa(n.ID)]
		if !ok {
			continue
		}
		for k, v := range n.Distances {
			if v < self {
				d.warnf("node %d is closer to node %s (%d) than to itself (%d); the firmware's distance table (SLIT) looks wrong", n.ID, k, v, self)
			}
		}
	}
}

// syntheticNode stands for the whole machine when the kernel exposes no node
// directory: NUMA code everywhere can then treat every machine as having at
// least node 0, which is also what the kernel does internally.
func (d *discoverer) syntheticNode(cpus []CPU) Node {
	n := Node{ID: 0, Distances: map[string]int{"0": 10}, CPUs: []int{}, Access: []Access{}, MemorySideCaches: []MemorySideCache{}}
	for _, c := range cpus {
		n.CPUs = append(n.CPUs, c.ID)
	}
	n.CPULess = len(n.CPUs) == 0
	p := d.fs.Proc("meminfo")
	if s, ok := d.read(p); ok {
		m, err := parseMeminfo([]byte(s))
		if err != nil {
			d.warnf("%s: %v; the rest of the file is used", p, err)
		}
		n.MemoryTotal, n.MemoryFree = m["MemTotal"], m["MemFree"]
		if _, ok := m["MemTotal"]; !ok {
			d.warnf("%s has no MemTotal line; memory unknown", p)
		}
	} else {
		d.warnf("no node directory and no %s: memory unknown", p)
	}
	return n
}

// caches lists each cache instance once. The kernel describes caches per
// CPU (cpuN/cache/indexM), so an L3 shared by 64 CPUs appears 64 times; the
// instance is identified by level, type and the set of CPUs sharing it.
func (d *discoverer) caches(cpuRoot string, cpus []CPU) []Cache {
	out := []Cache{}
	seen := map[string]bool{}
	badWays := map[string]bool{} // the indexM whose ways were warned about, once for all CPUs
	for _, c := range cpus {
		dir := filepath.Join(cpuRoot, "cpu"+strconv.Itoa(c.ID), "cache")
		idx, ok := d.listNumbered(dir, "index")
		if !ok {
			continue
		}
		for _, i := range idx {
			ix := filepath.Join(dir, "index"+strconv.Itoa(i))
			level, ok := d.readInt(filepath.Join(ix, "level"))
			if !ok {
				continue
			}
			typ, _ := d.read(filepath.Join(ix, "type"))
			if typ == "" {
				typ = "Unified"
			}
			shared, ok := d.readPair(ix, "shared_cpu_list", "shared_cpu_map")
			if !ok || len(shared) == 0 {
				// ia64 kernels report empty maps for the per-core L2i and
				// L3; without a map the cache is at least the CPU's own,
				// and every cache is shared by the SMT threads of a core.
				shared = c.Siblings
				if len(shared) == 0 {
					shared = []int{c.ID}
				}
			}
			key := strconv.Itoa(level) + "/" + typ + "/" + sysfs.FormatCPUList(shared)
			if seen[key] {
				continue
			}
			seen[key] = true
			cache := Cache{Level: level, Type: typ, CPUs: shared}
			if s, ok := d.read(filepath.Join(ix, "size")); ok && s != "" {
				if v, err := parseCacheSize(s); err == nil {
					cache.SizeBytes = v
				} else {
					d.warnf("%s: %v; ignored", filepath.Join(ix, "size"), err)
				}
			}
			if v, ok := d.readInt(filepath.Join(ix, "coherency_line_size")); ok {
				cache.LineSize = v
			}
			if v, ok := d.readInt(filepath.Join(ix, "ways_of_associativity")); ok {
				cache.Associativity = v
			}
			// A set-associative cache is sets x ways x partitions x line
			// bytes (physical_line_partition: lines per tag, 1 but on some
			// Intel L2s). Where the kernel's figures disagree (ARM firmware's
			// PPTT: an L3 of 32 MiB, 2048 sets of 128-byte lines, "15"
			// ways), the ways are taken from the others, as hwloc does.
			if sets, ok := d.readInt(filepath.Join(ix, "number_of_sets")); ok && sets > 0 && cache.LineSize > 0 && cache.SizeBytes > 0 {
				part, ok := d.readInt(filepath.Join(ix, "physical_line_partition"))
				if !ok || part <= 0 {
					part = 1
				}
				if per := uint64(sets) * uint64(cache.LineSize) * uint64(part); cache.SizeBytes%per == 0 {
					if w := int(cache.SizeBytes / per); w != cache.Associativity && cache.Associativity > 0 {
						if !badWays[ix[len(dir):]] {
							badWays[ix[len(dir):]] = true
							d.warnf("%s says %d, but size / (number_of_sets x physical_line_partition x coherency_line_size) is %d; %d ways used, as hwloc does",
								filepath.Join(ix, "ways_of_associativity"), cache.Associativity, w, w)
						}
						cache.Associativity = w
					}
				}
			}
			out = append(out, cache)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		if a.CPUs[0] != b.CPUs[0] {
			return a.CPUs[0] < b.CPUs[0]
		}
		return typeRank(a.Type) < typeRank(b.Type)
	})
	return out
}

func typeRank(t string) int {
	switch t {
	case "Data":
		return 0
	case "Instruction":
		return 1
	}
	return 2
}

// applyAllowed sets the Allowed flags from the allowed sets. Unknown sets
// (nil) restrict nothing: without information the process is assumed to be
// free to use everything, which is what the kernel does without a cpuset.
func applyAllowed(t *Topology) {
	if t.AllowedCPUs != nil {
		ok := toSet(t.AllowedCPUs)
		for i := range t.CPUs {
			t.CPUs[i].Allowed = ok[t.CPUs[i].ID]
		}
	}
	for i := range t.Nodes {
		t.Nodes[i].Allowed = true
	}
	if t.AllowedNodes != nil {
		ok := toSet(t.AllowedNodes)
		for i := range t.Nodes {
			t.Nodes[i].Allowed = ok[t.Nodes[i].ID]
		}
	}
}

// numberPackages gives package IDs where the kernel's are no use, telling
// packages apart by the kernel's package sibling sets (package_cpus or
// core_siblings), as hwloc does:
//   - CPUs whose kernel reports no ID (physical_package_id is -1 on ppc64
//     LPARs and some ARM boards, absent on very old kernels), so that
//     distinct packages never merge into one "-1";
//   - CPUs that share an ID with CPUs of another sibling set (ia64 firmware
//     gives two sockets one ID): the set holding the ID's lowest CPU keeps
//     it, with a warning.
//
// New IDs follow the highest real one, in order of each set's first CPU,
// so that CPU.Package and Package.ID stay consistent.
func (d *discoverer) numberPackages(cpus []CPU, states map[int]*cpuState) {
	next := 0
	for _, c := range cpus {
		if c.Package >= next {
			next = c.Package + 1
		}
	}
	owner := map[int]string{} // a real ID -> the sibling set that keeps it
	ids := map[string]int{}   // a sibling set given a new ID -> that ID
	var split []string
	for i := range cpus {
		c, st := &cpus[i], states[cpus[i].ID]
		if !st.topology || len(st.pkgCPUs) == 0 {
			continue
		}
		key := sysfs.FormatCPUList(st.pkgCPUs)
		if c.Package >= 0 {
			if k, ok := owner[c.Package]; !ok || k == key {
				owner[c.Package] = key
				continue
			}
		}
		id, ok := ids[key]
		if !ok {
			id = next
			next++
			ids[key] = id
			if c.Package >= 0 {
				split = append(split, fmt.Sprintf("CPUs %s as package %d", key, id))
			}
		}
		c.Package = id
	}
	if len(split) > 0 {
		d.warnf("physical_package_id repeats across CPUs whose package_cpus (core_siblings) sets differ; told apart by the sets, as hwloc does: %s",
			strings.Join(split, ", "))
	}
}

// coreSiblings keeps, of each CPU's thread siblings, those on its own core
// (the same package, die and core_id). The kernel's thread_siblings hold
// more on AMD family 15h (Bulldozer and after), where the two cores of a
// compute unit, each with a core_id of its own, are listed as siblings for
// the scheduler's sake: hwloc shows them as two cores, and SMT threads they
// are not. A sibling whose topology is unknown is kept.
func coreSiblings(cpus []CPU, states map[int]*cpuState) {
	byID := map[int]*CPU{}
	for i := range cpus {
		if states[cpus[i].ID].topology {
			byID[cpus[i].ID] = &cpus[i]
		}
	}
	for i := range cpus {
		c := &cpus[i]
		if len(c.Siblings) < 2 {
			continue
		}
		c.Siblings = slices.DeleteFunc(slices.Clone(c.Siblings), func(s int) bool {
			o := byID[s]
			return o != nil && s != c.ID && (o.Package != c.Package || o.Die != c.Die || o.Core != c.Core)
		})
	}
}

// packages groups the CPUs whose topology is known by physical package.
// Offline CPUs have no topology directory and so belong to no package.
func packages(cpus []CPU, states map[int]*cpuState) []Package {
	byID := map[int]*Package{}
	var ids []int
	for _, c := range cpus {
		if !states[c.ID].topology {
			continue
		}
		p := byID[c.Package]
		if p == nil {
			p = &Package{ID: c.Package, CPUs: []int{}, Nodes: []int{}}
			byID[c.Package] = p
			ids = append(ids, c.Package)
		}
		p.CPUs = append(p.CPUs, c.ID)
		if c.Node >= 0 && (len(p.Nodes) == 0 || !slices.Contains(p.Nodes, c.Node)) {
			p.Nodes = append(p.Nodes, c.Node)
		}
	}
	sort.Ints(ids)
	out := make([]Package, 0, len(ids))
	for _, id := range ids {
		p := byID[id]
		sort.Ints(p.Nodes)
		out = append(out, *p)
	}
	return out
}

func nonNil(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}

func toSet(v []int) map[int]bool {
	m := make(map[int]bool, len(v))
	for _, x := range v {
		m[x] = true
	}
	return m
}

func union(a, b []int) []int {
	m := toSet(a)
	for _, x := range b {
		m[x] = true
	}
	return slices.Sorted(maps.Keys(m))
}
