package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The docs' examples are extracted here, once, for the tests that run them:
// TestQuickstart and TestDocExamples (cmd/numascope) on this machine, and
// TestDocExamplesInVM (internal/vmtest) in the NUMA VM. docs/testing.md,
// "The docs' examples", gives the rules for writing them.

// DocBlock is one fenced block of README.md or docs/*.md.
type DocBlock struct {
	File string // README.md, docs/top.md
	Line int    // the line of its opening fence
	Lang string // the fence's info string: sh, json, text or none
	Body []string
}

// DocFenceRE matches a fence line, its info string in group 2.
var DocFenceRE = regexp.MustCompile("^\\s*(```+|~~~+)\\s*(\\S*)")

// DocFiles are the docs whose examples run, relative to the repository
// root: README.md and docs/*.md, in that order (a doc's examples may use
// what an earlier one made).
func DocFiles(t testing.TB, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	sort.Strings(files)
	rel := []string{"README.md"}
	for _, f := range files {
		rel = append(rel, filepath.Join("docs", filepath.Base(f)))
	}
	return rel
}

// DocBlocks reads the fenced blocks of the files (relative to root).
func DocBlocks(t testing.TB, root string, files []string) []DocBlock {
	t.Helper()
	var blocks []DocBlock
	for _, rel := range files {
		text, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		var b *DocBlock
		for i, l := range strings.Split(string(text), "\n") {
			m := DocFenceRE.FindStringSubmatch(l)
			switch {
			case m != nil && b == nil:
				b = &DocBlock{File: rel, Line: i + 1, Lang: m[2]}
			case m != nil:
				blocks = append(blocks, *b)
				b = nil
			case b != nil:
				b.Body = append(b.Body, l)
			}
		}
		if b != nil {
			t.Errorf("%s:%d: the block is never closed", rel, b.Line)
		}
	}
	return blocks
}

// DocCommand is one command line of a block: its text as sh reads it
// (continuation lines included) and the output the doc shows under it.
type DocCommand struct {
	Line  int
	Text  string
	Shows []string
}

// Key is the command as the tests' tables name it: continuations joined,
// white space collapsed.
func (c DocCommand) Key() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(c.Text, "\\\n", " ")), " ")
}

// DocCommands splits a block into its commands. In a sh block every line
// is one: comments cut, a line ending in \ or inside an open quote joined
// with the next, and so is a line starting with [ (a usage line's
// options, wrapped). In another block, a line "$ CMD" is one, and the
// lines under it up to the next are its output.
func DocCommands(b DocBlock) []DocCommand {
	var cmds []DocCommand
	if b.Lang != "sh" {
		for i, l := range b.Body {
			if c, ok := strings.CutPrefix(l, "$ "); ok {
				cmds = append(cmds, DocCommand{Line: b.Line + 1 + i, Text: c})
			} else if len(cmds) > 0 && strings.TrimSpace(l) != "" {
				cmds[len(cmds)-1].Shows = append(cmds[len(cmds)-1].Shows, l)
			}
		}
		return cmds
	}
	var cur []string
	var quote rune
	start := 0
	for i, l := range b.Body {
		if quote == 0 {
			l = StripComment(l)
			if strings.TrimSpace(l) == "" && len(cur) == 0 {
				continue
			}
		}
		if len(cur) == 0 && len(cmds) > 0 && strings.HasPrefix(strings.TrimSpace(l), "[") {
			last := &cmds[len(cmds)-1]
			last.Text += "\n" + l
			continue
		}
		if len(cur) == 0 {
			start = b.Line + 1 + i
		}
		cur = append(cur, l)
		quote = openQuote(l, quote)
		if quote != 0 || strings.HasSuffix(strings.TrimSpace(l), "\\") {
			continue
		}
		cmds = append(cmds, DocCommand{Line: start, Text: strings.TrimSpace(strings.Join(cur, "\n"))})
		cur = nil
	}
	if len(cur) > 0 {
		cmds = append(cmds, DocCommand{Line: start, Text: strings.TrimSpace(strings.Join(cur, "\n"))})
	}
	return cmds
}

// openQuote is the quote still open at the end of l, given the one open at
// its start.
func openQuote(l string, quote rune) rune {
	for _, r := range l {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		}
	}
	return quote
}

// StripComment cuts a shell comment: a # at the start or after white
// space, outside quotes.
func StripComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

// DocBounded is the one substitution the examples' tests make: a
// numascope bench line measures a 16 MiB buffer once (the later flag
// wins), which takes seconds rather than minutes. What bench measures is
// internal/bench's tests' and the VM's business; there the line must run.
func DocBounded(line string) string {
	if strings.HasPrefix(line, "numascope bench") {
		return line + " --size 16M --repeat 1"
	}
	return line
}
