package cli

import (
	"strings"
	"testing"
)

// TestCgroupFlags: the --cgroup-* flags need --cgroups, a bad regex is an
// error naming the flag, and the regexes match whole paths.
func TestCgroupFlags(t *testing.T) {
	changed := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, x := range names {
				if x == n {
					return true
				}
			}
			return false
		}
	}
	if _, err := (cgroupFlags{depth: 2}).config(changed("cgroup-depth")); err == nil || !strings.Contains(err.Error(), "--cgroup-depth needs --cgroups") {
		t.Errorf("--cgroup-depth without --cgroups: %v", err)
	}
	if c, err := (cgroupFlags{}).config(changed()); c != nil || err != nil {
		t.Errorf("no --cgroups: %v, %v, want nothing", c, err)
	}
	if _, err := (cgroupFlags{on: true, depth: 4, maxSeries: 10, include: "(["}).config(changed("cgroup-include")); err == nil || !strings.Contains(err.Error(), "--cgroup-include") {
		t.Errorf("a bad regex: %v, want an error naming --cgroup-include", err)
	}
	c, err := (cgroupFlags{on: true, depth: 4, maxSeries: 10, include: "/kubepods.slice/.*", exclude: "/a|/b"}).config(changed())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		path     string
		in, excl bool
	}{
		{"/kubepods.slice/x", true, false},
		{"/system.slice/kubepods.slice/x", false, false}, // anchored at the start
		{"/a", false, true},
		{"/ab", false, false}, // anchored at the end: the alternation is whole
	} {
		if got := c.Include.MatchString(p.path); got != p.in {
			t.Errorf("include matches %s: %v, want %v", p.path, got, p.in)
		}
		if got := c.Exclude.MatchString(p.path); got != p.excl {
			t.Errorf("exclude matches %s: %v, want %v", p.path, got, p.excl)
		}
	}
}
