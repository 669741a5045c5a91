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
	"strconv"
	"strings"
	"sync"
	"testing"
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
		{CPUID{"AuthenticAMD", 0x19, 0x01}, "zen3"},
		{CPUID{"AuthenticAMD", 0x19, 0x21}, "zen3"},
		{CPUID{"AuthenticAMD", 0x19, 0x11}, "zen4"},
		{CPUID{"AuthenticAMD", 0x19, 0xa0}, "zen4"},
		{CPUID{"AuthenticAMD", 0x1a, 0x02}, "zen5"},
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

// TestPresetsComplete checks the preset data: each Intel server model from
// SKX to GNR and each Zen from 2 to 5 has numa-traffic events; the Intel
// ones have memory-bandwidth and interconnect, and every event cites a
// vendor document.
func TestPresetsComplete(t *testing.T) {
	p := loadPresets(t)
	seen := map[string]bool{}
	for _, m := range p.Models {
		seen[m.ID] = true
		if len(m.Preset("numa-traffic")) == 0 {
			t.Errorf("%s: no numa-traffic events", m.ID)
		}
		if m.Vendor == "GenuineIntel" {
			for _, pr := range []string{"memory-bandwidth", "interconnect"} {
				if len(m.Preset(pr)) == 0 {
					t.Errorf("%s: no %s events", m.ID, pr)
				}
			}
		}
		for _, e := range m.Events {
			if !strings.Contains(e.Source, "Intel") && !strings.Contains(e.Source, "AMD") {
				t.Errorf("%s/%s: source %q cites no vendor document", m.ID, e.Name, e.Source)
			}
		}
	}
	for _, id := range []string{"skx", "icx", "spr", "emr", "gnr", "zen2", "zen3", "zen4", "zen5"} {
		if !seen[id] {
			t.Errorf("no preset model %s", id)
		}
	}
}

// TestPresetsResolve resolves every preset event of every model against
// the fixture tree of its vendor, and checks that the fixture machines
// select the right model: the encodings fit the kernel's format fields.
func TestPresetsResolve(t *testing.T) {
	p := loadPresets(t)
	for tree, id := range map[string]string{"intel-skx": "skx", "amd-zen2": "zen2", "amd-zen4": "zen4"} {
		cpu, err := ReadCPUID(fixture(tree))
		if err != nil {
			t.Fatal(err)
		}
		if m := p.Select(cpu); m == nil || m.ID != id {
			t.Errorf("%s: selected %v, want %s", tree, m, id)
		}
	}
	tree := map[string]string{"GenuineIntel": "intel-skx", "AuthenticAMD": "amd-zen2"}
	for _, m := range p.Models {
		for _, e := range m.Events {
			sp, err := e.ParseSpec()
			if err != nil {
				t.Errorf("%s/%s: %v", m.ID, e.Name, err)
				continue
			}
			ev, err := Resolve(fixture(tree[m.Vendor]), sp)
			if err != nil {
				t.Errorf("%s/%s on %s: %v", m.ID, e.Name, tree[m.Vendor], err)
				continue
			}
			if ev.Name != e.Name {
				t.Errorf("%s/%s: resolved name %q", m.ID, e.Name, ev.Name)
			}
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

// sharedFixtures locates ../shared/fixtures/hwloc-linux from the repo root.
func sharedFixtures(t *testing.T) string {
	dir, _ := filepath.Abs(".")
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(filepath.Dir(d), "shared", "fixtures", "hwloc-linux")
			if _, err := os.Stat(p); err != nil {
				t.Skipf("%s is absent: the hwloc captures are not available here", p)
			}
			return p
		}
	}
	t.Skip("repository root not found")
	return ""
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
	dir := sharedFixtures(t)
	tars, _ := filepath.Glob(filepath.Join(dir, "*.tar.bz2"))
	if len(tars) == 0 {
		t.Skipf("no captures in %s", dir)
	}
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
	// The fixture tree whose core-PMU format encodes each vendor's events.
	tree := map[string]string{"GenuineIntel": "intel-skx", "AuthenticAMD": "amd-zen2"}
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
			t.Logf("%s: libpfm4 4.13 has no tables for this model; its encodings are checked against the fixtures only", m.ID)
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
			ev, err := Resolve(fixture(tree[m.Vendor]), sp)
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
	skip := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...) + " (install: scripts/install-perf-deps)"
		if os.Getenv("NUMASCOPE_PFM_REQUIRED") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
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
