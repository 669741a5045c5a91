package term

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile is every kind of text the cleaners exist for: an OSC 2 title set,
// a CSI screen clear, BEL, a bidi override, NUL, C1 CSI, DEL and a tag
// character (beyond the BMP).
const hostile = "\x1b]2;PWNED\x07a\x1b[2Jb\x07c\u202Ed\x00e\u009bf\x7fg\U000E0041h"

// kept reports a rune of hostile that survived in s.
func kept(s string) (rune, bool) {
	for _, r := range s {
		switch r {
		case 0x1b, 0x07, 0x202e, 0, 0x9b, 0x7f, 0xe0041:
			return r, true
		}
	}
	return 0, false
}

func TestClean(t *testing.T) {
	if got, want := Clean(hostile), "]2;PWNEDa[2Jbcdefgh"; got != want {
		t.Errorf("Clean(%q) = %q, want %q", hostile, got, want)
	}
	if got, want := CleanLines("a\tb\n"+hostile+"\r\n"), "a\tb\n]2;PWNEDa[2Jbcdefgh\n"; got != want {
		t.Errorf("CleanLines = %q, want %q", got, want)
	}
}

// TestWriterSplitRunes writes a hostile text one byte at a time: a UTF-8
// sequence cut between writes must neither become U+FFFD nor let the
// override through.
func TestWriterSplitRunes(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := "Größe ✓ " + hostile + " 👩\u200d💻\n"
	for i := 0; i < len(in); i++ {
		if _, err := w.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), CleanLines(in); got != want {
		t.Errorf("written %q, want %q", got, want)
	}
	if r, bad := kept(out.String()); bad {
		t.Errorf("%U reached the output", r)
	}
}

// TestEscapeJSON checks that the escaped JSON decodes to the same value and
// holds none of the hostile characters raw.
func TestEscapeJSON(t *testing.T) {
	in := map[string]string{"level": hostile, "ok": "Größe 👩\u200d💻"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	esc := EscapeJSON(b)
	if r, bad := kept(string(esc)); bad {
		t.Errorf("%U raw in %s", r, esc)
	}
	var back map[string]string
	if err := json.Unmarshal(esc, &back); err != nil {
		t.Fatalf("%v: %s", err, esc)
	}
	if back["level"] != hostile || back["ok"] != in["ok"] {
		t.Errorf("decoded %q, want %q", back, in)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"phase 2", hostile, " a  b ", "👩\u200d💻", "\u0085\u2028", "\xff\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Clean(s)
		if !utf8.ValidString(got) || got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
			t.Fatalf("Clean(%q) = %q: not clean", s, got)
		}
		for _, r := range got {
			if dropped(r) || (unicode.IsSpace(r) && r != ' ') {
				t.Fatalf("Clean(%q) = %q keeps %U", s, got, r)
			}
		}
		if Clean(got) != got {
			t.Fatalf("Clean is not idempotent on %q", got)
		}
		for _, r := range CleanLines(s) {
			if dropped(r) && r != '\n' && r != '\t' {
				t.Fatalf("CleanLines(%q) keeps %U", s, r)
			}
		}
		b, _ := json.Marshal(s)
		var want, back string
		json.Unmarshal(b, &want)
		if err := json.Unmarshal(EscapeJSON(b), &back); err != nil || back != want {
			t.Fatalf("EscapeJSON changed %q: %q, %v", s, back, err)
		}
		doc, _ := json.Marshal(map[string]any{s: []any{s, 1.5, nil}})
		cleaned, err := CleanJSON(doc)
		var m map[string][]any
		if err != nil || json.Unmarshal(cleaned, &m) != nil || len(m) != 1 {
			t.Fatalf("CleanJSON(%s) = %s, %v", doc, cleaned, err)
		}
		for k, v := range m {
			if k != Clean(want) || v[0] != k || v[1] != 1.5 || v[2] != nil {
				t.Fatalf("CleanJSON(%s) = %s, want %q cleaned", doc, cleaned, want)
			}
		}
	})
}

// TestCleanJSON: every string of a JSON document, keys included, comes
// back cleaned; numbers come back exactly as written, keys in their order.
func TestCleanJSON(t *testing.T) {
	in := `{"z":1,"level` + "\\u202e" + `":{"x":["a\u001b]2;PWNED\u0007",1.50,12345678901234567890,null,true,false,{},[]]},"a":"<b>"}`
	got, err := CleanJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z":1,"level":{"x":["a]2;PWNED",1.50,12345678901234567890,null,true,false,{},[]]},"a":"\u003cb\u003e"}`; string(got) != want {
		t.Errorf("CleanJSON = %s, want %s", got, want)
	}
	if _, err := CleanJSON([]byte(`{"a":`)); err == nil {
		t.Error("no error for cut-off JSON")
	}
}
