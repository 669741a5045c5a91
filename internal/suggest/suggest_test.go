package suggest

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"numa_hit", "numa_hit", 0}, {"numa_hitt", "numa_hit", 1},
		{"kitten", "sitting", 3}, {"", "abc", 3}, {"abc", "", 3}, {"nmua_hit", "numa_hit", 2},
	}
	for _, c := range cases {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.want)
		}
	}
	long := strings.Repeat("x", 300)
	if Distance(long, "x") < 300 {
		t.Error("over-long names must compare as far apart")
	}
}
