package perfevent

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

func loadPresets(t *testing.T) *Presets {
	t.Helper()
	p, err := LoadPresets()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPresetSelection(t *testing.T) {
	p := loadPresets(t)
	for _, tc := range []struct {
		id   CPUID
		want string
	}{
		{CPUID{"GenuineIntel", 6, 0x55}, "skx"},
		{CPUID{"GenuineIntel", 6, 0x6a}, "icx"},
		{CPUID{"GenuineIntel", 6, 0x6c}, "icx"},
		{CPUID{"GenuineIntel", 6, 0x8f}, "spr"},
		{CPUID{"GenuineIntel", 6, 0xcf}, "emr"},
		{CPUID{"GenuineIntel", 6, 0xad}, "gnr"},
		{CPUID{"GenuineIntel", 6, 0xba}, ""}, // Raptor Lake client: no server presets
		{CPUID{"GenuineIntel", 15, 6}, ""},
		{CPUID{"AuthenticAMD", 0x17, 0x01}, ""}, // Zen 1 (Naples)
		{CPUID{"AuthenticAMD", 0x17, 0x31}, "zen2"},
		{CPUID{"AuthenticAMD", 0x17, 0x71}, "zen2"},
		{CPUID{"AuthenticAMD", 0x19, 0x01}, "zen3"}, // Milan
		{CPUID{"AuthenticAMD", 0x19, 0x21}, "zen3"}, // Vermeer
		{CPUID{"AuthenticAMD", 0x19, 0x30}, "zen3"}, // kernel amd.c: 0x20-0x5f are Zen 3
		// Zen 4: the kernel's bsp_init_amd() ranges 0x10-0x1f and 0x60-0xaf.
		{CPUID{"AuthenticAMD", 0x19, 0x11}, "zen4"}, // Genoa, Genoa-X
		{CPUID{"AuthenticAMD", 0x19, 0x18}, "zen4"}, // Storm Peak
		{CPUID{"AuthenticAMD", 0x19, 0xa0}, "zen4"}, // Bergamo, Siena
		{CPUID{"AuthenticAMD", 0x19, 0xaf}, "zen4"},
		{CPUID{"AuthenticAMD", 0x19, 0x61}, "zen4"}, // Raphael
		{CPUID{"AuthenticAMD", 0x19, 0x74}, "zen4"}, // Phoenix
		{CPUID{"AuthenticAMD", 0x19, 0x90}, "zen4"},
		{CPUID{"AuthenticAMD", 0x19, 0xb0}, ""}, // outside every range the kernel knows
		// Zen 5: family 0x1a models 0x00-0x2f, 0x40-0x4f, 0x60-0x7f.
		{CPUID{"AuthenticAMD", 0x1a, 0x02}, "zen5"}, // Turin
		{CPUID{"AuthenticAMD", 0x1a, 0x11}, "zen5"}, // Turin Dense
		{CPUID{"AuthenticAMD", 0x1a, 0x24}, "zen5"}, // Strix Point
		{CPUID{"AuthenticAMD", 0x1a, 0x44}, "zen5"}, // Granite Ridge
		{CPUID{"AuthenticAMD", 0x1a, 0x60}, "zen5"}, // Krackan Point
		{CPUID{"AuthenticAMD", 0x1a, 0x70}, "zen5"}, // Strix Halo
		// Family 0x1a models the kernel marks Zen 6 must not get Zen 5 encodings.
		{CPUID{"AuthenticAMD", 0x1a, 0x50}, ""},
		{CPUID{"AuthenticAMD", 0x1a, 0x80}, ""},
		{CPUID{"AuthenticAMD", 0x1a, 0xc0}, ""},
		{CPUID{"HygonGenuine", 0x18, 0x01}, ""},
	} {
		got := ""
		if m := p.Select(tc.id); m != nil {
			got = m.ID
		}
		if got != tc.want {
			t.Errorf("Select(%v) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestPresetsComplete checks the embedded presets cover what numascope
// promises: each Intel Xeon generation from SKX to GNR and each Zen from 2
// to 5 has numa-traffic, memory-bandwidth and interconnect events, every
// event cites a vendor document, and every event is cross-checked against an
// independent table: libpfm4 (pfm, TestPresetsLibpfm) or the Linux perf
// event tables (kernel, TestPresetsKernelTables). Uncore events (any PMU but
// the core "cpu" one: uncore_imc, uncore_upi, amd_df, amd_umc) must name
// their kernel table entry, in the model's own kernel directory: libpfm4
// 4.13 has no uncore tables for these models, so a pfm name could not be
// checked.
func TestPresetsComplete(t *testing.T) {
	p := loadPresets(t)
	seen := map[string]bool{}
	uncore := 0
	for _, m := range p.Models {
		seen[m.ID] = true
		if len(m.Preset("numa-traffic")) == 0 {
			t.Errorf("%s: no numa-traffic events", m.ID)
		}
		for _, pr := range []string{"memory-bandwidth", "interconnect"} {
			if len(m.Preset(pr)) == 0 {
				t.Errorf("%s: no %s events", m.ID, pr)
			}
		}
		dirs, known := kernelDirs[m.ID]
		if !known {
			t.Errorf("%s: no kernel table directory known for the model (kernelDirs)", m.ID)
		}
		for _, e := range m.Events {
			if !strings.Contains(e.Source, "Intel") && !strings.Contains(e.Source, "AMD") {
				t.Errorf("%s/%s: source %q cites no vendor document", m.ID, e.Name, e.Source)
			}
			if e.Pfm == "" && e.Kernel == "" {
				t.Errorf("%s/%s: cross-checked against neither libpfm4 (pfm) nor the kernel tables (kernel)", m.ID, e.Name)
			}
			if isUncorePMU(e.Spec) {
				uncore++
				if e.Kernel == "" {
					t.Errorf("%s/%s: uncore event %s without a kernel table reference (kernel = ...)", m.ID, e.Name, e.Spec)
				}
			}
			if dir, _, _ := strings.Cut(e.Kernel, "/"); e.Kernel != "" && known && !slices.Contains(dirs, dir) {
				t.Errorf("%s/%s: kernel = %q is not in the model's kernel tables %v", m.ID, e.Name, e.Kernel, dirs)
			}
		}
	}
	for _, id := range []string{"skx", "icx", "spr", "emr", "gnr", "zen2", "zen3", "zen4", "zen5"} {
		if !seen[id] {
			t.Errorf("no preset model %s", id)
		}
	}
	if uncore == 0 {
		t.Error("no uncore preset event found: isUncorePMU is broken")
	}
}

// kernelDirs names, per preset model, the directories of
// tools/perf/pmu-events/arch/x86 whose tables may check its events: the
// kernel's own table for the model (arch/x86/mapfile.csv), and for Zen 2 the
// Zen 3 data-fabric table, which the kernel has no Zen 2 counterpart of and
// whose DF encodings Zen 2 shares (the pre-PerfMonV2 amd_df layout).
var kernelDirs = map[string][]string{
	"skx":  {"skylakex"},
	"icx":  {"icelakex"},
	"spr":  {"sapphirerapids"},
	"emr":  {"emeraldrapids"},
	"gnr":  {"graniterapids"},
	"zen2": {"amdzen2", "amdzen3"},
	"zen3": {"amdzen3"},
	"zen4": {"amdzen4"},
	"zen5": {"amdzen5"},
}

// kernelAlsoDirs names, for a kernel table directory, the tables of other
// CPUs that one preset model covers: model 0x55 is Skylake-SP up to stepping
// 4 and Cascade Lake / Cooper Lake from stepping 5 (the kernel's mapfile.csv
// sends those to cascadelakex). An event checked against the first must
// have the same encoding in the others.
var kernelAlsoDirs = map[string][]string{
	"skylakex": {"cascadelakex"},
}

// isUncorePMU reports whether a preset specification counts on an uncore
// PMU: every PMU numascope's presets use except the core PMU "cpu".
func isUncorePMU(spec string) bool {
	pmu, _, ok := strings.Cut(spec, "/")
	return ok && pmu != "cpu"
}

// TestPresetsResolve resolves every preset event of every model against
// the fixture tree of its vendor, and checks that the fixture machines
// select the right model: the encodings fit the kernel's format fields.
func TestPresetsResolve(t *testing.T) {
	p := loadPresets(t)
	for tree, id := range map[string]string{"intel-skx": "skx", "amd-zen2": "zen2", "amd-zen4": "zen4", "amd-zen5": "zen5"} {
		cpu, err := ReadCPUID(fixture(tree))
		if err != nil {
			t.Fatal(err)
		}
		if m := p.Select(cpu); m == nil || m.ID != id {
			t.Errorf("%s: selected %v, want %s", tree, m, id)
		}
	}
	for _, m := range p.Models {
		tree := fixtureFor(m)
		for _, e := range m.Events {
			sp, err := e.ParseSpec()
			if err != nil {
				t.Errorf("%s/%s: %v", m.ID, e.Name, err)
				continue
			}
			ev, err := Resolve(fixture(tree), sp)
			if err != nil {
				t.Errorf("%s/%s on %s: %v", m.ID, e.Name, tree, err)
				continue
			}
			if ev.Name != e.Name {
				t.Errorf("%s/%s: resolved name %q", m.ID, e.Name, ev.Name)
			}
		}
	}
}

// fixtureFor names the fixture tree whose PMU formats encode the model's
// events: the amd_df layout differs between Zen 2/3 (event14) and the
// PerfMonV2 parts Zen 4/5 (event14v2, umask12), and only PerfMonV2 parts
// have amd_umc_N PMUs.
func fixtureFor(m *Model) string {
	switch m.ID {
	case "zen2", "zen3":
		return "amd-zen2"
	case "zen4":
		return "amd-zen4"
	case "zen5":
		return "amd-zen5"
	}
	if m.Vendor == "AuthenticAMD" {
		return "amd-zen2"
	}
	return "intel-skx"
}

// kernelEvent is one row of testdata/kernel-events.tsv.
type kernelEvent struct {
	event, umask, rdwrmask string // "-" when the kernel entry has none
}

func loadKernelEvents(t *testing.T) map[string]kernelEvent {
	t.Helper()
	data, err := os.ReadFile("testdata/kernel-events.tsv")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kernelEvent{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("kernel-events.tsv:%d: %d columns, want 4", i+1, len(f))
		}
		if _, dup := out[f[0]]; dup {
			t.Fatalf("kernel-events.tsv:%d: %s listed twice", i+1, f[0])
		}
		out[f[0]] = kernelEvent{f[1], f[2], f[3]}
	}
	return out
}

// TestPresetsKernelTables cross-checks every preset event that names a
// kernel table entry against the encoding the Linux perf event tables give
// it (testdata/kernel-events.tsv): the preset's specification and one built
// from the kernel's EventCode/UMask/RdWrMask are both encoded with the
// model's sysfs format fixture and must give the same config. This is the
// independent check for the uncore events (libpfm4 4.13 has no tables for
// the AMD data fabric and UMCs nor for the Intel iMC and UPI of these
// models) and for Zen 5 (no libpfm4 table at all). Every model must have
// had at least one event checked, and every Intel and AMD uncore event is
// required to take part by TestPresetsComplete.
func TestPresetsKernelTables(t *testing.T) {
	p := loadPresets(t)
	kt := loadKernelEvents(t)
	checked := map[string]int{}
	for _, m := range p.Models {
		for _, e := range m.Events {
			if e.Kernel == "" {
				continue
			}
			if err := checkKernelEncoding(fixtureFor(m), e, kt); err != nil {
				t.Errorf("%s/%s: %v", m.ID, e.Name, err)
				continue
			}
			checked[m.ID]++
			// The same event in the tables of the other CPUs the model
			// covers must have the same encoding.
			dir, name, _ := strings.Cut(e.Kernel, "/")
			for _, also := range kernelAlsoDirs[dir] {
				e2 := e
				e2.Kernel = also + "/" + name
				if err := checkKernelEncoding(fixtureFor(m), e2, kt); err != nil {
					t.Errorf("%s/%s: %v", m.ID, e.Name, err)
					continue
				}
				checked[m.ID+"+"+also]++
			}
		}
	}
	for _, id := range []string{"skx", "icx", "spr", "emr", "gnr", "zen2", "zen3", "zen4", "zen5"} {
		if checked[id] == 0 {
			t.Errorf("%s: no preset encoding was checked against the kernel tables", id)
		}
	}
	t.Logf("preset encodings checked against the kernel tables: %v", checked)
}

// checkKernelEncoding encodes the preset event and the kernel table's
// encoding of e.Kernel on the PMU formats of the fixture tree, and reports
// any difference in type or config.
func checkKernelEncoding(tree string, e PresetEvent, kt map[string]kernelEvent) error {
	row, ok := kt[e.Kernel]
	if !ok {
		return fmt.Errorf("kernel event %s is not in testdata/kernel-events.tsv", e.Kernel)
	}
	sp, err := e.ParseSpec()
	if err != nil {
		return err
	}
	terms := []string{"event=" + row.event}
	if row.umask != "-" {
		terms = append(terms, "umask="+row.umask)
	}
	if row.rdwrmask != "-" {
		terms = append(terms, "rdwrmask="+row.rdwrmask)
	}
	ksp, err := Parse(sp.PMU + "/" + strings.Join(terms, ",") + "/")
	if err != nil {
		return fmt.Errorf("%s: %v", e.Kernel, err)
	}
	got, err := Resolve(fixture(tree), sp)
	if err != nil {
		return err
	}
	want, err := Resolve(fixture(tree), ksp)
	if err != nil {
		return fmt.Errorf("kernel encoding %s: %v", ksp.Text, err)
	}
	if got.Attr.Config != want.Attr.Config || got.Attr.Type != want.Attr.Type {
		return fmt.Errorf("numascope encodes %s as %#x, the kernel's %s is %s = %#x", e.Spec, got.Attr.Config, e.Kernel, ksp.Text, want.Attr.Config)
	}
	return nil
}

// TestKernelEncodingDetectsMismatch proves the kernel-table check can fail:
// each Intel preset event that names a kernel table entry, with its unit
// mask or event code changed by one bit, or pointed at another event's table
// entry, must be rejected.
func TestKernelEncodingDetectsMismatch(t *testing.T) {
	p := loadPresets(t)
	kt := loadKernelEvents(t)
	tried := 0
	for _, m := range p.Models {
		if m.Vendor != "GenuineIntel" {
			continue
		}
		for _, e := range m.Events {
			if e.Kernel == "" {
				continue
			}
			sp, err := e.ParseSpec()
			if err != nil {
				t.Fatal(err)
			}
			ev, err := Resolve(fixture(fixtureFor(m)), sp)
			if err != nil {
				t.Fatal(err)
			}
			code, umask := ev.Attr.Config[0]&0xff, ev.Attr.Config[0]>>8&0xff
			for _, bad := range []string{
				fmt.Sprintf("%s/event=%#x,umask=%#x/", sp.PMU, code, umask^0x01),
				fmt.Sprintf("%s/event=%#x,umask=%#x/", sp.PMU, code^0x01, umask),
			} {
				e2 := e
				e2.Spec = bad
				if err := checkKernelEncoding(fixtureFor(m), e2, kt); err == nil {
					t.Errorf("%s/%s: %s accepted as the kernel's %s", m.ID, e.Name, bad, e.Kernel)
				}
				tried++
			}
			// Another event of the model, with another encoding, named
			// as this one's kernel entry.
			for _, o := range m.Events {
				if o.Kernel == "" || o.Kernel == e.Kernel || o.Spec == e.Spec {
					continue
				}
				e3 := e
				e3.Kernel = o.Kernel
				if err := checkKernelEncoding(fixtureFor(m), e3, kt); err == nil {
					t.Errorf("%s/%s: %s accepted as the kernel's %s", m.ID, e.Name, e.Spec, o.Kernel)
				}
				break
			}
			tried++
		}
	}
	if tried == 0 {
		t.Fatal("no Intel preset event names a kernel table entry")
	}
}

// TestAMDUncoreEncoding encodes data-fabric and memory-controller events on
// the Zen 2, Zen 4 and Zen 5 fixtures and compares with the bit layout of
// arch/x86/events/amd/uncore.c, computed here by hand: event14 (Zen 2/3)
// puts event bits 0-7, 8-11, 12-13 at config 0-7, 32-35, 59-60; event14v2
// (PerfMonV2) puts bits 0-7, 8-13 at 0-7, 32-37; umask12 puts umask bits
// 0-7, 8-11 at 8-15, 24-27; the UMC's rdwrmask sits at config 8-9.
func TestAMDUncoreEncoding(t *testing.T) {
	v2 := func(ev, um uint64) uint64 {
		return ev&0xff | (ev>>8&0x3f)<<32 | (um&0xff)<<8 | (um>>8&0xf)<<24
	}
	for _, tc := range []struct {
		tree, spec string
		cfg        uint64
		instances  int
	}{
		{"amd-zen2", "amd_df/event=0x7c7,umask=0x02/", 0xc7 | 0x7<<32 | 0x02<<8, 1},
		{"amd-zen2", "amd_df/event=0x1007/", 0x07 | 1<<59, 1},
		{"amd-zen2", "amd_df/event=0x3fff/", 0xff | 0xf<<32 | 3<<59, 1},
		{"amd-zen4", "amd_df/event=0xd1f,umask=0xf3e/", v2(0xd1f, 0xf3e), 1},
		{"amd-zen4", "amd_df/event=0x2df,umask=0xbff/", v2(0x2df, 0xbff), 1},
		{"amd-zen4", "amd_df/event=0x3fff,umask=0xfff/", v2(0x3fff, 0xfff), 1},
		{"amd-zen4", "amd_umc/event=0x0a,rdwrmask=0x1/", 0x0a | 1<<8, 2},
		{"amd-zen5", "amd_df/event=0xe9f,umask=0xf3f/", v2(0xe9f, 0xf3f), 1},
		{"amd-zen5", "amd_df/event=0x1f,umask=0xffe/", v2(0x1f, 0xffe), 1},
		{"amd-zen5", "amd_umc/event=0x0a,rdwrmask=0x2/", 0x0a | 2<<8, 3},
		{"amd-zen5", "amd_umc_1/event=0x14/", 0x14, 1},
	} {
		sp, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Resolve(fixture(tc.tree), sp)
		if err != nil {
			t.Errorf("%s on %s: %v", tc.spec, tc.tree, err)
			continue
		}
		if ev.Attr.Config[0] != tc.cfg || ev.Attr.Config[1] != 0 {
			t.Errorf("%s on %s: config %#x, want %#x", tc.spec, tc.tree, ev.Attr.Config, tc.cfg)
		}
		if len(ev.Instances) != tc.instances || !ev.Uncore() {
			t.Errorf("%s on %s: %d instances (uncore %v), want %d", tc.spec, tc.tree, len(ev.Instances), ev.Uncore(), tc.instances)
		}
	}
	for _, tc := range []struct{ tree, spec string }{
		{"amd-zen2", "amd_df/event=0x4000/"},             // 15 bits: more than event14 holds
		{"amd-zen2", "amd_df/event=0x1f,umask=0x7fe/"},   // a Zen 4 umask on Zen 2's 8-bit field
		{"amd-zen4", "amd_df/event=0x4000/"},             // more than event14v2 holds
		{"amd-zen5", "amd_df/event=0x1f,umask=0x1000/"},  // more than umask12 holds
		{"amd-zen5", "amd_umc/event=0x0a,rdwrmask=0x4/"}, // rdwrmask is two bits
		{"amd-zen5", "amd_umc/event=0x100/"},             // the UMC event is 8 bits
	} {
		sp, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(fixture(tc.tree), sp); err == nil || !strings.Contains(err.Error(), "does not fit") {
			t.Errorf("%s on %s: %v, want a does-not-fit error", tc.spec, tc.tree, err)
		}
	}
}

func TestParsePresetsErrors(t *testing.T) {
	good := "[[model]]\nid = \"x\"\nvendor = \"GenuineIntel\"\nfamily = 6\nmodels = [\"0x10-0x1f\"]\n"
	ev := "[[model.event]]\npresets = [\"numa-traffic\"]\nname = \"e\"\nspec = \"cpu/event=1/\"\nsource = \"Intel SDM\"\n"
	ms, err := ParsePresets("user.toml", []byte(good+ev))
	if err != nil || len(ms) != 1 || !ms[0].Matches(CPUID{"GenuineIntel", 6, 0x15}) || ms[0].Matches(CPUID{"GenuineIntel", 6, 0x20}) {
		t.Fatalf("good file: %v %v", ms, err)
	}
	for _, tc := range []struct{ text, want string }{
		{good + strings.Replace(ev, "source = \"Intel SDM\"\n", "", 1), "cites no source"},
		{good + strings.Replace(ev, "cpu/event=1/", "cpu/event=1", 1), "closing '/'"},
		{good + strings.Replace(ev, "presets = [\"numa-traffic\"]\n", "", 1), "belongs to no preset"},
		{good + strings.Replace(ev, "name = \"e\"", "name = \"a.b\"", 1), "name must be"},
		{good + ev + ev, "defined twice"},
		{strings.Replace(good, "0x10-0x1f", "0x1f-0x10", 1) + ev, "bad model range"},
		{good + ev + "colour = 1\n", "unknown key"},
		{good + ev + "kernel = \"amdzen4\"\n", "want DIR/event_name"},
		{"[[model]\n", "user.toml"},
	} {
		if _, err := ParsePresets("user.toml", []byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
	// A user file takes precedence over the embedded models.
	path := filepath.Join(t.TempDir(), "mine.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(good, "0x10-0x1f", "0x55", 1)+ev), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPresets(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Select(CPUID{"GenuineIntel", 6, 0x55}); m == nil || m.ID != "x" || m.File != path {
		t.Errorf("user preset not preferred: %+v", m)
	}
}

// cpuinfoFromTarball extracts proc/cpuinfo from a hwloc capture, with the
// system's tar when there is one (its bzip2 is several times faster than
// compress/bzip2, which matters under -race), else in Go.
func cpuinfoFromTarball(path string) ([]byte, error) {
	if tarBin, err := exec.LookPath("tar"); err == nil {
		out, err := exec.Command(tarBin, "-xjOf", path, "--wildcards", "*/proc/cpuinfo").Output()
		if err == nil {
			return out, nil
		}
		if len(out) == 0 {
			return nil, nil // no proc/cpuinfo in this capture
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(bzip2.NewReader(bufio.NewReader(f)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(h.Name, "/proc/cpuinfo") && h.Typeflag == tar.TypeReg {
			return io.ReadAll(io.LimitReader(tr, 16<<20))
		}
	}
}

// TestPresetSelectionHwloc selects presets from the cpuinfo of every hwloc
// capture. The expectations come from the captures' vendor/family/model:
// only the Skylake-SP-class machines (family 6 model 85) are server cores
// this tool has presets for; the others are older, non-x86 or client CPUs.
func TestPresetSelectionHwloc(t *testing.T) {
	_, tars := testutil.HwlocFixtures(t)
	want := map[string]string{
		"32intel64-2p8co2t+8ve":           "skx",
		"memorysidecaches":                "skx",
		"fakememinitiators-1np2c+1npp+gi": "skx",
	}
	p := loadPresets(t)
	x86 := 0
	type result struct {
		data []byte
		err  error
	}
	results := make([]result, len(tars))
	var wg sync.WaitGroup
	for i, tb := range tars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].data, results[i].err = cpuinfoFromTarball(tb)
		}()
	}
	wg.Wait()
	for i, tb := range tars {
		name := strings.TrimSuffix(filepath.Base(tb), ".tar.bz2")
		data, err := results[i].data, results[i].err
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := "(no cpuinfo)"
		if data != nil {
			id, ok := ParseCPUInfo(data)
			got = ""
			if ok {
				x86++
				if m := p.Select(id); m != nil {
					got = m.ID
				}
			}
		}
		if got == "(no cpuinfo)" {
			continue
		}
		if got != want[name] {
			t.Errorf("%s: selected %q, want %q", name, got, want[name])
		}
	}
	if x86 < 20 {
		t.Errorf("only %d captures had an x86 cpuinfo; expected more than 20", x86)
	}
}

// TestPresetsLibpfm cross-checks every preset encoding that names a libpfm4
// event against libpfm4, an independent event library, through a small C
// helper, with LIBPFM_FORCE_PMU choosing the CPU model. It compares the
// event-select and unit-mask bits (libpfm4 adds the privilege and enable
// bits, which perf sets through other attribute fields).
func TestPresetsLibpfm(t *testing.T) {
	helper := buildPfmHelper(t)
	p := loadPresets(t)
	checked := 0
	for _, m := range p.Models {
		var names []string
		var evs []PresetEvent
		for _, e := range m.Events {
			if e.Pfm != "" {
				names, evs = append(names, e.Pfm), append(evs, e)
			}
		}
		if len(names) == 0 {
			t.Logf("%s: libpfm4 4.13 has no tables for this model; TestPresetsKernelTables checks its encodings against the kernel tables", m.ID)
			continue
		}
		pmu, _, _ := strings.Cut(names[0], "::")
		cmd := exec.Command(helper, names...)
		cmd.Env = append(os.Environ(), "LIBPFM_FORCE_PMU="+pmu)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: pfmencode: %v", m.ID, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(names) {
			t.Fatalf("%s: pfmencode printed %d lines for %d events:\n%s", m.ID, len(lines), len(names), out)
		}
		for i, line := range lines {
			_, val, _ := strings.Cut(line, "\t")
			code, err := strconv.ParseUint(strings.TrimPrefix(val, "0x"), 16, 64)
			if err != nil {
				t.Errorf("%s/%s: libpfm4 does not encode %s: %s", m.ID, evs[i].Name, names[i], val)
				continue
			}
			sp, _ := evs[i].ParseSpec()
			ev, err := Resolve(fixture(fixtureFor(m)), sp)
			if err != nil {
				t.Errorf("%s/%s: %v", m.ID, evs[i].Name, err)
				continue
			}
			const sel = 0xffff | 0xf<<32 // event select (incl. AMD's bits 32-35) and unit mask
			if ev.Attr.Config[0]&sel != code&sel {
				t.Errorf("%s/%s: numascope encodes %s as 0x%x, libpfm4 %s as 0x%x", m.ID, evs[i].Name, evs[i].Spec, ev.Attr.Config[0], names[i], code)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no preset encoding was cross-checked")
	}
	t.Logf("%d preset encodings agree with libpfm4", checked)
}

// buildPfmHelper compiles testdata/pfmencode.c against libpfm4. Without
// gcc or libpfm4 it skips, unless NUMASCOPE_PFM_REQUIRED is set (as in CI,
// after scripts/install-perf-deps), when it fails.
func buildPfmHelper(t *testing.T) string {
	t.Helper()
	skip := func(format string, args ...any) {
		testutil.SkipUnless(t, testutil.PfmRequired, format+" (install: scripts/install-perf-deps)", args...)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		cc, err = exec.LookPath("cc")
	}
	if err != nil {
		skip("no C compiler: the libpfm4 cross-check needs gcc")
	}
	bin := filepath.Join(t.TempDir(), "pfmencode")
	out, err := exec.Command(cc, "-O1", "-o", bin, "testdata/pfmencode.c", "-lpfm").CombinedOutput()
	if err != nil {
		skip("cannot build the libpfm4 helper (libpfm4-dev missing?): %v: %s", err, out)
	}
	return bin
}
