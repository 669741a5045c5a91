// Command numascope is a NUMA observability toolkit for Linux: it shows
// where memory lives, who touches it, and what that costs.
package main

import (
	"os"

	"github.com/numascope/numascope/internal/cli"
	"github.com/numascope/numascope/internal/profile"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == profile.CloserArg {
		os.Exit(profile.RunCloser()) // profile's background closer of perf events
	}
	os.Exit(cli.Main(os.Args[1:]))
}
