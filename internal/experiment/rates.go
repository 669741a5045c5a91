package experiment

import (
	"fmt"
	"strings"
)

// CheckRates refuses a rate: response of a gauge. gauges maps each gauge
// the runs record ("sensor.event", as the catalog knows them) to its unit. A
// gauge is a level (free memory): its "rate" was its mean level divided by
// the run's wall time, 2e11 /s for node.MemFree, a figure that means
// nothing; total: is its mean level over the run.
func (s *Spec) CheckRates(gauges map[string]string) error {
	for _, resp := range s.Responses {
		if resp.Metric != Rate {
			continue
		}
		for _, ev := range []string{resp.Event, resp.Minus} {
			key := ev
			if parts := strings.Split(ev, "."); len(parts) >= 3 {
				key = parts[0] + "." + parts[len(parts)-1] // sensor.N.event
			}
			if unit, ok := gauges[key]; ok && ev != "" {
				return fmt.Errorf("%s: response %s: %s is a gauge (a level, in %s), so its rate per second means nothing; use %s for its mean level over the run",
					s.Path, resp.Name, ev, unit, "total:"+strings.TrimPrefix(resp.Name, string(Rate)+":"))
			}
		}
	}
	return nil
}
