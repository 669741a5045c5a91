package cli

import (
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
	n := 0
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		n++
		if c.GroupID == "" {
			t.Errorf("%s is in no group", c.Name())
		}
		if !strings.Contains(help, "\n  "+c.Name()+" ") {
			t.Errorf("the root help does not list %s:\n%s", c.Name(), help)
		}
	}
	if n != 16 {
		t.Errorf("%d commands, want 16", n)
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
