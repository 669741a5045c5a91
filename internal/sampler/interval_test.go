package sampler

import (
	"testing"
	"time"
)

func TestParseInterval(t *testing.T) {
	good := map[string]time.Duration{
		"100ms": 100 * time.Millisecond, "1s": time.Second, "100us": 100 * time.Microsecond,
		"100µs": 100 * time.Microsecond, "250": 250 * time.Millisecond, " 2m ": 2 * time.Minute, "0.5": 500 * time.Microsecond,
	}
	for in, want := range good {
		got, err := ParseInterval(in)
		if err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1s", "abc", "10us", "48h", "1e400", "NaN"} {
		if _, err := ParseInterval(bad); err == nil {
			t.Errorf("ParseInterval(%q): want error", bad)
		}
	}
}

func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"100ms", "1", "-3", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseInterval(s)
		if err == nil && (d < MinInterval || d > MaxInterval) {
			t.Fatalf("ParseInterval(%q) = %v outside bounds", s, d)
		}
	})
}

// TestCheckInterval checks durations as New and SetInterval see them, with
// the messages ParseInterval gives for the same values written out.
func TestCheckInterval(t *testing.T) {
	for _, d := range []time.Duration{MinInterval, 150500 * time.Nanosecond, time.Second, MaxInterval} {
		if err := CheckInterval(d); err != nil {
			t.Errorf("CheckInterval(%v): %v", d, err)
		}
	}
	for _, d := range []time.Duration{0, -time.Second, MinInterval - 1, MaxInterval + 1} {
		err := CheckInterval(d)
		_, perr := ParseInterval(d.String())
		if err == nil || perr == nil || err.Error() != perr.Error() {
			t.Errorf("CheckInterval(%v) = %v, want ParseInterval's %v", d, err, perr)
		}
	}
}
