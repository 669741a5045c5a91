package beneath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An output path (`-o` of record, profile, bench, convert) is named by the
// operator, but its components may not be theirs: numascope often runs as
// root, and a user who planted /tmp/x -> /etc would have
// `record -o /tmp/x/new.jsonl` create /etc/new.jsonl, and `--force` truncate
// /etc files. The kernel's fs.protected_symlinks stops that only where it is
// on, and only in sticky world-writable directories; many machines have it
// off. So OpenOutputDir resolves the directory itself, one component at a
// time on descriptors, and follows a symbolic link only when root or the
// caller (the effective uid) owns it: links an administrator made
// (/var/run -> /run) and the operator's own keep working, another user's
// are refused wherever they are, the final directory included. openat2
// with RESOLVE_NO_SYMLINKS alone would refuse the trusted links too, so the
// walk is explicit; it runs once per output file, never per sample.

// maxLinks bounds the symbolic links followed in one path, as the kernel's
// own limit (40) does, so that a loop of trusted links ends.
const maxLinks = 40

// SymlinkError says that a component of an output path is a symbolic link
// owned by a user other than root and the caller, which is not followed.
type SymlinkError struct {
	Path   string // the link, as reached
	Target string // what it points to
	UID    int    // its owner
}

func (e *SymlinkError) Error() string {
	who := "uid " + strconv.Itoa(e.UID)
	if u, err := user.LookupId(strconv.Itoa(e.UID)); err == nil {
		who = fmt.Sprintf("user %s (uid %d)", u.Username, e.UID)
	}
	trusted := "root"
	if euid := os.Geteuid(); euid != 0 {
		trusted = fmt.Sprintf("root or uid %d", euid)
	}
	return fmt.Sprintf("%s is a symbolic link (to %q) owned by %s; in an output path numascope follows only links owned by %s: name the real directory instead, or remove the link",
		e.Path, e.Target, who, trusted)
}

// OutDir is the directory an output file is written into, held open, so
// that the file, its temporary sibling and the rename between them all
// happen in the directory that was checked, whatever is renamed or
// planted along the path later.
type OutDir struct {
	fd   int
	path string
}

// OpenOutputDir opens dir ("" is the working directory) for creating output
// files in, following a symbolic link on the way only when it is owned by
// root or by the caller; another user's link is a *SymlinkError.
func OpenOutputDir(dir string) (*OutDir, error) {
	if dir == "" {
		dir = "."
	}
	fd, err := walkTrusted(dir)
	if err != nil {
		return nil, err
	}
	return &OutDir{fd: fd, path: dir}, nil
}

// walkTrusted resolves dir to an O_PATH descriptor of a directory. Each
// component is opened with O_PATH|O_NOFOLLOW, so the descriptor is of
// the very inode whose type and owner are then checked: a link swapped in
// after the check is never the one followed.
func walkTrusted(dir string) (int, error) {
	euid := os.Geteuid()
	start := func(abs bool) (int, error) {
		from := "."
		if abs {
			from = "/"
		}
		return unix.Open(from, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	fd, err := start(filepath.IsAbs(dir))
	if err != nil {
		return -1, fmt.Errorf("%s: %w", dir, err)
	}
	shown := "."
	if filepath.IsAbs(dir) {
		shown = "/"
	}
	pending := strings.Split(dir, "/")
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		if c == "" || c == "." {
			continue
		}
		here := filepath.Join(shown, c)
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: here, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: here, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			unix.Close(fd)
			fd, shown = next, here
		case unix.S_IFLNK:
			target, err := readlinkFD(next)
			unix.Close(next)
			if err != nil {
				unix.Close(fd)
				return -1, &os.PathError{Op: "readlink", Path: here, Err: err}
			}
			if uid := int(st.Uid); uid != 0 && uid != euid {
				unix.Close(fd)
				return -1, &SymlinkError{Path: here, Target: target, UID: uid}
			}
			if links++; links > maxLinks {
				unix.Close(fd)
				return -1, &os.PathError{Op: "open", Path: dir, Err: unix.ELOOP}
			}
			if filepath.IsAbs(target) {
				unix.Close(fd)
				if fd, err = start(true); err != nil {
					return -1, fmt.Errorf("%s: %w", dir, err)
				}
				shown = "/"
			}
			pending = append(strings.Split(target, "/"), pending...)
		default:
			unix.Close(next)
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: here, Err: unix.ENOTDIR}
		}
	}
	return fd, nil
}

// readlinkFD reads the target of the symbolic link fd (opened with
// O_PATH|O_NOFOLLOW) refers to.
func readlinkFD(fd int) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// Path is the directory as given to OpenOutputDir.
func (d *OutDir) Path() string { return d.path }

// Close releases the directory.
func (d *OutDir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// checkBase refuses a name that is not one component.
func checkBase(name string) error {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return fmt.Errorf("%q: %w", name, unix.EISDIR)
	}
	return nil
}

// ErrHardLink is returned (wrapped) when an existing output file has other
// names: overwriting it would change what those name (a link another user
// made to /etc/shadow, where fs.protected_hardlinks is off).
var ErrHardLink = errors.New("has other hard links")

// ErrNotRegular is returned (wrapped) when an existing output is not a
// regular file (a FIFO would block the write, a device is not output).
var ErrNotRegular = errors.New("is not a regular file")

// Create creates the file name in d for writing, mode perm before umask:
// a new file (O_EXCL) unless force, when an existing regular file with no
// other hard link is truncated. A symbolic link in its place is refused
// (ELOOP), as is anything not a regular file, and the open never blocks (a
// FIFO planted there).
func (d *OutDir) Create(name string, force bool, perm os.FileMode) (*os.File, error) {
	if err := checkBase(name); err != nil {
		return nil, err
	}
	flags := unix.O_WRONLY
	if !force {
		flags |= unix.O_EXCL
	}
	return d.openRegular(name, filepath.Join(d.path, name), flags, perm, true)
}

// openRegular opens (creating, mode perm before umask) the file name in d
// with flags besides O_CREAT, O_NOFOLLOW and O_NONBLOCK, and keeps it only
// if it is a regular file with no other hard link: a symbolic link in its
// place is refused (ELOOP), and the open never blocks (a FIFO planted
// there gives ErrNotRegular). truncate empties a file that holds data.
// The file, named path in errors and by Name, is blocking again when
// returned.
func (d *OutDir) openRegular(name, path string, flags int, perm os.FileMode, truncate bool) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flags|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
	if err != nil {
		if err == unix.ENXIO { // a FIFO with no reader, opened O_NONBLOCK
			err = ErrNotRegular
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	fail := func(err error) (*os.File, error) {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fail(ErrNotRegular)
	case st.Nlink > 1:
		return fail(ErrHardLink)
	}
	if truncate && st.Size > 0 {
		if err := unix.Ftruncate(fd, 0); err != nil {
			return fail(err)
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return fail(err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// CreateTemp creates a new file in d named prefix followed by random
// characters, readable and writable by its owner only, and returns it with
// its name in d.
func (d *OutDir) CreateTemp(prefix string) (*os.File, string, error) {
	for try := 0; ; try++ {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		name := prefix + hex.EncodeToString(b[:])
		fd, err := unix.Openat(d.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && try < 100 {
			continue
		}
		if err != nil {
			return nil, "", &os.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), name, nil
	}
}

// Rename renames from to to, both names in d, replacing to (a symbolic
// link there is replaced, not followed).
func (d *OutDir) Rename(from, to string) error {
	if err := checkBase(to); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

// Link gives the file from in d the name to in d too, failing if to exists.
func (d *OutDir) Link(from, to string) error {
	if err := checkBase(to); err != nil {
		return err
	}
	if err := unix.Linkat(d.fd, from, d.fd, to, 0); err != nil {
		return &os.LinkError{Op: "link", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

// Remove removes the file name from d.
func (d *OutDir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Lstat describes name in d without following a symbolic link; ok is false
// when there is no such file.
func (d *OutDir) Lstat(name string) (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return st, false, nil
	}
	if err != nil {
		return st, false, &os.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	return st, true, nil
}
