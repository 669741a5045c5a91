package perfevent

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		content string
		reg     uint8
		width   int
		place   uint64
		want    uint64
	}{
		{"config:0-7", 0, 8, 0xd3, 0xd3},
		{"config:8-15\n", 0, 8, 0x01, 0x100},
		{"config:21", 0, 1, 1, 1 << 21},
		{"config:0-7,21", 0, 9, 0x1ff, 0xff | 1<<21},     // split: value bit 8 goes to bit 21
		{"config:0-7,32-35", 0, 12, 0x107, 0x07 | 1<<32}, // AMD core and Zen 2 DF event
		{"config:0-7,32-37", 0, 14, 0x1c7, 0xc7 | 1<<32},
		{"config:8-15,24-27", 0, 12, 0x7fe, 0xfe<<8 | 0x7<<24}, // Zen 4 DF umask
		{"config1:0-63", 1, 64, ^uint64(0), ^uint64(0)},
		{"config1:17-26", 1, 10, 0x3f, 0x3f << 17},
		{"config2:0-15", 2, 16, 0xffff, 0xffff},
		{"config:32-55", 0, 24, 0xabcdef, 0xabcdef << 32},
	} {
		f, err := ParseFormat("f", tc.content)
		if err != nil {
			t.Errorf("ParseFormat(%q): %v", tc.content, err)
			continue
		}
		if f.Reg != tc.reg || f.Width() != tc.width {
			t.Errorf("ParseFormat(%q): reg %d width %d, want %d %d", tc.content, f.Reg, f.Width(), tc.reg, tc.width)
		}
		var regs [4]uint64
		if err := f.Place(&regs, tc.place); err != nil {
			t.Errorf("%q: Place(0x%x): %v", tc.content, tc.place, err)
			continue
		}
		if regs[tc.reg] != tc.want {
			t.Errorf("%q: Place(0x%x) = 0x%x, want 0x%x", tc.content, tc.place, regs[tc.reg], tc.want)
		}
		if got := f.Extract(regs); got != tc.place {
			t.Errorf("%q: Extract = 0x%x, want 0x%x", tc.content, got, tc.place)
		}
		if f.Width() < 64 {
			if err := f.Place(&regs, 1<<uint(f.Width())); err == nil {
				t.Errorf("%q: a value one bit too wide was accepted", tc.content)
			}
		}
	}
	for _, bad := range []string{"", "config", "config:", "config:8-7", "config:64", "confix:0-7", "config:0-7,4", "config:a-b", "config1:0-63,0"} {
		if _, err := ParseFormat("f", bad); err == nil {
			t.Errorf("ParseFormat(%q) succeeded", bad)
		}
	}
}

func fixture(name string) sysfs.FS { return sysfs.New("testdata/" + name) }

func TestResolveFixtures(t *testing.T) {
	for _, tc := range []struct {
		tree, spec string
		typ        uint32
		cfg        [4]uint64
		name       string
		instances  []string
		cpumask    []int
		scale      float64
		unit       string
	}{
		{"intel-skx", "cycles", TypeHardware, [4]uint64{0}, "cycles", nil, nil, 0, "cycles"},
		{"intel-skx", "node-load-misses", TypeHWCache, [4]uint64{6 | 1<<16}, "node-load-misses", nil, nil, 0, "misses"},
		{"intel-skx", "page-faults", TypeSoftware, [4]uint64{2}, "page-faults", nil, nil, 0, "faults"},
		{"intel-skx", "r01d3", TypeRaw, [4]uint64{0x1d3}, "r01d3", nil, nil, 0, "events"},
		{"intel-skx", "cpu/event=0xd3,umask=0x01,name=local_dram/", 4, [4]uint64{0x1d3}, "local_dram", []string{"cpu"}, nil, 0, "events"},
		{"intel-skx", "cpu/event=0x3c,edge,inv,cmask=2/", 4, [4]uint64{0x3c | 1<<18 | 1<<23 | 2<<24}, "cpu_event_0x3c_edge_inv_cmask_2", []string{"cpu"}, nil, 0, "events"},
		{"intel-skx", "cpu/mem-loads/", 4, [4]uint64{0x1cd, 3}, "cpu_mem-loads", []string{"cpu"}, nil, 0, "events"},
		{"intel-skx", "cpu/mem-loads,ldlat=50/", 4, [4]uint64{0x1cd, 50}, "cpu_mem-loads_ldlat_50", []string{"cpu"}, nil, 0, "events"},
		{"intel-skx", "cpu/event=0xb7,umask=0x1,offcore_rsp=0x3fbc000001/", 4, [4]uint64{0x1b7, 0x3fbc000001}, "", []string{"cpu"}, nil, 0, "events"},
		{"intel-skx", "uncore_imc/cas_count_read/", 14, [4]uint64{0x0304}, "uncore_imc_cas_count_read", []string{"uncore_imc_0", "uncore_imc_1"}, []int{0, 4}, 6.103515625e-5, "MiB"},
		{"intel-skx", "uncore_imc_1/event=0x04,umask=0x0c/", 15, [4]uint64{0x0c04}, "", []string{"uncore_imc_1"}, []int{0, 4}, 0, "events"},
		{"intel-skx", "uncore_upi/event=0x02,umask=0x0f,umask_ext=0x1/", 20, [4]uint64{0x0f02 | 1<<32}, "", []string{"uncore_upi_0", "uncore_upi_1"}, []int{0, 4}, 0, "events"},
		{"intel-skx", "uncore_cha_0/event=0x34,umask=0x11,filter_state=0x3f,filter_rem,filter_loc/", 24, [4]uint64{0x1134, 0x3f<<17 | 1<<32 | 1<<33}, "", []string{"uncore_cha_0"}, []int{0, 4}, 0, "events"},
		{"intel-skx", "msr/tsc/", 9, [4]uint64{0}, "msr_tsc", []string{"msr"}, nil, 0, "events"},
		{"intel-skx", "sched:sched_move_numa", TypeTracepoint, [4]uint64{318}, "sched:sched_move_numa", nil, nil, 0, "events"},
		{"amd-zen2", "cpu/event=0x43,umask=0x40/", 4, [4]uint64{0x4043}, "", []string{"cpu"}, nil, 0, "events"},
		{"amd-zen2", "cpu/event=0x1c7,umask=0x0/", 4, [4]uint64{0xc7 | 1<<32}, "", []string{"cpu"}, nil, 0, "events"},
		{"amd-zen2", "amd_df/event=0x107,umask=0x38/", 11, [4]uint64{0x3807 | 1<<32}, "", []string{"amd_df"}, []int{0, 64}, 0, "events"},
		{"amd-zen2", "amd_l3/event=0x04,umask=0xff,slicemask=0xf,threadmask=0xff/", 12, [4]uint64{0xff04 | 0xf<<48 | 0xff<<56}, "", []string{"amd_l3"}, []int{0, 4, 8, 12}, 0, "events"},
		{"amd-zen2", "sched:sched_move_numa", TypeTracepoint, [4]uint64{301}, "sched:sched_move_numa", nil, nil, 0, "events"}, // tracefs in debugfs
		{"amd-zen4", "amd_df/event=0x1f,umask=0x7fe/", 11, [4]uint64{0x1f | 0xfe<<8 | 0x7<<24}, "", []string{"amd_df"}, []int{0, 96}, 0, "events"},
		{"amd-zen4", "amd_df/event=0x21f,umask=0x7fe/", 11, [4]uint64{0x1f | 0xfe<<8 | 0x7<<24 | 2<<32}, "", []string{"amd_df"}, []int{0, 96}, 0, "events"},
	} {
		sp, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("%s: Parse: %v", tc.spec, err)
			continue
		}
		ev, err := Resolve(fixture(tc.tree), sp)
		if err != nil {
			t.Errorf("%s on %s: %v", tc.spec, tc.tree, err)
			continue
		}
		if ev.Attr.Type != tc.typ || ev.Attr.Config != tc.cfg {
			t.Errorf("%s on %s: type %d config %#x, want %d %#x", tc.spec, tc.tree, ev.Attr.Type, ev.Attr.Config, tc.typ, tc.cfg)
		}
		if tc.name != "" && ev.Name != tc.name {
			t.Errorf("%s: name %q, want %q", tc.spec, ev.Name, tc.name)
		}
		if strings.ContainsAny(ev.Name, "./, ") {
			t.Errorf("%s: name %q has a character -e patterns cannot use", tc.spec, ev.Name)
		}
		var inst []string
		for _, in := range ev.Instances {
			inst = append(inst, in.PMU)
		}
		if !reflect.DeepEqual(inst, tc.instances) {
			t.Errorf("%s: instances %v, want %v", tc.spec, inst, tc.instances)
		}
		if !reflect.DeepEqual(ev.CPUMask, tc.cpumask) || ev.Uncore() != (tc.cpumask != nil) {
			t.Errorf("%s: cpumask %v, want %v", tc.spec, ev.CPUMask, tc.cpumask)
		}
		if ev.Scale != tc.scale || ev.Unit != tc.unit {
			t.Errorf("%s: scale %v unit %q, want %v %q", tc.spec, ev.Scale, ev.Unit, tc.scale, tc.unit)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		tree, spec, want string
		unavailable      bool
	}{
		{"vm-nopmu", "cycles", "no core PMU", true},
		{"vm-nopmu", "r01d3", "no core PMU", true},
		{"vm-nopmu", "cpu/event=0xd3,umask=0x01/", "no PMU cpu", true},
		{"vm-nopmu", "sched:sched_move_numa", "tracefs is not mounted", true},
		{"intel-skx", "uncore_imc/bogus_event/", "no event \"bogus_event\"", false},
		{"intel-skx", "uncore_imc/cas_count_rd/", "did you mean cas_count_read", false},
		{"intel-skx", "cpu/event=0x1d3/", "does not fit field event", false},
		{"intel-skx", "cpu/evnt=0xd3/", "has no format field \"evnt\"", false},
		{"intel-skx", "cpu/mem-loads,cpu-cycles/", "two events", false},
		{"intel-skx", "uncore_m2m/event=1/", "no PMU uncore_m2m", true},
		{"intel-skx", "sched:sched_stick_numa", "no tracepoint sched:sched_stick_numa", true},
		{"amd-zen2", "amd_df/event=0x4007/", "does not fit", false}, // event14 holds 14 bits
	} {
		sp, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("%s: Parse: %v", tc.spec, err)
			continue
		}
		_, err = Resolve(fixture(tc.tree), sp)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %s: %v, want an error containing %q", tc.spec, tc.tree, err, tc.want)
			continue
		}
		var u *Unavailable
		if errors.As(err, &u) != tc.unavailable {
			t.Errorf("%s on %s: unavailable=%v, want %v (%v)", tc.spec, tc.tree, !tc.unavailable, tc.unavailable, err)
		}
		if tc.unavailable && u.Fix == "" {
			t.Errorf("%s on %s: no fix offered: %v", tc.spec, tc.tree, err)
		}
	}
}

func TestCPUInfo(t *testing.T) {
	id, ok := ParseCPUInfo([]byte("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nvendor_id\t: Bogus\n"))
	if !ok || id != (CPUID{"GenuineIntel", 6, 143}) {
		t.Errorf("got %+v %v", id, ok)
	}
	if _, ok := ParseCPUInfo([]byte("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n")); ok {
		t.Error("an Arm cpuinfo parsed as x86")
	}
	if id, err := ReadCPUID(fixture("amd-zen2")); err != nil || id != (CPUID{"AuthenticAMD", 23, 49}) {
		t.Errorf("amd-zen2: %+v %v", id, err)
	}
}

// FuzzParseFormat: whatever format parses places every value that fits
// and extracts it back unchanged, touching only its own register.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"config:0-7", "config:0-7,21", "config:0-7,32-35", "config:8-15,24-27", "config1:0-63", "config2:3", "config:63,0-1"} {
		f.Add(s, uint64(0x1ff))
	}
	f.Fuzz(func(t *testing.T, s string, v uint64) {
		fl, err := ParseFormat("f", s)
		if err != nil {
			return
		}
		if w := fl.Width(); w < 64 {
			v &= 1<<uint(w) - 1
		}
		var regs [4]uint64
		if err := fl.Place(&regs, v); err != nil {
			t.Fatalf("%q: Place(0x%x): %v", s, v, err)
		}
		if got := fl.Extract(regs); got != v {
			t.Fatalf("%q: Extract = 0x%x, placed 0x%x", s, got, v)
		}
		for r := range regs {
			if r != int(fl.Reg) && regs[r] != 0 {
				t.Fatalf("%q: wrote register %d", s, r)
			}
		}
	})
}
