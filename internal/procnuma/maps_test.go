package procnuma

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseMapsLineCapture parses a real /proc/self/maps: every line is a
// range, and the executable, anonymous and pseudo-file ones are told apart.
func TestParseMapsLineCapture(t *testing.T) {
	var all, exec, anon []MapsLine
	for line := range strings.Lines(string(readFixture(t, "build-cat/proc/self/maps"))) {
		m, ok := ParseMapsLine(line)
		if !ok {
			t.Fatalf("%q: not parsed", line)
		}
		all = append(all, m)
		if m.Executable() && strings.HasPrefix(m.Path, "/") {
			exec = append(exec, m)
		}
		if m.Path == "" {
			anon = append(anon, m)
		}
	}
	if len(all) != 38 || len(exec) != 3 || len(anon) != 4 {
		t.Fatalf("%d lines, %d executable file mappings, %d anonymous; want 38, 3, 4", len(all), len(exec), len(anon))
	}
	want := MapsLine{Start: 0x55feb6050000, End: 0x55feb6055000, Perms: "r-xp", Offset: 0x2000, Path: "/usr/bin/cat"}
	if exec[0] != want {
		t.Errorf("first executable mapping %+v, want %+v", exec[0], want)
	}
	if m := all[len(all)-1]; m.Path != "[vsyscall]" || !m.Executable() || m.End != 0xffffffffff601000 {
		t.Errorf("last line %+v, want the executable [vsyscall] page", m)
	}
}

func TestParseMapsLine(t *testing.T) {
	m, ok := ParseMapsLine("55d0c8a00000-55d0c8a21000 r-xp 00002000 fd:01 1234   /usr/bin/my  prog (deleted)\n")
	if !ok || m.Start != 0x55d0c8a00000 || m.End != 0x55d0c8a21000 || m.Offset != 0x2000 || m.Path != "/usr/bin/my prog (deleted)" || !m.Executable() {
		t.Errorf("got %+v %v", m, ok)
	}
	for _, l := range []string{
		"",
		"7ffd1000-7ffd2000 rw-p 00000000 00:00", // no inode
		"zz-7ffd2000 r-xp 00000000 00:00 0 /x",  // start not hex
		"7ffd2000-7ffd1000 r-xp 00000000 00:00 0", // end before start
		"7ffd1000-7ffd1000 r-xp 00000000 00:00 0", // empty range
		"7ffd1000 r-xp 00000000 00:00 0",          // no end
		"7ffd1000-7ffd2000 r-xp 0000zz00 00:00 0", // offset not hex
		"7ffd1000-17ffd2000000000000 r-xp 0 00:00 0",
	} {
		if m, ok := ParseMapsLine(l); ok {
			t.Errorf("%q: parsed as %+v, want refused", l, m)
		}
	}
	if (MapsLine{Perms: "r-"}).Executable() {
		t.Error("a short perms column is executable")
	}
}

func FuzzParseMapsLine(f *testing.F) {
	for line := range strings.Lines(string(readFixture(f, "build-cat/proc/self/maps"))) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := ParseMapsLine(line)
		if !ok {
			return
		}
		if m.End <= m.Start || m.Perms == "" || strings.ContainsAny(m.Path, "\n\t") || strings.Contains(m.Path, "  ") {
			t.Fatalf("%q parsed as %+v", line, m)
		}
		// What was parsed is what a kernel would print for it.
		again := fmt.Sprintf("%x-%x %s %08x 00:00 0 %s", m.Start, m.End, m.Perms, m.Offset, m.Path)
		if m2, ok := ParseMapsLine(again); !ok || m2 != m {
			t.Fatalf("%q parsed as %+v, printed as %q, parsed again as %+v %v", line, m, again, m2, ok)
		}
	})
}
