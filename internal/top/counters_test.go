package top

import (
	"testing"
	"time"
)

// TestCountersRateOverTheirOwnReads: a counter's rate is its increase over
// the time between its own two reads, whatever the frames' interval; the
// first read and a counter that went back give 0; a ratio needs no clock;
// forget drops what keep refuses.
func TestCountersRateOverTheirOwnReads(t *testing.T) {
	var c counters
	c.init()
	t0 := time.Unix(1e9, 0)
	if r := c.rate("a", 100, t0); r != 0 {
		t.Errorf("first read: rate %v, want 0", r)
	}
	// Read 1.5 s later (a long walk of /proc before it), then 0.5 s later.
	if r := c.rate("a", 400, t0.Add(1500*time.Millisecond)); r != 200 {
		t.Errorf("300 over 1.5 s: %v/s, want 200", r)
	}
	if r := c.rate("a", 500, t0.Add(2*time.Second)); r != 200 {
		t.Errorf("100 over 0.5 s: %v/s, want 200", r)
	}
	if r := c.rate("a", 7, t0.Add(3*time.Second)); r != 0 {
		t.Errorf("a counter that went back: %v/s, want 0", r)
	}
	if r := c.rate("a", 9, t0.Add(3*time.Second)); r != 0 {
		t.Errorf("two reads at the same instant: %v/s, want 0", r)
	}
	if d, ok := c.diff("b", 10); ok || d != 0 {
		t.Errorf("first diff: %v %v, want none", d, ok)
	}
	if d, ok := c.diff("b", 25); !ok || d != 15 {
		t.Errorf("diff: %v %v, want 15", d, ok)
	}
	c.forget(func(k string) bool { return k == "b" })
	if _, ok := c.prev["a"]; ok || len(c.prev) != 1 {
		t.Errorf("after forget: %v, want only b", c.prev)
	}
}
