package bench

import (
	"fmt"
	"strings"
	"testing"
)

// TestPairNoteSaysItOnce: a note that holds for many pairs is one line
// with the count, the pairs measured and the first few pairs, however many
// pairs it holds for: at 300 CPUs, --pairs all on a busy host wrote one
// note per pair (44 850 pairs, two notes each).
func TestPairNoteSaysItOnce(t *testing.T) {
	n := &pairNote{kind: "c2c", what: "fewer than 3 windows within the pair's 250ms", why: "a busy host?"}
	if s, ok := n.note(10); ok || s != "" {
		t.Errorf("no pair added: note %q, %v", s, ok)
	}
	n.add("CPU 0 <-> CPU 1", "2 of 3")
	if s, _ := n.note(1); s != "c2c: 1 of 1 pair with fewer than 3 windows within the pair's 250ms: CPU 0 <-> CPU 1 (2 of 3); a busy host?" {
		t.Errorf("one pair: %q", s)
	}
	const pairs = 300 * 299 / 2
	for a := range 300 {
		for b := a + 1; b < 300; b++ {
			if a+b > 1 {
				n.add(fmt.Sprintf("CPU %d <-> CPU %d", a, b), "1 of 3")
			}
		}
	}
	s, ok := n.note(pairs)
	want := "c2c: 44850 of 44850 pairs with fewer than 3 windows within the pair's 250ms: CPU 0 <-> CPU 1 (2 of 3), CPU 0 <-> CPU 2 (1 of 3), CPU 0 <-> CPU 3 (1 of 3), CPU 0 <-> CPU 4 (1 of 3) and 44846 more; a busy host?"
	if !ok || s != want || strings.Contains(s, "\n") {
		t.Errorf("44 850 pairs:\n got %q\nwant %q", s, want)
	}
}
