package sysfs

import (
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

func TestOnlineCPUs(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "sys/devices/system/cpu/online")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := New(root)
	var online []bool
	for _, c := range []struct {
		list string
		want []bool
	}{
		{"0-2,5\n", []bool{true, true, true, false, false, true}},
		{"1\n", []bool{false, true, false, false, false, false}}, // storage kept, cleared
	} {
		if err := os.WriteFile(p, []byte(c.list), 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if online, err = OnlineCPUs(fs, online); err != nil || !slices.Equal(online, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.list, online, err, c.want)
		}
	}
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OnlineCPUs(fs, online); err == nil {
		t.Errorf("a malformed list: no error")
	}
}
