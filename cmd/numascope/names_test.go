package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSelectedNamesAreReturned: the name an event is selected by is the
// name every output gives it, on a one-node machine as on a multi-node one
// (issue 30: `-e node.0.numa_hit --discrete` gave the recording column
// node.numa_hit and the stat CSV column numa_hit on one node, so a script
// written on one machine broke on the next).
func TestSelectedNamesAreReturned(t *testing.T) {
	sel := "node.0.numa_hit,node.numa_miss,vmstat.numa_hit,cpu.0.user"
	want := []string{"time_s", "node.0.numa_hit", "node.numa_miss", "vmstat.numa_hit", "cpu.0.user"}
	for _, discrete := range []bool{false, true} {
		args := []string{"stat", "--csv", "-i", "100ms", "-n", "2", "-e", sel}
		if discrete {
			args = append(args, "--discrete")
			// With --discrete a source-less name is one column per node:
			// node.numa_miss becomes node.N.numa_miss for every N.
			want = []string{"time_s", "node.0.numa_hit"}
		}
		out, errs, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) != 3 {
			t.Fatalf("%v: csv: %v\n%s", args, err, out)
		}
		if !discrete && !slices.Equal(rows[0], want) {
			t.Errorf("%v: heading %q, want %q", args, rows[0], want)
		}
		if discrete {
			if !slices.Equal(rows[0][:2], want) || !slices.Contains(rows[0], "vmstat.numa_hit") || !slices.Contains(rows[0], "cpu.0.user") {
				t.Errorf("%v: heading %q, want it to start %q and hold vmstat.numa_hit and cpu.0.user", args, rows[0], want)
			}
			for _, h := range rows[0][1:] {
				if !regexp.MustCompile(`^(vmstat\.[a-z_]+|(node|cpu)\.[0-9]+\.[A-Za-z_]+)$`).MatchString(h) {
					t.Errorf("%v: column %q is not SENSOR.NODE.EVENT (or vmstat.EVENT, which has no nodes)", args, h)
				}
			}
		}
	}

	// A recording names its columns the same way, and convert gives them back.
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	if _, errs, code := run(t, "record", "-o", rec, "-i", "100ms", "-e", sel, "--", "sleep", "0.25"); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	out, errs, code := run(t, "convert", rec)
	if code != 0 {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	if head, _, _ := strings.Cut(out, "\n"); head != strings.Join([]string{"time_s", "node.0.numa_hit", "node.numa_miss", "vmstat.numa_hit", "cpu.0.user"}, ",") {
		t.Errorf("convert heading %q, want the names selected", head)
	}
}

// TestExperimentDocExampleDryRuns: the example spec of docs/experiment.md
// passes --dry-run as written (it failed with "the runs do not record
// node.0.numa_hit" on a one-node machine).
func TestExperimentDocExampleDryRuns(t *testing.T) {
	doc, err := os.ReadFile("../../docs/experiment.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```toml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/experiment.md has no ```toml block")
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "regimes.toml")
	if err := os.WriteFile(spec, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "experiment", "--dry-run", spec)
	if code != 0 || !strings.Contains(out, "runs; results to ") {
		t.Fatalf("experiment --dry-run on the docs' example: exit %d: %s\n%s", code, errs, out)
	}
}
