package cli

import (
	"strings"
	"testing"
)

func TestTopologyFlagsParse(t *testing.T) {
	for _, ok := range []topologyConfig{{format: "text"}, {format: "json"}, {format: "hwloc-xml"}, {format: "hwloc-xml", bench: "b.json"}} {
		if _, err := ok.parse(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for c, want := range map[topologyConfig]string{
		{format: "xml"}:                   "use text, json or hwloc-xml",
		{format: "json", bench: "b.json"}: "give --format hwloc-xml with it",
	} {
		if _, err := c.parse(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want one with %q", c, err, want)
		}
	}
}
