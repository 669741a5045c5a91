package sysfs

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
	}{
		{"", nil},
		{"0", []int{0}},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}},
		{"4,0-1\x00\x00", []int{0, 1, 4}},
		{"1,1,0", []int{0, 1}},
	}
	for _, c := range cases {
		got, err := ParseCPUList(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"a", "3-1", "1-", "-1", "0-99999999"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q): want error", bad)
		}
	}
}

func TestParseCPUMask(t *testing.T) {
	cases := []struct {
		in   string
		want []int
	}{
		{"00000000,0000000f\n", []int{0, 1, 2, 3}},
		{"00000001,00000000", []int{32}},
		{"ff", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"0\x00", nil},
	}
	for _, c := range cases {
		got, err := ParseCPUMask(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCPUMask(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := ParseCPUMask("zz"); err == nil {
		t.Error("want error for non-hex mask")
	}
}

func TestFormatCPUList(t *testing.T) {
	if got := FormatCPUList([]int{0, 1, 2, 3, 8, 10, 11}); got != "0-3,8,10-11" {
		t.Errorf("got %q", got)
	}
}

func TestFSPaths(t *testing.T) {
	live := New("/")
	if live.Sys("devices/system/node") != "/sys/devices/system/node" || !live.Live() {
		t.Errorf("live paths wrong: %s", live.Sys("devices/system/node"))
	}
	f := New("/tmp/x")
	if f.Proc("self", "status") != "/tmp/x/proc/self/status" || f.Path("/sys/fs/cgroup") != "/tmp/x/sys/fs/cgroup" {
		t.Errorf("rooted paths wrong")
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "1,1", "5-2", "0-1023"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		// A parsed list must round-trip through the formatter.
		again, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !reflect.DeepEqual(again, cpus) {
			t.Fatalf("round trip of %q: %v -> %v (%v)", s, cpus, again, err)
		}
	})
}

func FuzzParseCPUMask(f *testing.F) {
	for _, s := range []string{"00000000,0000000f", "ff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUMask(s)
		if err != nil {
			return
		}
		for i := 1; i < len(cpus); i++ {
			if cpus[i] <= cpus[i-1] {
				t.Fatalf("unsorted result for %q: %v", s, cpus)
			}
		}
	})
}

// TestOnlineReader reads the online CPUs as they change, from one open
// file, without allocating once the bitmap is large enough; malformed
// lists are errors, and the parse agrees with ParseCPUList.
func TestOnlineReader(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "sys/devices/system/cpu/online")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	r := NewOnlineReader(New(root))
	defer r.Close()
	var online []bool
	for _, c := range []struct {
		list string
		want []bool
	}{
		{"0-2,5\n", []bool{true, true, true, false, false, true}},
		{"1\n", []bool{false, true, false, false, false, false}}, // storage kept, cleared
		{"", []bool{false, false, false, false, false, false}},
	} {
		if err := os.WriteFile(p, []byte(c.list), 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if online, err = r.Read(online); err != nil || !slices.Equal(online, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.list, online, err, c.want)
		}
	}
	if err := os.WriteFile(p, []byte("0-3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() { online, _ = r.Read(online) }); a != 0 {
		t.Errorf("Read allocates %v times", a)
	}
	for _, bad := range []string{"x", "3-1", "0,,1", "0-", "-1", "1 2", "99999999", "65536", "0-70000", "0,"} {
		if _, err := parseCPUListInto([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseCPUListInto(f *testing.F) {
	for _, s := range []string{"0-3,8,10-11\n", "0", "", "5-5", "0,2,4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := parseCPUListInto(bytes.TrimSpace([]byte(s)), nil)
		ref, rerr := ParseCPUList(s)
		if err != nil {
			return
		}
		if rerr != nil {
			t.Fatalf("%q: parsed here (%d CPUs in the bitmap), refused by ParseCPUList: %v", s, len(set), rerr)
		}
		var got []int
		for c, on := range set {
			if on {
				got = append(got, c)
			}
		}
		slices.Sort(ref)
		ref = slices.Compact(ref)
		if !slices.Equal(got, ref) {
			t.Fatalf("%q: %v, ParseCPUList %v", s, got, ref)
		}
	})
}
