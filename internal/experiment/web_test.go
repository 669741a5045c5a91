package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebReportCleansNames: an experiment whose levels and factor names
// (from a spec and a results file that may not be the user's own) hold an
// OSC 2 title set, BEL, NUL and a bidi override reaches the page with none
// of them, while the numbers are kept.
func TestWebReportCleansNames(t *testing.T) {
	const h = `\u001b]2;PWNED\u0007\u202e\u0000`
	dir := t.TempDir()
	path := filepath.Join(dir, "h.toml")
	spec := "name = \"h\"\ncommand = \"true {x}\"\nreplications = 2\nresponses = [\"wall_time\"]\n" +
		"[[factor]]\nname = \"x\"\nlevels = [\"p" + h + "\", \"q" + h + "\"]\n"
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var results []Result
	for i, w := range []float64{1, 2, 1.1, 2.2} {
		lv := s.Factors[0].Levels[i%2]
		results = append(results, Result{Type: "run", Run: i, Rep: 1 + i/2, Levels: map[string]string{"x": lv}, Command: []string{"true", lv},
			WallTime: w, Responses: map[string]*float64{"wall_time": &w}})
	}
	b, err := json.Marshal(NewWebReport(Analyze(s, results), results))
	if err != nil {
		t.Fatal(err)
	}
	var page any
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	if decoded := string(b); !strings.Contains(decoded, "p]2;PWNED") || !strings.Contains(decoded, `"wall_time_s":2.2`) {
		t.Errorf("the report lacks the cleaned level or a number: %s", b)
	}
	walk(page, func(s string) {
		if strings.ContainsAny(s, "\x1b\x07\x00\u202e") {
			t.Errorf("the page gets %q", s)
		}
	})
}

// walk calls f with every string, key or value, of a decoded JSON value.
func walk(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walk(e, f)
		}
	}
}
