package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sysfs"
)

// tracefsDirs are where tracefs is found, relative to /sys: its own mount
// point since Linux 4.1, and inside debugfs before that (and still, as an
// automount, on many systems).
var tracefsDirs = []string{"kernel/tracing", "kernel/debug/tracing"}

// ErrTracefsDenied is in the error of Tracefs when tracefs is mounted but
// this process may not look into it (Debian mounts it mode 0700, root's).
var ErrTracefsDenied = errors.New("permission denied")

// Tracefs returns the directory of a mounted tracefs (the one that has an
// events/ directory), or an error saying it is not mounted, or that it is
// mounted where this process may not look (ErrTracefsDenied).
func Tracefs(fs sysfs.FS) (string, error) {
	denied := ""
	for _, d := range tracefsDirs {
		p := fs.Sys(d)
		st, err := os.Stat(filepath.Join(p, "events"))
		if err == nil && st.IsDir() {
			return p, nil
		}
		if errors.Is(err, os.ErrPermission) && denied == "" {
			denied = p
		}
	}
	if denied != "" {
		return "", fmt.Errorf("tracefs at %s is closed to this user: %w", denied, ErrTracefsDenied)
	}
	return "", fmt.Errorf("tracefs is not mounted (no events/ under %s or %s)", fs.Sys(tracefsDirs[0]), fs.Sys(tracefsDirs[1]))
}

// TracefsFix is what to do about an error of Tracefs.
func TracefsFix(err error) string {
	if errors.Is(err, ErrTracefsDenied) {
		return "run as root (tracefs is mounted, but only root may read it here)"
	}
	return "mount it: mount -t tracefs nodev /sys/kernel/tracing (numascope does so itself when run as root)"
}

// MountTracefs mounts tracefs at /sys/kernel/tracing when it is not mounted
// yet, the FS is the live system and the process is root. It returns the
// tracefs directory. On a captured tree it never mounts anything.
func MountTracefs(fs sysfs.FS) (string, error) {
	dir, err := Tracefs(fs)
	if err == nil || errors.Is(err, ErrTracefsDenied) || !fs.Live() {
		return dir, err
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%v, and only root can mount it", err)
	}
	dir = fs.Sys(tracefsDirs[0])
	if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("tracefs is not mounted and mounting it on %s failed: %v", dir, err)
	}
	return Tracefs(fs)
}
