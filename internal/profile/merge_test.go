package profile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// capture is the real 4-node serial-init profile of testdata/profiles.
const capture = "../../testdata/profiles/serial-init-4node.json"

// rankFiles writes one copy of the capture per rank into a temporary
// directory, each stamped with its rank and host and changed by edit, and
// returns their paths (in the order given, not rank order).
func rankFiles(t *testing.T, ranks []string, edit func(rank string, p *Profile)) []string {
	t.Helper()
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for _, r := range ranks {
		var p Profile
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		p.Rank, p.Host = r, "host"+r
		if edit != nil {
			edit(r, &p)
		}
		out, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "prof.host"+r+"."+r+".json")
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func loadAll(t *testing.T, files []string) []*Profile {
	t.Helper()
	var ps []*Profile
	for _, f := range files {
		p, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestMergeSumsRanks merges four ranks of which rank 2 has three times the
// remote accesses of the others, given out of order: the totals and the
// matrix are the sums of the per-rank files, the ranks come out in numeric
// order (10 after 2), and rank 2 is the outlier, 3× the median.
func TestMergeSumsRanks(t *testing.T) {
	files := rankFiles(t, []string{"10", "2", "0", "1"}, func(r string, p *Profile) {
		if r == "2" {
			p.Totals.Remote *= 3
		}
	})
	ps := loadAll(t, files)
	m, err := Merge(files, ps)
	if err != nil {
		t.Fatal(err)
	}
	var want Metrics
	var samples uint64
	for _, p := range ps {
		want.add(&p.Totals)
		samples += p.Samples
	}
	if m.Totals != want || m.Samples != samples {
		t.Errorf("totals %+v (%d samples), want the sum of the files %+v (%d)", m.Totals, m.Samples, want, samples)
	}
	if m.Matrix == nil {
		t.Fatalf("no summed matrix for four profiles of the same shape: %v", m.Notes)
	}
	for i, row := range m.Matrix.Counts {
		for j, c := range row {
			var s uint64
			for _, p := range ps {
				s += p.AccessMatrix.Counts[i][j]
			}
			if c != s {
				t.Errorf("matrix[%d][%d] = %d, want %d", i, j, c, s)
			}
		}
	}
	var order []string
	for _, r := range m.Ranks {
		order = append(order, r.Rank)
		if r.Host != "host"+r.Rank {
			t.Errorf("rank %s: host %q", r.Rank, r.Host)
		}
	}
	if strings.Join(order, ",") != "0,1,2,10" {
		t.Errorf("rank order %v", order)
	}
	base := ps[2].Totals.Remote // rank 0, unchanged
	o := m.Outlier
	if o == nil || o.Rank != "2" || o.Host != "host2" || o.Remote != 3*base || o.Median != float64(base) || o.Factor != 3 || !o.Outlier {
		t.Fatalf("outlier %+v, want rank 2 with %d remote, 3× the median %d", o, 3*base, base)
	}
	if v := o.Verdict(); !strings.Contains(v, "rank 2 on host2") || !strings.Contains(v, "3.0× the median") {
		t.Errorf("verdict %q", v)
	}
	if len(m.Notes) != 0 {
		t.Errorf("notes for four ranks of one job: %v", m.Notes)
	}

	var b strings.Builder
	if err := m.WriteReport(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"Profiles of 4 ranks", "Per rank", "Access matrix, summed", "it is the outlier"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
}

// TestMergeSumsUnaccountedFaults: the ranks' accesses of unknown node
// (handled after the rank exited) and faults after a loss are summed like
// the other counts, so that the merged report's local + remote + node
// unknown is every sampled access the files hold, and its header names the
// faults after a loss; each rank's line shows its own accesses of unknown
// node.
func TestMergeSumsUnaccountedFaults(t *testing.T) {
	unknown := map[string]uint64{"0": 0, "1": 17, "2": 5}
	afterLoss := map[string]uint64{"0": 3, "1": 0, "2": 40}
	files := rankFiles(t, []string{"0", "1", "2"}, func(r string, p *Profile) {
		p.AccessesNodeUnknown, p.FaultsAfterLoss = unknown[r], afterLoss[r]
	})
	ps := loadAll(t, files)
	m, err := Merge(files, ps)
	if err != nil {
		t.Fatal(err)
	}
	var acc uint64
	for _, p := range ps {
		acc += p.Totals.Accesses() + p.AccessesNodeUnknown
	}
	if m.AccessesNodeUnknown != 22 || m.FaultsAfterLoss != 43 {
		t.Errorf("merged accesses_node_unknown %d, faults_after_loss %d; want the sums over the files, 22 and 43", m.AccessesNodeUnknown, m.FaultsAfterLoss)
	}
	var b strings.Builder
	if err := m.WriteReport(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`, 43 after a loss \(counted neither as first touches nor as accesses\)\n`,
		fmt.Sprintf(`\nsampled accesses +%d +\n`, acc),
		`\n  node unknown \(handled after the exit\) +22 +`,
		`\n1 +host1 .* 17 +\S*prof\.host1\.1\.json`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("merged report does not match %q:\n%s", re, out)
		}
	}
}

// TestMergeNoOutlier: ranks within OutlierFactor of the median have no
// outlier, and the report says which rank has the most.
func TestMergeNoOutlier(t *testing.T) {
	files := rankFiles(t, []string{"0", "1", "2"}, func(r string, p *Profile) {
		if r == "1" {
			p.Totals.Remote = p.Totals.Remote * 5 / 4
		}
	})
	m, err := Merge(files, loadAll(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if o := m.Outlier; o == nil || o.Rank != "1" || o.Outlier || !strings.HasPrefix(o.Verdict(), "no outlier") {
		t.Errorf("outlier %+v", o)
	}
}

// TestMergeOtherShape merges a rank of another machine (two nodes): the
// totals are still summed, the matrices are not, and a note names the file.
func TestMergeOtherShape(t *testing.T) {
	files := rankFiles(t, []string{"0", "1"}, func(r string, p *Profile) {
		if r == "1" {
			p.Nodes = []int{0, 1}
			p.AccessMatrix = Matrix{ThreadNodes: []int{-1, 0, 1}, PageNodes: []int{0, 1}, Counts: [][]uint64{{0, 0}, {5, 1}, {2, 7}}}
		}
	})
	ps := loadAll(t, files)
	m, err := Merge(files, ps)
	if err != nil {
		t.Fatal(err)
	}
	var want Metrics
	want.add(&ps[0].Totals)
	want.add(&ps[1].Totals)
	if m.Totals != want {
		t.Errorf("totals %+v, want %+v", m.Totals, want)
	}
	if m.Matrix != nil {
		t.Errorf("matrices of different shapes summed")
	}
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], files[1]) || !strings.Contains(m.Notes[0], "another shape") {
		t.Errorf("notes %q", m.Notes)
	}
}

// TestMergeUnnamedRanks: profiles that record no rank are named by file.
func TestMergeUnnamedRanks(t *testing.T) {
	files := rankFiles(t, []string{"0", "1"}, func(r string, p *Profile) { p.Rank = "" })
	m, err := Merge(files, loadAll(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if m.Ranks[0].Rank != filepath.Base(files[0]) || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "record no rank") {
		t.Errorf("ranks %+v, notes %q", m.Ranks, m.Notes)
	}
}

// TestLoadBadRankFile: a truncated or malformed rank file is a one-line
// error naming it.
func TestLoadBadRankFile(t *testing.T) {
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string][]byte{
		"truncated.json": b[:len(b)*6/10],
		"malformed.json": []byte(`{"access_matrix": {"counts": "x"}}`),
		"empty.json":     nil,
		"other.json":     []byte(`{"type":"header"}`),
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, body, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(f)
		if err == nil || !strings.Contains(err.Error(), f) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want a one-line error naming the file", name, err)
		}
	}
}
