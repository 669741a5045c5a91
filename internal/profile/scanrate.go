package profile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scanDirs are where the NUMA balancing scanner's knobs live: debugfs since
// Linux 5.13, sysctl before.
var scanDirs = []struct{ dir, suffix string }{
	{"/sys/kernel/debug/sched/numa_balancing", ""},
	{"/proc/sys/kernel", "numa_balancing_"},
}

// scanKnobs are the settings --scan-rate changes.
var scanKnobs = []string{"scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms"}

// ScanRate is a changed NUMA balancing scanner, to be restored.
type ScanRate struct {
	files []string
	old   []string
	guard *exec.Cmd
	pipe  *os.File
}

// SetScanRate makes the NUMA balancing scanner start after period and scan
// every period (at most 10 periods when the kernel backs off) until Restore.
//
// The previous values must come back even if numascope is killed (SIGKILL
// included), so a small guard process is started first: a shell that waits
// for end of file on a pipe whose only writer is numascope, then writes the
// old values back. However numascope ends, the kernel closes the pipe and
// the guard restores. Restore does it at once and releases the guard.
func SetScanRate(period time.Duration) (*ScanRate, error) {
	ms := period.Milliseconds()
	if ms < 1 {
		return nil, fmt.Errorf("--scan-rate %v: want at least 1ms", period)
	}
	s := &ScanRate{}
	for _, d := range scanDirs {
		p := filepath.Join(d.dir, d.suffix+scanKnobs[0])
		if _, err := os.Stat(p); err == nil {
			for _, k := range scanKnobs {
				s.files = append(s.files, filepath.Join(d.dir, d.suffix+k))
			}
			break
		}
	}
	if s.files == nil {
		return nil, errors.New("--scan-rate: the NUMA balancing scanner's settings are not found (mount debugfs on /sys/kernel/debug, and run as root)")
	}
	for _, f := range s.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--scan-rate: %w", err)
		}
		s.old = append(s.old, strings.TrimSpace(string(b)))
	}
	// The guard: sh -c SCRIPT sh FILE VALUE FILE VALUE ...
	script := `cat >/dev/null; while [ $# -ge 2 ]; do printf '%s\n' "$2" > "$1"; shift 2; done`
	args := []string{"-c", script, "sh"}
	for i, f := range s.files {
		args = append(args, f, s.old[i])
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("--scan-rate: %w", err)
	}
	s.guard = exec.Command("/bin/sh", args...)
	s.guard.Stdin = r
	// Its own session: a Ctrl-C or hangup meant for the program does not
	// kill the guard before it has restored.
	s.guard.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := s.guard.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("--scan-rate: cannot start the process that restores the scanner's settings: %w", err)
	}
	r.Close()
	s.pipe = w
	// The knobs are independent (the kernel clamps the period between min
	// and max when it uses them), so the order of the writes is free.
	maxMs := 10 * ms
	vals := []int64{ms, ms, maxMs}
	for i := range s.files {
		if err := os.WriteFile(s.files[i], []byte(strconv.FormatInt(vals[i], 10)+"\n"), 0); err != nil {
			s.Restore()
			return nil, fmt.Errorf("--scan-rate: %w (needs root)", err)
		}
	}
	return s, nil
}

// Restore writes the previous values back and ends the guard.
func (s *ScanRate) Restore() error {
	if s == nil || s.pipe == nil {
		return nil
	}
	var errs []error
	for i, f := range s.files {
		if err := os.WriteFile(f, []byte(s.old[i]+"\n"), 0); err != nil {
			errs = append(errs, err)
		}
	}
	s.pipe.Close()
	s.pipe = nil
	if err := s.guard.Wait(); err != nil {
		errs = append(errs, fmt.Errorf("the restoring process: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("restoring the NUMA balancing scanner's settings: %w", errors.Join(errs...))
	}
	return nil
}
