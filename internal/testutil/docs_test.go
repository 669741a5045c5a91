package testutil

import (
	"fmt"
	"testing"
)

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		"bin/numascope stat   # one line":             "bin/numascope stat   ",
		"   # only a comment":                         "   ",
		`bin/numascope ctl label "phase #2"  # steer`: `bin/numascope ctl label "phase #2"  `,
		"bin/numascope stat -e 'a#b' -o prof.%h.json": "bin/numascope stat -e 'a#b' -o prof.%h.json",
	} {
		if got := StripComment(in); got != want {
			t.Errorf("StripComment(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDocCommands: a sh block's lines, comments cut, continuations and
// open quotes joined; a usage line's wrapped options; "$ " lines and the
// output under them.
func TestDocCommands(t *testing.T) {
	b := DocBlock{File: "x.md", Line: 10, Lang: "sh", Body: []string{
		"numascope stat &   # starts",
		"# only a comment",
		"scripts/numavm --nodes 4 -- sh -c '",
		"  numascope record -o /tmp/r.jsonl \\",
		"     -- firsttouch # not a comment inside quotes",
		"  numascope convert /tmp/r.jsonl'",
		`numascope ctl label "phase #2"`,
		"numascope exporter [--listen ADDR]",
		"                   [--cgroups]",
	}}
	got := DocCommands(b)
	want := []DocCommand{
		{Line: 11, Text: "numascope stat &"},
		{Line: 13, Text: "scripts/numavm --nodes 4 -- sh -c '\n  numascope record -o /tmp/r.jsonl \\\n     -- firsttouch # not a comment inside quotes\n  numascope convert /tmp/r.jsonl'"},
		{Line: 17, Text: `numascope ctl label "phase #2"`},
		{Line: 18, Text: "numascope exporter [--listen ADDR]\n                   [--cgroups]"},
	}
	if got[1].Key() != `scripts/numavm --nodes 4 -- sh -c ' numascope record -o /tmp/r.jsonl -- firsttouch # not a comment inside quotes numascope convert /tmp/r.jsonl'` {
		t.Errorf("Key() %q: want the \\ continuations gone", got[1].Key())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DocCommands:\n got %+v\nwant %+v", got, want)
	}
	b = DocBlock{Lang: "", Line: 1, Body: []string{"$ numascope live -i 100ms", "numascope: open URL", "$ numascope view x"}}
	if got := DocCommands(b); len(got) != 2 || got[0].Shows[0] != "numascope: open URL" || got[1].Text != "numascope view x" {
		t.Errorf("DocCommands of a $ block: %+v", got)
	}
}
