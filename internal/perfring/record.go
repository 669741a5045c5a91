// Package perfring reads the perf ring buffers of numascope profile and
// decodes their records into typed events, in place, without allocating: one
// record per page fault of the profiled program goes through here, millions
// a second in a fault storm.
//
// It knows the record layouts of the events profile opens (SampleType, with
// sample_id_all) and nothing of what they mean: the analyzer in the parent
// package gives them meaning. It also writes and reads a captured record
// stream (capture.go), so that the consumer can be measured and tested on a
// real stream without the kernel.
package perfring

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// SampleType is what every sample of profile's events carries, and so the
// layout DecodeSample reads. Its order in a record is fixed by the kernel:
// IP, TID (pid, tid), TIME, ADDR, CPU (cpu, reserved), CALLCHAIN (nr, ips),
// then, for the events that ask for them, RAW, REGS_USER and STACK_USER.
const SampleType = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME |
	unix.PERF_SAMPLE_ADDR | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_CALLCHAIN

// SampleIDSize is the size of the sample_id trailer of non-sample records
// (sample_id_all with SampleType): pid, tid, time, cpu, reserved.
const SampleIDSize = 24

// MiscCommExec is PERF_RECORD_MISC_COMM_EXEC: a COMM record from exec.
const MiscCommExec = 1 << 13

// contextMax: call-chain entries at or above it are context markers
// (PERF_CONTEXT_USER and friends), not addresses.
const contextMax = ^uint64(4095)

// IsContext says whether a call-chain entry is a context marker.
func IsContext(ip uint64) bool { return ip >= contextMax }

// Type is a record's type (PERF_RECORD_*). rec holds at least the header.
func Type(rec []byte) uint32 { return le32(rec, 0) }

// Sample is the decoded part of a PERF_RECORD_SAMPLE that profile keeps.
// Its slices alias the record and are valid only while it is handled.
type Sample struct {
	IP, Addr, Time uint64
	PID, TID, CPU  int32
	// Chain is the user call chain, leaf first, context markers included.
	Chain Chain
	// Raw is a tracepoint's record (PERF_SAMPLE_RAW), nil for a page
	// fault; Rest is what follows it (REGS_USER and STACK_USER for the
	// events that ask for them: see UserStack). Stack is a page fault's
	// copy of the user stack from SP (STACK_USER).
	Raw, Rest, Stack []byte
	// StackCut: the kernel copied less of the stack than asked (it copies
	// without faulting, and stopped at a page that was not mapped).
	StackCut bool
}

// Chain is a call chain as the kernel writes it: 8-byte addresses.
type Chain []byte

// Len is the number of entries.
func (c Chain) Len() int { return len(c) / 8 }

// At is entry i.
func (c Chain) At(i int) uint64 { return le64(c, i*8) }

// DecodeSample decodes a PERF_RECORD_SAMPLE of SampleType in place. It
// reports false for a record too short for what it says it holds.
func DecodeSample(rec []byte, s *Sample) bool {
	const fixed = 8 + 8 + 8 + 8 + 8 + 8 + 8 // header ip tid time addr cpu nr
	if len(rec) < fixed {
		return false
	}
	s.IP = le64(rec, 8)
	s.PID = int32(le32(rec, 16))
	s.TID = int32(le32(rec, 20))
	s.Time = le64(rec, 24)
	s.Addr = le64(rec, 32)
	s.CPU = int32(le32(rec, 40))
	nr := le64(rec, 48)
	if nr > uint64(len(rec)-fixed)/8 {
		return false
	}
	s.Chain = rec[fixed : fixed+int(nr)*8]
	s.Raw, s.Rest, s.Stack, s.StackCut = nil, nil, nil, false
	rest := rec[fixed+int(nr)*8:]
	if len(rest) < 4 {
		return true
	}
	// What follows tells the two kinds of sample apart. A tracepoint's
	// goes on with RAW: a u32 size, then the data, padded so that the
	// record stays 8-byte aligned, which makes the size 4 more than a
	// multiple of 8 (the kernel's perf_prepare_sample rounds size+4 up to
	// 8). A page fault's goes on with STACK_USER: a u64 size that is a
	// multiple of 8.
	n := uint64(le32(rest, 0))
	if n%8 != 4 {
		_, stack, ok := UserStack(rest, 0)
		s.Stack, s.StackCut = stack, uint64(len(stack)) < n
		return ok
	}
	if n > uint64(len(rest)-4) {
		return false
	}
	s.Raw, s.Rest = rest[4:4+n], rest[4+n:]
	return true
}

// UserStack decodes what follows RAW in a sample that asked for
// PERF_SAMPLE_REGS_USER with nregs registers (0: not asked) and
// PERF_SAMPLE_STACK_USER: the registers (nil when the kernel had no user
// registers) and the copied stack (the part it could copy).
func UserStack(rest []byte, nregs int) (regs, stack []byte, ok bool) {
	if nregs > 0 {
		if len(rest) < 8 {
			return nil, nil, false
		}
		abi := le64(rest, 0)
		rest = rest[8:]
		if abi != 0 {
			if len(rest) < 8*nregs {
				return nil, nil, false
			}
			regs, rest = rest[:8*nregs], rest[8*nregs:]
		}
	}
	if len(rest) < 8 {
		return regs, nil, false
	}
	n := le64(rest, 0)
	if n > uint64(len(rest)-8) {
		return regs, nil, false
	}
	stack = rest[8 : 8+n]
	if len(rest) >= 16+int(n) {
		if dyn := le64(rest, 8+int(n)); dyn < n {
			stack = stack[:dyn]
		}
	}
	return regs, stack, true
}

// Mmap2 is a PERF_RECORD_MMAP2: a mapping the program made.
type Mmap2 struct {
	PID, TID          int32
	Start, Len, Pgoff uint64
	Prot, Flags       uint32
	// File is the mapped file's name; it aliases the record.
	File []byte
}

// DecodeMmap2 decodes a PERF_RECORD_MMAP2 with a sample_id trailer.
func DecodeMmap2(rec []byte, m *Mmap2) bool {
	if len(rec) < 72+SampleIDSize {
		return false
	}
	m.PID, m.TID = int32(le32(rec, 8)), int32(le32(rec, 12))
	m.Start, m.Len, m.Pgoff = le64(rec, 16), le64(rec, 24), le64(rec, 32)
	m.Prot, m.Flags = le32(rec, 64), le32(rec, 68)
	m.File = cString(rec[72 : len(rec)-SampleIDSize])
	return true
}

// Comm is a PERF_RECORD_COMM: a thread's new name, from exec or prctl.
type Comm struct {
	PID, TID int32
	// Exec: the name changed because the process exec'd.
	Exec bool
	Time uint64
	// Name aliases the record.
	Name []byte
}

// DecodeComm decodes a PERF_RECORD_COMM with a sample_id trailer.
func DecodeComm(rec []byte, c *Comm) bool {
	if len(rec) < 16+SampleIDSize {
		return false
	}
	c.PID, c.TID = int32(le32(rec, 8)), int32(le32(rec, 12))
	c.Exec = binary.LittleEndian.Uint16(rec[4:])&MiscCommExec != 0
	c.Time = le64(rec, len(rec)-SampleIDSize+8)
	c.Name = cString(rec[16 : len(rec)-SampleIDSize])
	return true
}

// Task is a PERF_RECORD_FORK or PERF_RECORD_EXIT: a thread or process
// that started or ended, and its parent.
type Task struct {
	PID, PPID, TID, PTID int32
	Time                 uint64
}

// DecodeTask decodes a PERF_RECORD_FORK or PERF_RECORD_EXIT.
func DecodeTask(rec []byte, t *Task) bool {
	if len(rec) < 32 {
		return false
	}
	t.PID, t.PPID = int32(le32(rec, 8)), int32(le32(rec, 12))
	t.TID, t.PTID = int32(le32(rec, 16)), int32(le32(rec, 20))
	t.Time = le64(rec, 24)
	return true
}

// DecodeLost decodes a PERF_RECORD_LOST: how many records the kernel
// dropped because the ring was full.
func DecodeLost(rec []byte) (uint64, bool) {
	if len(rec) < 24 {
		return 0, false
	}
	return le64(rec, 16), true
}

func le64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
