package perfring

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A capture is the record stream of a profile as the consumer saw it, so
// that the consumer can be replayed without the kernel: the records of every
// drain, in the order they were read, and after each drain a pass marker with
// the time horizon the analyzer handled up to. It begins with a header that
// holds what the profile knew before the first record (Meta, encoded by the
// caller). The format is little-endian:
//
//	magic "NSCAPT01", u32 meta length, meta
//	records: each a perf record (its header's size says its length), or a
//	pass marker: header type TypePass, size 16, then the u64 horizon
//
// A capture is for developers (tests and benchmarks of the consumer); it is
// not a file format numascope promises to keep.
const captureMagic = "NSCAPT01"

// TypePass is the record type of a pass marker: no PERF_RECORD_* type comes
// near it.
const TypePass = 1<<31 | 1

// CaptureWriter writes a capture. Its first write error is kept and
// returned by Close; writes after it are dropped, so that a full disk costs
// the capture, not the profile.
type CaptureWriter struct {
	w   *bufio.Writer
	err error
}

// NewCaptureWriter starts a capture on w with the given header.
func NewCaptureWriter(w io.Writer, meta []byte) *CaptureWriter {
	c := &CaptureWriter{w: bufio.NewWriterSize(w, 1<<20)}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(meta)))
	c.write([]byte(captureMagic))
	c.write(n[:])
	c.write(meta)
	return c
}

func (c *CaptureWriter) write(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

// Record appends one record as read from a ring.
func (c *CaptureWriter) Record(rec []byte) { c.write(rec) }

// Pass ends a drain: the analyzer then handled what came before horizon.
func (c *CaptureWriter) Pass(horizon uint64) {
	var m [16]byte
	binary.LittleEndian.PutUint32(m[0:], TypePass)
	binary.LittleEndian.PutUint16(m[6:], 16)
	binary.LittleEndian.PutUint64(m[8:], horizon)
	c.write(m[:])
}

// Close flushes the capture and returns the first error met.
func (c *CaptureWriter) Close() error {
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}

// Capture is a capture read into memory, walked in place: a replay costs
// what the consumer costs, not copies.
type Capture struct {
	rest []byte
}

// ErrNotCapture says that a file is not a capture.
var ErrNotCapture = errors.New("not a numascope profile capture")

// ReadCapture reads a capture's header and returns its records and the
// header's meta data (both aliasing b).
func ReadCapture(b []byte) (*Capture, []byte, error) {
	if len(b) < 12 || string(b[:8]) != captureMagic {
		return nil, nil, ErrNotCapture
	}
	n := uint64(le32(b, 8))
	if n > uint64(len(b)-12) {
		return nil, nil, fmt.Errorf("capture header of %d bytes in a file of %d: %w", n, len(b), ErrNotCapture)
	}
	return &Capture{rest: b[12+n:]}, b[12 : 12+n], nil
}

// Next returns the next record (aliasing the capture), or, for a pass
// marker, pass true and its horizon. It returns io.EOF at the end, and
// io.ErrUnexpectedEOF for a capture cut inside a record.
func (c *Capture) Next() (rec []byte, pass bool, horizon uint64, err error) {
	if len(c.rest) == 0 {
		return nil, false, 0, io.EOF
	}
	if len(c.rest) < 8 {
		return nil, false, 0, io.ErrUnexpectedEOF
	}
	size := int(binary.LittleEndian.Uint16(c.rest[6:]))
	switch {
	case size < 8:
		return nil, false, 0, fmt.Errorf("record of %d bytes: %w", size, ErrNotCapture)
	case size > len(c.rest):
		return nil, false, 0, io.ErrUnexpectedEOF
	}
	rec, c.rest = c.rest[:size], c.rest[size:]
	if Type(rec) == TypePass && size == 16 {
		return nil, true, le64(rec, 8), nil
	}
	return rec, false, 0, nil
}
