// Package beneath opens a path beneath a directory, never through a
// symbolic link; and, for output files the operator names (output.go), a
// path through symbolic links owned by root or the caller only.
//
// numascope runs as root on shared machines, and its web server opens files
// whose names come from elsewhere: source files named by a profile's debug
// info, recordings named by a browser. A name with "..", an absolute name or
// a symlink planted by another user (evil.c -> /etc/shadow, d -> /etc) must
// not take such an open outside the directory the operator chose. Open and
// Create resolve the name with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
// so the kernel refuses any symlink and any escape atomically, and fall back
// to an equivalent walk (one openat with O_NOFOLLOW per component) on
// kernels without openat2 (before 5.6, or where seccomp hides it).
//
// The directory itself is trusted: it is what the operator named, and may be
// reached through symlinks.
package beneath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is returned (wrapped) when the name goes through a symbolic
// link; ErrOutside when it would leave the directory.
var (
	ErrSymlink = errors.New("goes through a symbolic link, which is refused")
	ErrOutside = errors.New("leaves the directory (absolute or with ..), which is refused")
)

// useOpenat2 is false in tests of the fallback walk.
var useOpenat2 = true

// Open opens name beneath dir for reading with the given extra flags (e.g.
// unix.O_NONBLOCK). name is relative to dir; it may not be absolute, hold
// a ".." component, or go through a symbolic link anywhere (the last component
// included).
func Open(dir, name string, flags int) (*os.File, error) {
	return open(dir, name, unix.O_RDONLY|flags, 0)
}

// Create creates name beneath dir for writing, failing if it exists
// (O_CREAT|O_EXCL|O_NOFOLLOW), with the same rules as Open for the path
// leading to it. Directories are not created.
func Create(dir, name string, perm os.FileMode) (*os.File, error) {
	return open(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
}

func open(dir, name string, flags int, mode uint32) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	fd, err := openAt(dfd, name, flags, mode)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), explain(err))
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, name)), nil
}

// checkName refuses a name that is empty, absolute or has a ".."
// component.
func checkName(name string) error {
	if name == "" || filepath.IsAbs(name) || !filepath.IsLocal(name) || hasDotDot(name) {
		return fmt.Errorf("%s: %w", name, ErrOutside)
	}
	return nil
}

// openAt opens name beneath the directory dfd without following a
// symbolic link; the name is checked.
func openAt(dfd int, name string, flags int, mode uint32) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := -1, error(unix.ENOSYS)
	if useOpenat2 {
		how := unix.OpenHow{
			Flags:   uint64(flags),
			Mode:    uint64(mode),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for try := 0; try < 3; try++ {
			// EAGAIN: a rename raced the lookup; the kernel asks to retry.
			if fd, err = unix.Openat2(dfd, name, &how); err != unix.EAGAIN && err != unix.EINTR {
				break
			}
		}
	}
	if !useOpenat2 || err == unix.ENOSYS {
		fd, err = walk(dfd, name, flags, mode)
	}
	return fd, err
}

// Dir is a directory held open, beneath which names are opened as Open
// opens them, without opening the directory again for each: for readers
// that open thousands of files a second in one tree (a process table over
// /proc).
type Dir struct {
	fd   int
	path string
}

// OpenDir opens dir, which is trusted as Open trusts its dir.
func OpenDir(dir string) (*Dir, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	return &Dir{fd: fd, path: dir}, nil
}

// Path is the directory's path as given to OpenDir.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// OpenFD opens name beneath d for reading with the extra flags, as Open
// does, and returns the raw descriptor, which the caller closes: no
// *os.File, so no finaliser and no poller registration per file.
func (d *Dir) OpenFD(name string, flags int) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	fd, err := openAt(d.fd, name, unix.O_RDONLY|flags, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(d.path, name), explain(err))
	}
	return fd, nil
}

// walk resolves name one component at a time: every directory is opened
// with O_NOFOLLOW|O_DIRECTORY relative to the one before, so a symlink
// anywhere fails (ELOOP or ENOTDIR) instead of being followed, and ".." was
// refused before. The last component is opened with flags (O_NOFOLLOW).
func walk(dfd int, name string, flags int, mode uint32) (int, error) {
	var parts []string
	for _, p := range strings.Split(filepath.ToSlash(filepath.Clean(name)), "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return -1, unix.EISDIR
	}
	cur, owned := dfd, false
	defer func() {
		if owned {
			unix.Close(cur)
		}
	}()
	for _, p := range parts[:len(parts)-1] {
		if p == ".." {
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ENOTDIR && isSymlink(cur, p) {
				err = unix.ELOOP
			}
			return -1, err
		}
		if owned {
			unix.Close(cur)
		}
		cur, owned = next, true
	}
	last := parts[len(parts)-1]
	if last == ".." {
		return -1, unix.EXDEV
	}
	return unix.Openat(cur, last, flags, mode)
}

// hasDotDot reports a ".." component anywhere, even one that stays inside
// lexically (sub/../x): such names have no honest use here.
func hasDotDot(name string) bool {
	for len(name) > 0 {
		p, rest, _ := strings.Cut(name, "/")
		if p == ".." {
			return true
		}
		name = rest
	}
	return false
}

func isSymlink(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// explain turns the errnos of a refused resolution into this package's
// errors; others (ENOENT, EEXIST, EACCES) stay as they are.
func explain(err error) error {
	switch err {
	case unix.ELOOP:
		return ErrSymlink
	case unix.EXDEV:
		return ErrOutside
	}
	return err
}

// Remove removes the file name beneath dir (not a directory), resolving the
// directories leading to it like Open: undoing a Create must not follow a
// symlink planted since.
func Remove(dir, name string) error {
	if name == "" || filepath.IsAbs(name) || !filepath.IsLocal(name) || hasDotDot(name) {
		return fmt.Errorf("%s: %w", name, ErrOutside)
	}
	parent, base := filepath.Split(filepath.Clean(name))
	if parent == "" {
		parent = "."
	}
	var (
		f   *os.File
		err error
	)
	if parent == "." {
		f, err = os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	} else {
		f, err = open(dir, parent, unix.O_PATH|unix.O_DIRECTORY, 0)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Unlinkat(int(f.Fd()), base, 0); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, name), explain(err))
	}
	return nil
}
