package sampler

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Bounds of the sampling interval. Below 100 µs the cost of reading the
// kernel files dominates any interval; above a day nothing useful is sampled.
const (
	MinInterval = 100 * time.Microsecond
	MaxInterval = 24 * time.Hour
)

// ParseInterval parses a sampling interval such as "100ms", "1s", "250us" or
// "2m". A bare number means milliseconds, as in the control FIFO's
// "interval 100". Zero, negative, unparseable and out-of-range values are
// errors that say what is accepted.
func ParseInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty interval: give a duration such as 100ms or 1s")
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		d = time.Duration(n * float64(time.Millisecond))
	} else {
		d, err = time.ParseDuration(strings.Replace(s, "µs", "us", 1))
		if err != nil {
			return 0, fmt.Errorf("bad interval %q: give a duration such as 100ms, 1s or 500us", s)
		}
	}
	if err := checkInterval(d, s); err != nil {
		return 0, err
	}
	return d, nil
}

// CheckInterval says whether d can be a sampling interval: positive, and
// from MinInterval to MaxInterval. It checks the duration itself, so that a
// caller holding a time.Duration need not format it to parse it again.
func CheckInterval(d time.Duration) error { return checkInterval(d, d.String()) }

// checkInterval checks d, naming it as the user wrote it (as).
func checkInterval(d time.Duration, as string) error {
	if d <= 0 {
		return fmt.Errorf("bad interval %q: it must be positive (at least %v)", as, MinInterval)
	}
	if d < MinInterval || d > MaxInterval {
		return fmt.Errorf("bad interval %q: it must be between %v and %v", as, MinInterval, MaxInterval)
	}
	return nil
}
