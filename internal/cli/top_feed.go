package cli

import (
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/top"
)

// newTopFeed builds the process feed of live's processes page: top's
// collector over env, its kernel event sources opened when the page is
// first viewed (with the --presets files, for the DRAM figures). The caller
// closes it.
func newTopFeed(env sensor.Env, presets []string) (*top.Collector, error) {
	return top.NewCollector(env.FS, top.Options{
		OpenEvents: func() (top.EventSource, []string) { return openTopEvents(env.FS, presets) },
	})
}
