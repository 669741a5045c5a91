package profile

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// TestLinesReadPerUnit checks the line lookup, which reads one compilation
// unit's table when an address in it is first asked for, against the whole
// table read at once, on real binaries built by gcc: profnuma, and a program
// of several units.
func TestLinesReadPerUnit(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		requireGCC(t, "gcc not found: cannot build the test programs")
	}
	dir := t.TempDir()
	var srcs []string
	for i := range 4 {
		src := filepath.Join(dir, fmt.Sprintf("u%d.c", i))
		body := fmt.Sprintf("int f%d(int x)\n{\n\tint y = x * %d;\n\tfor (int i = 0; i < x; i++)\n\t\ty += i;\n\treturn y;\n}\n", i, i+2)
		if i == 0 {
			body += "int f1(int), f2(int), f3(int);\nint main(int argc, char **argv)\n{\n\t(void)argv;\n\treturn f0(argc) + f1(argc) + f2(argc) + f3(argc);\n}\n"
		}
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	multi := filepath.Join(dir, "multi")
	if out, err := exec.Command(gcc, append([]string{"-g", "-O1", "-o", multi}, srcs...)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	bins := map[string]string{"profnuma": buildWorkload(t, false), "units": multi}
	for name, path := range bins {
		t.Run(name, func(t *testing.T) {
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d, err := f.DWARF()
			if err != nil {
				t.Fatalf("%s was built with -g but has no DWARF: %v", path, err)
			}
			want := allLines(t, d)
			if len(want) == 0 {
				t.Fatalf("%s: no line rows", path)
			}
			b, err := openBinary(path)
			if err != nil {
				t.Fatal(err)
			}
			// Every row's address (at most 3000 of them, spread over the
			// table, in an order that jumps between units) resolves to the
			// last row at that address.
			step := max(1, len(want)/3000)
			checked := 0
			for k := 0; k < len(want); k += step {
				i := (k * 7919) % len(want)
				for i+1 < len(want) && want[i+1].addr == want[i].addr {
					i++
				}
				r := want[i]
				if r.end {
					continue
				}
				file, line := b.line(r.addr)
				if file != r.file || line != r.line {
					t.Fatalf("%#x: %s:%d, want %s:%d", r.addr, file, line, r.file, r.line)
				}
				checked++
			}
			if checked < len(want)/4 {
				t.Errorf("only %d addresses checked of %d rows", checked, len(want))
			}
			if name == "units" && len(b.units) != 4 {
				t.Errorf("%d units read, want the program's 4", len(b.units))
			}
			t.Logf("%d rows, %d addresses checked, %d units read", len(want), checked, len(b.units))
		})
	}
}

// allLines reads every unit's line table at once, by address.
func allLines(t *testing.T, d *dwarf.Data) []lineEntry {
	t.Helper()
	var rows []lineEntry
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if cu == nil {
			break
		}
		if cu.Tag == dwarf.TagCompileUnit {
			rows = append(rows, unitLines(d, cu)...)
		}
		r.SkipChildren()
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
	return rows
}

// TestCompDirsRecorded builds a program in a directory of its own (with a
// #line naming a file outside it, as a hostile build would) and checks that
// every file its line rows name is recorded with that compilation
// directory, which `numascope view` confines source lookups to.
func TestCompDirsRecorded(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		requireGCC(t, "gcc not found: cannot build the test programs")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := "int f(int x)\n{\n\treturn x * 3;\n}\n#line 1 \"/etc/shadow\"\nint main(int argc, char **argv)\n{\n\t(void)argv;\n\treturn f(argc);\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gcc, "-g", "-O0", "-o", "p", "p.c")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	f, err := elf.Open(filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.DWARF()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := newSymbolizer()
	b := s.load(filepath.Join(dir, "p"))
	files := map[string]bool{}
	for _, r := range allLines(t, d) {
		if !r.end {
			file, _ := b.line(r.addr)
			files[file] = true
		}
	}
	if !files["/etc/shadow"] {
		t.Fatalf("the #line file is not in the line table: %v", files)
	}
	for file := range files {
		if got := s.compDirs(file); len(got) != 1 || got[0] != dir {
			t.Errorf("compDirs(%q) = %q, want [%s]", file, got, dir)
		}
	}
}
