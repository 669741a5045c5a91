package exporter

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/numascope/numascope/internal/testutil"
)

// TestPromtoolCheckMetrics runs the real promtool check metrics (Debian's
// prometheus package) on a scrape of the exporter on this machine, over
// HTTP as Prometheus makes it, and fails on any warning: promtool exits 3
// and prints one line per problem. Before the names were spelt out it gave
// five warnings of abbreviated units (s_reclaimable_bytes,
// s_unreclaim_bytes, sec_page_tables_bytes, nr_sec_page_table_pages twice).
func TestPromtoolCheckMetrics(t *testing.T) {
	bin := testutil.Promtool(t)
	base := serve(t, newTestExporter(t, ""), "")
	resp, err := http.Get(base + "/metrics") // no Accept: the text format 0.0.4, which promtool reads
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	families := strings.Count(string(body), "# TYPE ")
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics on a scrape of this machine (%d families): %v\n%s", families, err, out)
	}
	t.Logf("promtool check metrics: %d families, no warning", families)
}

// lint runs client_golang's promlint, the linter promtool check metrics
// runs, on an exposition in the text format, and fails on any problem.
func lint(t *testing.T, what, body string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s: %s", what, p.Metric, p.Text)
	}
}

// TestNamesLint lints the exporter's scrape of this machine and of the
// two-node capture with promlint, without promtool: the same rules, run
// wherever the unit tests run.
// The third root is a kernel without NUMA (live1's /proc alone), where
// node 0 is /proc/meminfo, whose DirectMap2M gave "direct_map2_m".
func TestNamesLint(t *testing.T) {
	noNUMA := t.TempDir()
	if err := os.CopyFS(filepath.Join(noNUMA, "proc"), os.DirFS("../sensor/testdata/live1/proc")); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"", twoNode, noNUMA} {
		body, _ := get(t, newTestExporter(t, root).Handler(), "")
		lint(t, "root "+root, body)
	}
}

// TestSpelledOut: the fields that promtool read as abbreviated units have
// the names docs/exporter.md lists, and the old names are gone.
func TestSpelledOut(t *testing.T) {
	for in, want := range map[string]string{
		"SReclaimable": "slab_reclaimable", "SUnreclaim": "slab_unreclaimable",
		"SecPageTables": "secondary_page_tables", "nr_sec_page_table_pages": "nr_secondary_page_table_pages",
		"DirectMap2M": "direct_map2m", "DirectMap4k": "direct_map4k", "DirectMap1G": "direct_map1_g",
		"x_ms_y": "x_msy", "a_b_c": "a_bc", "h": "h", "s_m": "sm", "ab_m_b": "abmb",
	} {
		if got := metricPart(in); got != want {
			t.Errorf("metricPart(%q) = %q, want %q", in, got, want)
		}
	}
	body, _ := get(t, newTestExporter(t, twoNode).Handler(), "")
	fams := parseText(t, body)
	for _, name := range []string{"numascope_node_memory_slab_reclaimable_bytes", "numascope_node_memory_slab_unreclaimable_bytes"} {
		if fams[name] == nil {
			t.Errorf("the two-node capture has no %s", name)
		}
	}
	for name := range fams {
		for _, old := range []string{"_s_reclaimable", "_s_unreclaim", "_sec_page_table"} {
			if strings.Contains(name, old) {
				t.Errorf("%s keeps the abbreviated name", name)
			}
		}
	}
}

// FuzzMetricPartLint: whatever a kernel file calls a value, the names made
// of it pass promlint's name checks, as long as the name has a second word
// to join an abbreviation to (abbreviationFree).
func FuzzMetricPartLint(f *testing.F) {
	for _, s := range []string{"SReclaimable", "SUnreclaim", "SecPageTables", "nr_sec_page_table_pages", "DirectMap2M", "x_s", "m_b_s_x", "Active(anon)", "__", "9x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		part := metricPart(s)
		if !strings.Contains(part, "_") {
			return // one word: an abbreviation alone stays (no kernel name is one)
		}
		help := "h"
		for _, mf := range []*dto.MetricFamily{
			{Name: ptr("numascope_vmstat_" + part + "_total"), Help: &help, Type: dto.MetricType_COUNTER.Enum()},
			{Name: ptr("numascope_node_vmstat_" + part), Help: &help, Type: dto.MetricType_GAUGE.Enum()},
		} {
			problems, err := promlint.NewWithMetricFamilies([]*dto.MetricFamily{mf}).Lint()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				if strings.Contains(p.Text, "abbreviated") {
					t.Errorf("%q gives %s: %s", s, p.Metric, p.Text)
				}
			}
		}
	})
}

func ptr(s string) *string { return &s }
