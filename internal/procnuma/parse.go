package procnuma

import (
	"bytes"
	"fmt"
	"strconv"
)

// MaxLine bounds one line of any file read here. The longest legitimate
// lines are numa_maps lines: an escaped path of up to PATH_MAX (4096) bytes
// that may grow fourfold by escaping, then one "N<node>=<pages>" per node of
// up to 1024 nodes. A longer line is not a kernel's, and is refused rather
// than buffered.
const MaxLine = 64 << 10

// MaxNode bounds the node numbers accepted (the kernel's MAX_NUMNODES is at
// most 1024), so that a per-node slice indexed by a node read from a file
// cannot be made to grow without limit.
const MaxNode = 1023

// lines calls fn for each line of data (without its newline), refusing a
// line longer than MaxLine. Trailing NUL bytes, which some kernels pad files
// with, end the data.
func lines(data []byte, what string, fn func(no int, line []byte) error) error {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		data = data[:i]
	}
	for no := 1; len(data) > 0; no++ {
		end := bytes.IndexByte(data, '\n')
		line := data
		if end >= 0 {
			line, data = data[:end], data[end+1:]
		} else {
			data = nil
		}
		if len(line) > MaxLine {
			return fmt.Errorf("%s line %d: longer than %d KiB, not a kernel's line", what, no, MaxLine>>10)
		}
		if err := fn(no, line); err != nil {
			return err
		}
	}
	return nil
}

// parseUint parses an unsigned decimal of at most 64 bits without
// allocating; ok is false for anything else, an empty string included.
func parseUint(b []byte) (v uint64, ok bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseInt parses a signed decimal that fits an int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint(b)
	if !ok || u > 1<<63 || (!neg && u == 1<<63) {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// parseNode parses a node number (0 to MaxNode).
func parseNode(b []byte) (int, bool) {
	v, ok := parseUint(b)
	if !ok || v > MaxNode {
		return 0, false
	}
	return int(v), true
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func trim(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// nextField returns the first blank-separated field of b and the rest.
func nextField(b []byte) (field, rest []byte) {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	i := 0
	for i < len(b) && !isBlank(b[i]) {
		i++
	}
	return b[:i], b[i:]
}

// quote shows at most 80 bytes of a bad line in an error, quoted, so that
// what came from a file is never shown as terminal escapes.
func quote(b []byte) string {
	if len(b) > 80 {
		return strconv.Quote(string(b[:80])) + "…"
	}
	return strconv.Quote(string(b))
}

// growTo returns s with length n, reusing its array when it is large enough,
// with the new elements zeroed.
func growTo[T any](s []T, n int) []T {
	if n <= cap(s) {
		old := len(s)
		s = s[:n]
		if n > old {
			clear(s[old:])
		}
		return s
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)[:n]
}

// parseList parses the kernel's list format ("0-3,8,10-11") into dst,
// reusing it, without allocating once dst is large enough. Values above max
// are refused: the lists read here are CPUs and nodes.
func parseList(dst []int, b []byte, max int) ([]int, error) {
	dst = dst[:0]
	b = trim(b)
	whole := b
	for len(b) > 0 {
		part := b
		if i := bytes.IndexByte(b, ','); i >= 0 {
			part, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		part = trim(part)
		if len(part) == 0 {
			continue
		}
		lo, hi := part, part
		if i := bytes.IndexByte(part, '-'); i >= 0 {
			lo, hi = part[:i], part[i+1:]
		}
		a, ok1 := parseUint(lo)
		z, ok2 := parseUint(hi)
		if !ok1 || !ok2 || z < a || z > uint64(max) {
			return dst, fmt.Errorf("bad list %s: %s is not a number or range up to %d", quote(whole), quote(part), max)
		}
		if len(dst)+int(z-a) > max {
			// More entries than distinct values: repeated ranges, which
			// would otherwise let one line fill the memory.
			return dst, fmt.Errorf("bad list %s: more than %d entries", quote(whole), max+1)
		}
		for v := a; v <= z; v++ {
			dst = append(dst, int(v))
		}
	}
	return dst, nil
}
