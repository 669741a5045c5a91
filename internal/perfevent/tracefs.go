package perfevent

import (
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

// Tracefs returns the directory of a mounted tracefs (the one that has an
// events/ directory), or an error saying it is not mounted.
func Tracefs(fs sysfs.FS) (string, error) {
	for _, d := range tracefsDirs {
		p := fs.Sys(d)
		if st, err := os.Stat(filepath.Join(p, "events")); err == nil && st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("tracefs is not mounted (no events/ under %s or %s)", fs.Sys(tracefsDirs[0]), fs.Sys(tracefsDirs[1]))
}

// MountTracefs mounts tracefs at /sys/kernel/tracing when it is not mounted
// yet, the FS is the live system and the process is root. It returns the
// tracefs directory. On a captured tree it never mounts anything.
func MountTracefs(fs sysfs.FS) (string, error) {
	if dir, err := Tracefs(fs); err == nil {
		return dir, nil
	}
	if !fs.Live() {
		return Tracefs(fs)
	}
	if os.Geteuid() != 0 {
		_, err := Tracefs(fs)
		return "", fmt.Errorf("%v, and only root can mount it", err)
	}
	dir := fs.Sys(tracefsDirs[0])
	if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("tracefs is not mounted and mounting it on %s failed: %v", dir, err)
	}
	return Tracefs(fs)
}
