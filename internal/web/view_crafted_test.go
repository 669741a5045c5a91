package web

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// craftedRecording is a recording a local user could hand to root's view:
// an OSC 2 title set, CSI 2J, BEL, NUL and a bidi override in the host, the
// kernel, a sensor's reason, a column name and the labels, and time going
// backwards by 1e300 on line 5.
const craftedRecording = `{"type":"header","format":"numascope","version":1,"host":"h\u001b]2;PWNED\u0007","kernel":"k\u202e\u0000","interval_s":1,` +
	`"sensors":[{"name":"a","present":false,"reason":"r\u001b[2J\u0007","sources":[]}],` +
	`"columns":[{"name":"a.x\u001b]2;PWNED\u0007\u202e","sensor":"a","event":"x","sources":[],"unit":"pages","kind":"counter","desc":""}]}
[0,1]
{"type":"label","t":0.5,"text":"\u001b]2;PWNED\u0007phase\u001b[2J 1\u202eevil\u0000"}
[1,1]
[-1e300,1]
[2,1]
{"type":"label","t":2,"text":"\u001b\u0007\u202e"}
`

// hostileIn reports a character of craftedRecording's attack that
// survives in any string of v (a decoded JSON message).
func hostileIn(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		if strings.ContainsAny(x, "\x1b\x07\x00\u202e") {
			return x, true
		}
	case map[string]any:
		for k, e := range x {
			if s, bad := hostileIn(k); bad {
				return s, true
			}
			if s, bad := hostileIn(e); bad {
				return s, true
			}
		}
	case []any:
		for _, e := range x {
			if s, bad := hostileIn(e); bad {
				return s, true
			}
		}
	}
	return "", false
}

// TestViewCraftedRecording: root views a recording a local user crafted.
// No escape, BEL, NUL or bidi override of its names and labels reaches the
// page (live cleans the same labels on their way in), and the sample whose
// time goes backwards is skipped and listed naming its line, so that the
// totals stay sane (they were count -1e300) and a whole-range range request
// is answered.
func TestViewCraftedRecording(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crafted.jsonl")
	if err := os.WriteFile(path, []byte(craftedRecording), 0o644); err != nil {
		t.Fatal(err)
	}
	v := startView(t, path)
	c := dial(t, v.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if s, bad := hostileIn(h); bad {
		t.Errorf("the page gets %q", s)
	}
	marks := h["marks"].([]any)
	if len(marks) != 2 || marks[0].(map[string]any)["text"] != "]2;PWNEDphase[2J 1evil" || marks[1].(map[string]any)["text"] != "\uFFFD" {
		t.Errorf("labels %v, want the cleaned text and U+FFFD for the one with no printable text", marks)
	}
	skipped, _ := h["skipped"].([]any)
	if len(skipped) != 1 || !strings.Contains(skipped[0].(string), "line 5: time goes backwards") {
		t.Errorf("skipped %v, want line 5 named: time goes backwards", skipped)
	}
	if h["samples"].(float64) != 3 {
		t.Errorf("%v samples, want 3", h["samples"])
	}
	c.Send(`{"type":"range","id":1}`)
	if rows := c.Next("range", func(m map[string]any) bool { return m["id"] == 1.0 })["samples"]; rows == nil || len(rows.([]any)) != 3 {
		t.Errorf("whole range: %v, want 3 rows", rows)
	}
	c.Send(`{"type":"totals","id":2,"t0":-1e308,"t1":1e308}`)
	m := c.Next("totals", func(m map[string]any) bool { return m["id"] == 2.0 })
	col := m["columns"].([]any)[0].(map[string]any)
	if n, _ := col["count"].(float64); n != 2 || math.IsNaN(n) {
		t.Errorf("totals %v, want count 2 (1/s over 2 s)", col)
	}
}
