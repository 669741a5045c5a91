package sampler

import (
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// TestOpenWithGivesTheRegisteredSensorsTheirOptions: the perf and uncore
// sensors are registered once, and the options given to OpenWith reach the
// sensors the registry makes: a malformed --perf-events specification makes
// both absent with its parse error, and Open (no options) does not see it.
func TestOpenWithGivesTheRegisteredSensorsTheirOptions(t *testing.T) {
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	env := sensor.Env{FS: fs, Topology: topo}
	opts := sensor.Options{Perf: sensor.PerfOptions{Events: []string{"cpu/event=0xd3"}}}
	cat := OpenWith(env, opts, "perf", "uncore")
	defer cat.Close()
	for _, name := range []string{"perf", "uncore"} {
		e := cat.Entry(name)
		if e == nil || e.Err == nil || !strings.Contains(e.Err.Error(), "--perf-events") {
			t.Errorf("%s with a malformed --perf-events: %+v, want it absent with the parse error", name, e)
		}
	}
	plain := Open(env, "perf")
	defer plain.Close()
	if e := plain.Entry("perf"); e.Err != nil && strings.Contains(e.Err.Error(), "--perf-events") {
		t.Errorf("Open without options reports the other catalog's --perf-events: %v", e.Err)
	}
}
