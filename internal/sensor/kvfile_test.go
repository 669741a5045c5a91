package sensor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRegistered(t *testing.T) {
	have := strings.Join(Names(), ",")
	for _, n := range []string{"cpu", "node", "vmstat"} {
		s, ok := New(n, Options{})
		if !ok || s.Name() != n {
			t.Errorf("sensor %q not registered (have %s)", n, have)
		}
		if _, ok := s.(FileReader); !ok {
			t.Errorf("sensor %q does not implement FileReader", n)
		}
	}
}

func TestParseUint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1691403", 1691403, true},
		{"18446744073709551615", -1, true}, // unsigned long wraps like the kernel's
		{"18446744073709551616", 0, false},
		{"-5", -5, true},
		{"", 0, false},
		{"-", 0, false},
		{"12x4", 0, false},
		{"0x10", 0, false},
		{" 1", 0, false},
		{"123456789012345678901", 0, false},
	} {
		got, ok := parseUint([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseUint(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseUint(f *testing.F) {
	for _, s := range []string{"0", "42", "18446744073709551615", "99999999999999999999", "-1", "1a", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseUint([]byte(s))
		digits := strings.TrimPrefix(s, "-")
		ref, err := strconv.ParseUint(digits, 10, 64)
		refOK := err == nil && digits != "" && !strings.ContainsAny(digits, "+_")
		if ok != refOK {
			t.Fatalf("parseUint(%q) ok = %v, strconv says %v (%v)", s, ok, refOK, err)
		}
		if ok {
			want := int64(ref)
			if digits != s {
				want = -want
			}
			if got != want {
				t.Fatalf("parseUint(%q) = %d, want %d", s, got, want)
			}
		}
	})
}

func TestSplitLines(t *testing.T) {
	for _, c := range []struct{ in, name, val string }{
		{"numa_hit 1691403", "numa_hit", "1691403"},
		{"nr_free_pages 1021209\x00\r", "nr_free_pages", "1021209"},
		{"", "", ""},
		{"lonely", "lonely", ""},
		{"a\tb", "a", "b"},
	} {
		n, v := splitKV([]byte(c.in))
		if string(n) != c.name || string(v) != c.val {
			t.Errorf("splitKV(%q) = %q, %q; want %q, %q", c.in, n, v, c.name, c.val)
		}
	}
	for _, c := range []struct {
		in, name, val string
		kb            bool
	}{
		{"Node 0 MemTotal:        4417756 kB", "MemTotal", "4417756", true},
		{"Node 12 HugePages_Total:     0", "HugePages_Total", "0", false},
		{"Node 3 Active(anon):       1536 kB", "Active(anon)", "1536", true},
		{"MemAvailable:   123 kB", "MemAvailable", "123", true},
		{"", "", "", false},
		{"Node 0", "", "", false},
		{"Node x Foo: 1", "Node x Foo", "1", false},
	} {
		n, v, kb := splitMeminfo([]byte(c.in))
		if string(n) != c.name || string(v) != c.val || kb != c.kb {
			t.Errorf("splitMeminfo(%q) = %q, %q, %v; want %q, %q, %v", c.in, n, v, kb, c.name, c.val, c.kb)
		}
	}
}

// FuzzSplitKV checks the vmstat/numastat line parser against strings.Fields.
func FuzzSplitKV(f *testing.F) {
	for _, s := range []string{"numa_hit 1691403", "x", "a  b c", "\x00 1", "nr_dirty -3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\v\f\u0085\u00a0") {
			return
		}
		name, v, ok := formatKV.split([]byte(line))
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == 0 })
		if len(fields) == 0 {
			if len(name) != 0 || ok {
				t.Fatalf("blank %q gave %q, %v", line, name, ok)
			}
			return
		}
		if string(name) != fields[0] {
			t.Fatalf("%q: name %q, want %q", line, name, fields[0])
		}
		if len(fields) == 2 {
			want, wok := parseUint([]byte(fields[1]))
			if ok != wok || v != want {
				t.Fatalf("%q: value %d, %v; want %d, %v", line, v, ok, want, wok)
			}
		} else if len(fields) > 2 && ok {
			t.Fatalf("%q: three fields accepted as a value", line)
		}
	})
}

// FuzzSplitMeminfo checks the meminfo line parser against a reference built
// on strings.Fields.
func FuzzSplitMeminfo(f *testing.F) {
	for _, s := range []string{"Node 0 MemTotal:        4417756 kB", "Node 1 HugePages_Free:      0",
		"MemFree: 12 kB", "Node 0 Active(file):   84832 kB", ":", "Node 9 : 1", "Node 0 X: kB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\v\f\u0085\u00a0\t\r\x00") {
			return
		}
		name, v, ok := formatMeminfo.split([]byte(line))
		// Reference: "Node N Name: V [kB]" with single-word names.
		fl := strings.Fields(line)
		if len(fl) >= 2 && fl[0] == "Node" && isDigits(fl[1]) && len(fl) > 2 {
			fl = fl[2:]
		}
		if len(fl) < 2 || len(fl) > 3 || !strings.HasSuffix(fl[0], ":") || strings.Count(line, ":") != 1 ||
			len(fl[0]) < 2 || (len(fl) == 3 && fl[2] != "kB") {
			return // not a simple line: only "no panic" is checked
		}
		if string(name) != strings.TrimSuffix(fl[0], ":") {
			t.Fatalf("%q: name %q, want %q", line, name, strings.TrimSuffix(fl[0], ":"))
		}
		want, wok := parseUint([]byte(fl[1]))
		if len(fl) == 3 {
			want *= 1024
		}
		if ok != wok || (ok && v != want) {
			t.Fatalf("%q: value %d, %v; want %d, %v", line, v, ok, want, wok)
		}
	})
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// FuzzKVParse checks kvFile's layout memory and its fast path: whatever the
// layout learnt at Open (from old) and whatever the file holds now (cur),
// values must be those of cur, found by name with the general line parser,
// or 0 when cur lacks the name; a bad value must be an error.
func FuzzKVParse(f *testing.F) {
	for _, p := range []string{"testdata/live1/proc/vmstat", "testdata/live1/sys/devices/system/node/node0/meminfo"} {
		live, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		mi := strings.HasSuffix(p, "meminfo")
		f.Add(string(live), "numa_fake 1\n"+string(live), mi)
		f.Add(string(live), strings.Replace(string(live), "1", "x", 1), mi)
	}
	f.Add("a 1\nb 2\nc 3\n", "c 30\nb 20\n", false)
	f.Add("a 1\nb 2\n", "a 1\n\nb x\n", false)
	f.Add("a 1\na 2\n", "b 1\na 5", false)
	f.Add("Node 0 A: 1 kB\nNode 0 B: 2\n", "Node 0 B:  3\nNode 0 A: 4 kB", true)
	f.Fuzz(func(t *testing.T, old, cur string, meminfo bool) {
		format := formatKV
		if meminfo {
			format = formatMeminfo
		}
		lines, index, _ := scanNames([]byte(old), format)
		k := &kvFile{preadFile: &preadFile{path: "test", format: format}, byName: map[string][]int{}}
		for i, l := range lines {
			k.add(l.Name, index[l.Name], i)
		}
		dst := make([]int64, len(lines))
		for i := range dst {
			dst[i] = -7 // must all be overwritten
		}
		// Reference: the values of cur by name. Real files never repeat a
		// name; with repeats the line kvFile remembers may be any of them.
		type val struct {
			v  int64
			ok bool
		}
		ref := map[string]val{}
		for _, l := range strings.Split(cur, "\n") {
			n, v, ok := format.split([]byte(l))
			if _, dup := ref[string(n)]; dup {
				return
			}
			if len(n) > 0 {
				ref[string(n)] = val{v, ok}
			}
		}
		err := k.parse([]byte(cur), dst)
		bad, anyPresent := false, false
		for _, l := range lines {
			_, present := ref[l.Name]
			anyPresent = anyPresent || present
		}
		if len(lines) > 0 && !anyPresent {
			// Not the file read at Open: an error, never frozen values.
			if err == nil {
				t.Fatalf("none of %d names in cur, and no error", len(lines))
			}
			return
		}
		for i, l := range lines {
			r, present := ref[l.Name]
			if !present {
				if err == nil && dst[i] != 0 {
					t.Fatalf("%q missing from cur: got %d, want 0", l.Name, dst[i])
				}
				continue
			}
			if !r.ok {
				bad = true
				continue
			}
			if err == nil && dst[i] != r.v {
				t.Fatalf("%q: got %d, want %d (old %q, cur %q)", l.Name, dst[i], r.v, old, cur)
			}
		}
		if bad != (err != nil) {
			t.Fatalf("bad value present: %v, error: %v", bad, err)
		}
	})
}

// TestPreadFileGrows reads a file that grows past the buffer sized at Open
// and past a page, so that the multi-chunk and the growth paths both run.
func TestPreadFileGrows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vmstat")
	small := "counter_0 0\ncounter_1 7\n"
	if err := os.WriteFile(path, []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, index, maxLen := scanNames([]byte(small), formatKV)
	k, err := newKVFile(path, formatKV, len(small), maxLen, "")
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	for i, l := range lines {
		k.add(l.Name, index[l.Name], i)
	}
	dst := make([]int64, 2)
	if err := k.read(dst); err != nil || dst[0] != 0 || dst[1] != 7 {
		t.Fatalf("small file: %v, %v", dst, err)
	}
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "counter_%d %d\n", i, i*1000003)
	}
	rewrite(t, path, func(string) string { return b.String() })
	if err := k.read(dst); err != nil || dst[0] != 0 || dst[1] != 1000003 {
		t.Fatalf("grown file (%d bytes): %v, %v", b.Len(), dst, err)
	}
	if len(k.buf) <= b.Len() {
		t.Errorf("buffer of %d bytes for a %d-byte file", len(k.buf), b.Len())
	}

	// A file over a page, opened as such: the last line is read.
	lines, index, maxLen = scanNames([]byte(b.String()), formatKV)
	big, err := newKVFile(path, formatKV, b.Len(), maxLen, "")
	if err != nil {
		t.Fatal(err)
	}
	defer big.close()
	big.add("counter_2999", index["counter_2999"], 0)
	if err := big.read(dst[:1]); err != nil || dst[0] != 2999*1000003 {
		t.Fatalf("big file: %v, %v", dst[0], err)
	}
}

// TestPreadFileSeqChunks reads a live multi-record seq_file larger than a
// page, which the kernel returns in chunks of at most a page: the chunks
// must be joined. /proc/crypto is stable and ~10 KiB with records well under
// 1 KiB; a kernel with the crypto API always lists more than a page of
// algorithms, so a smaller file fails rather than skips the test.
func TestPreadFileSeqChunks(t *testing.T) {
	want, err := os.ReadFile("/proc/crypto")
	if err != nil || len(want) <= pageSize {
		t.Fatalf("/proc/crypto unreadable or not over a page (%d bytes, %v): no seq_file of several pages to read", len(want), err)
	}
	p, err := openPread("/proc/crypto", len(want), 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	first, err := p.pread(p.buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := p.read()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("read %d bytes (first pread %d), want the %d of os.ReadFile", len(got), first, len(want))
		}
	}
	t.Logf("first pread returned %d of %d bytes", first, len(want))
}
