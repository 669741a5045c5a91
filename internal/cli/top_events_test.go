package cli

import (
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/numatrace"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/top"
)

func newEventCounts() *top.EventCounts {
	return &top.EventCounts{Procs: map[int]*top.TaskEvents{}, Threads: map[int]*top.TaskEvents{},
		Nodes: map[int]*top.TaskEvents{}, Migrations: map[string]uint64{}}
}

// TestAddTraceCounts: numatrace's counts reach top's by process, thread
// and node, the DRAM samples scaled by their period, and what was active
// only in an earlier interval adds no row.
func TestAddTraceCounts(t *testing.T) {
	c := numatrace.NewCounts()
	c.PMUPeriod = 10007
	c.Procs[100] = &numatrace.ProcCounts{
		Faults:    numatrace.Faults{Local: 5, Remote: 3, MigratedPages: 2},
		LocalDRAM: 4, RemoteDRAM: 1,
	}
	c.Procs[200] = &numatrace.ProcCounts{} // active before, nothing now
	c.Threads[101] = &numatrace.ThreadCounts{TGID: 100, Faults: numatrace.Faults{Local: 1, Remote: 3, MigratedPages: 2}, RemoteDRAM: 1}
	c.Threads[201] = &numatrace.ThreadCounts{TGID: 200}
	c.Nodes = []numatrace.NodeCounts{{}, {Faults: numatrace.Faults{Local: 5, Remote: 3, MigratedPages: 2}}}
	c.MigratedByReason["numa_misplaced"] = 2
	c.MigratedByReason["compaction"] = 0
	c.Lost = 7

	into := newEventCounts()
	into.Lost = 1
	addTraceCounts(into, c)
	addTraceCounts(into, c) // adds, as two Collects into one interval would

	if got, want := *into.Procs[100], (top.TaskEvents{LocalFaults: 10, RemoteFaults: 6, MigratedPages: 4,
		PMULocal: 8 * 10007, PMURemote: 2 * 10007}); got != want {
		t.Errorf("process 100: %+v, want %+v", got, want)
	}
	if got, want := *into.Threads[101], (top.TaskEvents{LocalFaults: 2, RemoteFaults: 6, MigratedPages: 4,
		PMURemote: 2 * 10007}); got != want {
		t.Errorf("thread 101: %+v, want %+v", got, want)
	}
	if into.Procs[200] != nil || into.Threads[201] != nil {
		t.Errorf("a process or thread with no events this interval has a row: %+v %+v", into.Procs[200], into.Threads[201])
	}
	if len(into.Nodes) != 1 || into.Nodes[1] == nil || into.Nodes[1].RemoteFaults != 6 {
		t.Errorf("nodes %+v, want node 1 alone with 6 remote faults", into.Nodes)
	}
	if len(into.Migrations) != 1 || into.Migrations["numa_misplaced"] != 4 {
		t.Errorf("migrations %v, want numa_misplaced 4 alone", into.Migrations)
	}
	if into.Lost != 15 {
		t.Errorf("lost %d, want 1 + 2×7", into.Lost)
	}
}

// TestOpenTopEventsOnCapturedTree: a --root tree has no live kernel to
// trace; top says so instead of opening this machine's events.
func TestOpenTopEventsOnCapturedTree(t *testing.T) {
	src, missing := openTopEvents(sysfs.New(t.TempDir()), nil)
	if src != nil {
		src.Close()
		t.Fatal("opened event sources on a captured tree")
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "--root") {
		t.Errorf("missing %q, want one line naming --root", missing)
	}
}
