package topology

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/term"
)

var update = flag.Bool("update", false, "rewrite the golden text files under testdata/")

// TestWriteTextGolden pins the complete text output for small trees. The
// golden files are meant to be read by a reviewer: they are the design of the
// output. Run `go test -run TestWriteTextGolden -update` after a deliberate
// change and review the diff.
func TestWriteTextGolden(t *testing.T) {
	for _, name := range []string{"two-node-cxl", "cgroup2-restricted", "no-numa", "garbage"} {
		t.Run(name, func(t *testing.T) {
			top := discoverTree(t, name)
			var buf bytes.Buffer
			if err := top.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("output differs from %s:\n%s", golden, lineDiff(string(want), buf.String()))
			}
		})
	}
}

func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, a, b))
		}
	}
	if len(out) > 10 {
		out = append(out[:10], "...")
	}
	return strings.Join(out, "\n")
}

// TestWriteTextFixtures renders every hwloc tree at two widths and checks
// what a reader relies on: the counts in the header, no line wider than
// asked, every online CPU drawn (or covered by a "same layout" line), and a
// bounded length even for 256-CPU machines.
func TestWriteTextFixtures(t *testing.T) {
	dir := hwlocFixtureDir(t)
	trees, errs := fixtureTrees(t, dir)
	if len(trees) == 0 {
		t.Fatalf("no hwloc tree extracted from %s (errors: %v)", dir, errs)
	}
	longest, longestName := 0, ""
	for _, name := range slices.Sorted(maps.Keys(trees)) {
		top, err := Discover(sysfs.New(trees[name]))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, width := range []int{80, DefaultTextWidth} {
			var buf bytes.Buffer
			if err := top.WriteTextWidth(&buf, width); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			checkText(t, name, top, out, lines, width)
			if len(lines) > longest {
				longest, longestName = len(lines), name
			}
		}
	}
	t.Logf("longest output: %d lines (%s)", longest, longestName)
}

var reThreads = regexp.MustCompile(`^\| (\|[^|]*\| ?)+`)

func checkText(t *testing.T, name string, top *Topology, out string, lines []string, width int) {
	t.Helper()
	header := fmt.Sprintf("Machine: %s, %s", term.Plural(len(top.Packages), "package", "packages"), term.Plural(len(top.Nodes), "NUMA node", "NUMA nodes"))
	if !strings.HasPrefix(out, header) {
		t.Errorf("%s: header %q does not start with %q", name, lines[0], header)
	}
	if !strings.Contains(lines[0], term.Plural(len(top.CPUs), "thread", "threads")) {
		t.Errorf("%s: header %q lacks the thread count %d", name, lines[0], len(top.CPUs))
	}
	// The distance matrix and the drawing fit the width; tables (of
	// caches, of tiers and HMAT ratings) and warnings hold CPU lists and
	// paths and may not.
	bounded := false
	for _, l := range lines {
		switch {
		case l == "Node distances:" || strings.HasPrefix(l, "Packages ("):
			bounded = true
		case l == "Caches:" || l == "Warnings:" || strings.HasPrefix(l, "Memory tiers, HMAT ratings"):
			bounded = false
		}
		if bounded && len(l) > width && !strings.HasPrefix(l, "  (CPUs ") {
			t.Errorf("%s: line of %d columns at width %d: %q", name, len(l), width, l)
			break
		}
	}
	limit := 120 + 2*len(top.Nodes) + len(top.Warnings)
	if width >= DefaultTextWidth && len(lines) > limit+300 {
		t.Errorf("%s: %d lines (limit %d)", name, len(lines), limit+300)
	}
	// Every online CPU of a package appears in a core box, or in the CPU
	// list of a "same layout" summary.
	drawn := map[int]bool{}
	for _, l := range lines {
		if m := reThreads.FindString(l); m != "" {
			for _, f := range strings.FieldsFunc(m, func(r rune) bool { return r == '|' || r == ' ' || r == '*' }) {
				if v, err := strconv.Atoi(f); err == nil {
					drawn[v] = true
				}
			}
		}
		if i := strings.Index(l, "(CPUs "); i >= 0 {
			// "... same layout as package 0 (CPUs 2-255, nodes 0-63)"
			list := l[i+len("(CPUs "):]
			if j := strings.Index(list, ", nodes"); j >= 0 {
				list = list[:j]
			}
			list = strings.TrimSuffix(list, ")")
			cpus, err := sysfs.ParseCPUList(list)
			if err != nil {
				t.Errorf("%s: bad CPU list in %q: %v", name, l, err)
			}
			for _, c := range cpus {
				drawn[c] = true
			}
		}
	}
	inPkg := map[int]bool{}
	for _, p := range top.Packages {
		for _, c := range p.CPUs {
			inPkg[c] = true
		}
	}
	for _, c := range top.CPUs {
		if c.Online && inPkg[c.ID] && !drawn[c.ID] {
			t.Errorf("%s (width %d): CPU %d is not drawn", name, width, c.ID)
			return
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, c := range []struct {
		in   uint64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {8 << 30, "8.0 GiB"}, {8<<30 - 1<<20, "8.0 GiB"},
		{32654400 * 1024, "31.1 GiB"}, {130 << 30, "130 GiB"}, {3 << 40, "3.0 TiB"},
	} {
		if got := humanBytes(c.in); got != c.want {
			t.Errorf("humanBytes(%d) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   uint64
		want string
	}{
		{32 << 10, "32K"}, {1280 << 10, "1280K"}, {2 << 20, "2M"}, {36608 << 10, "36M"}, {0, "?"},
	} {
		if got := compactSize(c.in); got != c.want {
			t.Errorf("compactSize(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}
