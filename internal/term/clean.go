package term

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean is the one cleaning of untrusted text (a label, a factor level, a
// name read from a recording, a profile or a CSV that may be crafted, a
// command name from /proc) before it reaches a terminal or a page: the
// result is valid UTF-8 on one line, with nothing that a terminal
// interprets or that changes how the surrounding text displays.
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
// It never fails; it may return "". Clean is idempotent.
func Clean(s string) string {
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
		case dropped(r):
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

// dropped reports whether Clean and CleanLines remove r: a control
// character (C0, DEL, C1) or a format character other than the joiners.
func dropped(r rune) bool {
	return unicode.IsControl(r) || (unicode.Is(unicode.Cf, r) && r != 0x200C && r != 0x200D)
}

// isPlainASCII reports whether s is printable ASCII without leading,
// trailing or doubled spaces: text that Clean returns unchanged.
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

// CleanLines is Clean for a multi-line text whose layout matters (a report
// with aligned columns): line breaks, tabs and spaces are kept as they are,
// while invalid UTF-8 becomes U+FFFD, U+2028/9 become spaces, and other
// control characters (ESC, BEL, C1, DEL, CR) and format characters are
// removed as Clean removes them.
func CleanLines(s string) string {
	if linesClean(s) {
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
		case r == 0x2028 || r == 0x2029:
			r = ' '
		case dropped(r):
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// linesClean reports whether s is ASCII that CleanLines returns unchanged.
func linesClean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// NewWriter returns a writer that passes what is written to w through
// CleanLines: for a command's whole output built from files that may be
// crafted, so that a field added later without cleaning still cannot
// reach the terminal. A UTF-8 sequence split between two writes is kept
// until its end arrives; Flush writes any such incomplete tail (as U+FFFD).
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Writer is the writer NewWriter returns.
type Writer struct {
	w    io.Writer
	tail []byte // an incomplete UTF-8 sequence at the end of the last write
}

// Write cleans p and writes it; it reports len(p) on success.
func (c *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if len(c.tail) > 0 {
		p = append(c.tail, p...)
		c.tail = nil
	}
	// Keep back a trailing incomplete rune (at most 3 bytes).
	cut := len(p)
	for k := 1; k <= 3 && k <= len(p); k++ {
		if utf8.RuneStart(p[len(p)-k]) {
			if !utf8.FullRune(p[len(p)-k:]) {
				cut = len(p) - k
			}
			break
		}
	}
	c.tail = append([]byte(nil), p[cut:]...)
	if _, err := io.WriteString(c.w, CleanLines(string(p[:cut]))); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes an incomplete UTF-8 sequence held back by Write.
func (c *Writer) Flush() error {
	if len(c.tail) == 0 {
		return nil
	}
	_, err := io.WriteString(c.w, CleanLines(string(c.tail)))
	c.tail = nil
	return err
}

// EscapeJSON rewrites JSON text so that no character Clean would drop
// appears raw: each one inside a string becomes its \uXXXX escape (a pair
// for one beyond the BMP), which any JSON reader decodes to the same
// string. encoding/json already escapes C0 controls but not C1 controls,
// DEL, or the bidirectional overrides, which a terminal showing the JSON
// would act on. Outside strings JSON has only ASCII, so b is otherwise
// unchanged.
func EscapeJSON(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n == 1) || !dropped(r) {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		i += n
		if r > 0xffff {
			r1, r2 := utf16Pair(r)
			out = appendU(appendU(out, r1), r2)
		} else {
			out = appendU(out, r)
		}
	}
	return out
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// CleanJSON returns the JSON text b with every string in it, object keys
// included, passed through Clean: for data a page shows as text, where a
// bidi override would reorder what the reader sees even though the browser
// runs no escape sequence. Everything else is kept as it was: numbers as
// written, the order of keys.
func CleanJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	out := make([]byte, 0, len(b))
	type level struct {
		object bool
		n      int // tokens so far: keys and values
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 && len(out) > 0 {
			break
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out = append(out, byte(d))
			continue
		}
		if len(stack) > 0 {
			l := &stack[len(stack)-1]
			switch {
			case l.n == 0:
			case l.object && l.n%2 == 1:
				out = append(out, ':')
			default:
				out = append(out, ',')
			}
			l.n++
		}
		switch x := tok.(type) {
		case json.Delim:
			out = append(out, byte(x))
			stack = append(stack, level{object: x == '{'})
		case string:
			s, _ := json.Marshal(Clean(x))
			out = append(out, s...)
		case json.Number:
			out = append(out, x...)
		case bool:
			out = strconv.AppendBool(out, x)
		case nil:
			out = append(out, "null"...)
		}
	}
	return out, nil
}
