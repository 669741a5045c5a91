package procnuma

import (
	"strconv"
	"strings"
)

// MapsLine is one line of /proc/PID/maps: "start-end perms offset dev inode
// [path]". The profiler reads it twice: for the executable file mappings of
// a program it starts (symbols) and for the kind of memory an address lies
// in (heap, stack, file, anonymous).
type MapsLine struct {
	// Start and End bound the range [Start, End), End > Start.
	Start, End uint64
	// Perms is the kernel's "rwxp" column, as written.
	Perms string
	// Offset is the file offset of Start (pgoff in bytes).
	Offset uint64
	// Path is the rest of the line: a file's path, a pseudo-name such as
	// "[heap]" or "[stack]", or "" for anonymous memory. Runs of blanks in
	// it are folded to one space (the line is split into fields), and a
	// deleted file keeps the kernel's " (deleted)" suffix.
	Path string
}

// Executable reports whether the range may be executed (an "x" in perms).
func (m MapsLine) Executable() bool { return len(m.Perms) >= 3 && m.Perms[2] == 'x' }

// ParseMapsLine parses one line of /proc/PID/maps; ok is false for a line
// that is not one (too few fields, a range that is not two hex numbers with
// end > start, an offset that is not hex). Callers skip such lines: the
// file is read while the process runs, and nothing in it is worth failing
// a whole read for.
func ParseMapsLine(line string) (m MapsLine, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return MapsLine{}, false
	}
	s, e, ok := strings.Cut(f[0], "-")
	if !ok {
		return MapsLine{}, false
	}
	start, err1 := strconv.ParseUint(s, 16, 64)
	end, err2 := strconv.ParseUint(e, 16, 64)
	off, err3 := strconv.ParseUint(f[2], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || end <= start {
		return MapsLine{}, false
	}
	m = MapsLine{Start: start, End: end, Perms: f[1], Offset: off}
	if len(f) > 5 {
		m.Path = strings.Join(f[5:], " ")
	}
	return m, true
}
