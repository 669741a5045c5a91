package procnuma

import (
	"bytes"
	"errors"
	"fmt"
)

// ParseCgroupV1NUMA parses the memory.numa_stat of a cgroup v1 memory
// controller (memcg_numa_stat_show, mm/memcontrol-v1.c) into c. Its lines
// are "NAME=TOTAL N0=PAGES N1=PAGES ...", in pages, not bytes: "total",
// "file", "anon" and "unevictable" for the cgroup's own pages, then the
// same with a "hierarchical_" prefix for the cgroup and its descendants.
// Items holds every line in bytes (pages × pageSize), named as the file
// names it; Anon and File are hierarchical_anon and hierarchical_file, so
// that a v1 cgroup's figures cover what a v2 one's do, or anon and file
// where a kernel prints no hierarchical lines.
func ParseCgroupV1NUMA(data []byte, c *CgroupNUMA, pageSize uint64) error {
	if pageSize == 0 {
		return errors.New("memory.numa_stat: page size 0")
	}
	items, err := parseNUMAStat(data, c.Items, v1Name, pageSize, "pages")
	c.Items = items
	c.Anon, c.File = nil, nil
	if err != nil {
		return err
	}
	var anon, file, hAnon, hFile []uint64
	for i := range c.Items {
		switch c.Items[i].Name {
		case "anon":
			anon = c.Items[i].ByNode
		case "file":
			file = c.Items[i].ByNode
		case "hierarchical_anon":
			hAnon = c.Items[i].ByNode
		case "hierarchical_file":
			hFile = c.Items[i].ByNode
		}
	}
	if hAnon != nil {
		c.Anon, c.File = hAnon, hFile
	} else {
		c.Anon, c.File = anon, file
	}
	if c.Anon == nil {
		return errors.New("memory.numa_stat: no anon line: truncated file, or not a cgroup v1 memory.numa_stat")
	}
	return nil
}

// CgroupV1Path returns the path of a /proc/PID/cgroup file in the cgroup
// v1 hierarchy of controller (the "ID:CONTROLLERS:/path" line whose
// comma-separated controllers include it), relative to that hierarchy's
// mount: "" for its root. ok is false when no hierarchy has the
// controller (a cgroup v2 machine, or the controller bound to v2).
func CgroupV1Path(data []byte, controller string) (path []byte, ok bool, err error) {
	err = lines(data, "cgroup", func(no int, line []byte) error {
		_, rest, found := bytes.Cut(line, []byte(":"))
		if !found || ok {
			return nil
		}
		ctrls, p, found := bytes.Cut(rest, []byte(":"))
		if !found || len(ctrls) == 0 {
			return nil
		}
		for c := range bytes.SplitSeq(ctrls, []byte(",")) {
			if string(c) == controller {
				path, ok = bytes.TrimPrefix(p, []byte("/")), true
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return undeleted(path), ok, nil
}

// v1Name is the name of a v1 memory.numa_stat line, whose first field is
// NAME=TOTAL.
func v1Name(no int, head []byte) ([]byte, error) {
	name, total, ok := bytes.Cut(head, []byte("="))
	if _, okTotal := parseUint(total); !ok || len(name) == 0 || !okTotal {
		return nil, fmt.Errorf("memory.numa_stat line %d: %s is not NAME=PAGES (a cgroup v1 memory.numa_stat)", no, quote(head))
	}
	return name, nil
}
