package cli

import (
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/top"
)

// openTopEvents opens top's kernel event sources. (Wired to
// internal/numatrace once it lands.)
func openTopEvents(fs sysfs.FS) (top.EventSource, []string) {
	return nil, []string{"local/remote NUMA faults and migrations by reason: no event source is built into this numascope yet"}
}
