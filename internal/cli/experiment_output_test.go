package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

// TestExperimentOutputsRefuseAnotherUsersSymlink is issue 28, finding 4,
// for the outputs -o does not cover: an experiment's results file (from
// the spec) and its --report, which opened their path as given, so that
// another user's link x -> DIR (DIR standing for /etc) had root's
// experiment create or append to DIR/r.jsonl and truncate DIR/victim.conf,
// and its runs directory, which was created through the link (mkdir -p).
// The link is nobody's, in a directory that is neither sticky nor
// world-writable, so fs.protected_symlinks would not stop it. Each is
// refused with one line naming the link and its owner, before any run;
// nothing appears or changes in DIR; the same outputs through real
// directories are written.
func TestExperimentOutputsRefuseAnotherUsersSymlink(t *testing.T) {
	testutil.RequireRoot(t, "to give the planted symbolic link another owner (lchown to nobody)")
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := write(t, etc, "victim.conf", "precious\n")
	x := filepath.Join(root, "x")
	if err := os.Symlink(etc, x); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(x, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(root, "ran")
	want := x + ` is a symbolic link (to "` + etc + `") owned by `
	spec := func(name, results, runs string) string {
		return write(t, root, name+".toml", `name = "`+name+`"
command = "touch `+ran+` `+ran+`.{f}"
replications = 1
events = ["vmstat.pgfault"]
responses = ["wall_time"]
results = "`+results+`"
runs = "`+runs+`"

[[factor]]
name = "f"
levels = ["a", "b"]
`)
	}
	analyzable := hostileSpec(t, root) // with root/h.results.jsonl
	for _, c := range []struct {
		name    string
		args    []string
		created string // must not appear in etc
	}{
		{"results", []string{"experiment", spec("e1", filepath.Join(x, "r.jsonl"), filepath.Join(root, "runs1"))}, "r.jsonl"},
		{"results onto a file", []string{"experiment", spec("e2", filepath.Join(x, "victim.conf"), filepath.Join(root, "runs2"))}, ""},
		{"runs directory", []string{"experiment", spec("e3", filepath.Join(root, "e3.results.jsonl"), filepath.Join(x, "runs", "deeper"))}, "runs"},
		{"report", []string{"experiment", analyzable, "--analyze", "--report", filepath.Join(x, "report.md")}, "report.md"},
		{"report onto a file", []string{"experiment", analyzable, "--analyze", "--report", filepath.Join(x, "victim.conf")}, ""},
	} {
		stderr, code := numascope(t, c.args)
		if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "uid 65534") {
			t.Errorf("%s: exit %d, stderr %q; want it refused with %q", c.name, code, stderr, want)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
			t.Errorf("%s: %d lines on stderr, want one: %q", c.name, n+1, stderr)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
			t.Fatalf("%s wrote through the link: victim.conf is %q (%v)", c.name, b, err)
		}
		if c.created != "" {
			if _, err := os.Lstat(filepath.Join(etc, c.created)); err == nil {
				t.Fatalf("%s created %s through the link", c.name, filepath.Join(etc, c.created))
			}
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%s ran the command before refusing the output", c.name)
		}
	}

	// Through real directories both are written.
	report := filepath.Join(root, "report.md")
	if stderr, code := numascope(t, []string{"experiment", analyzable, "--analyze", "--report", report}); code != 0 {
		t.Fatalf("--report to a real directory: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(report); err != nil || len(b) == 0 {
		t.Fatalf("--report to a real directory wrote %d bytes (%v)", len(b), err)
	}
	results := filepath.Join(root, "ok.results.jsonl")
	if stderr, code := numascope(t, []string{"experiment", spec("ok", results, filepath.Join(root, "okruns"))}); code != 0 {
		t.Fatalf("an experiment with its results in a real directory: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(results); err != nil || strings.Count(string(b), "\n") != 3 {
		t.Fatalf("results: %q (%v), want a header and two runs", b, err)
	}
}

// TestOtherOutputsRefuseLinks: the outputs that are neither -o nor the
// experiment's results (issue 28, finding 4). A run's output file in the
// runs directory, where another user who can write that directory plants
// run-0000.out -> DIR/victim.conf, truncated the victim (os.Create follows
// the link); profile's --capture and NUMASCOPE_CPUPROFILE went through
// another user's directory link. Each is refused, naming the link, and
// DIR is left as it was.
func TestOtherOutputsRefuseLinks(t *testing.T) {
	testutil.RequireRoot(t, "to give the planted symbolic links another owner (lchown to nobody)")
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := write(t, etc, "victim.conf", "precious\n")
	runs := filepath.Join(root, "runs")
	if err := os.Mkdir(runs, 0o777); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(root, "x")
	for link, target := range map[string]string{x: etc, filepath.Join(runs, "run-0000.out"): victim, filepath.Join(runs, "run-0001.out"): victim} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	spec := write(t, root, "e.toml", `name = "e"
command = "echo {f}"
replications = 1
events = ["vmstat.pgfault"]
responses = ["wall_time"]
runs = "`+runs+`"

[[factor]]
name = "f"
levels = ["a", "b"]
`)
	check := func(name, stderr string, code int, want string, fails bool) {
		t.Helper()
		if (fails && code == 0) || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want it refused with %q", name, code, stderr, want)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
			t.Fatalf("%s wrote through a link: victim.conf is %q (%v)", name, b, err)
		}
		if ents, _ := os.ReadDir(etc); len(ents) != 1 {
			t.Fatalf("%s created files through a link: %d entries in etc", name, len(ents))
		}
	}
	stderr, code := numascope(t, []string{"experiment", spec})
	check("a run's output file", stderr, code, "cannot write the run's output file "+filepath.Join(runs, "run-0000.out")+": it is a symbolic link", true)

	stderr, code = numascope(t, []string{"profile", "--capture", filepath.Join(x, "cap"), "-o", filepath.Join(root, "p.json"), "--", "true"})
	check("profile --capture", stderr, code, x+` is a symbolic link (to "`+etc+`") owned by `, true)

	// The CPU profile is a developer's aid: refused, it is said, and the command runs on.
	stderr, _ = numascope(t, []string{"version"}, "NUMASCOPE_CPUPROFILE="+filepath.Join(x, "cpu.prof"))
	check("NUMASCOPE_CPUPROFILE", stderr, 1, "NUMASCOPE_CPUPROFILE: cannot write the CPU profile "+filepath.Join(x, "cpu.prof")+": "+x+" is a symbolic link", false)
}
