package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/profile"
)

// hostile is what a crafted file puts in a name, a level or a label: an
// OSC 2 title set, CSI 2J (clear the screen), BEL, a bidi override
// (U+202E) and NUL. The cleaned text keeps "]2;PWNED" as harmless
// printable text, which shows that the name did reach the output.
const hostile = "\x1b]2;PWNED\x07\x1b[2J\x07\u202e\x00"

// hostileJSON is hostile as a JSON or TOML string's content.
const hostileJSON = `\u001b]2;PWNED\u0007\u001b[2J\u0007\u202e\u0000`

// hostileCommands feeds every command that prints text from a file hostile
// names. Each case writes its files into dir and returns the arguments.
// view serves a page rather than printing: its crafted-recording test is
// internal/web's TestViewCraftedRecording.
var hostileCommands = map[string][]struct {
	name string
	args func(t *testing.T, dir string) []string
}{
	"stats anova": {
		{"text table", func(t *testing.T, dir string) []string {
			return []string{"stats", "anova", "-i", hostileCSV(t, dir), "-r", "y", "-f", "a,b"}
		}},
		{"markdown", func(t *testing.T, dir string) []string {
			return []string{"stats", "anova", "-i", hostileCSV(t, dir), "-r", "y", "-f", "a,b", "--format", "markdown"}
		}},
		{"json", func(t *testing.T, dir string) []string {
			return []string{"stats", "anova", "-i", hostileCSV(t, dir), "-r", "y", "-f", "a,b", "--format", "json"}
		}},
		{"factor has 1 level", func(t *testing.T, dir string) []string {
			f := write(t, dir, "one.csv", "a"+hostile+",b,y\n1,x,1\n1,z,2\n")
			return []string{"stats", "anova", "-i", f, "-r", "y", "-f", "a" + hostile + ",b"}
		}},
	},
	"experiment": {
		{"dry run", func(t *testing.T, dir string) []string {
			return []string{"experiment", hostileSpec(t, dir), "--dry-run", "--root", "../sensor/testdata/twonode"}
		}},
		{"analysis text", func(t *testing.T, dir string) []string {
			return []string{"experiment", hostileSpec(t, dir), "--analyze", "--root", "../sensor/testdata/twonode"}
		}},
		{"analysis markdown", func(t *testing.T, dir string) []string {
			return []string{"experiment", hostileSpec(t, dir), "--analyze", "--format", "markdown", "--root", "../sensor/testdata/twonode"}
		}},
		{"analysis json", func(t *testing.T, dir string) []string {
			return []string{"experiment", hostileSpec(t, dir), "--analyze", "--format", "json", "--root", "../sensor/testdata/twonode"}
		}},
	},
	"report": {
		{"one profile", func(t *testing.T, dir string) []string {
			return []string{"report", hostileProfile(t, dir, "0")}
		}},
		{"merged ranks", func(t *testing.T, dir string) []string {
			return []string{"report", hostileProfile(t, dir, "0"), hostileProfile(t, dir, "1")}
		}},
	},
	"convert": {
		{"csv with labels", func(t *testing.T, dir string) []string {
			return []string{"convert", "--labels", hostileRecording(t, dir)}
		}},
	},
}

// cleanByConstruction are the commands that print no text from a file
// or a client, or whose cleaning is tested where it happens; a command in
// neither list fails TestEveryCommandIsFedHostileNames, so that a new one
// is given a case or a reason.
var cleanByConstruction = map[string]string{
	"topology":     "prints the kernel's sysfs (numbers and CPU lists) of the user's own --root",
	"events":       "prints the catalog's names, which are numascope's own",
	"perf pmus":    "prints the kernel's PMU names from sysfs",
	"perf encode":  "prints the user's own argument, encoded",
	"perf presets": "prints numascope's presets and the user's own --presets files",
	"stat":         "prints numbers under numascope's own column names",
	"record":       "writes a recording; its labels arrive through recording.CleanLabel (internal/ctl, internal/live tests)",
	"live":         "serves a page; labels are cleaned on their way in (internal/live TestWebsocketLabelCleaned)",
	"exporter":     "serves Prometheus metrics under numascope's own names",
	"top":          "process and cgroup names from /proc are cleaned by term.Clean (internal/top tests)",
	"view":         "serves a page; a crafted recording's names and labels are tested in internal/web TestViewCraftedRecording",
	"run":          "runs the user's own command",
	"profile":      "writes a profile; its names are printed by report, tested here",
	"bench":        "prints numascope's own benchmark names",
	"ctl":          "sends the user's own label, cleaned by recording.CleanLabel; the steered process's command line is quoted by ctl's shellWord (internal/ctl TestShellWord)",
	"version":      "prints numascope's own build information",
	"stats":        "only lists its subcommands",
}

// TestHostileNames runs every command that prints names read from a file
// with hostile names: none of ESC, BEL, U+202E or NUL reaches stdout or
// stderr, and the cleaned remnant "]2;PWNED" shows that the name got there.
func TestHostileNames(t *testing.T) {
	for cmd, cases := range hostileCommands {
		for _, c := range cases {
			t.Run(cmd+"/"+c.name, func(t *testing.T) {
				args := c.args(t, t.TempDir())
				out, errs, code := runMain(t, args...)
				for what, s := range map[string]string{"stdout": out, "stderr": errs} {
					if i := strings.IndexAny(s, "\x1b\x07\x00\u202e\u009b"); i >= 0 {
						t.Errorf("exit %d: %q of %s reaches %s:\n%q", code, s[i:i+1], hostile, what, s[max(0, i-80):min(len(s), i+80)])
					}
				}
				if !strings.Contains(out+errs, "]2;PWNED") {
					t.Errorf("exit %d: the hostile name did not reach the output, so the test shows nothing:\nstdout %q\nstderr %q", code, out, errs)
				}
			})
		}
	}
}

// TestEveryCommandIsFedHostileNames: every runnable command has a case in
// hostileCommands or a reason in cleanByConstruction.
func TestEveryCommandIsFedHostileNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			name := strings.TrimPrefix(s.CommandPath(), "numascope ")
			_, fed := hostileCommands[name]
			why, exempt := cleanByConstruction[name]
			if s.Runnable() && !s.Hidden && !fed && (!exempt || why == "") {
				t.Errorf("numascope %s prints text from files or clients? Give it a case in hostileCommands, or say why not in cleanByConstruction", name)
			}
			walk(s)
		}
	}
	walk(newRoot())
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// hostileCSV is a 2x2 design whose levels of a are hostile.
func hostileCSV(t *testing.T, dir string) string {
	return write(t, dir, "h.csv", "a,b,y\n"+
		"p"+hostile+",1,2\np"+hostile+",2,3\nq"+hostile+",1,5\nq"+hostile+",2,7\n")
}

// hostileSpec is an experiment spec whose levels are hostile, with a
// results file of four runs for --analyze.
func hostileSpec(t *testing.T, dir string) string {
	l1, l2 := "p"+hostileJSON, "q"+hostileJSON
	spec := write(t, dir, "h.toml", `name = "h"
command = "true {x}"
replications = 2
events = ["vmstat.pgfault"]
responses = ["wall_time"]

[[factor]]
name = "x"
levels = ["`+l1+`", "`+l2+`"]
`)
	var b strings.Builder
	b.WriteString(`{"type":"experiment","name":"h","spec_hash":"x","seed":1,"runs":4,"created":"2026-01-01T00:00:00Z"}` + "\n")
	for i, l := range []string{l1, l2, l1, l2} {
		w := []string{"1", "2", "1.1", "2.2"}[i]
		b.WriteString(`{"type":"run","run":` + string(rune('0'+i)) + `,"rep":` + string(rune('1'+i/2)) + `,"levels":{"x":"` + l +
			`"},"command":["true"],"recording":"r","output":"","start":"2026-01-01T00:00:00Z","wall_time_s":` + w +
			`,"exit_status":0,"events":{},"responses":{"wall_time":` + w + `}}` + "\n")
	}
	write(t, dir, "h.results.jsonl", b.String())
	return spec
}

// hostileProfile is the 4-node capture with hostile command, host, rank,
// function, file and thread names.
func hostileProfile(t *testing.T, dir, rank string) string {
	b, err := os.ReadFile("../../testdata/profiles/serial-init-4node.json")
	if err != nil {
		t.Fatal(err)
	}
	var p profile.Profile
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	p.Command = []string{"./app" + hostile}
	p.Host, p.Rank = "h"+hostile, rank+hostile
	for i := range p.Locations {
		p.Locations[i].Function, p.Locations[i].File = "f"+hostile, "src"+hostile+".c"
	}
	for i := range p.Threads {
		p.Threads[i].Comm = "t" + hostile
	}
	p.Notes = append(p.Notes, "note"+hostile)
	out, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, "prof."+rank+".json", string(out))
}

// hostileRecording is a recording with hostile host, column name and label.
func hostileRecording(t *testing.T, dir string) string {
	return write(t, dir, "h.jsonl", `{"type":"header","format":"numascope","version":1,"host":"h`+hostileJSON+`","kernel":"k","interval_s":1,"sensors":[],`+
		`"columns":[{"name":"a.x`+hostileJSON+`","sensor":"a","event":"x","sources":[],"unit":"","kind":"gauge","desc":""}]}
[0,1]
{"type":"label","t":0.5,"text":"`+hostileJSON+`"}
[1,2]
`)
}
