package recording

import (
	"fmt"
	"unicode/utf8"

	"github.com/numascope/numascope/internal/term"
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

// SanitizeText is term.Clean, the one cleaning of untrusted text before it
// reaches a terminal or a page; it is kept under this name for the callers
// that clean names read from recordings and /proc.
func SanitizeText(s string) string { return term.Clean(s) }

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

// SanitizeTerminal is term.CleanLines: term.Clean for a multi-line text
// whose layout matters (a report with aligned columns).
func SanitizeTerminal(s string) string { return term.CleanLines(s) }
