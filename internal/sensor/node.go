package sensor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

func init() { Register("node", func(Options) Sensor { return &nodeSensor{} }) }

// nodeSensor offers per NUMA node (one source per node, named by node ID)
// the node's numastat allocation counters, its vmstat and its meminfo, from
// /sys/devices/system/node/nodeN/{numastat,vmstat,meminfo}.
//
// Events are the union over nodes; a node that lacks a file or a line reads 0
// for it. Newer kernels repeat numastat's counters in the node's vmstat
// (numa_hit, ..., numa_interleave, numa_local, numa_other); those duplicates
// are left out (unless no node has a numastat), numastat's names are the
// ones offered. Meminfo values in kB
// are reported in bytes.
//
// On a machine without NUMA (Topology.NUMA false: no node directory in sysfs)
// the sensor still opens, with one source "0" backed by /proc/meminfo, so that
// node.MemFree and friends mean the same on every machine; numastat and vmstat
// events are then absent (the vmstat sensor has the machine-wide counters).
type nodeSensor struct {
	sources []string
	files   [][nodeKinds]nodeFile // per source
	evs     []nodeEvent
	events  []Event
	open    []*kvFile
	openSrc []int // per open file, the index of its source (node)
	zeros   []int // dst indexes of enabled events a node does not have
	srcErr  SourceError
}

type nodeKind uint8

const (
	numastatKind nodeKind = iota
	nodeVmstatKind
	meminfoKind
	nodeKinds
)

var nodeKindFile = [nodeKinds]string{"numastat", "vmstat", "meminfo"}

// nodeFile is one file of one node as seen at Open.
type nodeFile struct {
	path    string
	present bool
	size    int
	maxLen  int
	lines   []kvLine
	index   map[string]int
}

type nodeEvent struct {
	kind nodeKind
	name string
}

func (kind nodeKind) format() lineFormat {
	if kind == meminfoKind {
		return formatMeminfo
	}
	return formatKV
}

// numastatDup lists node vmstat entries that repeat numastat's counters.
var numastatDup = map[string]bool{
	"numa_hit": true, "numa_miss": true, "numa_foreign": true,
	"numa_interleave": true, "numa_local": true, "numa_other": true,
}

func (n *nodeSensor) Name() string { return "node" }

func (n *nodeSensor) Open(env Env) error {
	n.Close()
	*n = nodeSensor{} // Open may be called again
	t := env.Topology
	if t == nil {
		return errors.New("node: no topology: discover the topology before opening sensors")
	}
	if !t.NUMA {
		return n.openFallback(env)
	}
	dir := env.FS.Sys("devices/system/node")
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("node: %s not found: kernel built without NUMA, or /sys not mounted", dir)
		}
		return fmt.Errorf("node: cannot access %s: %v", dir, err)
	}
	if len(t.Nodes) == 0 {
		return errors.New("node: the topology lists no NUMA nodes")
	}
	var firstErr error
	for _, nd := range t.Nodes {
		var files [nodeKinds]nodeFile
		for kind := range nodeKinds {
			path := env.FS.Sys("devices/system/node", "node"+strconv.Itoa(nd.ID), nodeKindFile[kind])
			var err error
			files[kind], err = readNodeFile(path, kind.format())
			// Something other than a file where a kernel file should be
			// (a FIFO planted in a --root tree) makes the sensor absent
			// with that reason (numascope events, stat -e node.*) rather
			// than a silent gap: the tree is not what it claims.
			if nr := (*sysfs.NotRegularError)(nil); errors.As(err, &nr) {
				return fmt.Errorf("node: %w", err)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) && firstErr == nil {
				firstErr = err
			}
		}
		n.sources = append(n.sources, strconv.Itoa(nd.ID))
		n.files = append(n.files, files)
	}
	n.collectEvents()
	if len(n.evs) == 0 {
		msg := fmt.Sprintf("node: no node under %s has a readable numastat, vmstat or meminfo", dir)
		if firstErr != nil {
			msg += ": " + firstErr.Error()
		}
		return errors.New(msg)
	}
	return nil
}

// openFallback serves a machine without NUMA as one node 0 from /proc/meminfo.
func (n *nodeSensor) openFallback(env Env) error {
	path := env.FS.Proc("meminfo")
	f, err := readNodeFile(path, formatMeminfo)
	if !f.present {
		if err == nil {
			err = errors.New("no statistics in it")
		}
		return fmt.Errorf("node: the kernel exposes no NUMA nodes and %s is unreadable (%v): is /proc mounted?", path, err)
	}
	var files [nodeKinds]nodeFile
	files[meminfoKind] = f
	n.sources = []string{"0"}
	n.files = [][nodeKinds]nodeFile{files}
	n.collectEvents()
	return nil
}

// readNodeFile learns the layout of one node file; a file that cannot be
// read is returned not present, with the error.
func readNodeFile(path string, format lineFormat) (nodeFile, error) {
	f := nodeFile{path: path}
	data, err := sysfs.ReadFile(path)
	if err != nil {
		return f, err
	}
	f.size = len(data)
	f.lines, f.index, f.maxLen = scanNames(data, format)
	f.present = len(f.lines) > 0
	return f, nil
}

// collectEvents builds the union of the nodes' events: numastat first, then
// vmstat, then meminfo, each in the order of the first node that has them.
func (n *nodeSensor) collectEvents() {
	seen := map[string]bool{}
	haveNumastat := false // else keep vmstat's numa_* copies: they are all there is
	for s := range n.files {
		haveNumastat = haveNumastat || n.files[s][numastatKind].present
	}
	for kind := range nodeKinds {
		kb := map[string]bool{}
		var names []string
		for s := range n.files {
			for _, l := range n.files[s][kind].lines {
				if kind == nodeVmstatKind && haveNumastat && numastatDup[l.Name] {
					continue
				}
				if l.KB {
					kb[l.Name] = true
				}
				if seen[l.Name] {
					continue
				}
				seen[l.Name] = true
				names = append(names, l.Name)
			}
		}
		for _, name := range names {
			n.evs = append(n.evs, nodeEvent{kind: kind, name: name})
			n.events = append(n.events, nodeEventInfo(kind, name, kb[name]))
		}
	}
}

func (n *nodeSensor) Sources() []string { return n.sources }

// FileOf names the node file event i comes from: "numastat", "vmstat" or
// "meminfo" (the last also for /proc/meminfo on a machine without NUMA).
func (n *nodeSensor) FileOf(i int) string { return nodeKindFile[n.evs[i].kind] }
func (n *nodeSensor) Events() []Event     { return n.events }

func (n *nodeSensor) Enable(events []int) error {
	if err := checkEnable(events, len(n.evs)); err != nil {
		return err
	}
	n.closeFiles()
	ns := len(n.sources)
	for s := range n.files {
		for kind := range nodeKinds {
			nf := &n.files[s][kind]
			var kv *kvFile
			for k, e := range events {
				ev := n.evs[e]
				if ev.kind != kind {
					continue
				}
				out := k*ns + s
				line, ok := nf.index[ev.name]
				if !nf.present || !ok {
					n.zeros = append(n.zeros, out)
					continue
				}
				if kv == nil {
					var err error
					if kv, err = newKVFile(nf.path, kind.format(), nf.size, nf.maxLen, nf.lines[len(nf.lines)-1].Name); err != nil {
						n.closeFiles()
						return fmt.Errorf("opening %s: %w", nf.path, err)
					}
					n.open = append(n.open, kv)
					n.openSrc = append(n.openSrc, s)
				}
				kv.add(ev.name, line, out)
			}
		}
	}
	return nil
}

// Read reads every node's files. Each node is its own source: a file that
// cannot be read or parsed fails only its node, which Read reports in a
// *SourceError while the other nodes' values are fresh.
func (n *nodeSensor) Read(dst []int64) error {
	n.srcErr.Reset()
	for i, f := range n.open {
		if err := f.read(dst); err != nil {
			n.srcErr.Add(n.openSrc[i], err)
		}
	}
	for _, i := range n.zeros {
		dst[i] = 0
	}
	if n.srcErr.Failed() {
		return &n.srcErr
	}
	return nil
}

// Files lists the files Read reads for the current Enable set.
func (n *nodeSensor) Files() []string {
	var paths []string
	for _, f := range n.open {
		paths = append(paths, f.path)
	}
	return paths
}

func (n *nodeSensor) closeFiles() error {
	var errs []error
	for _, f := range n.open {
		errs = append(errs, f.close())
	}
	n.open, n.openSrc, n.zeros = nil, nil, nil
	return errors.Join(errs...)
}

func (n *nodeSensor) Close() error { return n.closeFiles() }

// numastatDesc describes the counters of a node's numastat
// (Documentation/admin-guide/numastat.rst). They count on the node that
// provided the memory.
var numastatDesc = map[string]string{
	"numa_hit":       "pages allocated on this node that were meant for it",
	"numa_miss":      "pages allocated on this node although another node was preferred (the preferred one was full)",
	"numa_foreign":   "pages meant for this node but allocated on another one",
	"interleave_hit": "interleave-policy pages allocated on this node as intended",
	"local_node":     "pages allocated on this node for a task running on it",
	"other_node":     "pages allocated on this node for a task running on another node",
}

// meminfoDesc describes the common lines of a node's meminfo.
var meminfoDesc = map[string]string{
	"MemTotal":        "memory of the node usable by the kernel",
	"MemFree":         "free memory of the node",
	"MemUsed":         "used memory of the node (MemTotal - MemFree)",
	"MemAvailable":    "memory available for new allocations without swapping (estimate)",
	"SwapCached":      "swapped-out memory also still in RAM",
	"Active":          "memory on the active LRU lists (recently used)",
	"Inactive":        "memory on the inactive LRU lists (reclaim candidates)",
	"Active(anon)":    "anonymous memory on the active LRU list",
	"Inactive(anon)":  "anonymous memory on the inactive LRU list",
	"Active(file)":    "page cache on the active LRU list",
	"Inactive(file)":  "page cache on the inactive LRU list",
	"Unevictable":     "memory that cannot be reclaimed (mlocked, ramfs)",
	"Mlocked":         "mlocked memory",
	"Dirty":           "memory waiting to be written back",
	"Writeback":       "memory being written back",
	"FilePages":       "page cache",
	"Mapped":          "page cache mapped into page tables",
	"AnonPages":       "anonymous memory mapped into page tables",
	"Shmem":           "shmem and tmpfs memory",
	"KernelStack":     "memory used by kernel stacks",
	"PageTables":      "memory used by page tables",
	"SecPageTables":   "memory used by secondary page tables (KVM, IOMMU)",
	"KReclaimable":    "kernel memory the kernel can reclaim under pressure",
	"Slab":            "slab memory",
	"SReclaimable":    "reclaimable slab memory",
	"SUnreclaim":      "unreclaimable slab memory",
	"AnonHugePages":   "anonymous memory in transparent huge pages",
	"ShmemHugePages":  "shmem memory in transparent huge pages",
	"FileHugePages":   "page cache in transparent huge pages",
	"HugePages_Total": "hugetlb pool size of the default huge page size",
	"HugePages_Free":  "hugetlb pages of the pool not yet allocated",
	"HugePages_Surp":  "hugetlb pages above the pool size (overcommit)",
	"Bounce":          "memory used for block device bounce buffers",
	"NFS_Unstable":    "NFS pages sent to the server but not yet committed (always 0 since 5.8)",
	"WritebackTmp":    "memory used by FUSE for temporary writeback buffers",
	"HighTotal":       "highmem memory of the node (32-bit kernels)",
	"HighFree":        "free highmem memory of the node",
	"LowTotal":        "lowmem memory of the node",
	"LowFree":         "free lowmem memory of the node",
}

func nodeEventInfo(kind nodeKind, name string, kb bool) Event {
	switch kind {
	case numastatKind:
		d, ok := numastatDesc[name]
		if !ok {
			d = "numastat counter " + name + " of the node"
		}
		return Event{Name: name, Desc: d, Unit: "pages", Kind: Counter}
	case nodeVmstatKind:
		return vmstatEvent(name, "the node's vmstat")
	}
	e := Event{Name: name, Kind: Gauge, Unit: "bytes"}
	if !kb {
		e.Unit = "count"
		if strings.HasPrefix(name, "HugePages_") {
			e.Unit = "hugepages"
		}
	}
	e.Desc = meminfoDesc[name]
	if e.Desc == "" {
		e.Desc = "meminfo " + name + " of the node"
	}
	return e
}
