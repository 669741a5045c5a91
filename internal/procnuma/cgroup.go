package procnuma

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// CgroupNUMA is a cgroup v2's memory.numa_stat (memory_numa_stat_show in
// mm/memcontrol.c): for each kind of memory charged to the cgroup and its
// descendants, the amount on each node. Every value is in bytes except the
// workingset_* ones, which are event counts.
type CgroupNUMA struct {
	// Anon and File are the "anon" and "file" lines, indexed by node.
	Anon, File []uint64
	// Items is every line, in the file's order, "anon" and "file" included.
	Items []CgroupItem
}

// CgroupItem is one line of memory.numa_stat.
type CgroupItem struct {
	// Name is the line's key ("anon", "kernel_stack", "workingset_refault_anon"...).
	Name string
	// ByNode is indexed by node.
	ByNode []uint64
}

// ParseCgroupNUMA parses memory.numa_stat into c, reusing its slices and,
// when the lines are those of the last call, the Items' names.
func ParseCgroupNUMA(data []byte, c *CgroupNUMA) error {
	items, err := parseNUMAStat(data, c.Items, v2Name, 1, "value")
	c.Items = items
	c.Anon, c.File = nil, nil
	if err != nil {
		return err
	}
	for i := range c.Items {
		switch c.Items[i].Name {
		case "anon":
			c.Anon = c.Items[i].ByNode
		case "file":
			c.File = c.Items[i].ByNode
		}
	}
	if c.Anon == nil {
		return errors.New("memory.numa_stat: no anon line: truncated file, or not a memory.numa_stat")
	}
	return nil
}

// CgroupPath returns the cgroup v2 path of a /proc/PID/cgroup file (the
// "0::/path" line), relative to the cgroup2 mount: "" for the root cgroup.
// ok is false when the process has no cgroup v2 line (a cgroup v1-only
// machine).
func CgroupPath(data []byte) (path []byte, ok bool, err error) {
	err = lines(data, "cgroup", func(no int, line []byte) error {
		if p, found := bytes.CutPrefix(line, []byte("0::")); found {
			path, ok = bytes.TrimPrefix(p, []byte("/")), true
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return undeleted(path), ok, nil
}

// undeleted drops the " (deleted)" that /proc/PID/cgroup appends to the
// path of a cgroup that was removed.
func undeleted(path []byte) []byte {
	p, _ := bytes.CutSuffix(path, []byte(" (deleted)"))
	return p
}

// v2Name is the name of a v2 memory.numa_stat line: its first field.
func v2Name(_ int, head []byte) ([]byte, error) { return head, nil }

// parseNUMAStat parses the lines of a memory.numa_stat, v2's or v1's, into
// items (reused: no allocation when the lines are those of the last call).
// name gives a line's name from its first field; each N<node>=<count>
// after it is multiplied by scale (1 for v2's bytes, the page size for
// v1's pages), unit naming the count in errors.
func parseNUMAStat(data []byte, items []CgroupItem, name func(no int, head []byte) ([]byte, error), scale uint64, unit string) ([]CgroupItem, error) {
	n := 0
	err := lines(data, "memory.numa_stat", func(no int, line []byte) error {
		head, rest := nextField(line)
		if len(head) == 0 {
			return nil
		}
		nm, err := name(no, head)
		if err != nil {
			return err
		}
		if n == len(items) {
			if n > 256 {
				return fmt.Errorf("memory.numa_stat line %d: more than 256 lines, not a kernel's memory.numa_stat", no)
			}
			items = append(items, CgroupItem{})
		}
		it := &items[n]
		if it.Name != string(nm) { // no allocation when equal
			it.Name = string(nm)
		}
		clear(it.ByNode)
		it.ByNode = it.ByNode[:0]
		seen := false
		for {
			var f []byte
			f, rest = nextField(rest)
			if len(f) == 0 {
				break
			}
			k, v, ok := bytes.Cut(f, []byte("="))
			if !ok || len(k) < 2 || k[0] != 'N' {
				return fmt.Errorf("memory.numa_stat line %d: %s is not N<node>=<%s>", no, quote(f), unit)
			}
			node, ok1 := parseNode(k[1:])
			u, ok2 := parseUint(v)
			if !ok1 || !ok2 || u > math.MaxUint64/scale {
				return fmt.Errorf("memory.numa_stat line %d: bad field %s", no, quote(f))
			}
			if node >= len(it.ByNode) {
				it.ByNode = growTo(it.ByNode, node+1)
			}
			it.ByNode[node] = u * scale
			seen = true
		}
		if !seen {
			return fmt.Errorf("memory.numa_stat line %d: %s has no N<node>=<%s>: truncated file?", no, quote(nm), unit)
		}
		n++
		return nil
	})
	return items[:n], err
}
