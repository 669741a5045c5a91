// Package knob changes kernel settings (sysctl and debugfs files) for the
// length of a run and puts the previous values back afterwards, even when
// numascope is killed with SIGKILL.
//
// Both profile --scan-rate (the NUMA balancing scanner's period) and bench
// (NUMA balancing itself, off while it measures) change system-wide
// settings that outlive the process: a numascope killed in the middle must
// not leave the machine tuned for a benchmark. So the old values are handed
// to a small guard process first, a shell that waits for end of file on a
// pipe whose only writer is numascope and then writes them back. However
// numascope ends, the kernel closes the pipe and the guard restores.
package knob

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Guard holds changed settings until Restore.
type Guard struct {
	files []string
	old   []string
	cmd   *exec.Cmd
	pipe  *os.File
}

// Set writes vals[i] to files[i] and returns the guard that puts the old
// values back. The guard is started before anything is written, so that
// there is no moment at which a killed numascope leaves a setting changed.
// what names the change in errors (e.g. "--scan-rate").
func Set(what string, files, vals []string) (*Guard, error) {
	if len(files) != len(vals) {
		return nil, fmt.Errorf("%s: %d files and %d values", what, len(files), len(vals))
	}
	g := &Guard{files: files}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		g.old = append(g.old, strings.TrimSpace(string(b)))
	}
	// The guard: sh -c SCRIPT sh FILE VALUE FILE VALUE ...
	script := `cat >/dev/null; while [ $# -ge 2 ]; do printf '%s\n' "$2" > "$1"; shift 2; done`
	args := []string{"-c", script, "sh"}
	for i, f := range files {
		args = append(args, f, g.old[i])
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	g.cmd = exec.Command("/bin/sh", args...)
	g.cmd.Stdin = r
	// Its own session: a Ctrl-C or hangup meant for numascope's terminal
	// does not kill the guard before it has restored.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := g.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("%s: cannot start the process that restores the previous settings: %w", what, err)
	}
	r.Close()
	g.pipe = w
	for i, f := range files {
		if err := os.WriteFile(f, []byte(vals[i]+"\n"), 0); err != nil {
			g.Restore()
			return nil, fmt.Errorf("%s: %w (needs root)", what, err)
		}
	}
	return g, nil
}

// Old returns the value files[i] had before Set.
func (g *Guard) Old(i int) string { return g.old[i] }

// Restore writes the previous values back and ends the guard. It may be
// called more than once; a nil guard restores nothing.
func (g *Guard) Restore() error {
	if g == nil || g.pipe == nil {
		return nil
	}
	var errs []error
	for i, f := range g.files {
		if err := os.WriteFile(f, []byte(g.old[i]+"\n"), 0); err != nil {
			errs = append(errs, err)
		}
	}
	g.pipe.Close()
	g.pipe = nil
	if err := g.cmd.Wait(); err != nil {
		errs = append(errs, fmt.Errorf("the restoring process: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("restoring %s: %w", strings.Join(g.files, ", "), errors.Join(errs...))
	}
	return nil
}

// abandon is what the kernel does when numascope is killed: the pipe's
// write end closes without a Restore. The guard then restores by itself;
// abandon waits for it. For tests.
func (g *Guard) abandon() error {
	g.pipe.Close()
	g.pipe = nil
	return g.cmd.Wait()
}
