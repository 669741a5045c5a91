package perfring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

// record builds a perf record of type typ: header, body, and a sample_id
// trailer whose time is t.
func record(typ uint32, misc uint16, body []byte, t uint64) []byte {
	le := binary.LittleEndian
	b := make([]byte, 8, 8+len(body)+SampleIDSize)
	b = append(b, body...)
	id := make([]byte, SampleIDSize)
	le.PutUint64(id[8:], t)
	b = append(b, id...)
	le.PutUint32(b[0:], typ)
	le.PutUint16(b[4:], misc)
	le.PutUint16(b[6:], uint16(len(b)))
	return b
}

// fault builds a page-fault sample with a two-entry call chain and a
// stack copy of which copied bytes arrived.
func fault(ip, addr uint64, stack []byte, asked int) []byte {
	le := binary.LittleEndian
	b := make([]byte, 8)
	le.PutUint32(b, unix.PERF_RECORD_SAMPLE)
	b = le.AppendUint64(b, ip)
	b = le.AppendUint32(b, 7)  // pid
	b = le.AppendUint32(b, 8)  // tid
	b = le.AppendUint64(b, 99) // time
	b = le.AppendUint64(b, addr)
	b = le.AppendUint32(b, 3) // cpu
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, 2) // chain
	b = le.AppendUint64(b, ^uint64(511))
	b = le.AppendUint64(b, ip)
	b = le.AppendUint64(b, uint64(asked))
	b = append(b, stack...)
	b = append(b, make([]byte, asked-len(stack))...)
	b = le.AppendUint64(b, uint64(len(stack)))
	le.PutUint16(b[6:], uint16(len(b)))
	return b
}

func TestDecodeSample(t *testing.T) {
	stack := binary.LittleEndian.AppendUint64(nil, 0x401234)
	var s Sample
	if !DecodeSample(fault(0x401000, 0x7f0000001008, stack, 64), &s) {
		t.Fatal("not decoded")
	}
	if s.IP != 0x401000 || s.PID != 7 || s.TID != 8 || s.Time != 99 || s.Addr != 0x7f0000001008 || s.CPU != 3 {
		t.Errorf("decoded %+v", s)
	}
	if s.Chain.Len() != 2 || !IsContext(s.Chain.At(0)) || s.Chain.At(1) != 0x401000 {
		t.Errorf("chain %x, want the user context marker and the leaf", []byte(s.Chain))
	}
	if s.Raw != nil || !bytes.Equal(s.Stack, stack) || !s.StackCut {
		t.Errorf("raw %x stack %x cut %v: want no raw, the 8 bytes copied, cut short", s.Raw, s.Stack, s.StackCut)
	}
	r := fault(0x401000, 0x1000, stack, 64)
	if DecodeSample(r[:len(r)-40], &s) {
		t.Error("a record cut inside its stack copy was decoded")
	}
}

func TestDecodeOthers(t *testing.T) {
	le := binary.LittleEndian
	body := make([]byte, 64)
	le.PutUint32(body[0:], 5)
	le.PutUint32(body[4:], 6)
	le.PutUint64(body[8:], 0x400000)
	le.PutUint64(body[16:], 0x2000)
	le.PutUint64(body[24:], 0x1000)
	le.PutUint32(body[56:], unix.PROT_EXEC|unix.PROT_READ)
	body = append(body, "/bin/true\x00\x00\x00\x00\x00\x00\x00"...)
	var m Mmap2
	if !DecodeMmap2(record(unix.PERF_RECORD_MMAP2, 0, body, 1), &m) || m.PID != 5 || m.TID != 6 ||
		m.Start != 0x400000 || m.Len != 0x2000 || m.Pgoff != 0x1000 || m.Prot&unix.PROT_EXEC == 0 || string(m.File) != "/bin/true" {
		t.Errorf("mmap2 %+v", m)
	}
	var c Comm
	comm := append(le.AppendUint32(le.AppendUint32(nil, 5), 6), "prog\x00\x00\x00\x00"...)
	if !DecodeComm(record(unix.PERF_RECORD_COMM, MiscCommExec, comm, 42), &c) || !c.Exec || c.Time != 42 || string(c.Name) != "prog" || c.TID != 6 {
		t.Errorf("comm %+v", c)
	}
	var k Task
	task := make([]byte, 24)
	le.PutUint32(task[0:], 10)
	le.PutUint32(task[4:], 9)
	le.PutUint32(task[8:], 11)
	le.PutUint32(task[12:], 9)
	le.PutUint64(task[16:], 77)
	if !DecodeTask(record(unix.PERF_RECORD_FORK, 0, task, 0), &k) || k != (Task{PID: 10, PPID: 9, TID: 11, PTID: 9, Time: 77}) {
		t.Errorf("fork %+v", k)
	}
	lost := le.AppendUint64(le.AppendUint64(nil, 1), 123)
	if n, ok := DecodeLost(record(unix.PERF_RECORD_LOST, 0, lost, 0)); !ok || n != 123 {
		t.Errorf("lost %d %v, want 123", n, ok)
	}
	for _, short := range []func() bool{
		func() bool { return DecodeMmap2(make([]byte, 80), &m) },
		func() bool { return DecodeComm(make([]byte, 30), &c) },
		func() bool { return DecodeTask(make([]byte, 31), &k) },
		func() bool { _, ok := DecodeLost(make([]byte, 23)); return ok },
	} {
		if short() {
			t.Error("a record too short for its type was decoded")
		}
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic or
// read outside the record.
func FuzzDecode(f *testing.F) {
	f.Add(fault(0x401000, 0x1000, make([]byte, 8), 64))
	f.Add(record(unix.PERF_RECORD_COMM, MiscCommExec, []byte("\x05\x00\x00\x00\x06\x00\x00\x00prog\x00"), 1))
	f.Add(make([]byte, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Sample
		if DecodeSample(b, &s) {
			for i := range s.Chain.Len() {
				_ = s.Chain.At(i)
			}
			UserStack(s.Rest, 1)
		}
		var m Mmap2
		DecodeMmap2(b, &m)
		var c Comm
		DecodeComm(b, &c)
		var k Task
		DecodeTask(b, &k)
		DecodeLost(b)
	})
}

func TestCaptureRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, []byte(`{"pid":7}`))
	r1 := fault(0x401000, 0x1000, nil, 64)
	r2 := record(unix.PERF_RECORD_LOST, 0, make([]byte, 16), 5)
	w.Record(r1)
	w.Pass(1234)
	w.Record(r2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	r, meta, err := ReadCapture(full)
	if err != nil || string(meta) != `{"pid":7}` {
		t.Fatalf("header: %q, %v", meta, err)
	}
	rec, pass, _, err := r.Next()
	if err != nil || pass || !bytes.Equal(rec, r1) {
		t.Fatalf("first: %x %v %v", rec, pass, err)
	}
	if _, pass, h, err := r.Next(); err != nil || !pass || h != 1234 {
		t.Fatalf("pass marker: %v %d %v", pass, h, err)
	}
	if rec, _, _, err := r.Next(); err != nil || !bytes.Equal(rec, r2) {
		t.Fatalf("third: %x %v", rec, err)
	}
	if _, _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	// Cut inside the last record: the records before it are read, then
	// the cut is reported, not taken for the end.
	r, _, err = ReadCapture(full[:len(full)-3])
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	r.Next()
	if _, _, _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Errorf("cut capture: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, err := ReadCapture([]byte("NSCAPT01\xff\xff\xff\xff")); !errors.Is(err, ErrNotCapture) {
		t.Errorf("huge header: %v, want ErrNotCapture", err)
	}
	if _, _, err := ReadCapture([]byte("numascope")); !errors.Is(err, ErrNotCapture) {
		t.Errorf("other file: %v, want ErrNotCapture", err)
	}
}

// FuzzCapture: a damaged capture never panics or reads outside itself.
func FuzzCapture(f *testing.F) {
	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, []byte("{}"))
	w.Record(fault(0x401000, 0x1000, nil, 64))
	w.Pass(1)
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := ReadCapture(b)
		if err != nil {
			return
		}
		for range 1000 {
			if _, _, _, err := r.Next(); err != nil {
				return
			}
		}
	})
}
