package cli

import (
	"context"
	"os"

	"github.com/numascope/numascope/internal/top"
	"github.com/numascope/numascope/internal/top/tui"
)

// runTopTUI runs the interactive view on the terminal.
func runTopTUI(ctx context.Context, c *top.Collector, cfg topConfig) error {
	return tui.Run(ctx, c, tui.Options{Interval: cfg.interval, Sort: cfg.sort, Filter: cfg.filter, Cgroups: cfg.cgroups}, os.Stdin, os.Stdout)
}
