package sampler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// TestDescribeMatchesSelect: on this machine, every event the description
// marks unavailable is one Select refuses with that reason, and every other
// event of a present sensor is one Select takes; an unknown sensor is
// described as absent with its reason.
func TestDescribeMatchesSelect(t *testing.T) {
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	names := append(sensor.Names(), "nosuch")
	cat := Open(sensor.Env{FS: fs, Topology: topo}, names...)
	defer cat.Close()
	descs := cat.Describe()
	if len(descs) != len(names) {
		t.Fatalf("%d descriptions for %d sensors", len(descs), len(names))
	}
	unavailable := 0
	for _, d := range descs {
		if d.Sources == nil || d.Events == nil {
			t.Errorf("sensor %s: nil sources or events (JSON null)", d.Name)
		}
		if !d.Present {
			if d.Reason == "" || len(d.Events) != 0 {
				t.Errorf("absent sensor %s: reason %q, %d events", d.Name, d.Reason, len(d.Events))
			}
			continue
		}
		for _, ev := range d.Events {
			_, err := cat.Select([]string{d.Name + "." + ev.Name}, false)
			if ev.Available() {
				if err != nil || ev.Reason != "" || ev.Fix != "" {
					t.Errorf("%s.%s is described available (reason %q) but Select says %v", d.Name, ev.Name, ev.Reason, err)
				}
				continue
			}
			unavailable++
			if err == nil || !strings.Contains(err.Error(), ev.Reason) || ev.Reason == "" {
				t.Errorf("%s.%s is described unavailable (%q) but Select says %v", d.Name, ev.Name, ev.Reason, err)
			}
			if strings.Contains(ev.Reason, fixSep) || (ev.Fix != "" && ev.Unavailable != ev.Reason+fixSep+ev.Fix) {
				t.Errorf("%s.%s: %q split into reason %q and fix %q", d.Name, ev.Name, ev.Unavailable, ev.Reason, ev.Fix)
			}
		}
	}
	if nd := descs[len(descs)-1]; nd.Present || !strings.Contains(nd.Reason, "no sensor named") {
		t.Errorf("unknown sensor described as %+v", nd)
	}
	b, err := json.Marshal(descs[len(descs)-1])
	if err != nil || string(b) != `{"name":"nosuch","present":false,"reason":`+string(mustMarshal(t, descs[len(descs)-1].Reason))+`,"sources":[],"events":[]}` {
		t.Errorf("absent sensor JSON %s (%v)", b, err)
	}
	t.Logf("%d sensors, %d unavailable events", len(descs), unavailable)
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
