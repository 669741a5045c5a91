package perfevent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

// TraceField is one field of a tracepoint's raw record (PERF_SAMPLE_RAW), as
// the tracepoint's format file describes it.
type TraceField struct {
	Offset, Size int
	Signed       bool
}

// Tracepoint is a tracepoint's id (perf_event_attr.config) and the layout of
// its raw record.
type Tracepoint struct {
	ID     uint64
	Fields map[string]TraceField
}

// Uint reads field name from a raw record; ok is false when the tracepoint
// has no such field or the record is too short for it.
func (tp *Tracepoint) Uint(raw []byte, name string) (v uint64, ok bool) {
	f, found := tp.Fields[name]
	if !found || f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return 0, false
	}
	for i := f.Size - 1; i >= 0; i-- {
		v = v<<8 | uint64(raw[f.Offset+i])
	}
	if f.Signed && f.Size > 0 && f.Size < 8 && v&(1<<(8*f.Size-1)) != 0 {
		v |= ^uint64(0) << (8 * f.Size) // sign-extend
	}
	return v, true
}

// ReadTracepoint reads the id and format of tracepoint sys:name from tracefs.
func ReadTracepoint(fs sysfs.FS, sys, name string) (*Tracepoint, error) {
	dir, err := Tracefs(fs)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(dir, "events", sys, name)
	id, err := sysfs.ReadInt(filepath.Join(base, "id"))
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", sys, name, err)
	}
	b, err := os.ReadFile(filepath.Join(base, "format"))
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", sys, name, err)
	}
	fields, err := ParseTraceFormat(string(b))
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %s: %w", sys, name, filepath.Join(base, "format"), err)
	}
	return &Tracepoint{ID: uint64(id), Fields: fields}, nil
}

// ParseTraceFormat parses the field lines of a tracefs format file:
//
//	field:unsigned long len;	offset:24;	size:8;	signed:0;
//
// keyed by the field's name (the last word of its declaration, without an
// array suffix). Lines that are not fields (name:, ID:, print fmt:) are
// skipped; a field line that does not parse is an error.
func ParseTraceFormat(content string) (map[string]TraceField, error) {
	fields := map[string]TraceField{}
	for ln, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var decl string
		f := TraceField{Offset: -1, Size: -1}
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			key, val, ok := strings.Cut(part, ":")
			if !ok {
				continue
			}
			switch key {
			case "field":
				decl = val
			case "offset", "size", "signed":
				n, err := strconv.Atoi(strings.TrimSpace(val))
				if err != nil || n < 0 || n > 1<<16 {
					return nil, fmt.Errorf("line %d: %s %q is not a small whole number", ln+1, key, val)
				}
				switch key {
				case "offset":
					f.Offset = n
				case "size":
					f.Size = n
				default:
					f.Signed = n != 0
				}
			}
		}
		words := strings.Fields(decl)
		if len(words) == 0 || f.Offset < 0 || f.Size < 0 {
			return nil, fmt.Errorf("line %d: %q is not \"field:TYPE NAME; offset:N; size:N;\"", ln+1, line)
		}
		name := words[len(words)-1]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		name = strings.TrimLeft(name, "*")
		if name == "" {
			return nil, fmt.Errorf("line %d: field without a name", ln+1)
		}
		fields[name] = f
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("no field lines")
	}
	return fields, nil
}
