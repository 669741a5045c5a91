package procnuma

import (
	"bytes"
	"errors"
	"fmt"
)

// Sched is the NUMA part of /proc/PID/sched or /proc/PID/task/TID/sched,
// which the kernel prints for one task (sched_show_numa in
// kernel/sched/debug.c). /proc/PID/sched describes the thread-group leader
// only, not the process: a process's figures are the sum or union over
// /proc/PID/task/*/sched.
//
// What the numbers mean (kernel/sched/fair.c):
//   - PagesMigrated (numa_pages_migrated) is cumulative: every page NUMA
//     balancing migrated on a hinting fault this task took, since it started.
//   - Faults are NOT counts. task_numa_fault adds each hinting fault's pages
//     to a buffer per memory node (the node the page was on, not the node
//     the task ran on) and private/shared; at each placement (about once per
//     scan pass over the address space), task_numa_placement halves the
//     per-node value and adds the buffer: an exponentially decayed average
//     over recent scan passes. They show where a task's recently touched
//     memory is, in proportion; a rate of faults per second cannot be
//     derived from them. TotalFaults (total_numa_faults) is their sum.
//   - Group values are those of the task's NUMA group (tasks sharing
//     memory), zero when it has none (GroupID 0).
//   - PreferredNode is where the scheduler wants the task (-1: none yet);
//     CurrentNode is the node of the CPU it last ran on.
type Sched struct {
	// NUMA is false when the file has no NUMA part: a kernel built without
	// CONFIG_NUMA_BALANCING. The other fields then mean nothing: callers
	// show "not available", not zeros.
	NUMA bool

	PagesMigrated uint64
	PreferredNode int
	TotalFaults   uint64
	CurrentNode   int
	GroupID       int
	// ScanSeq is mm->numa_scan_seq, the number of scan passes over the
	// address space; -1 when the task has no mm (a kernel thread).
	ScanSeq int64
	// Faults has one entry per online node, in the file's order.
	Faults []NodeFaults
}

// NodeFaults is one "numa_faults node=N ..." line: the decayed hinting
// faults on memory of node Node (see Sched).
type NodeFaults struct {
	Node                      int
	TaskPrivate, TaskShared   uint64
	GroupPrivate, GroupShared uint64
}

// ErrNoNUMA is wrapped by the callers that need the NUMA part and find
// none (Sched.NUMA false).
var ErrNoNUMA = errors.New("no NUMA balancing statistics in /proc/PID/sched: the kernel is built without CONFIG_NUMA_BALANCING")

// sched's field bits, to tell a complete NUMA part from a truncated one.
const (
	haveMigrated = 1 << iota
	havePreferred
	haveTotal
	haveCurrent
	haveAll = haveMigrated | havePreferred | haveTotal | haveCurrent
)

// ParseSched parses a sched file into s, reusing s.Faults. The other lines
// of the file (the scheduler's own statistics) are skipped unread.
func ParseSched(data []byte, s *Sched) error {
	faults := s.Faults[:0]
	*s = Sched{ScanSeq: -1, PreferredNode: -1}
	have := 0
	err := lines(data, "sched", func(no int, line []byte) error {
		if bytes.HasPrefix(line, []byte("numa_faults ")) {
			f, err := parseNodeFaults(line[len("numa_faults "):])
			if err != nil {
				return fmt.Errorf("sched line %d: %w", no, err)
			}
			if len(faults) > MaxNode {
				return fmt.Errorf("sched line %d: more than %d numa_faults lines", no, MaxNode+1)
			}
			faults = append(faults, f)
			return nil
		}
		if bytes.HasPrefix(line, []byte("current_node=")) {
			// "current_node=%d, numa_group_id=%d"
			cur, grp, ok := bytes.Cut(line[len("current_node="):], []byte(", numa_group_id="))
			c, ok1 := parseInt(cur)
			g, ok2 := parseInt(grp)
			if !ok || !ok1 || !ok2 || c < -1 || c > MaxNode || g < 0 || g > 1<<31-1 {
				return fmt.Errorf("sched line %d: bad current_node line %s", no, quote(line))
			}
			s.CurrentNode, s.GroupID = int(c), int(g)
			have |= haveCurrent
			return nil
		}
		// "%-45s:%21Ld": the name, padding, a colon, padding, the value.
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil
		}
		name = trim(name)
		var bit int
		switch string(name) {
		case "numa_pages_migrated":
			bit = haveMigrated
		case "numa_preferred_nid":
			bit = havePreferred
		case "total_numa_faults":
			bit = haveTotal
		case "mm->numa_scan_seq":
		default:
			return nil
		}
		v, ok := parseInt(trim(val))
		if !ok {
			return fmt.Errorf("sched line %d: %s is not a number: %s", no, name, quote(line))
		}
		switch bit {
		case haveMigrated:
			s.PagesMigrated = uint64(v)
		case havePreferred:
			if v < -1 || v > MaxNode {
				return fmt.Errorf("sched line %d: numa_preferred_nid %d is not a node", no, v)
			}
			s.PreferredNode = int(v)
		case haveTotal:
			s.TotalFaults = uint64(v)
		default:
			s.ScanSeq = v
		}
		have |= bit
		return nil
	})
	s.Faults = faults
	if err != nil {
		return err
	}
	switch {
	case have == 0 && len(faults) == 0:
		// No NUMA part at all: not available, which is not an error.
		s.ScanSeq = -1
		return nil
	case have != haveAll || len(faults) == 0:
		return errors.New("sched: the NUMA part is incomplete (numa_pages_migrated, numa_preferred_nid, total_numa_faults, current_node and numa_faults lines): truncated file?")
	}
	s.NUMA = true
	return nil
}

// parseNodeFaults parses "node=N task_private=A task_shared=B
// group_private=C group_shared=D".
func parseNodeFaults(b []byte) (NodeFaults, error) {
	var f NodeFaults
	seen := 0
	whole := b
	for {
		var field []byte
		field, b = nextField(b)
		if len(field) == 0 {
			break
		}
		k, v, ok := bytes.Cut(field, []byte("="))
		if !ok {
			return f, fmt.Errorf("bad numa_faults field %s", quote(field))
		}
		if string(k) == "node" {
			n, ok := parseNode(v)
			if !ok {
				return f, fmt.Errorf("bad numa_faults node %s", quote(v))
			}
			f.Node, seen = n, seen|1
			continue
		}
		u, ok := parseUint(v)
		if !ok {
			return f, fmt.Errorf("numa_faults %s is not a number: %s", k, quote(v))
		}
		switch string(k) {
		case "task_private":
			f.TaskPrivate, seen = u, seen|2
		case "task_shared":
			f.TaskShared, seen = u, seen|4
		case "group_private":
			f.GroupPrivate, seen = u, seen|8
		case "group_shared":
			f.GroupShared, seen = u, seen|16
		}
	}
	if seen != 31 {
		return f, fmt.Errorf("numa_faults line lacks a field: %s", quote(whole))
	}
	return f, nil
}

// FaultsOn returns the task's decayed faults on node's memory, private and
// shared together, and whether the file has a line for that node.
func (s *Sched) FaultsOn(node int) (uint64, bool) {
	for _, f := range s.Faults {
		if f.Node == node {
			return f.TaskPrivate + f.TaskShared, true
		}
	}
	return 0, false
}
