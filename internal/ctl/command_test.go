package ctl

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		line string
		want Command
	}{
		{"record run2.nsr", Command{Op: OpRecord, Arg: "run2.nsr"}},
		{"  record   /data/run 2.nsr  \n", Command{Op: OpRecord, Arg: "/data/run 2.nsr"}},
		{"RECORD out.nsr\r\n", Command{Op: OpRecord, Arg: "out.nsr"}},
		{"record\tx", Command{Op: OpRecord, Arg: "x"}},
		{"label phase 2", Command{Op: OpLabel, Arg: "phase 2"}},
		{"label   phase   2  ", Command{Op: OpLabel, Arg: "phase 2"}},
		{"label a\x07b\x1b[2Jc\u200ed\u200fe\u061cf\ufeffg\u2069h", Command{Op: OpLabel, Arg: "ab[2Jcdefgh"}},
		{"label a \t\u00a0\u2028 b", Command{Op: OpLabel, Arg: "a b"}},
		{"Label Größe ✓ 日本", Command{Op: OpLabel, Arg: "Größe ✓ 日本"}},
		{"label a\tb", Command{Op: OpLabel, Arg: "a b"}},
		{"label a\x00b\x1b[31mc\x7f", Command{Op: OpLabel, Arg: "ab[31mc"}},
		{"label x\u202Eevil\u2066", Command{Op: OpLabel, Arg: "xevil"}},
		{"label bad\xffutf8", Command{Op: OpLabel, Arg: "bad\uFFFDutf8"}},
		{"label 👩\u200d💻 stays", Command{Op: OpLabel, Arg: "👩\u200d💻 stays"}}, // ZWJ is not a control
		{"pause", Command{Op: OpPause}},
		{" PAUSE \n", Command{Op: OpPause}},
		{"resume", Command{Op: OpResume}},
		{"interval 100ms", Command{Op: OpInterval, Interval: 100 * time.Millisecond}},
		{"interval 250", Command{Op: OpInterval, Interval: 250 * time.Millisecond}},
		{"interval 1s", Command{Op: OpInterval, Interval: time.Second}},
		{"interval 250us", Command{Op: OpInterval, Interval: 250 * time.Microsecond}},
		{"interval 250µs", Command{Op: OpInterval, Interval: 250 * time.Microsecond}},
		{"interval 0.5", Command{Op: OpInterval, Interval: 500 * time.Microsecond}},
		{"interval 1h30m", Command{Op: OpInterval, Interval: 90 * time.Minute}},
		{"label " + strings.Repeat("é", MaxLabel/2), Command{Op: OpLabel, Arg: strings.Repeat("é", MaxLabel/2)}},
		{"record " + strings.Repeat("f", MaxFileName), Command{Op: OpRecord, Arg: strings.Repeat("f", MaxFileName)}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.line)
		if err != nil {
			t.Errorf("Parse(%q): unexpected error %v", tt.line, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %#v, want %#v", tt.line, got, tt.want)
		}
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		line, want string // want: a fragment the error must contain
	}{
		{"", "empty command"},
		{"   \t\n", "empty command"},
		{"lable phase 2", `unknown command "lable"`},
		{"stop", `unknown command "stop"`},
		{"pauseX", `unknown command "pauseX"`},
		{"record", "record needs a file name, as in \"record run2.jsonl.zst\""},
		{"record   ", "record needs a file name"},
		{"record a\x00b", "control character U+0000"},
		{"record a\x1bb", "control character U+001B"},
		{"record run\u202Egpj.jsonl", "format character U+202E"},
		{"record a\u200fb.jsonl", "format character U+200F"},
		{"record " + strings.Repeat("f", MaxFileName+1), "longer than the 4000-byte limit"},
		{"label", "empty label"},
		{"label \x00\x01\t\u202E", "no printable text"},
		{"label \x00\x01\u200f", "no printable text"},
		{"label " + strings.Repeat("x", MaxLabel+1), "longer than the 1000-byte limit"},
		{"pause now", `pause takes no argument, got "now"`},
		{"resume 1", `resume takes no argument, got "1"`},
		{"interval", "interval needs a duration"},
		{"interval fast", `bad interval "fast"`},
		{"interval 0", "must be positive"},
		{"interval -5ms", "must be positive"},
		{"interval 10us", "between"},
		{"interval 48h", "between"},
		{"interval 100 ms", `bad interval "100 ms"`},
		{"label " + strings.Repeat("x", MaxLine), "longer than the 4096-byte limit"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.line)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tt.line, c, tt.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) {
			t.Errorf("Parse(%q) error %q does not contain %q", tt.line, msg, tt.want)
		}
		if !strings.Contains(msg, "valid commands: record <file>, label <text>, pause, resume, interval <duration>") {
			t.Errorf("Parse(%q) error %q does not list the valid commands", tt.line, msg)
		}
		if strings.ContainsAny(msg, "\n\r") {
			t.Errorf("Parse(%q) error is not one line: %q", tt.line, msg)
		}
		if c != (Command{}) {
			t.Errorf("Parse(%q) returned %#v with its error, want the zero Command", tt.line, c)
		}
	}
}

func TestCommandString(t *testing.T) {
	tests := []struct {
		c    Command
		want string
	}{
		{Command{Op: OpRecord, Arg: "/tmp/a b.nsr"}, "record /tmp/a b.nsr"},
		{Command{Op: OpLabel, Arg: "phase 2"}, "label phase 2"},
		{Command{Op: OpPause}, "pause"},
		{Command{Op: OpResume}, "resume"},
		{Command{Op: OpInterval, Interval: 100 * time.Millisecond}, "interval 100ms"},
		{Command{Op: OpInterval, Interval: 250 * time.Microsecond}, "interval 250us"},
		{Command{Op: OpInterval, Interval: 1500 * time.Microsecond}, "interval 1.5ms"},
		{Command{Op: OpInterval, Interval: 2 * time.Hour}, "interval 2h0m0s"},
		{Command{}, "Op(0)"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.c, got, tt.want)
		}
	}
	for op, want := range map[Op]string{OpRecord: "record", OpLabel: "label", OpPause: "pause", OpResume: "resume", OpInterval: "interval", 42: "Op(42)"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", int(op), got, want)
		}
	}
}

// roundTrip checks that an accepted command survives String and Parse.
func roundTrip(t *testing.T, c Command) {
	t.Helper()
	s := c.String()
	if strings.ContainsAny(s, "\n\r") {
		t.Fatalf("%#v.String() = %q spans lines", c, s)
	}
	if len(s)+1 > pipeBuf {
		t.Fatalf("%#v.String() is %d bytes, too long for an atomic pipe write", c, len(s))
	}
	back, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q) (from %#v) failed: %v", s, c, err)
	}
	if back != c {
		t.Fatalf("Parse(%q) = %#v, want %#v", s, back, c)
	}
}

func TestRoundTrip(t *testing.T) {
	lines := []string{
		"record run.nsr", "record  a  b ", "label phase 2", "label \tx\x00y  z\u2028w ", "label \xff\xfe",
		"pause", "resume", "interval 100", "interval 0.1234567", "interval 1.5s", "interval 23h59m59.999999999s",
		"interval 100us", "interval 1e3",
	}
	for _, l := range lines {
		c, err := Parse(l)
		if err != nil {
			t.Fatalf("Parse(%q): %v", l, err)
		}
		roundTrip(t, c)
	}
	// Every valid interval at a spread of magnitudes, including odd nanoseconds.
	for d := 100 * time.Microsecond; d <= 24*time.Hour; d = d*3 + 7 {
		roundTrip(t, Command{Op: OpInterval, Interval: d})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"record run2.nsr", "label phase 2", "pause", "resume", "interval 100ms", "interval 250",
		"label \x00\u202e\xff", "record \x1b", "interval NaN", "interval 1e400", "  LABEL  x ", "label\u00a0x",
		"record\u3000y", "\u0085pause\u0085",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(line)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !utf8.ValidString(msg) {
				t.Fatalf("Parse(%q) error is not one clean line: %q", line, msg)
			}
			return
		}
		if c.Op < OpRecord || c.Op > OpInterval {
			t.Fatalf("Parse(%q) = %#v: invalid Op", line, c)
		}
		if c.Op == OpLabel {
			for _, r := range c.Arg {
				if unicode.IsControl(r) || isFormatChar(r) {
					t.Fatalf("Parse(%q): label %q keeps %U", line, c.Arg, r)
				}
			}
			if !utf8.ValidString(c.Arg) {
				t.Fatalf("Parse(%q): label %q is not UTF-8", line, c.Arg)
			}
		}
		roundTrip(t, c)
	})
}

// TestRecordErrorNamesAcceptedSuffix: the example in the "record" error is a
// file the recorder writes, with the suffix of a current recording
// (.jsonl or .jsonl.zst), not a suffix of an older format.
func TestRecordErrorNamesAcceptedSuffix(t *testing.T) {
	_, err := Parse("record")
	if err == nil {
		t.Fatal("Parse(\"record\") accepted a command without a file")
	}
	msg := err.Error()
	_, after, ok := strings.Cut(msg, `as in "record `)
	if !ok {
		t.Fatalf("error %q gives no example", msg)
	}
	file, _, _ := strings.Cut(after, `"`)
	if !strings.HasSuffix(file, ".jsonl") && !strings.HasSuffix(file, ".jsonl.zst") {
		t.Fatalf("the example file %q in %q is not a .jsonl or .jsonl.zst recording", file, msg)
	}
	c, err := Parse("record " + file)
	if err != nil || c.Arg != file {
		t.Fatalf("the example %q is not accepted itself: %v", file, err)
	}
}
