// Package ctl is numascope's control channel: a named pipe (FIFO) on which
// scripts steer a running "numascope stat" or "numascope record" with one
// text command per line, for example
//
//	echo 'label phase 2' > "$XDG_RUNTIME_DIR/numascope-ctl"
//
// A FIFO rather than a socket because any shell can write to it with echo,
// and because its owner and 0600 mode make it owner-only without any protocol
// of its own. The same parser (Parse) checks commands on both ends, so
// "numascope ctl" can refuse a bad command before anything is sent, and a bad
// command that does reach numascope is reported and ignored: it never stops a
// recording.
package ctl

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
)

// Limits on what one command may carry. MaxLine bounds a whole line (without
// its newline): anything longer is rejected, which keeps a runaway writer
// from making numascope buffer without end. The argument limits keep every
// canonical command, newline included, within PIPE_BUF (4096 bytes on Linux),
// the size up to which the kernel writes to a pipe atomically, so commands
// from concurrent senders never interleave.
const (
	MaxLine     = 4096               // bytes in one command line, newline excluded
	MaxFileName = 4000               // bytes in the file name of "record"
	MaxLabel    = recording.MaxLabel // bytes in the text of "label", after cleaning
)

// Op is the verb of a control command.
type Op int

// The commands. The zero Op is not a command, so a zero Command is invalid.
const (
	OpRecord   Op = iota + 1 // close the current recording, start a new one in Arg
	OpLabel                  // put the label Arg at this instant
	OpPause                  // stop sampling until resume
	OpResume                 // sample again after pause
	OpInterval               // change the sampling interval to Interval
)

// String returns the command word of op, as written on the FIFO.
func (op Op) String() string {
	switch op {
	case OpRecord:
		return "record"
	case OpLabel:
		return "label"
	case OpPause:
		return "pause"
	case OpResume:
		return "resume"
	case OpInterval:
		return "interval"
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// Command is one parsed control command.
type Command struct {
	Op       Op
	Arg      string        // the file of OpRecord, the text of OpLabel; empty otherwise
	Interval time.Duration // the new interval of OpInterval; zero otherwise
}

// String returns the canonical text form of c, without a newline. For every
// command Parse accepts, Parse(c.String()) returns c again; that is what
// "numascope ctl" writes to the FIFO, so numascope sees a cleaned command
// even if the user typed extra blanks or control characters.
func (c Command) String() string {
	switch c.Op {
	case OpRecord, OpLabel:
		return c.Op.String() + " " + c.Arg
	case OpPause, OpResume:
		return c.Op.String()
	case OpInterval:
		return "interval " + formatInterval(c.Interval)
	}
	return c.Op.String()
}

// formatInterval writes d in a form ParseInterval reads back exactly:
// Duration.String is exact to the nanosecond, and "us" keeps it ASCII.
func formatInterval(d time.Duration) string {
	return strings.Replace(d.String(), "µs", "us", 1)
}

// recordExample is the file in the example of "record" errors: a name with
// a suffix the recorder accepts.
const recordExample = "run2.jsonl.zst"

// validCommands ends every Parse error, so that whoever typed a bad command
// learns in the same line what would have been accepted.
const validCommands = "valid commands: record <file>, label <text>, pause, resume, interval <duration> (e.g. 100ms, 1s, 250us; a bare number is milliseconds)"

// Parse parses one command line. Leading and trailing white space is
// ignored and the command word is case-insensitive. Errors are one line: they
// name the problem and list the valid commands.
//
//	record <file>        the rest of the line is the file name (no control characters)
//	label <text>         the rest of the line is the text, cleaned by recording.CleanLabel
//	                     (control and bidi characters dropped, white space collapsed);
//	                     it must not end up empty
//	pause, resume        no argument
//	interval <duration>  anything sampler.ParseInterval accepts
func Parse(line string) (Command, error) {
	if len(line) > MaxLine {
		return Command{}, fmt.Errorf("command of %d bytes is longer than the %d-byte limit; %s", len(line), MaxLine, validCommands)
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return Command{}, fmt.Errorf("empty command; %s", validCommands)
	}
	verb, rest := line, ""
	if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
		verb, rest = line[:i], strings.TrimLeftFunc(line[i:], unicode.IsSpace)
	}
	switch asciiLower(verb) {
	case "record":
		if rest == "" {
			return Command{}, fmt.Errorf(`record needs a file name, as in "record %s"; %s`, recordExample, validCommands)
		}
		if i := strings.IndexFunc(rest, unicode.IsControl); i >= 0 {
			return Command{}, fmt.Errorf("record: file name %s contains the control character %U; %s", quote(rest), firstRune(rest[i:]), validCommands)
		}
		// The name is printed on the terminal ("now recording to ..."): a
		// bidi override in it could make it display as another name.
		if i := strings.IndexFunc(rest, isFormatChar); i >= 0 {
			return Command{}, fmt.Errorf("record: file name %s contains the invisible format character %U (e.g. a bidi control); %s", quote(rest), firstRune(rest[i:]), validCommands)
		}
		if len(rest) > MaxFileName {
			return Command{}, fmt.Errorf("record: file name of %d bytes is longer than the %d-byte limit; %s", len(rest), MaxFileName, validCommands)
		}
		return Command{Op: OpRecord, Arg: rest}, nil
	case "label":
		text, err := recording.CleanLabel(rest)
		if err != nil {
			return Command{}, fmt.Errorf("%v; %s", err, validCommands)
		}
		return Command{Op: OpLabel, Arg: text}, nil
	case "pause", "resume":
		op := OpPause
		if asciiLower(verb) == "resume" {
			op = OpResume
		}
		if rest != "" {
			return Command{}, fmt.Errorf("%s takes no argument, got %s; %s", op, quote(rest), validCommands)
		}
		return Command{Op: op}, nil
	case "interval":
		if rest == "" {
			return Command{}, fmt.Errorf(`interval needs a duration, as in "interval 100ms"; %s`, validCommands)
		}
		d, err := sampler.ParseInterval(rest)
		if err != nil {
			return Command{}, fmt.Errorf("interval: %v; %s", err, validCommands)
		}
		return Command{Op: OpInterval, Interval: d}, nil
	}
	return Command{}, fmt.Errorf("unknown command %s; %s", quote(verb), validCommands)
}

// asciiLower lower-cases ASCII letters only, so that no Unicode case folding
// can turn some other word into a command.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// isFormatChar reports the Unicode format characters that recording.CleanLabel
// removes from labels (bidi controls, zero-width spaces, ...), the joiners
// U+200C/D excepted.
func isFormatChar(r rune) bool {
	return unicode.Is(unicode.Cf, r) && r != 0x200C && r != 0x200D
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// quote quotes s for an error message, shortened so the message stays
// readable when s is a 4 KiB line.
func quote(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", s[:cut])
}
