package recording

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanLabel(t *testing.T) {
	good := []struct{ in, want string }{
		{"phase 2", "phase 2"},
		{"  phase \t 2\n", "phase 2"},
		{"\x1b[2Jclear", "[2Jclear"},
		{"bell\x07 rings", "bell rings"},
		{"x\u202Eevil\u202C", "xevil"},
		{"\u200Eleft\u200Fright\u061Carabic\u2066iso\u2069", "leftrightarabiciso"},
		{"zero\u200Bwidth\uFEFFbom\u00ADsoft", "zerowidthbomsoft"},
		{"c1\u0085next\u009bcsi", "c1 nextcsi"},
		{"del\x7f", "del"},
		{"bad\xffutf8\xc3", "bad\uFFFDutf8\uFFFD"},
		{"para\u2029graph\u2028line\u00a0nbsp\u3000wide", "para graph line nbsp wide"},
		{"Größe ✓ 日本", "Größe ✓ 日本"},
		{"👩\u200d💻 coder", "👩\u200d💻 coder"},
		{strings.Repeat("é", MaxLabel/2), strings.Repeat("é", MaxLabel/2)},
	}
	for _, g := range good {
		got, err := CleanLabel(g.in)
		if err != nil || got != g.want {
			t.Errorf("CleanLabel(%q) = %q, %v; want %q", g.in, got, err, g.want)
			continue
		}
		if again, err := CleanLabel(got); err != nil || again != got {
			t.Errorf("CleanLabel is not idempotent on %q: %q, %v", got, again, err)
		}
	}
	bad := []struct{ in, want string }{
		{"", "empty label"},
		{" \t\n", "no printable text"},
		{"\x1b\x07\u202E\u200F", "no printable text"},
		{strings.Repeat("x", MaxLabel+1), "longer than the 1000-byte limit"},
		{strings.Repeat("é", MaxLabel/2+1), "longer than the 1000-byte limit"},
	}
	for _, b := range bad {
		got, err := CleanLabel(b.in)
		if err == nil || !strings.Contains(err.Error(), b.want) || strings.ContainsAny(err.Error(), "\n\r\x1b\x07") {
			t.Errorf("CleanLabel(%q) = %q, %v; want a one-line error containing %q", b.in, got, err, b.want)
		}
	}
}

func FuzzSanitizeText(f *testing.F) {
	for _, s := range []string{"phase 2", "\x1b[2J\x07\u202E\xff", " a  b ", "👩\u200d💻", "\u0085\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeText(s)
		if !utf8.ValidString(got) || got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
			t.Fatalf("SanitizeText(%q) = %q: not clean", s, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ') || (unicode.Is(unicode.Cf, r) && r != 0x200C && r != 0x200D) {
				t.Fatalf("SanitizeText(%q) = %q keeps %U", s, got, r)
			}
		}
		if SanitizeText(got) != got {
			t.Fatalf("SanitizeText is not idempotent on %q", got)
		}
	})
}

func TestSanitizeTerminal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\tb  c\n  d\n", "a\tb  c\n  d\n"},
		{"x\x1b[2Jy\x07\r\n", "x[2Jy\n"},
		{"\u202eevil\u2066 \u200f\u061c\u0085\u009b", "evil "},
		{"bad\xff \u2028 ok 👩\u200d💻", "bad\uFFFD   ok 👩\u200d💻"},
	} {
		if got := SanitizeTerminal(c.in); got != c.want {
			t.Errorf("SanitizeTerminal(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
