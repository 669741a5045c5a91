package cli

import (
	"context"
	"errors"

	"github.com/numascope/numascope/internal/top"
)

// runTopTUI runs the interactive view.
func runTopTUI(ctx context.Context, c *top.Collector, cfg topConfig) error {
	return errors.New("the interactive view is not built yet: use -b")
}
