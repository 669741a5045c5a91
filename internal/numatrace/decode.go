package numatrace

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/perfevent"
	"github.com/numascope/numascope/internal/perfring"
	"golang.org/x/sys/unix"
)

// sampleType is what every event of a Tracer writes in a sample: the
// event's id first (so that the events sharing a CPU's ring are told
// apart), then pid and tid, then, for the tracepoints, their raw record.
// Nothing else: every byte is copied per fault, in the faulting thread.
const sampleType = unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_TID

// kind is what an event counts.
type kind uint8

const (
	kindNone kind = iota
	kindFault
	kindMigrate
	kindLocalDRAM
	kindRemoteDRAM
)

// field is one field of a raw tracepoint record.
type field struct {
	off, size int
	signed    bool
}

// newField takes a field of a format file, whose size must be one a
// number has.
func newField(fields map[string]perfevent.TraceField, name string) (field, error) {
	f, ok := fields[name]
	if !ok {
		return field{}, fmt.Errorf("no field %q", name)
	}
	switch f.Size {
	case 1, 2, 4, 8:
	default:
		return field{}, fmt.Errorf("field %q has %d bytes, not a number's 1, 2, 4 or 8", name, f.Size)
	}
	return field{off: f.Offset, size: f.Size, signed: f.Signed}, nil
}

// get reads the field (sign-extended when signed); ok is false when raw is
// too short.
func (f field) get(raw []byte) (v uint64, ok bool) {
	if f.off < 0 || f.off+f.size > len(raw) {
		return 0, false
	}
	b := raw[f.off:]
	switch f.size {
	case 1:
		v = uint64(b[0])
		if f.signed {
			v = uint64(int64(int8(b[0])))
		}
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b))
		if f.signed {
			v = uint64(int64(int16(v)))
		}
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
		if f.signed {
			v = uint64(int64(int32(v)))
		}
	default:
		v = binary.LittleEndian.Uint64(b)
	}
	return v, true
}

// faultLayout is where the kprobe on task_numa_fault puts its fetched
// arguments.
type faultLayout struct{ node, pages, flags field }

func parseFaultFormat(format string) (faultLayout, error) {
	fields, err := perfevent.ParseTraceFormat(format)
	if err != nil {
		return faultLayout{}, err
	}
	var l faultLayout
	for _, x := range []struct {
		f    *field
		name string
	}{{&l.node, "mem_node"}, {&l.pages, "pages"}, {&l.flags, "flags"}} {
		if *x.f, err = newField(fields, x.name); err != nil {
			return faultLayout{}, err
		}
	}
	return l, nil
}

// migrateLayout is migrate:mm_migrate_pages's record and its reasons.
type migrateLayout struct {
	succeeded, reason field
	// names are the reason names by number, from the format's
	// __print_symbolic list; a number it does not name is shown as the
	// number.
	names map[int64]string
	// misplaced is the number of numa_misplaced, -1 when the list lacks it.
	misplaced int64
}

func parseMigrateFormat(format string) (migrateLayout, error) {
	fields, err := perfevent.ParseTraceFormat(format)
	if err != nil {
		return migrateLayout{}, err
	}
	l := migrateLayout{misplaced: -1}
	if l.succeeded, err = newField(fields, "succeeded"); err != nil {
		return migrateLayout{}, err
	}
	if l.reason, err = newField(fields, "reason"); err != nil {
		return migrateLayout{}, err
	}
	l.names = parseSymbolic(format, "reason")
	for n, name := range l.names {
		if name == "numa_misplaced" {
			l.misplaced = n
		}
	}
	return l, nil
}

// parseSymbolic reads the value names of __print_symbolic(REC->FIELD,
// {N, "name"}, ...) in a format's print fmt. Entries whose value is not a
// number (an enum the kernel did not export with TRACE_DEFINE_ENUM) are
// left out; the result is empty when there is no such list.
func parseSymbolic(format, fieldName string) map[int64]string {
	names := map[int64]string{}
	key := "__print_symbolic(REC->" + fieldName + ","
	i := strings.Index(format, key)
	if i < 0 {
		return names
	}
	s := format[i+len(key):]
	for {
		s = strings.TrimLeft(s, " \t\n,")
		if !strings.HasPrefix(s, "{") {
			return names
		}
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return names
		}
		entry := s[1:end]
		s = s[end+1:]
		num, name, ok := strings.Cut(entry, ",")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 0, 64)
		name = strings.TrimSpace(name)
		if err != nil || len(name) < 2 || name[0] != '"' || name[len(name)-1] != '"' {
			continue
		}
		names[n] = name[1 : len(name)-1]
	}
}

// reasonSlots: migrations of reasons 0 to reasonSlots-1 are summed in an
// array while draining, the others (never seen) in a map.
const reasonSlots = 32

// decoder turns records into counts. It holds the layouts read at Open and
// the migrations by reason of the Collect under way.
type decoder struct {
	fault   faultLayout
	migrate migrateLayout
	// byReason sums pages by reason number while draining; other the
	// reasons outside it. Collect moves them into Counts.MigratedByReason.
	byReason [reasonSlots]uint64
	other    map[int64]uint64
	// reasonNames[n] is the name of reason n (the number where unnamed).
	reasonNames [reasonSlots]string
}

func newDecoder(f faultLayout, m migrateLayout) *decoder {
	d := &decoder{fault: f, migrate: m, other: map[int64]uint64{}}
	for i := range d.reasonNames {
		d.reasonNames[i] = d.reasonName(int64(i))
	}
	return d
}

func (d *decoder) reasonName(n int64) string {
	if name, ok := d.migrate.names[n]; ok {
		return name
	}
	return strconv.FormatInt(n, 10)
}

// events maps the ids of the events writing into one ring to what they
// count. A ring has at most a handful: a linear search.
type events struct {
	ids   []uint64
	kinds []kind
	// decoded counts each event's samples decoded since it was opened;
	// enabled is its time enabled at the last read (counted kinds).
	decoded, enabled []uint64
}

// find returns the index of event id, -1 for none.
func (e *events) find(id uint64) int {
	for i, x := range e.ids {
		if x == id {
			return i
		}
	}
	return -1
}

func (e *events) add(id uint64, k kind) {
	e.ids = append(e.ids, id)
	e.kinds = append(e.kinds, k)
	e.decoded = append(e.decoded, 0)
	e.enabled = append(e.enabled, 0)
}

// remove drops event i.
func (e *events) remove(i int) {
	e.ids = append(e.ids[:i], e.ids[i+1:]...)
	e.kinds = append(e.kinds[:i], e.kinds[i+1:]...)
	e.decoded = append(e.decoded[:i], e.decoded[i+1:]...)
	e.enabled = append(e.enabled[:i], e.enabled[i+1:]...)
}

// counted says whether an event's losses are found from its count (a
// tracepoint sampled at every hit: every hit not decoded was lost) rather
// than from PERF_RECORD_LOST.
func (k kind) counted() bool { return k == kindFault || k == kindMigrate }

// record counts one record of a ring whose events are evs. It allocates
// nothing unless a process, thread or node is new to c.
func (d *decoder) record(rec []byte, evs *events, c *Counts) {
	if len(rec) < 8 {
		c.Malformed++
		return
	}
	switch perfring.Type(rec) {
	case unix.PERF_RECORD_SAMPLE:
		d.sample(rec, evs, c)
	case unix.PERF_RECORD_LOST:
		// {header, id, lost}. The tracepoints' losses are counted
		// exactly from their counts (Collect): the kernel writes this
		// record only once the ring has room again, which the last
		// interval's may never have.
		n, ok := perfring.DecodeLost(rec)
		if !ok {
			c.Malformed++
			return
		}
		if i := evs.find(binary.LittleEndian.Uint64(rec[8:])); i < 0 || !evs.kinds[i].counted() {
			c.Lost += n
		}
	}
}

// sample decodes a PERF_RECORD_SAMPLE of sampleType (plus RAW for the
// tracepoints): header, id, pid, tid[, raw size, raw].
func (d *decoder) sample(rec []byte, evs *events, c *Counts) {
	if len(rec) < 24 {
		c.Malformed++
		return
	}
	id := binary.LittleEndian.Uint64(rec[8:])
	pid := int32(binary.LittleEndian.Uint32(rec[16:]))
	tid := int32(binary.LittleEndian.Uint32(rec[20:]))
	i := evs.find(id)
	if i < 0 {
		c.Malformed++
		return
	}
	k := evs.kinds[i]
	var raw []byte
	if k == kindFault || k == kindMigrate {
		rest := rec[24:]
		if len(rest) < 4 {
			c.Malformed++
			return
		}
		n := binary.LittleEndian.Uint32(rest)
		if uint64(n) > uint64(len(rest)-4) {
			c.Malformed++
			return
		}
		raw = rest[4 : 4+n]
	}
	switch k {
	case kindFault:
		node, ok1 := d.fault.node.get(raw)
		pages, ok2 := d.fault.pages.get(raw)
		flags, ok3 := d.fault.flags.get(raw)
		if !ok1 || !ok2 || !ok3 {
			c.Malformed++
			return
		}
		c.addFault(pid, tid, int32(node), int32(pages), uint32(flags))
	case kindMigrate:
		succ, ok1 := d.migrate.succeeded.get(raw)
		reason, ok2 := d.migrate.reason.get(raw)
		if !ok1 || !ok2 {
			c.Malformed++
			return
		}
		r := int64(reason)
		if r >= 0 && r < reasonSlots {
			d.byReason[r] += succ
		} else {
			d.other[r] += succ
		}
		if r == d.migrate.misplaced && succ > 0 {
			c.proc(pid).MisplacedPages += succ
		}
	case kindLocalDRAM, kindRemoteDRAM:
		c.addPMU(pid, tid, k == kindRemoteDRAM)
	default:
		c.Malformed++
		return
	}
	evs.decoded[i]++
	c.Samples++
}

// flush moves the migrations by reason into c.
func (d *decoder) flush(c *Counts) {
	for i, v := range d.byReason {
		if v != 0 {
			c.MigratedByReason[d.reasonNames[i]] += v
			d.byReason[i] = 0
		}
	}
	for r, v := range d.other {
		c.MigratedByReason[d.reasonName(r)] += v
		delete(d.other, r)
	}
}
