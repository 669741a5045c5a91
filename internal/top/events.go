package top

// EventCounts are what an event source counted since its previous Collect:
// exact NUMA hinting faults and migrations, which /proc does not give.
type EventCounts struct {
	// Procs are by thread group (process ID), Threads by thread ID, Nodes
	// by the node the faulting memory was on.
	Procs   map[int]*TaskEvents
	Threads map[int]*TaskEvents
	Nodes   map[int]*TaskEvents
	// Migrations are the pages migrated, by the kernel's reason.
	Migrations map[string]uint64
	// Lost counts the kernel records dropped in this interval.
	Lost uint64
}

// TaskEvents are the counts of one process, thread or memory node.
type TaskEvents struct {
	// LocalFaults and RemoteFaults count NUMA hinting faults (not pages).
	LocalFaults, RemoteFaults uint64
	// MigratedPages are the pages NUMA balancing migrated on those faults.
	MigratedPages uint64
	// PMULocal and PMURemote are estimated local and remote DRAM accesses
	// (samples times the sample period).
	PMULocal, PMURemote uint64
}

// Reset empties c for the next interval, keeping its maps.
func (c *EventCounts) Reset() {
	clear(c.Procs)
	clear(c.Threads)
	clear(c.Nodes)
	clear(c.Migrations)
	c.Lost = 0
}

// Task returns the entry of id in m, creating it.
func Task(m map[int]*TaskEvents, id int) *TaskEvents {
	e := m[id]
	if e == nil {
		e = &TaskEvents{}
		m[id] = e
	}
	return e
}

// EventSource is the kernel event source of the collector
// (internal/numatrace on a live system; a fake in tests).
type EventSource interface {
	// Collect adds what was counted since the previous call into c.
	Collect(c *EventCounts)
	// Sources names the source of each figure ("" when it is missing)
	// and gives one line per missing figure: what, why, what to do.
	Sources() (faults, migrations, pmu string, missing []string)
	Close() error
}
