package perfring

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets in struct perf_event_mmap_page (include/uapi/linux/perf_event.h).
const (
	offDataHead = 1024
	offDataTail = 1032
)

// Record is one record as a ring gives it, in the manner of cilium/ebpf's
// perf.Record: the CPU whose ring held it, its bytes, and, for a
// PERF_RECORD_LOST, how many records the kernel dropped from that ring
// because it was full. Raw aliases the ring: it is valid only during the
// call that hands it over, and the Record itself is reused.
type Record struct {
	CPU int
	// Type is the record's PERF_RECORD_* type.
	Type uint32
	// Raw is the whole record, header included.
	Raw []byte
	// LostSamples is PERF_RECORD_LOST's count, 0 for other records.
	LostSamples uint64
}

// Stats is what a ring saw since it was opened: enough to tell, for each
// record lost, whether this ring was full (Lost, and HighWater near Size)
// and how far behind the consumer ran.
type Stats struct {
	// Records and Bytes handed to the consumer; Lost, records the kernel
	// dropped because the ring was full (its PERF_RECORD_LOSTs).
	Records, Bytes, Lost uint64
	// Drains counts the reads; HighWater is the most bytes a read found
	// waiting.
	Drains    uint64
	HighWater int
}

// Ring is one CPU's event and its mapped buffer: a metadata page, then a
// data area of a power-of-two size that the kernel writes records into.
type Ring struct {
	FD  int
	CPU int
	mem []byte // metadata page + data
	// data is mem after the metadata page.
	data []byte
	// scratch holds a record that wraps around the end of data.
	scratch []byte
	rec     Record
	stats   Stats
}

// NewRing takes over mem, the mapping of fd's buffer (one metadata page of
// pageSize bytes, then the data area).
func NewRing(fd, cpu int, mem []byte, pageSize int) *Ring {
	return &Ring{FD: fd, CPU: cpu, mem: mem, data: mem[pageSize:], scratch: make([]byte, 0, 1024), rec: Record{CPU: cpu}}
}

// Stats returns what the ring saw so far. Only the goroutine that drains
// the ring may call it.
func (r *Ring) Stats() Stats { return r.stats }

// Size is the size of the data area in bytes.
func (r *Ring) Size() int { return len(r.data) }

func (r *Ring) head() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.mem[offDataHead])))
}

func (r *Ring) tail() uint64 {
	return *(*uint64)(unsafe.Pointer(&r.mem[offDataTail]))
}

func (r *Ring) setTail(v uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&r.mem[offDataTail])), v)
}

// Empty says whether the ring holds no complete record header.
func (r *Ring) Empty() bool { return r.head() < r.tail()+8 }

// Drain hands every complete record in the ring to fn, releasing the space
// as it goes: every eighth of the ring handed over, and at the end. The
// record, and its bytes, are valid only during the call.
//
// Released only at the end, a drain of a ring found full left the kernel no
// room until it had handed over all of it, and a burst that arrived meanwhile
// (the consumer attributes each record as it goes, some 0.3 µs each) was
// dropped while most of the ring was already read: rings of 1 MiB lost
// records on drains that had begun at 67-85% full (docs/profile.md, "Lost
// records"). A release is one store to the metadata page.
func (r *Ring) Drain(fn func(rec *Record)) {
	head, tail := r.head(), r.tail()
	size := uint64(len(r.data))
	released, step := tail, size/8
	r.stats.Drains++
	if w := int(head - tail); w > r.stats.HighWater {
		r.stats.HighWater = w
	}
	rec := &r.rec
	for tail+8 <= head {
		off := tail % size
		var hdr [8]byte
		for i := uint64(0); i < 8; i++ {
			hdr[i] = r.data[(off+i)%size]
		}
		n := uint64(binary.LittleEndian.Uint16(hdr[6:8]))
		if n < 8 || tail+n > head {
			break
		}
		if off+n <= size {
			rec.Raw = r.data[off : off+n]
		} else {
			first := size - off
			r.scratch = append(r.scratch[:0], r.data[off:]...)
			r.scratch = append(r.scratch, r.data[:n-first]...)
			rec.Raw = r.scratch
		}
		rec.Type, rec.LostSamples = Type(rec.Raw), 0
		if rec.Type == unix.PERF_RECORD_LOST {
			rec.LostSamples, _ = DecodeLost(rec.Raw)
			r.stats.Lost += rec.LostSamples
		}
		r.stats.Records++
		r.stats.Bytes += n
		fn(rec)
		tail += n
		if tail-released >= step {
			r.setTail(tail)
			released = tail
		}
	}
	if tail != released {
		r.setTail(tail)
	}
}

// Close unmaps the buffer and closes the event.
func (r *Ring) Close() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		unix.Close(r.FD)
		r.mem, r.data = nil, nil
	}
}
