package profile

import (
	"math"
	"strings"
	"testing"
)

// TestLoadRefusesCraftedCounts: a profile whose access matrix is ragged, or
// whose counts sum past 64 bits the way the report sums them (it printed
// "sampled accesses 18446744073709551614"), is refused by Load with a
// one-line error naming the file and the field.
func TestLoadRefusesCraftedCounts(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(p *Profile)
	}{
		{"ragged row", "access_matrix.counts[1] has 2 counts for 4 page_nodes (a ragged matrix)",
			func(p *Profile) { p.AccessMatrix.Counts[1] = p.AccessMatrix.Counts[1][:2] }},
		{"missing rows", "access_matrix.counts has 1 rows for",
			func(p *Profile) { p.AccessMatrix.Counts = p.AccessMatrix.Counts[:1] }},
		{"totals wrap", "totals: local + remote (18446744073709551615 + 18446744073709551615) overflows 64 bits",
			func(p *Profile) { p.Totals.Local, p.Totals.Remote = math.MaxUint64, math.MaxUint64 }},
		{"matrix wraps", "access_matrix.counts[0][1]: the matrix's sum overflows 64 bits",
			func(p *Profile) { p.AccessMatrix.Counts[0][0], p.AccessMatrix.Counts[0][1] = math.MaxUint64, 2 }},
		{"location wraps", "locations[0].metrics: local + remote",
			func(p *Profile) { p.Locations[0].Metrics.Local, p.Locations[0].Metrics.Remote = 1, math.MaxUint64 }},
		{"thread wraps", "threads[0].metrics: first_touch + local + remote overflows 64 bits",
			func(p *Profile) { p.Threads[0].Metrics.FirstTouch, p.Threads[0].Metrics.Local = math.MaxUint64, 1 }},
		{"unknown wraps", "totals.local + totals.remote + accesses_node_unknown overflows 64 bits",
			func(p *Profile) { p.AccessesNodeUnknown = math.MaxUint64 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rankFiles(t, []string{"0"}, func(_ string, p *Profile) { tc.edit(p) })[0]
			_, err := Load(f)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), f) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Load: %v; want a one-line error naming %s and containing %q", err, f, tc.want)
			}
		})
	}
}

// TestMergeRefusesWrappingSums: ranks whose counts are each valid but whose
// sum over the ranks wraps around 64 bits are refused, naming the file and
// the field, instead of printing a wrapped total.
func TestMergeRefusesWrappingSums(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(p *Profile)
	}{
		{"remote", "totals.remote (9223372036854775808 + 9223372036854775808)", func(p *Profile) { p.Totals.Remote, p.Totals.Local = 1<<63, 0 }},
		{"samples", "samples (", func(p *Profile) { p.Samples = math.MaxUint64 }},
		{"faults after loss", "faults_after_loss (9223372036854775808 + 9223372036854775808)", func(p *Profile) { p.FaultsAfterLoss = 1 << 63 }},
		{"node unknown", "accesses_node_unknown (9223372036854775808 + 9223372036854775808)", func(p *Profile) {
			p.Totals.Local, p.Totals.Remote, p.AccessesNodeUnknown = 0, 0, 1<<63
		}},
		{"accesses with node unknown", "totals summed over the ranks: local + remote + accesses_node_unknown", func(p *Profile) {
			p.Totals.Local, p.Totals.Remote, p.AccessesNodeUnknown = 1<<62, 0, 1<<62
		}},
		{"accesses", "totals summed over the ranks: local + remote", func(p *Profile) { p.Totals.Remote, p.Totals.Local = 1<<62, 1<<62 }},
		{"matrix", "access_matrix.counts[2][3]: summed over the ranks", func(p *Profile) {
			for _, row := range p.AccessMatrix.Counts {
				clear(row)
			}
			p.AccessMatrix.Counts[2][3] = 1 << 63
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := rankFiles(t, []string{"0", "1"}, func(_ string, p *Profile) { tc.edit(p) })
			m, err := Merge(files, loadAll(t, files))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Merge: %v (merged totals %+v); want a one-line error containing %q", err, m, tc.want)
			}
		})
	}
}
