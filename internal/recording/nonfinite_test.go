package recording

import (
	"math"
	"strings"
	"testing"
)

// TestNonFiniteValuesReadAsMissing: a value beyond float64 (1e999) reads
// as missing (NaN) and is listed in Skipped, in JSON Lines and in the
// legacy format, so that it never reaches an encoder; 1e308 stays a value.
func TestNonFiniteValuesReadAsMissing(t *testing.T) {
	lines := `{"type":"header","format":"numascope","version":1,"host":"h","interval_s":1,` +
		`"columns":[{"name":"a.x","sensor":"a","event":"x","kind":"gauge"},{"name":"a.y","sensor":"a","event":"y","kind":"gauge"}]}` + "\n" +
		"[0,1e308,-1e999]\n[1,1e999,2]\n"
	legacy := `[["UNC",1,0],["x", "y"],` + "\n[0,1e308,-1e999],\n[100000,1e999,2]]\n"
	for name, in := range map[string]string{"jsonl": lines, "legacy": legacy} {
		rec, err := Read(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rec.Samples) != 2 {
			t.Fatalf("%s: %d samples", name, len(rec.Samples))
		}
		s0, s1 := rec.Samples[0].V, rec.Samples[1].V
		if s0[0] != 1e308 || !math.IsNaN(s0[1]) || !math.IsNaN(s1[0]) || s1[1] != 2 {
			t.Errorf("%s: samples %v %v", name, s0, s1)
		}
		if len(rec.Skipped) != 2 || !strings.Contains(rec.Skipped[0], "out of range") || !strings.Contains(rec.Skipped[1], "out of range") {
			t.Errorf("%s: Skipped = %q", name, rec.Skipped)
		}
	}
}
