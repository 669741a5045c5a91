package topology

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	m, err := parseMeminfo([]byte("Node 3 MemTotal:       32654400 kB\nNode 3 MemFree:  1 kB\nNode 3 HugePages_Total:     4\n\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"MemTotal": 32654400 * 1024, "MemFree": 1024, "HugePages_Total": 4}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %v", m)
	}
	m, err = parseMeminfo([]byte("MemTotal: 10 kB\nMemFree: ten kB\nCached: 3 MB\nnonsense\nBuffers: 2 kB\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one about line 2", err)
	}
	if !reflect.DeepEqual(m, map[string]uint64{"MemTotal": 10240, "Buffers": 2048}) {
		t.Errorf("partial result %v", m)
	}
}

func TestParseMounts(t *testing.T) {
	ms, err := parseMounts([]byte("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\nx /a\\040b ext4 rw 0 0\nshort line\n"))
	if err == nil {
		t.Error("want an error for the short line")
	}
	if len(ms) != 2 || ms[1].Dir != "/a b" || ms[0].Type != "cgroup2" || !ms[0].hasOption("nosuid") || ms[0].hasOption("cpuset") {
		t.Errorf("got %+v", ms)
	}
	if !(mount{Options: []string{"release_agent=/x", "noprefix"}}).hasOption("release_agent") {
		t.Error("option with a value not found")
	}
}

func TestParseCgroup(t *testing.T) {
	es, err := parseCgroup([]byte("12:cpu,cpuacct:/a:b\n0::/user.slice\nbad\n"))
	if err == nil {
		t.Error("want an error for the bad line")
	}
	want := []cgroupEntry{{12, []string{"cpu", "cpuacct"}, "/a:b"}, {0, nil, "/user.slice"}}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("got %+v", es)
	}
}

func TestParseCacheSize(t *testing.T) {
	for in, want := range map[string]uint64{"32K": 32 << 10, "8192K": 8 << 20, "2M": 2 << 20, "512": 512, "1G": 1 << 30} {
		if got, err := parseCacheSize(in); err != nil || got != want {
			t.Errorf("parseCacheSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "K", "12T", "-1K", "99999999999999999999K"} {
		if _, err := parseCacheSize(in); err == nil {
			t.Errorf("parseCacheSize(%q): want error", in)
		}
	}
}

// The fuzz targets check round trips: what a parser returns, written back in
// the file's format, must parse to the same thing. That catches both
// crashes and parsers that silently mangle what they accept. Their seed
// corpora run in every `go test`.

func FuzzParseMeminfo(f *testing.F) {
	for _, s := range []string{
		"MemTotal:       16318412 kB\nMemFree:         1073416 kB\nHugePages_Total:       0\n",
		"Node 0 MemTotal:       32654400 kB\nNode 0 MemFree: 1 kB\n\x00\x00",
		"Node 1\n", ": 3 kB\n", "Node 1 Node 2 K: 3\n", "A: 18446744073709551615 kB\n", "A: 1 MB\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _ := parseMeminfo(data)
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m)) {
			// The per-node form: the parser strips exactly one "Node N "
			// prefix, so this is unambiguous even for keys that start
			// with "Node".
			fmt.Fprintf(&b, "Node 0 %s: %d\n", k, m[k])
		}
		again, err := parseMeminfo([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip of %v: %v, %v", m, again, err)
		}
	})
}

func FuzzStatusFields(f *testing.F) {
	for _, s := range []string{
		"Name:\tbash\nCpus_allowed:\tff\nCpus_allowed_list:\t0-7\nMems_allowed_list:\t0-1\n",
		"no colon\n:\n a : b : c \n", "\x00", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := statusFields(data)
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if strings.ContainsAny(k, ":\n") || k == "" || strings.Contains(m[k], "\n") {
				t.Fatalf("parsed key %q value %q", k, m[k])
			}
			fmt.Fprintf(&b, "%s:\t%s\n", k, m[k])
		}
		if again := statusFields([]byte(b.String())); !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip of %q: %q", m, again)
		}
	})
}

// escapeMount escapes a field the way the kernel's mangle() does, plus every
// byte that strings.Fields could split on, so that any parsed field survives.
func escapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '\\' || c >= 0x7f {
			fmt.Fprintf(&b, "\\%03o", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func FuzzParseMounts(f *testing.F) {
	for _, s := range []string{
		"cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n",
		"cpuset /dev/cpuset cgroup rw,relatime,cpuset,noprefix,release_agent=/sbin/cpuset_release_agent 0 0\n",
		"none /a\\040b\\134c tmpfs rw 0 0\n", "x y\n", "\\777 \\0 \\ a 0 0", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, _ := parseMounts(data)
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s %s %s %s 0 0\n", escapeMount(m.Device), escapeMount(m.Dir), m.Type, strings.Join(m.Options, ","))
		}
		again, err := parseMounts([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, ms) {
			t.Fatalf("round trip of %+v: %+v, %v", ms, again, err)
		}
	})
}

func FuzzParseCgroup(f *testing.F) {
	for _, s := range []string{
		"12:cpuset:/slurm/uid_1/job_2\n11:cpu,cpuacct:/\n1:name=systemd:/user.slice\n0::/user.slice/session-2.scope\n",
		"0::/a:b:c\n", "x:y\n", "-1::/\n", "+3::/\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, _ := parseCgroup(data)
		var b strings.Builder
		for _, e := range es {
			fmt.Fprintf(&b, "%s:%s:%s\n", strconv.Itoa(e.ID), strings.Join(e.Controllers, ","), e.Path)
		}
		again, err := parseCgroup([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, es) {
			t.Fatalf("round trip of %+v: %+v, %v", es, again, err)
		}
	})
}

func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"32K", "1M", "512", "", "18014398509481983K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseCacheSize(s)
		if err != nil {
			return
		}
		// The suffix multiplies the number, so K/M/G sizes are multiples of it.
		trimmed := strings.TrimSpace(s)
		unit := map[byte]uint64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}[trimmed[len(trimmed)-1]]
		if unit != 0 && v%unit != 0 {
			t.Fatalf("parseCacheSize(%q) = %d, not a multiple of %d", s, v, unit)
		}
	})
}
