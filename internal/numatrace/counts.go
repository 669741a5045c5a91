package numatrace

// Faults are NUMA hinting faults: one call of the kernel's task_numa_fault
// per fault, covering Pages pages (more than one for a huge page).
type Faults struct {
	// Local and Remote count faults on memory that was on the faulting
	// CPU's node, and on another node (the kernel's TNF_FAULT_LOCAL, taken
	// before any migration).
	Local, Remote uint64
	// LocalPages and RemotePages are the pages of those faults.
	LocalPages, RemotePages uint64
	// MigratedPages are the pages of faults after which the kernel migrated
	// the memory to the faulting CPU's node (TNF_MIGRATED); MigrateFailed
	// counts faults whose migration was tried and failed
	// (TNF_MIGRATE_FAIL).
	MigratedPages uint64
	MigrateFailed uint64
}

// The flags of task_numa_fault (include/linux/sched.h).
const (
	tnfMigrated    = 0x01
	tnfNoGroup     = 0x02
	tnfShared      = 0x04
	tnfFaultLocal  = 0x08
	tnfMigrateFail = 0x10
)

func (f *Faults) add(pages uint64, flags uint32) {
	if flags&tnfFaultLocal != 0 {
		f.Local++
		f.LocalPages += pages
	} else {
		f.Remote++
		f.RemotePages += pages
	}
	if flags&tnfMigrated != 0 {
		f.MigratedPages += pages
	}
	if flags&tnfMigrateFail != 0 {
		f.MigrateFailed++
	}
}

func (f *Faults) zero() bool { return *f == Faults{} }

// ProcCounts are the counts of one process (thread group), summed over its
// threads.
type ProcCounts struct {
	Faults
	// ByNode are the process's faults by the node of the memory, indexed by
	// node. For a fault that migrated the page (TNF_MIGRATED) the kernel
	// reports the node the page moved to; whether the fault was local is
	// decided before the move.
	ByNode []Faults
	// MisplacedPages are pages migrated with reason numa_misplaced
	// (migrate:mm_migrate_pages) while one of the process's threads was
	// running: NUMA balancing migrates on the faulting thread.
	MisplacedPages uint64
	// LocalDRAM and RemoteDRAM are PMU samples of loads served by local and
	// remote DRAM; each stands for Counts.PMUPeriod loads.
	LocalDRAM, RemoteDRAM uint64
}

func (p *ProcCounts) zero() bool {
	return p.Faults.zero() && p.MisplacedPages == 0 && p.LocalDRAM == 0 && p.RemoteDRAM == 0
}

func (p *ProcCounts) reset() {
	byNode := p.ByNode
	clear(byNode)
	*p = ProcCounts{ByNode: byNode}
}

// ThreadCounts are the counts of one thread.
type ThreadCounts struct {
	// TGID is the thread's process.
	TGID int32
	Faults
	LocalDRAM, RemoteDRAM uint64
}

func (t *ThreadCounts) zero() bool {
	return t.Faults.zero() && t.LocalDRAM == 0 && t.RemoteDRAM == 0
}

// NodeCounts are the faults on the memory of one node, over all processes
// (see ProcCounts.ByNode for what "the node" is for a migrated page).
type NodeCounts struct {
	Faults
}

// maxNodes bounds the node index taken from a record: the kernel's
// MAX_NUMNODES is at most 1024. A record with a node outside counts in the
// totals of its process and thread, not by node.
const maxNodes = 1024

// Counts accumulate what Collect drained. They are counts since the last
// Reset (or since the Counts were made): the caller divides by its interval
// for rates.
type Counts struct {
	// Procs and Threads are keyed by process (tgid) and thread (tid) id.
	Procs   map[int32]*ProcCounts
	Threads map[int32]*ThreadCounts
	// Nodes are the faults by node of the memory, indexed by node.
	Nodes []NodeCounts
	// MigratedByReason are the pages migrate:mm_migrate_pages reported
	// migrated (succeeded), by the kernel's reason name (numa_misplaced,
	// compaction, demotion, ...; the number, in decimal, for a reason the
	// format file does not name).
	MigratedByReason map[string]uint64
	// PMUPeriod is the PMU's sample period: LocalDRAM and RemoteDRAM
	// samples times PMUPeriod estimate the loads. 0 when no PMU is read.
	PMUPeriod uint64
	// Samples counts the records decoded; Lost the records the kernel
	// dropped because a ring was full: the counts of an interval that lost
	// some are low. The tracepoints' losses are their hits (the events'
	// counts) not decoded, reported at the next Collect (when a sample
	// still missing cannot be one in flight); the PMU's come from
	// PERF_RECORD_LOST, which the kernel writes once the ring has room
	// again. Malformed counts records that did not
	// decode (never expected from a kernel).
	Samples, Lost, Malformed uint64

	freeProcs   []*ProcCounts
	freeThreads []*ThreadCounts
}

// NewCounts returns empty Counts.
func NewCounts() *Counts {
	return &Counts{Procs: map[int32]*ProcCounts{}, Threads: map[int32]*ThreadCounts{},
		MigratedByReason: map[string]uint64{}}
}

// Accesses estimates the loads that n PMU samples stand for.
func (c *Counts) Accesses(n uint64) uint64 { return n * c.PMUPeriod }

// Reset zeroes the counts for the next interval. Processes and threads that
// had nothing since the previous Reset are dropped (their entries are kept
// for reuse), so that the maps hold only what is active and never grow
// with the processes that come and go, while the active ones allocate
// nothing.
func (c *Counts) Reset() {
	c.init()
	for pid, p := range c.Procs {
		if p.zero() {
			delete(c.Procs, pid)
			c.freeProcs = append(c.freeProcs, p)
		}
		p.reset()
	}
	for tid, t := range c.Threads {
		if t.zero() {
			delete(c.Threads, tid)
			c.freeThreads = append(c.freeThreads, t)
		}
		*t = ThreadCounts{}
	}
	clear(c.Nodes)
	for k := range c.MigratedByReason {
		c.MigratedByReason[k] = 0
	}
	c.Samples, c.Lost, c.Malformed = 0, 0, 0
}

func (c *Counts) init() {
	if c.Procs == nil {
		c.Procs = map[int32]*ProcCounts{}
	}
	if c.Threads == nil {
		c.Threads = map[int32]*ThreadCounts{}
	}
	if c.MigratedByReason == nil {
		c.MigratedByReason = map[string]uint64{}
	}
}

// proc returns pid's entry, making it the first time.
func (c *Counts) proc(pid int32) *ProcCounts {
	if p, ok := c.Procs[pid]; ok {
		return p
	}
	var p *ProcCounts
	if n := len(c.freeProcs); n > 0 {
		p, c.freeProcs = c.freeProcs[n-1], c.freeProcs[:n-1]
	} else {
		p = &ProcCounts{}
	}
	c.Procs[pid] = p
	return p
}

func (c *Counts) thread(pid, tid int32) *ThreadCounts {
	t, ok := c.Threads[tid]
	if !ok {
		if n := len(c.freeThreads); n > 0 {
			t, c.freeThreads = c.freeThreads[n-1], c.freeThreads[:n-1]
		} else {
			t = &ThreadCounts{}
		}
		c.Threads[tid] = t
	}
	t.TGID = pid
	return t
}

// addFault counts one task_numa_fault call.
func (c *Counts) addFault(pid, tid, node int32, pages int32, flags uint32) {
	n := uint64(0)
	if pages > 0 {
		n = uint64(pages)
	}
	p := c.proc(pid)
	p.add(n, flags)
	c.thread(pid, tid).add(n, flags)
	if node >= 0 && node < maxNodes {
		if int(node) >= len(p.ByNode) {
			p.ByNode = append(p.ByNode, make([]Faults, int(node)+1-len(p.ByNode))...)
		}
		p.ByNode[node].add(n, flags)
		if int(node) >= len(c.Nodes) {
			c.Nodes = append(c.Nodes, make([]NodeCounts, int(node)+1-len(c.Nodes))...)
		}
		c.Nodes[node].add(n, flags)
	}
}

func (c *Counts) addPMU(pid, tid int32, remote bool) {
	p, t := c.proc(pid), c.thread(pid, tid)
	if remote {
		p.RemoteDRAM++
		t.RemoteDRAM++
	} else {
		p.LocalDRAM++
		t.LocalDRAM++
	}
}
