package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/numascope/numascope/internal/knob"
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
	guard *knob.Guard
}

// SetScanRate makes the NUMA balancing scanner start after period and scan
// every period (at most 10 periods when the kernel backs off) until Restore.
//
// The previous values must come back even if numascope is killed (SIGKILL
// included): knob.Set leaves them with a guard process that restores them
// however numascope ends. Restore does it at once and releases the guard.
func SetScanRate(period time.Duration) (*ScanRate, error) {
	ms := period.Milliseconds()
	if ms < 1 {
		return nil, fmt.Errorf("--scan-rate %v: want at least 1ms", period)
	}
	var files []string
	for _, d := range scanDirs {
		p := filepath.Join(d.dir, d.suffix+scanKnobs[0])
		if _, err := os.Stat(p); err == nil {
			for _, k := range scanKnobs {
				files = append(files, filepath.Join(d.dir, d.suffix+k))
			}
			break
		}
	}
	if files == nil {
		return nil, errors.New("--scan-rate: the NUMA balancing scanner's settings are not found (mount debugfs on /sys/kernel/debug, and run as root)")
	}
	// The knobs are independent (the kernel clamps the period between min
	// and max when it uses them), so the order of the writes is free.
	vals := []string{strconv.FormatInt(ms, 10), strconv.FormatInt(ms, 10), strconv.FormatInt(10*ms, 10)}
	g, err := knob.Set("--scan-rate", files, vals)
	if err != nil {
		return nil, err
	}
	return &ScanRate{guard: g}, nil
}

// Restore writes the previous values back and ends the guard.
func (s *ScanRate) Restore() error {
	if s == nil {
		return nil
	}
	if err := s.guard.Restore(); err != nil {
		return fmt.Errorf("restoring the NUMA balancing scanner's settings: %w", err)
	}
	return nil
}
