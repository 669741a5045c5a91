package procnuma

import (
	"bytes"
	"strings"
	"testing"
)

// TestStatusFieldCapture reads single keys of real status files, as the
// profiler (Cpus_allowed_list of a thread) and the perf sensor (CapEff) do.
func TestStatusFieldCapture(t *testing.T) {
	for _, c := range []struct{ file, key, want string }{
		{"onenode/proc/7718/status", "Cpus_allowed_list", "0-1"},
		{"onenode/proc/7718/status", "CapEff", "000001fffeffffff"},
		{"onenode/proc/7718/status", "Name", "sh"},
		{"vm4-compute/proc/139/status", "Cpus_allowed_list", "0"},
		{"vm4-compute/proc/139/status", "Mems_allowed_list", "0-3"},
	} {
		if v, ok := StatusField(readFixture(t, c.file), c.key); !ok || v != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.file, c.key, v, ok, c.want)
		}
	}
	if v, ok := StatusField(readFixture(t, "onenode/proc/7718/status"), "Cpus_allowed_lis"); ok {
		t.Errorf("a key's prefix matched: %q", v)
	}
}

func TestStatusFields(t *testing.T) {
	data := []byte("Name:\t a:b \nno colon\n:\t empty key\n Pad :\tx\nCpus_allowed_list:\t0-3\n\x00\x00Late:\t1\n")
	var got []string
	if err := StatusFields(data, func(_ int, k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := "Name=\t a:b |Pad=\tx|Cpus_allowed_list=\t0-3"
	if s := strings.Join(got, "|"); s != want {
		t.Errorf("fields %q, want %q", s, want)
	}
	long := append([]byte("A:\t1\nB:\t"), bytes.Repeat([]byte("x"), MaxLine)...)
	if err := StatusFields(long, func(int, []byte, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "status line 2") {
		t.Errorf("overlong line: %v, want refused at line 2", err)
	}
	if _, ok := StatusField(long, "B"); ok {
		t.Error("an overlong line's value was returned")
	}
}

// FuzzStatusFields checks the structure parser: keys are non-empty and
// trimmed without a ':' or newline, values hold no newline, and StatusField
// returns the first value of a key, trimmed.
func FuzzStatusFields(f *testing.F) {
	fixtureSeeds(f, "vm4-compute/proc/139/status", "onenode/proc/7718/status")
	f.Add([]byte("no colon\n:\n a : b : c \nA:\t1\nA:\t2\n\x00B:\t3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		first := map[string]string{}
		StatusFields(data, func(_ int, k, v []byte) error {
			if len(k) == 0 || bytes.ContainsAny(k, ":\n") || len(bytes.TrimSpace(k)) != len(k) || bytes.ContainsAny(v, "\n\x00") {
				t.Fatalf("key %q value %q", k, v)
			}
			if _, ok := first[string(k)]; !ok {
				first[string(k)] = string(bytes.TrimSpace(v))
			}
			return nil
		})
		for k, v := range first {
			if got, ok := StatusField(data, k); !ok || got != v {
				t.Fatalf("StatusField(%q) = %q %v, want %q", k, got, ok, v)
			}
		}
	})
}
