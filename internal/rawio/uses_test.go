package rawio

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryUseHasItsFigure: hand-written I/O is kept only where a benchmark
// shows a gain a user pays for (issue 33), and docs/performance.md's table
// ("Hand-written I/O") names each file that uses this package as a kept
// row. A new use without its figure, or a row left behind by a deleted one,
// fails here.
func TestEveryUseHasItsFigure(t *testing.T) {
	root := filepath.Join("..", "..")
	var users []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == "github.com/numascope/numascope/internal/rawio" {
				rel, _ := filepath.Rel(root, p)
				users = append(users, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## Hand-written I/O")
	if !ok {
		t.Fatal(`docs/performance.md has no "## Hand-written I/O" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var kept []string
	for line := range strings.Lines(sec) {
		cols := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		if !strings.HasPrefix(line, "| ") || len(cols) != 4 || !strings.HasPrefix(strings.TrimSpace(cols[3]), "kept") {
			continue
		}
		for _, m := range regexp.MustCompile("`(internal/[^`]+\\.go)`").FindAllStringSubmatch(cols[1], -1) {
			kept = append(kept, m[1])
		}
	}
	slices.Sort(users)
	slices.Sort(kept)
	if len(users) == 0 || !slices.Equal(users, kept) {
		t.Errorf("files importing internal/rawio: %v\nfiles in docs/performance.md's kept rows: %v\n"+
			"give each use its benchmark figure in that table (issue 33), or use the standard library", users, kept)
	}
}
