package sensor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

func TestVmstatEvents(t *testing.T) {
	s := openSensor(t, "vmstat", "testdata/live1", nil)
	if got := s.Sources(); !reflect.DeepEqual(got, []string{""}) {
		t.Errorf("sources %q, want one unnamed source", got)
	}
	ref := refKV(t, "testdata/live1/proc/vmstat")
	evs := s.Events()
	if len(evs) != len(ref) {
		t.Errorf("%d events for %d lines of vmstat", len(evs), len(ref))
	}
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.Name] || strings.Contains(e.Name, ".") || e.Desc == "" || e.Unit == "" {
			t.Errorf("bad event %+v (duplicate %v)", e, seen[e.Name])
		}
		seen[e.Name] = true
		if _, ok := ref[e.Name]; !ok {
			t.Errorf("event %q is not a line of vmstat", e.Name)
		}
	}
	for _, c := range []struct {
		name, unit string
		kind       ValueKind
	}{
		{"nr_free_pages", "pages", Gauge},
		{"nr_dirty", "pages", Gauge},
		{"nr_kernel_stack", "KiB", Gauge},
		{"nr_dirty_threshold", "pages", Gauge},
		{"nr_dirtied", "pages", Counter},
		{"nr_written", "pages", Counter},
		{"nr_foll_pin_acquired", "pages", Counter},
		{"nr_foll_pin_released", "pages", Counter},
		{"nr_vmscan_write", "pages", Counter},
		{"workingset_nodes", "nodes", Gauge},
		{"workingset_refault_file", "pages", Counter},
		{"numa_hit", "pages", Counter},
		{"numa_miss", "pages", Counter},
		{"numa_foreign", "pages", Counter},
		{"numa_interleave", "pages", Counter},
		{"numa_local", "pages", Counter},
		{"numa_other", "pages", Counter},
		{"numa_pages_migrated", "pages", Counter},
		{"numa_hint_faults", "faults", Counter},
		{"numa_hint_faults_local", "faults", Counter},
		{"numa_huge_pte_updates", "events", Counter},
		{"pgfault", "faults", Counter},
		{"pgmajfault", "faults", Counter},
		{"pgmigrate_success", "pages", Counter},
		{"pgmigrate_fail", "pages", Counter},
		{"pgpgin", "KiB", Counter},
		{"pgpgout", "KiB", Counter},
		{"pgalloc_normal", "pages", Counter},
		{"allocstall_normal", "stalls", Counter},
		{"thp_fault_alloc", "events", Counter},
		{"thp_migration_success", "events", Counter},
		{"compact_stall", "events", Counter},
		{"compact_migrate_scanned", "pages", Counter},
		{"oom_kill", "events", Counter},
	} {
		e := evs[eventIndex(t, s, c.name)]
		if e.Unit != c.unit || e.Kind != c.kind {
			t.Errorf("%s: %s %s, want %s %s", c.name, e.Kind, e.Unit, c.kind, c.unit)
		}
	}
	if d := evs[eventIndex(t, s, "pgalloc_normal")].Desc; d != "pages allocated in zone normal" {
		t.Errorf("pgalloc_normal: %q", d)
	}
}

func TestVmstatReadFixture(t *testing.T) {
	s := openSensor(t, "vmstat", "testdata/live1", nil)
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	ref := refKV(t, "testdata/live1/proc/vmstat")
	nonzero := 0
	for i, e := range s.Events() {
		if dst[i] != ref[e.Name] {
			t.Errorf("%s = %d, file says %d", e.Name, dst[i], ref[e.Name])
		}
		if dst[i] != 0 {
			nonzero++
		}
	}
	if nonzero < 20 {
		t.Errorf("only %d non-zero values: fixture or reader broken", nonzero)
	}
	if got, want := files(s), []string{"testdata/live1/proc/vmstat"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Files() = %q, want %q", got, want)
	}
	if a := testing.AllocsPerRun(100, func() { s.Read(dst) }); a != 0 {
		t.Errorf("Read allocates %v times per call", a)
	}
}

func TestVmstatSubset(t *testing.T) {
	s := openSensor(t, "vmstat", "testdata/live1", nil)
	ref := refKV(t, "testdata/live1/proc/vmstat")
	names := []string{"pgfault", "numa_hit", "nr_free_pages", "direct_map_level2_splits"}
	var idx []int
	for _, n := range names {
		idx = append(idx, eventIndex(t, s, n))
	}
	if err := s.Enable(idx); err != nil {
		t.Fatal(err)
	}
	dst := make([]int64, len(idx))
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	for k, n := range names {
		if dst[k] != ref[n] {
			t.Errorf("%s = %d, file says %d", n, dst[k], ref[n])
		}
	}
	if err := s.Enable(nil); err != nil {
		t.Fatal(err)
	}
	if f := files(s); len(f) != 0 {
		t.Errorf("nothing enabled, yet Files() = %q", f)
	}
	if err := s.Read(nil); err != nil {
		t.Errorf("Read with nothing enabled: %v", err)
	}
	if err := s.Enable([]int{len(s.Events())}); err == nil {
		t.Error("Enable accepted an index out of range")
	}
}

// TestVmstatLayoutChange edits the file under the open descriptor: a line
// inserted at the top (every line moves), a line removed, values grown.
func TestVmstatLayoutChange(t *testing.T) {
	root := testutil.CopyTree(t, "testdata/live1")
	path := filepath.Join(root, "proc/vmstat")
	s := openSensor(t, "vmstat", root, nil)
	dst := enableAll(t, s)
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	check := func(what string, gone map[string]int64) {
		t.Helper()
		ref := refKV(t, path)
		for i, e := range s.Events() {
			want, ok := ref[e.Name]
			if !ok {
				want = gone[e.Name]
			}
			if dst[i] != want {
				t.Errorf("%s: %s = %d, want %d", what, e.Name, dst[i], want)
			}
		}
	}
	rewrite(t, path, func(s string) string {
		return "numa_brand_new 99\n" + strings.Replace(s, "numa_hit ", "numa_hit 1000000", 1)
	})
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	check("inserted line", nil)
	if a := testing.AllocsPerRun(20, func() { s.Read(dst) }); a != 0 {
		t.Errorf("Read allocates %v times per call after a resync", a)
	}

	// A line that vanishes keeps its last value, so a counter never drops.
	last := refKV(t, path)["pgfault"]
	rewrite(t, path, func(s string) string {
		lines := strings.SplitAfter(s, "\n")
		var out []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "pgfault ") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "")
	})
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	check("removed line", map[string]int64{"pgfault": last})
}

func TestVmstatGarbage(t *testing.T) {
	s := openSensor(t, "vmstat", "testdata/garbage", nil)
	dst := enableAll(t, s)
	err := s.Read(dst)
	if err == nil {
		t.Fatal("garbage value read without error")
	}
	for _, want := range []string{"testdata/garbage/proc/vmstat", "line 13", "numa_miss 12x4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Events before the garbage one read fine on their own.
	if err := s.Enable([]int{eventIndex(t, s, "numa_hit")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Read(dst[:1]); err != nil {
		t.Errorf("numa_hit alone: %v", err)
	}
}

func TestVmstatAbsent(t *testing.T) {
	s, _ := New("vmstat", Options{})
	err := s.Open(Env{FS: fsAt("testdata/missing")})
	if err == nil || !strings.Contains(err.Error(), "testdata/missing/proc/vmstat not found") {
		t.Errorf("Open on a tree without proc/vmstat: %v", err)
	}
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "proc"), 0o755)
	os.WriteFile(filepath.Join(empty, "proc/vmstat"), nil, 0o644)
	if err := s.Open(Env{FS: fsAt(empty)}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Open on an empty vmstat: %v", err)
	}
}

// TestVmstatLive reads the running kernel: every counter read lies between
// the values of the file read just before and just after.
func TestVmstatLive(t *testing.T) {
	s := openSensor(t, "vmstat", "", nil)
	dst := enableAll(t, s)
	before := refKV(t, "/proc/vmstat")
	if err := s.Read(dst); err != nil {
		t.Fatal(err)
	}
	after := refKV(t, "/proc/vmstat")
	// Every line is an event, and the counters among them are checked.
	if len(s.Events()) != len(before) {
		t.Errorf("%d events, /proc/vmstat has %d lines", len(s.Events()), len(before))
	}
	counters := 0
	for i, e := range s.Events() {
		b, ok := before[e.Name]
		if !ok {
			t.Errorf("%s: not in /proc/vmstat", e.Name)
			continue
		}
		if e.Kind != Counter {
			continue
		}
		counters++
		if uint64(dst[i]) < uint64(b) || uint64(dst[i]) > uint64(after[e.Name]) {
			t.Errorf("%s = %d, not within [%d, %d]", e.Name, dst[i], b, after[e.Name])
		}
	}
	if counters < 50 {
		t.Errorf("only %d of the %d events are counters: the live /proc/vmstat has over a hundred", counters, len(s.Events()))
	}
	if a := testing.AllocsPerRun(100, func() { s.Read(dst) }); a != 0 {
		t.Errorf("Read allocates %v times per call", a)
	}
}

func BenchmarkReadVmstat(b *testing.B) {
	s := openSensor(b, "vmstat", "", nil)
	dst := enableAll(b, s)
	benchRead(b, s, dst)
}

// BenchmarkBaselineVmstat is the bare pread of the files BenchmarkReadVmstat reads.
func BenchmarkBaselineVmstat(b *testing.B) {
	s := openSensor(b, "vmstat", "", nil)
	enableAll(b, s)
	benchBaseline(b, s)
}
