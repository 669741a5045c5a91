// Package rawio writes to local files, and reads kernel statistics files,
// without telling the Go scheduler, for the sampling path only.
//
// An ordinary write from Go enters the scheduler as a system call
// (entersyscall), so that the runtime can give the thread's P to another
// goroutine should the call block. When every P was idle before it, that
// wakes the runtime's monitor thread (sysmon) from its deep sleep, and sysmon
// then polls every 20 µs or more before it sleeps again: two or more thread
// wake-ups per write, a fifth of what a whole sample costs at long intervals
// (docs/performance.md). Writes that cannot block for long are made here as
// raw system calls instead, to a regular file on a local file system
// (FileWriter), which lands in the page cache in microseconds. The kernel
// may still hold one (the dirty-page throttle, a frozen file system), and a
// raw write keeps its P meanwhile: with one P, nothing else in the process
// runs. So a write that takes longer than SlowWrite turns raw writes off for
// the next RawPause, and a disk under writeback pressure delays the process
// once per RawPause, not at every write; and the sampler turns raw file
// writes off altogether (SetRawFiles) while it samples at intervals so short
// that even one held write would cost many deadlines. Anything else (a
// terminal, a pipe, NFS, FUSE), which may block for as long as another
// process likes, is always written the ordinary way. The same holds for the
// sensors' reads of kernel statistics files (Pread), which the kernel builds
// in memory when they are read.
//
// Each use is kept only where a benchmark shows a gain a user pays for at
// realistic rates (issue 33): docs/performance.md, "Hand-written I/O", has
// the table. The live server's socket writes and top's stat reads, whose
// gain no benchmark resolved, use the standard library.
package rawio

import (
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// SlowWrite is the longest a raw write may take before raw writes are
	// paused: the time the runtime waits before it retakes a P from a
	// system call that other goroutines wait for is 20 µs to 10 ms.
	SlowWrite = time.Millisecond
	// RawPause is how long ordinary writes are used after a slow one.
	RawPause = 10 * time.Second
)

// noRawFiles turns raw file writes off for every FileWriter (SetRawFiles).
var noRawFiles atomic.Bool

// SetRawFiles says whether FileWriters may write raw (the default) or must
// write the ordinary way, whatever their file. internal/sampler turns raw
// writes off while it samples at short intervals on one P.
func SetRawFiles(on bool) { noRawFiles.Store(!on) }

// RawFiles reports whether FileWriters may write raw (see SetRawFiles).
func RawFiles() bool { return !noRawFiles.Load() }

// FileWriter is an io.Writer on an *os.File. It is not safe for concurrent
// use, and the file must stay open while it is used.
type FileWriter struct {
	f     *os.File
	fd    uintptr
	raw   bool      // the file may be written raw
	until time.Time // no raw writes before this (after a slow one)
}

// NewFileWriter returns a FileWriter on f, which writes raw when f is a
// regular file on a local file system.
func NewFileWriter(f *os.File) *FileWriter {
	w := &FileWriter{f: f}
	rc, err := f.SyscallConn()
	if err != nil {
		return w
	}
	// Control, not Fd: Fd would put a pollable descriptor (a pipe, a
	// terminal) into blocking mode.
	_ = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		var fsst unix.Statfs_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return
		}
		if unix.Fstatfs(int(fd), &fsst) != nil || !localFS(int64(fsst.Type)) {
			return
		}
		w.fd, w.raw = fd, true
	})
	return w
}

// Raw says whether the FileWriter writes raw (when not paused after a slow write).
func (w *FileWriter) Raw() bool { return w.raw }

// RawNow says whether a write now would be made raw: the file may be
// written raw, raw file writes are on (SetRawFiles), and no slow write has
// paused them. A caller that must not wait (the sampling goroutine) writes
// only then.
func (w *FileWriter) RawNow() bool {
	return w.raw && !noRawFiles.Load() && (w.until.IsZero() || !time.Now().Before(w.until))
}

// localFS says whether a file system of type magic (statfs's f_type) keeps
// its writes in the local page cache: disks and memory, not the network or
// a user-space server.
func localFS(magic int64) bool {
	switch magic {
	case unix.EXT4_SUPER_MAGIC, // also ext2 and ext3
		unix.XFS_SUPER_MAGIC,
		unix.BTRFS_SUPER_MAGIC,
		unix.F2FS_SUPER_MAGIC,
		unix.TMPFS_MAGIC,
		unix.RAMFS_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, // a container's root
		0x2fc12fc1:                 // ZFS
		return true
	}
	return false
}

// Write writes p whole, or returns the error that stopped it: the same
// *fs.PathError an os.File write returns.
func (w *FileWriter) Write(p []byte) (int, error) {
	if !w.RawNow() {
		return w.f.Write(p)
	}
	t0 := time.Now()
	n := 0
	for n < len(p) {
		m, _, e := unix.RawSyscall(unix.SYS_WRITE, w.fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			runtime.KeepAlive(w.f)
			return n, &fs.PathError{Op: "write", Path: w.f.Name(), Err: e}
		case m == 0:
			runtime.KeepAlive(w.f)
			return n, io.ErrShortWrite
		}
		n += int(m)
	}
	runtime.KeepAlive(w.f)
	if now := time.Now(); now.Sub(t0) > SlowWrite {
		w.until = now.Add(RawPause)
	}
	return n, nil
}
