// Command numascope is a NUMA observability toolkit for Linux: it shows
// where memory lives, who touches it, and what that costs.
package main

import (
	"os"

	"github.com/numascope/numascope/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
