package sensor

// This file holds what the file-backed sensors (vmstat, node, cpu) share: a
// kernel text file kept open and re-read with one pread at offset 0 per
// sample, the allocation-free line parsers, and kvFile, which maps the lines
// of a "name value" file to the slots of a Read destination.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/numascope/numascope/internal/rawio"
	"github.com/numascope/numascope/internal/sysfs"
)

// maxFileSize bounds how far a read buffer may grow, so that a runaway file
// (or a FIFO someone put into a captured tree) cannot eat the memory.
const maxFileSize = 64 << 20

// pageSize is the size of the seq_file buffer the kernel starts with.
var pageSize = os.Getpagesize()

// preadFile is a kernel text file that stays open between samples and is
// re-read from offset 0 each time. Procfs and sysfs regenerate the content on
// every read at offset 0, so one pread is one fresh snapshot; keeping the fd
// saves the open/close pair per sample, which costs about as much as the read.
type preadFile struct {
	path string
	f    *os.File
	fd   int
	buf  []byte
	// recMax bounds the length of one line of the file (see read).
	recMax int
	// lastName is the name on the file's last line at Open, if known.
	lastName string
	format   lineFormat
}

// openPread opens path for repeated reading. size is the file's size as
// seen at Open; the buffer gets room for the values to grow.
func openPread(path string, size, recMax int) (*preadFile, error) {
	f, err := sysfs.Open(path)
	if err != nil {
		return nil, err
	}
	n := 2*size + 512
	if n < 4096 {
		n = 4096
	}
	// Fd puts the file into blocking mode, which is what a regular pread wants.
	return &preadFile{path: path, f: f, fd: int(f.Fd()), buf: make([]byte, n), recMax: recMax}, nil
}

func (p *preadFile) close() error {
	if p == nil || p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}

// pread reads at off with a raw system call. Kernel statistics files are
// built in memory and answer in microseconds, so the call need not tell the
// Go scheduler it may block: its bookkeeping for a blocking call (entersyscall)
// wakes the runtime's monitor thread whenever that thread has gone to sleep,
// which on an idle machine is before every sample; that wake-up, not the read,
// was the larger part of a sample's cost at long intervals. Kept for the
// figure in docs/performance.md ("Hand-written I/O"): with unix.Pread,
// stat at 1 ms cost 1.5x the whole-process CPU (issue 33).
func (p *preadFile) pread(b []byte, off int64) (int, error) {
	n, err := rawio.Pread(p.fd, b, off)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", p.path, err)
	}
	return n, nil
}

// grow doubles the buffer (dropping its content).
func (p *preadFile) grow() error {
	if 2*len(p.buf) > maxFileSize {
		return fmt.Errorf("%s: larger than %d MiB, not a kernel statistics file", p.path, maxFileSize>>20)
	}
	p.buf = make([]byte, 2*len(p.buf))
	return nil
}

// read returns the whole current content of the file.
//
// A read at offset 0 normally returns everything in one system call. The
// exception is a seq_file that shows one record per line, like /proc/vmstat:
// the kernel fills a buffer of one page and stops before the first record that
// does not fit, so a short read may not be the end. It can only stop early if
// the next record would have overflowed the page, so when the chunk plus the
// longest possible line still fits in a page, the chunk is the whole file and
// the extra read that would return 0 is saved. Sysfs attributes are one record
// of at most a page and single_open files (/proc/stat, meminfo) print in one
// go, so for them the first read is always complete.
func (p *preadFile) read() ([]byte, error) {
	n := 0
	for {
		if n == len(p.buf) {
			// Values grew or the file is larger than at Open. Start over into
			// a larger buffer: only this one snapshot is consistent.
			if err := p.grow(); err != nil {
				return nil, err
			}
			n = 0
		}
		m, err := p.pread(p.buf[n:], int64(n))
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return p.buf[:n], nil
		}
		n += m
		if n < len(p.buf) && (m+p.recMax <= pageSize || p.endsWithLast(p.buf[:n])) {
			return p.buf[:n], nil
		}
	}
}

// endsWithLast reports whether data ends with the line that was last at
// Open: then a chunk that came close to filling a page was nonetheless the
// whole file, and the read that would return 0 can be saved.
func (p *preadFile) endsWithLast(data []byte) bool {
	if p.lastName == "" || len(data) == 0 || data[len(data)-1] != '\n' {
		return false
	}
	start := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	name, _, _ := p.format.split(data[start : len(data)-1])
	return string(name) == p.lastName
}

// parseUint parses an unsigned decimal without allocating. A leading '-' is
// accepted (some old kernels print negative drift of per-CPU counters); the
// value then wraps like the kernel's unsigned long would. ok is false for an
// empty string, anything that is not a digit, and values beyond 64 bits.
func parseUint(b []byte) (v int64, ok bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (1<<64-1-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == 0 }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// splitKV splits a "name value" line (/proc/vmstat, node vmstat, numastat).
// name is empty for a blank line.
func splitKV(line []byte) (name, val []byte) {
	line = trimSpace(line)
	i := 0
	for i < len(line) && !isSpace(line[i]) {
		i++
	}
	return line[:i], trimSpace(line[i:])
}

// splitMeminfo splits a meminfo line, "Node 0 MemFree:   123 kB" in a node's
// meminfo or "MemFree:   123 kB" in /proc/meminfo. kb reports the kB suffix.
// name is empty for a line without a colon.
func splitMeminfo(line []byte) (name, val []byte, kb bool) {
	line = trimSpace(line)
	if bytes.HasPrefix(line, []byte("Node ")) {
		rest := trimSpace(line[5:]) // tolerate padding after "Node"
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i > 0 && i < len(rest) && rest[i] == ' ' {
			line = trimSpace(rest[i:])
		}
	}
	c := bytes.IndexByte(line, ':')
	if c <= 0 {
		return nil, nil, false
	}
	name, val = trimSpace(line[:c]), trimSpace(line[c+1:])
	if n := len(val); n >= 3 && val[n-3] == ' ' && val[n-2] == 'k' && val[n-1] == 'B' {
		val, kb = trimSpace(val[:n-3]), true
	}
	return name, val, kb
}

// lineFormat says how the lines of a kvFile split into name and value.
type lineFormat uint8

const (
	formatKV      lineFormat = iota // "name value"
	formatMeminfo                   // "[Node N ]Name: value[ kB]", kB values are stored in bytes
)

// split splits one line; ok is false when the value is not a number.
func (f lineFormat) split(line []byte) (name []byte, v int64, ok bool) {
	var val []byte
	kb := false
	if f == formatMeminfo {
		name, val, kb = splitMeminfo(line)
	} else {
		name, val = splitKV(line)
	}
	v, ok = parseUint(val)
	if kb {
		v *= 1024
	}
	return name, v, ok
}

// kvLine is one line of a kvFile as seen at Open.
type kvLine struct {
	Name string
	KB   bool // meminfo only: the value carried a kB suffix
}

// scanNames lists the named lines of a file's content, in order, with their
// line indexes. Lines whose value is not a number are listed too: Open learns
// the layout; values are checked by Read. Duplicate names keep the first.
func scanNames(data []byte, f lineFormat) (lines []kvLine, index map[string]int, maxLen int) {
	index = map[string]int{}
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(l) > maxLen {
			maxLen = len(l)
		}
		var name []byte
		kb := false
		if f == formatMeminfo {
			name, _, kb = splitMeminfo(l)
		} else {
			name, _ = splitKV(l)
		}
		if len(name) == 0 {
			continue
		}
		if _, dup := index[string(name)]; dup {
			continue
		}
		index[string(name)] = i
		lines = append(lines, kvLine{Name: string(name), KB: kb})
	}
	return lines, index, maxLen
}

// noLine marks a slot whose name the file does not (or no longer) carry.
const noLine = int(^uint(0) >> 1)

// kvSlot is one wanted value of a kvFile.
type kvSlot struct {
	name string
	line int   // line index where name was last seen, or noLine
	out  int   // index into the Read destination
	last int64 // last value read, reported while the line is missing
}

// kvFile reads chosen named values of a "name value" or meminfo file into a
// Read destination without allocating. It remembers on which line each name
// stood; a read only checks that the name is still there (a byte comparison)
// and parses the value. When a line moved (a kernel with a different layout,
// or a captured tree that was edited) it looks every name up again once and
// goes on with the new layout.
type kvFile struct {
	*preadFile
	slots  []kvSlot
	order  []int            // slot indexes sorted by line
	byName map[string][]int // name -> slot indexes, for resync
}

// newKVFile opens path, whose size, longest line and last name at Open were
// size, maxLen and lastName; slots are then added with add.
func newKVFile(path string, format lineFormat, size, maxLen int, lastName string) (*kvFile, error) {
	// A line can grow by the digits of a value up to 20, plus padding.
	p, err := openPread(path, size, maxLen+32)
	if err != nil {
		return nil, err
	}
	p.lastName, p.format = lastName, format
	return &kvFile{preadFile: p, byName: map[string][]int{}}, nil
}

func (k *kvFile) close() error {
	if k == nil {
		return nil
	}
	return k.preadFile.close()
}

// add asks for name's value at dst[out]; line is where name stood at Open
// (noLine if absent: the slot then reads 0).
func (k *kvFile) add(name string, line, out int) {
	k.byName[name] = append(k.byName[name], len(k.slots))
	k.slots = append(k.slots, kvSlot{name: name, line: line, out: out})
	k.order = append(k.order, len(k.slots)-1)
	k.sortOrder()
}

// sortOrder sorts order by line (insertion sort: no allocation, and the
// order is nearly sorted already).
func (k *kvFile) sortOrder() {
	o := k.order
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && k.slots[o[j]].line < k.slots[o[j-1]].line; j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
}

// errLayout says that a line did not carry the expected name; errMissing
// that some names were not found at all (their slots got their last values).
var (
	errLayout  = errors.New("layout changed")
	errMissing = errors.New("lines missing")
)

// read reads the file and stores every slot's value into dst.
func (k *kvFile) read(dst []int64) error {
	data, err := k.preadFile.read()
	if err != nil {
		return err
	}
	return k.parse(data, dst)
}

// parse stores every slot's value from the file content data into dst.
//
// A name the file no longer carries keeps its last value, so that a counter
// never drops, and is looked for again at every read. A file that carries
// none of the names is not the file read at Open (garbage, or a different
// file under the same name): that is an error, not a frozen set of values.
func (k *kvFile) parse(data []byte, dst []int64) error {
	if err := k.scan(data, dst); err != errLayout && err != errMissing {
		return err
	}
	k.resync(data)
	switch err := k.scan(data, dst); err {
	case errLayout:
		return fmt.Errorf("%s: the layout changed while reading it", k.path)
	case errMissing:
		if len(k.order) > 0 && k.slots[k.order[0]].line == noLine {
			return fmt.Errorf("%s: none of the expected lines is there (%s, ...): not the statistics file read at start", k.path, strconv.Quote(k.slots[k.order[0]].name))
		}
		return nil
	default:
		return err
	}
}

// scan walks data once, taking each slot's value from the line the slot
// expects. It returns errLayout when a line does not carry the slot's name.
func (k *kvFile) scan(data []byte, dst []int64) error {
	line, pos := 0, 0 // pos is the start of line
	prevLine, prevVal := -1, int64(0)
	j := 0
	for ; j < len(k.order); j++ {
		s := &k.slots[k.order[j]]
		if s.line == noLine {
			break
		}
		if s.line == prevLine { // the same name enabled twice
			s.last, dst[s.out] = prevVal, prevVal
			continue
		}
		for line < s.line {
			nl := bytes.IndexByte(data[pos:], '\n')
			if nl < 0 {
				return errLayout // the file got shorter
			}
			pos += nl + 1
			line++
		}
		v, next, ok := k.fast(data, pos, s.name)
		if !ok {
			// Not the usual shape: split the line the general way.
			end := bytes.IndexByte(data[pos:], '\n')
			if end < 0 {
				end = len(data) - pos
			}
			l := data[pos : pos+end]
			var name []byte
			name, v, ok = k.format.split(l)
			if string(name) != s.name {
				return errLayout
			}
			if !ok {
				return k.badValue(line, l)
			}
			next = min(pos+end+1, len(data))
		}
		s.last, dst[s.out] = v, v
		prevLine, prevVal = line, v
		pos = next
		line++
	}
	if j == len(k.order) {
		return nil
	}
	for ; j < len(k.order); j++ {
		s := &k.slots[k.order[j]]
		dst[s.out] = s.last
	}
	return errMissing
}

// fast parses the line at data[pos:] if it has exactly the shape the kernel
// prints: "name value\n", or "[Node N ]name:   value[ kB]\n" for meminfo,
// with name the expected one. It checks the name with one comparison and
// reads the value and the end of the line in the same pass, which is most
// of the parsing cost saved. next is the start of the following line. Any
// other shape (odd spaces, garbage, a different name) returns ok false and
// is left to the general path, which tells a moved line from bad data.
func (k *kvFile) fast(data []byte, pos int, name string) (v int64, next int, ok bool) {
	i := pos
	if k.format == formatMeminfo && len(data)-i > 5 && string(data[i:i+5]) == "Node " {
		i += 5
		digits := i
		for i < len(data) && data[i]-'0' <= 9 {
			i++
		}
		if i == digits || i >= len(data) || data[i] != ' ' {
			return 0, 0, false
		}
		i++
	}
	n := len(name)
	if len(data)-i <= n || string(data[i:i+n]) != name {
		return 0, 0, false
	}
	i += n
	if k.format == formatMeminfo {
		if data[i] != ':' {
			return 0, 0, false
		}
	} else if data[i] != ' ' {
		return 0, 0, false
	}
	i++
	for i < len(data) && data[i] == ' ' {
		i++
	}
	start := i
	var u uint64
	for i < len(data) && data[i]-'0' <= 9 {
		u = u*10 + uint64(data[i]-'0')
		i++
	}
	if i == start || i-start > 19 { // longer numbers may overflow: general path
		return 0, 0, false
	}
	v = int64(u)
	if k.format == formatMeminfo && len(data)-i >= 3 && string(data[i:i+3]) == " kB" {
		v *= 1024
		i += 3
	}
	if i == len(data) {
		return v, i, true
	}
	if data[i] != '\n' {
		return 0, 0, false
	}
	return v, i + 1, true
}

// resync finds every slot's line again by name.
func (k *kvFile) resync(data []byte) {
	for i := range k.slots {
		k.slots[i].line = noLine
	}
	line := 0
	for pos := 0; pos < len(data); line++ {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data) - pos
		}
		name, _, _ := k.format.split(data[pos : pos+end])
		for _, i := range k.byName[string(name)] {
			if k.slots[i].line == noLine {
				k.slots[i].line = line
			}
		}
		pos += end + 1
	}
	k.sortOrder()
}

func (k *kvFile) badValue(line int, l []byte) error {
	return fmt.Errorf("%s line %d: value is not a number: %s", k.path, line+1, strconv.Quote(truncate(string(l), 80)))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
