package profile

import (
	"debug/dwarf"
	"debug/elf"
	"os"
	"slices"
	"sort"
)

// mapping is one executable mapping of a process, from a PERF_RECORD_MMAP2
// record or /proc/PID/maps at attach time.
type mapping struct {
	start, end, pgoff uint64
	file              string
}

// Frame is a code location an instruction address resolves to.
type Frame struct {
	Function string
	File     string
	Line     int
}

// elfBinary is the symbol and line tables of one ELF file. Line tables are
// read one compilation unit at a time, when an address in it is first
// asked for: a large library's whole table takes a tenth of a second or
// more to read (libpython: 170 ms), and addresses are resolved while the
// program runs, when such a pause lets the ring buffers overflow.
type elfBinary struct {
	loads []elf.ProgHeader // PT_LOAD segments: file offset -> link-time address
	syms  []elf.Symbol     // functions, by address
	dwarf *dwarf.Data      // nil: no line information
	// reader finds the unit of an address (SeekPC starts from the last
	// unit it found, so nearby addresses are found at once).
	reader *dwarf.Reader
	spans  []cuSpan                     // address ranges of the units found so far, by start
	units  map[dwarf.Offset][]lineEntry // their line rows, by address
	// compDirs are the compilation directories (DW_AT_comp_dir) of the
	// units read so far, by the source files their line rows name: where
	// `numascope view` may look for a file when given no --source-path.
	compDirs map[string][]string
}

// cuSpan is an address range of a compilation unit.
type cuSpan struct {
	lo, hi uint64
	unit   dwarf.Offset
}

type lineEntry struct {
	addr uint64
	file string
	line int
	end  bool // end_sequence: no code from here
}

// openBinary reads the function symbols and, when the file has DWARF,
// prepares its line tables (read later, see elfBinary). A file without
// either still maps addresses to nothing, not to an error: a stripped
// library is common and the rest of the profile stands.
func openBinary(path string) (*elfBinary, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := &elfBinary{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			b.syms = append(b.syms, s)
		}
	}
	sort.Slice(b.syms, func(i, j int) bool { return b.syms[i].Value < b.syms[j].Value })
	if d, err := f.DWARF(); err == nil { // the sections are read into memory: f may close
		b.dwarf, b.reader, b.units = d, d.Reader(), map[dwarf.Offset][]lineEntry{}
	}
	return b, nil
}

// line finds the line table row of a link-time address: the last row at or
// before it in its compilation unit (none after an end_sequence).
func (b *elfBinary) line(addr uint64) (file string, line int) {
	if b.dwarf == nil {
		return "", 0
	}
	k := sort.Search(len(b.spans), func(k int) bool { return b.spans[k].hi > addr })
	var unit dwarf.Offset
	if k < len(b.spans) && b.spans[k].lo <= addr {
		unit = b.spans[k].unit
	} else {
		cu, err := b.reader.SeekPC(addr)
		if err != nil || cu == nil {
			return "", 0 // no unit has it (libc's code in a static binary)
		}
		unit = cu.Offset
		if _, seen := b.units[unit]; !seen { // else its ranges overlap another unit's
			b.units[unit] = unitLines(b.dwarf, cu)
			b.noteCompDir(cu, b.units[unit])
			ranges, _ := b.dwarf.Ranges(cu)
			for _, r := range ranges {
				b.spans = append(b.spans, cuSpan{lo: r[0], hi: r[1], unit: unit})
			}
			sort.Slice(b.spans, func(i, j int) bool { return b.spans[i].lo < b.spans[j].lo })
		}
	}
	rows := b.units[unit]
	j := sort.Search(len(rows), func(j int) bool { return rows[j].addr > addr }) - 1
	if j < 0 || rows[j].end {
		return "", 0
	}
	return rows[j].file, rows[j].line
}

// noteCompDir remembers the compilation directory of a unit for the files
// its rows name.
func (b *elfBinary) noteCompDir(cu *dwarf.Entry, rows []lineEntry) {
	dir, _ := cu.Val(dwarf.AttrCompDir).(string)
	if dir == "" {
		return
	}
	if b.compDirs == nil {
		b.compDirs = map[string][]string{}
	}
	for i := range rows {
		f := rows[i].file
		if f != "" && !slices.Contains(b.compDirs[f], dir) {
			b.compDirs[f] = append(b.compDirs[f], dir)
		}
	}
}

// compDirs are the compilation directories of the units that name file,
// over every binary read, sorted.
func (s *symbolizer) compDirs(file string) []string {
	var out []string
	for _, b := range s.bins {
		if b == nil {
			continue
		}
		for _, d := range b.compDirs[file] {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// unitLines reads the line table of one compilation unit, by address.
func unitLines(d *dwarf.Data, cu *dwarf.Entry) []lineEntry {
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return nil
	}
	var rows []lineEntry
	var e dwarf.LineEntry
	for {
		if err := lr.Next(&e); err != nil {
			break // io.EOF, or a malformed table: keep the rows read so far
		}
		name := ""
		if e.File != nil {
			name = e.File.Name
		}
		rows = append(rows, lineEntry{addr: e.Address, file: name, line: e.Line, end: e.EndSequence})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
	return rows
}

// vaddr converts a file offset to the link-time address of the segment
// holding it (for PIE and shared objects the two differ by the load bias).
func (b *elfBinary) vaddr(off uint64) (uint64, bool) {
	for _, p := range b.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// lookup resolves a link-time address.
func (b *elfBinary) lookup(addr uint64) Frame {
	var fr Frame
	i := sort.Search(len(b.syms), func(i int) bool { return b.syms[i].Value > addr }) - 1
	if i >= 0 {
		s := b.syms[i]
		if addr < s.Value+s.Size || s.Size == 0 {
			fr.Function = s.Name
		}
	}
	fr.File, fr.Line = b.line(addr)
	return fr
}

// symbolizer resolves addresses of the profiled processes, caching one
// elfBinary per file.
type symbolizer struct {
	bins  map[string]*elfBinary
	files map[string]*os.File // for reading code bytes (readAt)
}

func newSymbolizer() *symbolizer {
	return &symbolizer{bins: map[string]*elfBinary{}, files: map[string]*os.File{}}
}

func (s *symbolizer) load(path string) *elfBinary {
	if b, ok := s.bins[path]; ok {
		return b
	}
	b, err := openBinary(path)
	if err != nil {
		b = nil
	}
	s.bins[path] = b
	return b
}

// resolve maps a run-time address in a process with the given mappings.
func (s *symbolizer) resolve(maps []mapping, ip uint64) (Frame, bool) {
	for i := len(maps) - 1; i >= 0; i-- { // later mappings replace earlier ones
		m := maps[i]
		if ip < m.start || ip >= m.end {
			continue
		}
		b := s.load(m.file)
		if b == nil {
			return Frame{}, false
		}
		va, ok := b.vaddr(ip - m.start + m.pgoff)
		if !ok {
			return Frame{}, false
		}
		fr := b.lookup(va)
		if fr.Function == "" && fr.Line == 0 {
			// A stripped file: name the file, so that its faults are not
			// lost among truly unknown addresses.
			fr.Function = "[" + m.file + "]"
		}
		return fr, true
	}
	return Frame{}, false
}

// readAt reads code bytes from a mapped file, keeping the file open.
func (s *symbolizer) readAt(path string, b []byte, off uint64) bool {
	f, ok := s.files[path]
	if !ok {
		var err error
		if f, err = os.Open(path); err != nil {
			f = nil
		}
		s.files[path] = f
	}
	if f == nil {
		return false
	}
	n, err := f.ReadAt(b, int64(off))
	return err == nil && n == len(b)
}

func (s *symbolizer) close() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
	s.files = map[string]*os.File{}
}
