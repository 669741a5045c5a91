package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFromBuildInfo: --version reports the commit, its time and
// whether the tree had uncommitted changes from the go command's vcs
// stamps, the version and build date from make build's -X values, and
// says "unknown" for what neither gave rather than leaving a line out.
func TestVersionFromBuildInfo(t *testing.T) {
	stamped := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-27T07:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, true
	}
	version, buildDate = "v1.4.0", "2026-11-27T08:00:00Z"
	defer func() { version, buildDate = "", "" }()
	got := readBuildInfo(stamped).String()
	for _, want := range []string{"numascope v1.4.0\n", "commit:     0123456789abcdef0123456789abcdef01234567 (with uncommitted changes)\n",
		"committed:  2026-11-27T07:00:00Z\n", "built:      2026-11-27T08:00:00Z\n", "go:         go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("--version with make build's values and vcs stamps:\n%s\nwant a line %q", got, want)
		}
	}

	// A plain go build outside a checkout: nothing stamped, nothing set.
	version, buildDate = "", ""
	got = readBuildInfo(func() (*debug.BuildInfo, bool) { return nil, false }).String()
	for _, want := range []string{"numascope devel\n", "commit:     unknown", "committed:  unknown\n", "built:      unknown", "go:         " + runtime.Version()} {
		if !strings.Contains(got, want) {
			t.Errorf("--version of a bare build:\n%s\nwant %q", got, want)
		}
	}
	// go install module@v1.2.3 stamps the module version.
	if got := readBuildInfo(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true
	}); got.Version != "v1.2.3" {
		t.Errorf("version of a go install build = %q, want v1.2.3", got.Version)
	}
}

// TestVersionFlagAndCommand: `numascope --version`, `-v` and `numascope
// version` print the same text, on stdout.
func TestVersionFlagAndCommand(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		root := newRoot()
		var out, errs strings.Builder
		root.SetOut(&out)
		root.SetErr(&errs)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("numascope %v: %v", args, err)
		}
		if !strings.HasPrefix(out.String(), "numascope ") || !strings.Contains(out.String(), "\ngo:") || errs.Len() != 0 {
			t.Errorf("numascope %v printed %q, stderr %q", args, out.String(), errs.String())
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] || outs[1] != outs[2] {
		t.Errorf("--version, -v and version differ:\n%s\n%s\n%s", outs[0], outs[1], outs[2])
	}
}
