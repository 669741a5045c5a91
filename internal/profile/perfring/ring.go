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
}

// NewRing takes over mem, the mapping of fd's buffer (one metadata page of
// pageSize bytes, then the data area).
func NewRing(fd, cpu int, mem []byte, pageSize int) *Ring {
	return &Ring{FD: fd, CPU: cpu, mem: mem, data: mem[pageSize:], scratch: make([]byte, 0, 1024)}
}

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

// Drain hands every complete record in the ring to fn, then releases the
// space. The record slice is valid only during the call.
func (r *Ring) Drain(fn func(rec []byte)) {
	head, tail := r.head(), r.tail()
	size := uint64(len(r.data))
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
			fn(r.data[off : off+n])
		} else {
			first := size - off
			r.scratch = append(r.scratch[:0], r.data[off:]...)
			r.scratch = append(r.scratch, r.data[:n-first]...)
			fn(r.scratch)
		}
		tail += n
	}
	r.setTail(tail)
}

// Close unmaps the buffer and closes the event.
func (r *Ring) Close() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		unix.Close(r.FD)
		r.mem, r.data = nil, nil
	}
}
