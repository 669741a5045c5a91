package procnuma

import (
	"bytes"
	"errors"
	"fmt"
)

// Kind says what backs a mapping of numa_maps.
type Kind uint8

const (
	KindAnon  Kind = iota // anonymous memory other than the heap and stack
	KindHeap              // the initial heap (brk)
	KindStack             // the main thread's stack
	KindFile              // a file (Mapping.Path), shared libraries and shmem included
)

func (k Kind) String() string {
	switch k {
	case KindHeap:
		return "heap"
	case KindStack:
		return "stack"
	case KindFile:
		return "file"
	}
	return "anon"
}

// Mapping is one line of /proc/PID/numa_maps (show_numa_map in
// fs/proc/task_mmu.c): a virtual memory area, its memory policy, and how
// many of its pages are present on each node. Pages not present (never
// touched, swapped out) are on no node.
//
// Policy and Path point into the parser's data or scratch buffer: they are
// valid only until the callback returns. Copy them to keep them.
type Mapping struct {
	Address uint64
	// Policy is the kernel's text: "default", "bind:0-1",
	// "interleave=static:0-3", "weighted interleave:0-3", "prefer (many):1"...
	Policy []byte
	Kind   Kind
	// Path is the file of a KindFile mapping, with the kernel's escapes
	// (\012 for a newline, \011 a tab, \040 a space, \075 "=") decoded: raw
	// bytes, to be sanitised where they are shown. The kernel does not
	// escape a backslash, so a name that holds "\040" itself reads as a
	// space: the format cannot tell them apart.
	Path []byte
	// Huge is true for hugetlbfs memory.
	Huge bool
	// Anon, Dirty and Mapped are the kernel's page counts (0 when absent).
	Anon, Dirty, Mapped uint64
	// PageSize is kernelpagesize_kB in bytes; 0 on a line without pages.
	PageSize uint64
	// Nodes holds the "N<node>=<pages>" fields, in the file's order.
	Nodes []NodePages

	path []byte // scratch for unescaping Path
}

// NodePages is one "N<node>=<pages>" field of a numa_maps line.
type NodePages struct {
	Node  int
	Pages uint64
}

// Bytes is the mapping's memory present on any node.
func (m *Mapping) Bytes() uint64 {
	var n uint64
	for _, p := range m.Nodes {
		n += p.Pages
	}
	return n * m.PageSize
}

// ParseNUMAMaps calls fn for each line of a numa_maps file. The Mapping
// passed to fn is scratch, reused from line to line and from call to call:
// once its slices have grown, parsing allocates nothing.
func ParseNUMAMaps(data []byte, scratch *Mapping, fn func(*Mapping) error) error {
	return lines(data, "numa_maps", func(no int, line []byte) error {
		if len(trim(line)) == 0 {
			return nil
		}
		if err := parseMapping(line, scratch); err != nil {
			return fmt.Errorf("numa_maps line %d: %w", no, err)
		}
		return fn(scratch)
	})
}

// Category is the class numactl's `numastat -p` files a mapping's memory
// under, so that numascope's breakdown per node reads as numastat users
// expect (docs/top.md, "Memory by category").
type Category uint8

const (
	// CategoryHuge is hugetlb memory (numa_maps "huge"), whatever else
	// the line says.
	CategoryHuge Category = iota
	// CategoryHeap is the brk heap (numa_maps "heap").
	CategoryHeap
	// CategoryStack is the main thread's stack (numa_maps "stack"; before
	// Linux 4.5 also the threads' "stack:TID").
	CategoryStack
	// CategoryPrivate is numastat's catch-all: every other mapping,
	// anonymous and file-backed alike (libraries, page cache, shmem).
	// numastat names it "Private"; it is not only private memory.
	CategoryPrivate
	// Categories is the number of categories.
	Categories
)

func (c Category) String() string {
	switch c {
	case CategoryHuge:
		return "huge"
	case CategoryHeap:
		return "heap"
	case CategoryStack:
		return "stack"
	}
	return "private"
}

// Category is the class numastat files m under: the first of huge, heap
// and stack that the line names, else private (numastat.c's
// show_process_info tests the line's words in that order).
func (m *Mapping) Category() Category {
	switch {
	case m.Huge:
		return CategoryHuge
	case m.Kind == KindHeap:
		return CategoryHeap
	case m.Kind == KindStack:
		return CategoryStack
	}
	return CategoryPrivate
}

// Totals sums numa_maps per node.
type Totals struct {
	// Bytes is indexed by node: the memory present on it, in bytes.
	Bytes []uint64
	// ByCategory splits Bytes by Category: ByCategory[c][node]. Each
	// slice is as long as Bytes.
	ByCategory [Categories][]uint64
	// Mappings counts the lines added.
	Mappings int
}

// Reset empties t, keeping its slices.
func (t *Totals) Reset() {
	clear(t.Bytes)
	t.Bytes, t.Mappings = t.Bytes[:0], 0
	for c := range t.ByCategory {
		clear(t.ByCategory[c])
		t.ByCategory[c] = t.ByCategory[c][:0]
	}
}

// Add adds one mapping's pages. Each page counts at the mapping's own
// page size (kernelpagesize_kB), a hugetlb page of any size included.
func (t *Totals) Add(m *Mapping) {
	t.Mappings++
	c := m.Category()
	for _, p := range m.Nodes {
		if p.Node >= len(t.Bytes) {
			t.Bytes = growTo(t.Bytes, p.Node+1)
			for i := range t.ByCategory {
				t.ByCategory[i] = growTo(t.ByCategory[i], p.Node+1)
			}
		}
		t.Bytes[p.Node] += p.Pages * m.PageSize
		t.ByCategory[c][p.Node] += p.Pages * m.PageSize
	}
}

// Sum returns the bytes on all nodes.
func (t *Totals) Sum() uint64 {
	var n uint64
	for _, b := range t.Bytes {
		n += b
	}
	return n
}

// SumNUMAMaps resets t and adds every mapping of data to it.
func SumNUMAMaps(data []byte, t *Totals, scratch *Mapping) error {
	t.Reset()
	return ParseNUMAMaps(data, scratch, func(m *Mapping) error {
		t.Add(m)
		return nil
	})
}

var errPagesNoSize = errors.New("node pages without kernelpagesize_kB: truncated line?")

// parseMapping parses one line into m.
func parseMapping(line []byte, m *Mapping) error {
	nodes, path := m.Nodes[:0], m.path[:0]
	*m = Mapping{Nodes: nodes, path: path}
	addr, _ := nextField(line)
	a, ok := parseHex(addr)
	if !ok {
		return fmt.Errorf("bad address %s", quote(addr))
	}
	m.Address = a
	// The policy is every field up to the first known one: it may hold
	// spaces ("weighted interleave:0-3", "prefer (many):1").
	const (
		before = iota
		inPolicy
		after
	)
	state, policyStart, policyEnd := before, 0, 0
	var pagesKB uint64
	haveKB := false
	i := bytes.Index(line, addr) + len(addr)
	for {
		// Fields are separated by single spaces (show_numa_map). A path
		// escapes only newline, tab, space and "=" (mangle_path): a
		// carriage return or any other blank is part of it, never a
		// separator, or a file named "x\rN0=99999" would add its pages.
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && line[j] != ' ' {
			j++
		}
		f := line[i:j]
		known, err := m.field(f, &pagesKB, &haveKB)
		if err != nil {
			return err
		}
		switch {
		case known && state == before:
			return fmt.Errorf("no memory policy before %s", quote(f))
		case known:
			state = after
		case state == before:
			state, policyStart, policyEnd = inPolicy, i, j
		case state == inPolicy:
			policyEnd = j
		}
		// An unknown field after the policy is a newer kernel's: skipped.
		i = j
	}
	if state == before {
		return errors.New("no memory policy")
	}
	m.Policy = line[policyStart:policyEnd]
	if haveKB {
		if pagesKB == 0 || pagesKB > 1<<30 {
			return fmt.Errorf("kernelpagesize_kB %d is not a page size", pagesKB)
		}
		m.PageSize = pagesKB << 10
	} else if len(m.Nodes) > 0 {
		return errPagesNoSize
	}
	return nil
}

// parseHex parses an address of up to 16 hex digits.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// isKnown reports whether f is a field of numa_maps other than the policy.
func isKnown(f []byte) (bool, []byte) {
	switch string(f) {
	case "heap", "stack", "huge":
		return true, nil
	}
	if isThreadStack(f) {
		return true, nil
	}
	k, _, ok := bytes.Cut(f, []byte("="))
	if !ok {
		return false, nil
	}
	switch string(k) {
	case "file", "anon", "dirty", "mapped", "mapmax", "swapcache", "active", "writeback", "kernelpagesize_kB":
		return true, k
	}
	if len(k) > 1 && k[0] == 'N' {
		if _, ok := parseUint(k[1:]); ok {
			return true, k
		}
	}
	return false, nil
}

// isThreadStack reports whether f is "stack:TID", a thread's stack in the
// numa_maps of kernels before 4.5 (numastat counts it as Stack).
func isThreadStack(f []byte) bool {
	tid, ok := bytes.CutPrefix(f, []byte("stack:"))
	if !ok {
		return false
	}
	_, ok = parseUint(tid)
	return ok
}

// field stores one known field into m; known is false for a policy word.
func (m *Mapping) field(f []byte, pagesKB *uint64, haveKB *bool) (known bool, err error) {
	known, k := isKnown(f)
	if !known {
		return false, nil
	}
	kind := KindAnon
	switch {
	case string(f) == "heap":
		kind = KindHeap
	case string(f) == "stack", isThreadStack(f):
		kind = KindStack
	case string(k) == "file":
		kind = KindFile
	}
	if kind != KindAnon {
		// The kernel prints at most one of file=, heap and stack.
		if m.Kind != KindAnon {
			return true, fmt.Errorf("%s after %s: two kinds of mapping", quote(f), m.Kind)
		}
		m.Kind = kind
	}
	switch {
	case string(f) == "heap", string(f) == "stack", isThreadStack(f):
		return true, nil
	case string(f) == "huge":
		m.Huge = true
		return true, nil
	}
	v := f[len(k)+1:]
	if kind == KindFile {
		m.path = unescapePath(m.path[:0], v)
		m.Path = m.path
		return true, nil
	}
	u, ok := parseUint(v)
	if !ok {
		return true, fmt.Errorf("%s is not a number: %s", k, quote(f))
	}
	switch string(k) {
	case "anon":
		m.Anon = u
	case "dirty":
		m.Dirty = u
	case "mapped":
		m.Mapped = u
	case "kernelpagesize_kB":
		*pagesKB, *haveKB = u, true
	case "mapmax", "swapcache", "active", "writeback":
	default: // N<node>
		n, ok := parseNode(k[1:])
		if !ok {
			return true, fmt.Errorf("node %s is beyond %d", quote(k[1:]), MaxNode)
		}
		if u > 1<<52 {
			return true, fmt.Errorf("%s pages is beyond any memory", quote(f))
		}
		m.Nodes = append(m.Nodes, NodePages{Node: n, Pages: u})
	}
	return true, nil
}

// unescapePath appends p to dst with the kernel's escapes decoded: the
// characters mangle_path escapes for numa_maps ("\n\t= "), as a backslash
// and three octal digits.
func unescapePath(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+3 < len(p) {
			if d, ok := octal(p[i+1 : i+4]); ok && (d == '\n' || d == '\t' || d == ' ' || d == '=') {
				dst = append(dst, d)
				i += 3
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}

func octal(b []byte) (byte, bool) {
	v := 0
	for _, c := range b {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}
