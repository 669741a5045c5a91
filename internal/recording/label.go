package recording

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLabel is the most bytes a label may have after cleaning. It keeps a
// label on one screen line's worth of text, and a control-FIFO command that
// carries one within PIPE_BUF, so that it is written to the pipe atomically.
const MaxLabel = 1000

// CleanLabel is the one cleaning every label goes through on its way in,
// whichever way it arrives (the control FIFO, "numascope ctl", a websocket
// client of live): see SanitizeText for what is changed. A label that ends
// up empty, or longer than MaxLabel bytes, is refused with a one-line error.
// CleanLabel is idempotent: a cleaned label cleans to itself, which lets
// labels round-trip through the FIFO's canonical command text.
func CleanLabel(s string) (string, error) {
	t := SanitizeText(s)
	if t == "" {
		if s == "" {
			return "", fmt.Errorf("empty label: give some text, as in \"phase 2\"")
		}
		return "", fmt.Errorf("label %q has no printable text: give some text, as in \"phase 2\"", truncate(s, 64))
	}
	if len(t) > MaxLabel {
		return "", fmt.Errorf("label of %d bytes is longer than the %d-byte limit: shorten it", len(t), MaxLabel)
	}
	return t, nil
}

// SanitizeText makes text from an untrusted source (a label, or a name read
// from a recording file that may be old or crafted) safe to store and to show
// on a terminal: the result is valid UTF-8 on one line, with nothing that a
// terminal interprets or that changes how the surrounding text displays.
//
//   - invalid UTF-8 becomes U+FFFD;
//   - white space of any kind (tabs, line and paragraph breaks, NEL, ...)
//     becomes a space, runs of spaces become one, and the ends are trimmed;
//   - C0 and C1 control characters (ESC and BEL among them) and DEL are
//     removed, so an escape sequence is left as harmless printable text;
//   - Unicode format characters (category Cf: the bidirectional marks,
//     embeddings, overrides and isolates U+200E/F, U+202A-202E, U+2066-2069,
//     U+061C, zero-width spaces, the BOM, tag characters, ...) are removed,
//     except the zero-width (non-)joiners U+200C/D, which emoji sequences
//     and several scripts need and which cannot reorder text.
//
// Unlike CleanLabel it never fails; it may return "".
func SanitizeText(s string) string {
	if isPlainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false // a space is pending: written before the next kept rune
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			r = utf8.RuneError // invalid byte: kept as U+FFFD
		case unicode.IsSpace(r) || r == 0x2028 || r == 0x2029:
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || r == 0x7f:
			continue
		case unicode.Is(unicode.Cf, r) && r != 0x200C && r != 0x200D:
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isPlainASCII reports whether s is printable ASCII without leading,
// trailing or doubled spaces: text that SanitizeText returns unchanged.
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' {
			return false
		}
		if c == ' ' && (i == 0 || i == len(s)-1 || s[i+1] == ' ') {
			return false
		}
	}
	return true
}

// truncate shortens s to at most max bytes on a rune boundary, for messages.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// SanitizeTerminal is SanitizeText for a multi-line text whose layout
// matters (a report with aligned columns): line breaks, tabs and spaces are
// kept as they are, while invalid UTF-8 becomes U+FFFD and other control
// characters (ESC, BEL, C1, DEL, CR) and format characters are removed as
// SanitizeText removes them. For text built from a file that may be crafted,
// before it is written to a terminal.
func SanitizeTerminal(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\n' && c != '\t') || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\n' || r == '\t':
		case r == utf8.RuneError && n == 1:
		case unicode.IsControl(r):
			continue
		case r == 0x2028 || r == 0x2029:
			r = ' '
		case unicode.Is(unicode.Cf, r) && r != 0x200C && r != 0x200D:
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
