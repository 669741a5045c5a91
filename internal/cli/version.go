package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version, commit and buildDate are set by `make build` with -ldflags -X
// (see the Makefile): the tag or `git describe` of the tree, its commit and
// when it was built. A plain `go build` leaves them empty; the commit and
// its time then still come from the build information the go command
// stamps into the binary (vcs.*), which it leaves out in a git worktree or
// with -buildvcs=false, where the -X commit stands in.
var (
	version   string
	commit    string
	buildDate string
)

// buildInfo is what `numascope --version` prints: enough to tell which
// code a bug report was made with.
type buildInfo struct {
	Version   string // release tag or git describe; "devel" when unknown
	Commit    string // vcs.revision
	Modified  bool   // vcs.modified: built from a tree with uncommitted changes
	Committed string // vcs.time, RFC 3339
	Built     string // build date from make build, else ""
	Go        string // runtime.Version()
	Platform  string // GOOS/GOARCH
}

// readBuildInfo combines the -X values with debug.ReadBuildInfo. read is
// debug.ReadBuildInfo, a parameter for tests.
func readBuildInfo(read func() (*debug.BuildInfo, bool)) buildInfo {
	b := buildInfo{Version: version, Commit: commit, Built: buildDate, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := read(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version // go install module@version
		}
		if bi.GoVersion != "" {
			b.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Committed = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// write prints b, one fact a line, saying "unknown" rather than leaving a
// line out, so that a report shows what was missing.
func (b buildInfo) write(w io.Writer) {
	rev := b.Commit
	switch {
	case rev == "":
		rev = "unknown (built outside a git checkout, or with -buildvcs=false)"
	case b.Modified:
		rev += " (with uncommitted changes)"
	}
	committed := b.Committed
	if committed == "" {
		committed = "unknown"
	}
	built := b.Built
	if built == "" {
		built = "unknown (make build records it)"
	}
	fmt.Fprintf(w, "numascope %s\ncommit:     %s\ncommitted:  %s\nbuilt:      %s\ngo:         %s %s\n",
		b.Version, rev, committed, built, b.Go, b.Platform)
}

func (b buildInfo) String() string {
	var s strings.Builder
	b.write(&s)
	return s.String()
}

// newVersionCmd is `numascope version`, the same as `numascope --version`.
func newVersionCmd(*globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print numascope's version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			readBuildInfo(debug.ReadBuildInfo).write(cmd.OutOrStdout())
			return nil
		},
	}
}
