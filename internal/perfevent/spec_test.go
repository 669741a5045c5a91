package perfevent

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
	}{
		{"cycles", Spec{Kind: KindGeneric, Name: "cycles"}},
		{" page-faults ", Spec{Kind: KindGeneric, Name: "page-faults"}},
		{"node-load-misses", Spec{Kind: KindGeneric, Name: "node-load-misses"}},
		{"cycles:u", Spec{Kind: KindGeneric, Name: "cycles", Mods: Modifiers{ExcludeKernel: true, ExcludeHV: true}}},
		{"instructions:kp", Spec{Kind: KindGeneric, Name: "instructions", Mods: Modifiers{ExcludeUser: true, ExcludeHV: true}}},
		{"r01d3", Spec{Kind: KindRaw, Name: "r01d3", Raw: 0x1d3}},
		{"sched:sched_move_numa", Spec{Kind: KindTracepoint, System: "sched", Name: "sched_move_numa"}},
		{"exceptions:page_fault_user", Spec{Kind: KindTracepoint, System: "exceptions", Name: "page_fault_user"}},
		{"cpu/mem-loads/", Spec{Kind: KindPMU, PMU: "cpu", Terms: []Term{{Key: "mem-loads"}}}},
		{"cpu/event=0xd3,umask=0x01,name=local_dram/", Spec{Kind: KindPMU, PMU: "cpu", Name: "local_dram",
			Terms: []Term{{"event", "0xd3", true}, {"umask", "0x01", true}}}},
		{"uncore_imc/cas_count_read/", Spec{Kind: KindPMU, PMU: "uncore_imc", Terms: []Term{{Key: "cas_count_read"}}}},
		{"cpu/event=0x3c,edge,cmask=1/u", Spec{Kind: KindPMU, PMU: "cpu", Terms: []Term{{"event", "0x3c", true}, {Key: "edge"}, {"cmask", "1", true}},
			Mods: Modifiers{ExcludeKernel: true, ExcludeHV: true}}},
		{"amd_df/event=0x107,umask=0x38/", Spec{Kind: KindPMU, PMU: "amd_df", Terms: []Term{{"event", "0x107", true}, {"umask", "0x38", true}}}},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		tc.want.Text = strings.TrimSpace(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) =\n %+v, want\n %+v", tc.in, got, tc.want)
		}
		// The canonical form parses to the same specification.
		again, err := Parse(got.String())
		if err != nil {
			t.Errorf("Parse(%q.String() = %q): %v", tc.in, got.String(), err)
			continue
		}
		again.Text = got.Text
		if !reflect.DeepEqual(again, got) {
			t.Errorf("round trip of %q via %q: got %+v", tc.in, got.String(), again)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"cylces", "did you mean cycles"},
		{"cpu/event=0xd3", "missing the closing '/'"},
		{"cpu//", "no event between the slashes"},
		{"cpu/event=0xzz/", "not a number"},
		{"cpu/event=/", "has no value"},
		{"cpu/name=x/", "only a name= term"},
		{"cycles:x", "unknown modifier"},
		{"sched:", "tracepoint is SYSTEM:NAME"},
		{":sched_move_numa", "tracepoint is SYSTEM:NAME"},
		{"../etc/passwd/x/", "bad PMU name"},
		{"sched:../../x", "bad PMU name"},
		{"cpu/event=1 umask=2/", "not allowed"},
		{"rzz", "unknown event"},
		{strings.Repeat("a", 600), "longer than"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"cycles", "cycles:u", "r01d3", "sched:sched_move_numa", "cpu/mem-loads/",
		"cpu/event=0xd3,umask=0x01,name=local_dram/", "uncore_imc/cas_count_read/k", "amd_df/event=0x107,umask=0x38/",
		"cpu/event=0x3c,edge,cmask=1/u", "a/b/c/", "x:y:z", "cpu/name=a,name=b,event=1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		// Whatever parses has a canonical form that parses to the same thing.
		again, err := Parse(sp.String())
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its canonical form %q fails: %v", s, sp.String(), err)
		}
		again.Text = sp.Text
		if !reflect.DeepEqual(again, sp) {
			t.Fatalf("Parse(%q) = %+v, canonical %q parses to %+v", s, sp, sp.String(), again)
		}
		if SafeName(sp.String()) != SafeName(SafeName(sp.String())) {
			t.Fatalf("SafeName is not idempotent on %q", sp.String())
		}
	})
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"cpu/event=0xd3,umask=0x01":  "cpu_event_0xd3_umask_0x01",
		"uncore_imc/cas_count_read/": "uncore_imc_cas_count_read",
		"sched:sched_move_numa":      "sched:sched_move_numa",
		"a..b":                       "a_b",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}
