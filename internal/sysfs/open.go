package sysfs

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Every kernel file numascope reads in /sys and /proc is a regular file.
// Under --root the tree is any directory, and on the live system a file
// system can be mounted over /sys or /proc: a FIFO in a file's place would
// block the open until a writer came (and the process would then ignore
// SIGINT and SIGTERM, stuck in open), a socket or device is no kernel
// file either. So files are opened O_NONBLOCK, which never waits for a
// writer, and what fstat does not call a regular file is refused with a
// NotRegularError before any read. The check is made once, when a file is
// opened: the sampler keeps its files open and re-reads them with
// rawio.Pread, which costs nothing more.

// NotRegularError says that a file where a kernel file should be is
// something else.
type NotRegularError struct {
	Path string
	Kind string // "FIFO", "socket", "directory", ...
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a kernel file: numascope reads only regular files in /sys and /proc; replace it with the kernel's file (or remove it from the tree given with --root)", e.Path, e.Kind)
}

// kind names a file type for NotRegularError.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFLNK:
		return "symbolic link"
	}
	return "special file"
}

// CheckRegular returns a *NotRegularError unless fd, opened at path, is a
// regular file. It does not allocate when the file is regular.
func CheckRegular(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &NotRegularError{Path: path, Kind: kind(st.Mode)}
	}
	return nil
}

// Open opens the kernel file at path for reading without blocking, and
// refuses what is not a regular file (CheckRegular). The *os.File it
// returns is in blocking mode, as os.Open's is, since a regular file's
// reads never wait anyway.
func Open(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err == unix.ENXIO {
		// A socket cannot be opened (nor a device without its driver):
		// say what it is rather than "no such device or address".
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, &NotRegularError{Path: path, Kind: kind(st.Mode)}
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := CheckRegular(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the kernel file at path whole, as os.ReadFile does, but
// through Open: a FIFO or socket in its place is an error, never a hang.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
