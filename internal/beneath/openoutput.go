package beneath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CreateOutput creates the output file path (a report, a run's output, a
// CPU profile) as OutDir.Create does, its directory reached as
// OpenOutputDir reaches one: no symbolic link of a user other than root
// and the caller is followed on the way, none is followed in the file's
// place, and with force only a regular file with no other hard link is
// truncated. For outputs written as they go rather than moved into place.
func CreateOutput(path string, force bool, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	d, err := OpenOutputDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Create(base, force, perm)
}

// OpenOutput opens the file path for reading and writing, creating it
// (mode perm before umask) if it does not exist and keeping what it holds
// if it does: for an output that is resumed (an experiment's results).
// Its directory is reached as OpenOutputDir reaches one; a symbolic link
// in its place is refused (ELOOP), as is anything but a regular file with
// no other hard link, and the open never blocks (a FIFO planted there).
func OpenOutput(path string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	d, err := OpenOutputDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := checkBase(base); err != nil {
		return nil, err
	}
	return d.openRegular(base, path, unix.O_RDWR, perm, false)
}

// OutputError is the one-line message for the output file what ("the
// report") at path that CreateOutput or OpenOutput refused: another user's
// symbolic link on the way is named by its own message, the rest say what
// is in the way and what to do.
func OutputError(what, path string, err error) error {
	var se *SymlinkError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("cannot write %s %s: %v", what, path, se)
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("cannot write %s %s: it is a symbolic link, which numascope never writes through; remove it or name another file", what, path)
	case errors.Is(err, ErrNotRegular):
		return fmt.Errorf("cannot write %s %s: it is not a regular file (a FIFO, socket or device); remove it or name another file", what, path)
	case errors.Is(err, ErrHardLink):
		return fmt.Errorf("cannot write %s %s: it has other hard links, and writing it would change them too; remove it or name another file", what, path)
	case errors.Is(err, os.ErrExist):
		return fmt.Errorf("cannot write %s %s: it already exists; remove it or name another file", what, path)
	}
	return fmt.Errorf("cannot write %s: %w", what, err)
}

// MkdirOutput creates the directory path and any missing parents (mode perm
// before umask), as `mkdir -p` does, for an output directory (an
// experiment's runs): each is created relative to its parent resolved as
// OpenOutputDir resolves one, so no directory is created through another
// user's symbolic link. An existing directory is fine.
func MkdirOutput(path string, perm os.FileMode) error {
	d, err := OpenOutputDir(path)
	if err == nil {
		return d.Close()
	}
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	parent, base := filepath.Split(filepath.Clean(path))
	if base == "" || base == "." || base == ".." || base == "/" {
		return err
	}
	if parent != "" && parent != "/" {
		if err := MkdirOutput(parent, perm); err != nil {
			return err
		}
	}
	pd, err := OpenOutputDir(parent)
	if err != nil {
		return err
	}
	defer pd.Close()
	if err := unix.Mkdirat(pd.fd, base, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
		return &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	// Whatever is there now (ours, or a directory made meanwhile) must
	// be reachable as an output directory: not a link of another user's.
	d, err = OpenOutputDir(path)
	if err != nil {
		return err
	}
	return d.Close()
}
