package procnuma

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
)

// StatFile is a /proc/PID/stat kept open between reads. Reading it again
// (pread at offset 0) costs the kernel's formatting of the file alone: an
// open and a close also cost a path walk, a permission check, a file and a
// seq_file set up and torn down, about a third of a refresh of numascope
// top (docs/performance.md). The file stays bound to the process it was
// opened on: once that process exits, every read fails with a *GoneError,
// whatever process takes its PID later, so a held file never reads a
// stranger.
type StatFile struct {
	pid int
	fd  int
}

// OpenStat opens /proc/PID/stat to be read with ReadStatFile, through the
// same beneath-checked directory as every other read. The caller closes it.
func (r *Reader) OpenStat(pid int) (*StatFile, error) {
	dir, err := r.procDir()
	if err != nil {
		return nil, err
	}
	var name [24]byte
	b := strconv.AppendInt(name[:0], int64(pid), 10)
	b = append(b, "/stat"...)
	fd, err := dir.OpenFD(string(b), unix.O_NONBLOCK)
	if err != nil {
		return nil, r.explain(pid, err)
	}
	return &StatFile{pid: pid, fd: fd}, nil
}

// PID is the process the file was opened on.
func (f *StatFile) PID() int { return f.pid }

// Close closes the file; closing a closed one does nothing.
func (f *StatFile) Close() error {
	if f == nil || f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}

// ReadStatFile reads f again into s. A process that exited gives a
// *GoneError: the caller closes f and forgets it.
//
// The read is an ordinary pread (unix.Pread). A raw one, which spares the
// runtime's monitor thread a wake-up, was used until issue 33: a refresh
// makes a thousand reads in one burst, so that wake-up happens about once
// per refresh, a few microseconds against the 14 ms a refresh of 1 000
// processes costs (docs/performance.md, "numascope top"), a gain no
// benchmark resolves.
func (r *Reader) ReadStatFile(f *StatFile, s *Stat) error {
	if f.fd < 0 {
		return fmt.Errorf("/proc/%d/stat: read after Close", f.pid)
	}
	if r.buf == nil {
		r.buf = make([]byte, 16<<10)
	}
	n, err := unix.Pread(f.fd, r.buf, 0)
	for err == unix.EINTR {
		n, err = unix.Pread(f.fd, r.buf, 0)
	}
	if err != nil {
		return r.explain(f.pid, fmt.Errorf("reading /proc/%d/stat: %w", f.pid, err))
	}
	if n == len(r.buf) {
		// A stat line is under 1 KiB; one that fills the buffer (16 KiB
		// or more) is no stat file.
		return fmt.Errorf("/proc/%d/stat: longer than %d bytes, not a kernel stat file", f.pid, len(r.buf))
	}
	return ParseStat(r.buf[:n], s)
}

// procDir is the held proc directory, opened at the first read.
func (r *Reader) procDir() (*beneath.Dir, error) {
	if r.proc == nil {
		d, err := beneath.OpenDir(r.fs.Proc())
		if err != nil {
			return nil, err
		}
		r.proc = d
	}
	return r.proc, nil
}
