package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRootHelpListsEveryCommand: the root help comes from cobra's command
// list, so every command is in a group and named in it.
func TestRootHelpListsEveryCommand(t *testing.T) {
	root := newRoot()
	var buf strings.Builder
	root.SetOut(&buf)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := buf.String()
	want := []string{"bench", "convert", "ctl", "events", "experiment", "exporter", "live", "perf",
		"profile", "record", "report", "run", "stat", "stats", "top", "topology", "version", "view"}
	var got []string
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		got = append(got, c.Name())
		if c.GroupID == "" {
			t.Errorf("%s is in no group", c.Name())
		}
		if !strings.Contains(help, "\n  "+c.Name()+" ") {
			t.Errorf("the root help does not list %s:\n%s", c.Name(), help)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("commands %v, want %v", got, want)
	}
	if obs := help[strings.Index(help, "Observe:"):strings.Index(help, "Analyse:")]; !strings.Contains(obs, "\n  exporter ") {
		t.Errorf("exporter is not in the Observe group:\n%s", obs)
	}
	for _, g := range commandGroups {
		if !strings.Contains(help, "\n"+g.title+"\n") {
			t.Errorf("the root help has no %q group", g.title)
		}
	}
}

// TestExitStatus: an error the recorder already reported ends the process
// with status 1 and is not printed again, unless a caller wrapped it in more
// context (an experiment's run), which is then printed whole.
func TestExitStatus(t *testing.T) {
	stopped := errors.New("writing recording r.jsonl: no space left on device")
	for _, tc := range []struct {
		err  error
		code int
		said string
	}{
		{nil, 0, ""},
		{exitError{3}, 3, ""},
		{reported{stopped}, 1, ""},
		{fmt.Errorf("recording: %w", reported{stopped}), 1, "numascope: recording: writing recording r.jsonl: no space left on device\n"},
		{stopped, 1, "numascope: writing recording r.jsonl: no space left on device\n"},
	} {
		var b strings.Builder
		if code := exitStatus(tc.err, &b); code != tc.code || b.String() != tc.said {
			t.Errorf("exitStatus(%v) = %d, printed %q; want %d, %q", tc.err, code, b.String(), tc.code, tc.said)
		}
	}
}

// TestLiveHelpOffersOnlyWhatItTakes: live shares stat's session flags but
// samples until interrupted and shows rates per second, so it refuses -n and
// --per; its help must not offer them (a newcomer copying a flag from --help
// got "does not apply"), and a script that passes them still gets the refusal.
func TestLiveHelpOffersOnlyWhatItTakes(t *testing.T) {
	help, errs, code := runMain(t, "live", "--help")
	if code != 0 {
		t.Fatalf("live --help: exit %d: %s", code, errs)
	}
	for _, flag := range []string{"--count ", "--per "} {
		if strings.Contains(help, flag) {
			t.Errorf("live --help offers %s, which live refuses", flag)
		}
	}
	if !strings.Contains(help, "--interval") {
		t.Errorf("live --help lacks --interval: %s", help)
	}
	for _, args := range [][]string{{"live", "-n", "5"}, {"live", "--per", "node"}} {
		if _, errs, code := runMain(t, args...); code == 0 || !strings.Contains(errs, "does not apply") {
			t.Errorf("numascope %v: exit %d, stderr %q: want the refusal", args, code, errs)
		}
	}
}
