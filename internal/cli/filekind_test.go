package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestReportSaysWhatTheFileIs: `numascope report` given a recording (zstd
// or not, or legacy), a bench result, an experiment's results or spec, or
// convert's CSV says what the file is and what to run instead, in one
// line, rather than "invalid character '('"; a profile still reports, and
// a file that is none of these keeps the loader's error.
func TestReportSaysWhatTheFileIs(t *testing.T) {
	dir := t.TempDir()
	header := `{"type":"header","format":"numascope","version":3,"columns":[]}` + "\n" + `[0.1]` + "\n"
	var zst strings.Builder
	enc, err := zstd.NewWriter(&zst)
	if err != nil {
		t.Fatal(err)
	}
	zdata := enc.EncodeAll([]byte(header), nil)
	files := map[string]string{
		"run.jsonl.zst":         string(zdata),
		"run.jsonl":             header,
		"old.json":              `[{"t":0,"numa_hit":1}]`,
		"bench.json":            `{"latency_ns":[[80,140],[140,80]],"bandwidth_mbs":[[1,2],[2,1]]}`,
		"regimes.results.jsonl": `{"type":"experiment","name":"regimes","runs":4}` + "\n",
		"regimes.toml":          "command = \"app --size {size}\"\nreplications = 2\n[[factor]]\nname = \"size\"\nlevels = [1, 2]\n",
		"run.csv":               "time_s,vmstat.numa_hit\n0.1,3\n",
		"notes.txt":             "hello\n",
		"my run.jsonl":          header,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, c := range []struct {
		file string
		want string
	}{
		{"run.jsonl.zst", p("run.jsonl.zst") + " is a recording, not a profile: use numascope view " + p("run.jsonl.zst") + " or numascope convert " + p("run.jsonl.zst")},
		{"run.jsonl", "is a recording, not a profile: use numascope view"},
		{"old.json", "is a recording, not a profile"},
		{"my run.jsonl", "use numascope view '" + p("my run.jsonl") + "' or numascope convert '" + p("my run.jsonl") + "'"},
		{"bench.json", "is a bench result, not a profile: use numascope view " + p("bench.json")},
		{"regimes.results.jsonl", "is an experiment's results file, not a profile: use numascope experiment SPEC.toml --analyze"},
		{"regimes.toml", "is an experiment spec, not a profile: use numascope experiment " + p("regimes.toml")},
		{"run.csv", "is a CSV table of samples, not a profile: use numascope stats anova --input " + p("run.csv")},
		{"notes.txt", "not a numascope profile"},
	} {
		root := newRoot()
		root.SetArgs([]string{"report", p(c.file)})
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || (c.file != "notes.txt" && strings.Contains(err.Error(), "invalid character")) {
			t.Errorf("report %s: %v\nwant one line with %q", c.file, err, c.want)
		}
	}
	// A real profile is still reported (report writes to os.Stdout).
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	stdout := os.Stdout
	os.Stdout = null
	defer func() { os.Stdout = stdout }()
	root := newRoot()
	root.SetArgs([]string{"report", "../../testdata/profiles/serial-init-4node.json"})
	if err := root.Execute(); err != nil {
		t.Errorf("report of a profile: %v", err)
	}
}
