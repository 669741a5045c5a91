package archdoc

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated part of docs/architecture.md")

const (
	module   = "github.com/numascope/numascope"
	docPath  = "../../docs/architecture.md"
	beginTag = "<!-- generated: go test ./internal/archdoc -update; edit above this line only -->"
	endTag   = "<!-- end of generated part -->"
	// Top is how many functions and types the document lists.
	top = 12
)

// pkg is one package of the module, as go list describes it.
type pkg struct {
	ImportPath string
	Dir        string
	Doc        string
	GoFiles    []string
	Imports    []string
	// Filled in here.
	floor int
	deps  []string // the module's packages it imports (not in tests)
	lines int
}

func (p *pkg) short() string { return strings.TrimPrefix(p.ImportPath, module+"/") }

// listPackages runs go list on the whole module.
func listPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		p := &pkg{}
		if err := dec.Decode(p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if _, ok := pkgs[imp]; ok {
				p.deps = append(p.deps, imp)
			}
		}
		sort.Strings(p.deps)
	}
	return pkgs
}

// floors gives every package its floor: 0 when it imports no package of
// the module, else one above the highest it imports. It fails on a cycle
// (which the compiler forbids, so a failure here is a bug in this test).
func floors(t *testing.T, pkgs map[string]*pkg) int {
	t.Helper()
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(path string, stack []string)
	visit = func(path string, stack []string) {
		switch state[path] {
		case 1:
			t.Fatalf("import cycle: %s -> %s", strings.Join(stack, " -> "), path)
		case 2:
			return
		}
		state[path] = 1
		p := pkgs[path]
		p.floor = 0
		for _, d := range p.deps {
			visit(d, append(stack, path))
			p.floor = max(p.floor, pkgs[d].floor+1)
		}
		state[path] = 2
	}
	most := 0
	for path := range pkgs {
		visit(path, nil)
		most = max(most, pkgs[path].floor)
	}
	return most + 1
}

// TestLayering checks the rules the layering rests on: every import points
// down to a lower floor (true by construction of the floors, and so of any
// acyclic graph); only the binary imports internal/cli, the command line,
// which sits at the top; and no package the binary is built from imports a
// test helper.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	floors(t, pkgs)
	cli := module + "/internal/cli"
	bin := module + "/cmd/numascope"
	helpers := []string{"/internal/testutil", "/internal/vmtest", "/internal/benchtest", "/conntest", "/fakefeed", "/webtest"}
	for _, p := range pkgs {
		for _, d := range p.deps {
			if pkgs[d].floor >= p.floor {
				t.Errorf("%s (floor %d) imports %s (floor %d): not downward", p.short(), p.floor, pkgs[d].short(), pkgs[d].floor)
			}
			if d == cli && p.ImportPath != bin {
				t.Errorf("%s imports internal/cli: only cmd/numascope may; move what it needs into a focused package below cli", p.short())
			}
		}
	}
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, h := range helpers {
			if strings.Contains(path, h) {
				t.Errorf("the binary is built from the test helper %s: import it from _test.go files only", pkgs[path].short())
			}
		}
		for _, d := range pkgs[path].deps {
			walk(d)
		}
	}
	walk(bin)
}

// decl is a function or type and its size.
type decl struct {
	name, pkg      string
	lines          int
	fields, method int
}

// declarations parses the packages' non-test files and returns their
// functions (methods included) and named struct types, with the lines of
// their methods, biggest first.
func declarations(t *testing.T, pkgs map[string]*pkg) (funcs, types []decl) {
	t.Helper()
	fset := token.NewFileSet()
	typeOf := map[string]*decl{}
	for _, p := range pkgs {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parsing %s: %v", path, err)
			}
			file := fset.File(f.Pos())
			p.lines += file.LineCount()
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Body == nil {
						continue
					}
					n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
					fn := decl{name: d.Name.Name, pkg: p.short(), lines: n}
					if d.Recv != nil && len(d.Recv.List) == 1 {
						recv := receiverName(d.Recv.List[0].Type)
						fn.name = recv + "." + fn.name
						key := p.ImportPath + "." + recv
						if typeOf[key] == nil {
							typeOf[key] = &decl{name: recv, pkg: p.short()}
						}
						typeOf[key].method++
						typeOf[key].lines += n
					}
					funcs = append(funcs, fn)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						ts, ok := s.(*ast.TypeSpec)
						if !ok {
							continue
						}
						st, ok := ts.Type.(*ast.StructType)
						if !ok {
							continue
						}
						key := p.ImportPath + "." + ts.Name.Name
						if typeOf[key] == nil {
							typeOf[key] = &decl{name: ts.Name.Name, pkg: p.short()}
						}
						for _, fl := range st.Fields.List {
							typeOf[key].fields += max(len(fl.Names), 1)
						}
					}
				}
			}
		}
	}
	for _, d := range typeOf {
		types = append(types, *d)
	}
	bigFirst := func(a, b decl) int {
		if a.lines != b.lines {
			return b.lines - a.lines
		}
		return strings.Compare(a.pkg+"."+a.name, b.pkg+"."+b.name)
	}
	slices.SortFunc(funcs, bigFirst)
	slices.SortFunc(types, bigFirst)
	return funcs, types
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// firstSentence is the first sentence of a package's doc comment, as go
// list gives it, made safe for a table cell.
func firstSentence(doc string) string {
	doc = strings.TrimSpace(doc)
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return strings.ReplaceAll(doc, "|", `\|`)
}

// Section titles of the generated part.
const (
	secPackages  = "## Packages by floor"
	secFunctions = "## The biggest functions"
	secTypes     = "## The biggest types"
)

// facts are the rows every section could hold, the whole population and
// not only what is printed: row key (its text cells) -> its numbers.
type facts map[string]map[string][]int

// generate renders the generated part of the document, and returns the
// facts it was rendered from.
func generate(t *testing.T) (string, facts) {
	pkgs := listPackages(t)
	n := floors(t, pkgs)
	funcs, types := declarations(t, pkgs)
	fs := facts{secPackages: {}, secFunctions: {}, secTypes: {}}
	arrows := 0
	var list []*pkg
	for _, p := range pkgs {
		arrows += len(p.deps)
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].floor != list[j].floor {
			return list[i].floor > list[j].floor
		}
		return list[i].ImportPath < list[j].ImportPath
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", secPackages)
	fmt.Fprintf(&b, "%d packages on %d floors, %d imports between them, every one downward, no cycles. "+
		"Floor 0 imports no numascope package; a package on floor N imports one on floor N-1 and none on N or above. "+
		"Imports from tests are not counted. \"What\" is the first sentence of the package's doc comment.\n\n", len(list), n, arrows)
	fmt.Fprintf(&b, "| floor | package | lines | imports (numascope packages) | what |\n|---|---|---|---|---|\n")
	var rows []string
	for _, p := range list {
		var deps []string
		for _, d := range p.deps {
			deps = append(deps, "`"+pkgs[d].short()+"`")
		}
		rows = append(rows, fmt.Sprintf("| %d | `%s` | %d | %s | %s |", p.floor, p.short(), p.lines, strings.Join(deps, " "), firstSentence(p.Doc)))
	}
	addRows(&b, fs[secPackages], rows, len(rows))
	fmt.Fprintf(&b, "\n%s\n\nThe %d longest functions and methods (lines from `func` to the closing brace; tests left out).\n\n", secFunctions, top)
	fmt.Fprintf(&b, "| function | package | lines |\n|---|---|---|\n")
	rows = nil
	for _, f := range funcs {
		rows = append(rows, fmt.Sprintf("| `%s` | `%s` | %d |", f.name, f.pkg, f.lines))
	}
	addRows(&b, fs[secFunctions], rows, top)
	fmt.Fprintf(&b, "\n%s\n\nThe %d named types with the most lines of methods (struct fields counted where the type is a struct).\n\n", secTypes, top)
	fmt.Fprintf(&b, "| type | package | methods | lines of methods | fields |\n|---|---|---|---|---|\n")
	rows = nil
	for _, d := range types {
		rows = append(rows, fmt.Sprintf("| `%s` | `%s` | %d | %d | %d |", d.name, d.pkg, d.method, d.lines, d.fields))
	}
	addRows(&b, fs[secTypes], rows, top)
	return b.String(), fs
}

// addRows writes the first n rows to b and records every row in fs.
func addRows(b *strings.Builder, fs map[string][]int, rows []string, n int) {
	for i, row := range rows {
		if i < n {
			b.WriteString(row + "\n")
		}
		k, v := splitRow(row)
		fs[k] = v
	}
}

// splitRow splits a table row into its key (the cells that are not
// numbers, the floor included) and its numbers.
func splitRow(row string) (string, []int) {
	var key []string
	var nums []int
	cells := strings.Split(strings.Trim(row, "|"), " | ")
	for i, c := range cells {
		c = strings.TrimSpace(c)
		if n, err := strconv.Atoi(c); err == nil && i > 0 {
			nums = append(nums, n)
			continue
		}
		key = append(key, c)
	}
	return strings.Join(key, " | "), nums
}

// near reports whether a documented size is still about right: sizes move
// with every edit, and a document that must be regenerated for each would
// be regenerated blindly. A fifth, or 10 lines, is the slack.
func near(doc, now int) bool {
	d := doc - now
	return max(d, -d) <= max(10, now/5)
}

// stale lists how the document's generated part differs from the code:
// its prose and the package table's structure exactly, the sizes within
// near, and no function or type left out that is now clearly bigger than
// the smallest one listed.
func stale(doc, want string, fs facts) []string {
	var problems []string
	docRows := map[string]map[string][]int{}
	var docText, wantText []string
	for _, pass := range []struct {
		text string
		out  *[]string
		rows bool
	}{{doc, &docText, true}, {want, &wantText, false}} {
		sec := ""
		for _, line := range strings.Split(pass.text, "\n") {
			switch {
			case strings.HasPrefix(line, "## "):
				sec = line
			case strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| floor ") && !strings.HasPrefix(line, "| function ") && !strings.HasPrefix(line, "| type "):
				if pass.rows {
					if docRows[sec] == nil {
						docRows[sec] = map[string][]int{}
					}
					k, v := splitRow(line)
					docRows[sec][k] = v
				}
				continue
			}
			*pass.out = append(*pass.out, line)
		}
	}
	if strings.Join(docText, "\n") != strings.Join(wantText, "\n") {
		problems = append(problems, "its text (headings, counts of packages, floors and imports) differs")
	}
	for k := range fs[secPackages] {
		if _, ok := docRows[secPackages][k]; !ok {
			problems = append(problems, "package row missing or changed: "+k)
		}
	}
	for k := range docRows[secPackages] {
		if _, ok := fs[secPackages][k]; !ok {
			problems = append(problems, "package row no longer true: "+k)
		}
	}
	for _, sec := range []string{secPackages, secFunctions, secTypes} {
		primary := 0 // the number the list is sorted by
		if sec == secTypes {
			primary = 1
		}
		smallest := -1
		for k, v := range docRows[sec] {
			now, ok := fs[sec][k]
			if !ok {
				problems = append(problems, "no longer in the code: "+k)
				continue
			}
			for i := range min(len(v), len(now)) {
				if !near(v[i], now[i]) {
					problems = append(problems, fmt.Sprintf("%s: %d documented, %d now", k, v[i], now[i]))
				}
			}
			if sec != secPackages && (smallest < 0 || v[primary] < smallest) {
				smallest = v[primary]
			}
		}
		if sec == secPackages {
			continue
		}
		for k, now := range fs[sec] {
			if _, listed := docRows[sec][k]; !listed && smallest >= 0 && !near(smallest, now[primary]) && now[primary] > smallest {
				problems = append(problems, fmt.Sprintf("%s: %d lines, bigger than the smallest listed (%d), is not listed", k, now[primary], smallest))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// TestArchitectureDocIsCurrent fails when docs/architecture.md's
// generated part no longer says what the code says (see stale); with
// -update it rewrites that part.
func TestArchitectureDocIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(doc, []byte(beginTag))
	end := bytes.Index(doc, []byte(endTag))
	if begin < 0 || end < begin {
		t.Fatalf("%s: the markers %q and %q are missing or out of order", docPath, beginTag, endTag)
	}
	want, fs := generate(t)
	head := doc[:begin+len(beginTag)]
	got := string(doc[begin+len(beginTag) : end])
	if *update {
		if got == "\n"+want {
			return
		}
		out := append(append(append([]byte{}, head...), "\n"+want...), doc[end:]...)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", docPath)
		return
	}
	if problems := stale(strings.TrimPrefix(got, "\n"), want, fs); len(problems) > 0 {
		t.Errorf("%s is out of date with the code: run go test ./internal/archdoc -update and commit the result:\n  %s",
			docPath, strings.Join(problems, "\n  "))
	}
}
