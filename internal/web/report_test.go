package web

import (
	"math"
	"strings"
	"testing"
)

func TestReportServesTheExperimentInHello(t *testing.T) {
	payload := map[string]any{
		"analysis": map[string]any{"name": "tiny", "responses": []any{}},
		"runs":     []any{map[string]any{"run": 1, "events": map[string]any{}}},
	}
	r := serveReport(t, "tiny.results.jsonl", payload)

	// Two clients get the same report.
	for i := 0; i < 2; i++ {
		c := dial(t, r.Server, "")
		h := c.Next("hello", typeIs("hello"))
		if h["mode"] != "experiment" || h["file"] != "tiny.results.jsonl" {
			t.Fatalf("hello %v", h)
		}
		x, _ := h["experiment"].(map[string]any)
		a, _ := x["analysis"].(map[string]any)
		runs, _ := x["runs"].([]any)
		if a["name"] != "tiny" || len(runs) != 1 {
			t.Fatalf("experiment in hello: %v", h["experiment"])
		}
		// Nothing to ask for: an error reply, and the connection stays.
		c.Send(`{"type":"range","id":7}`)
		e := c.Next("error", typeIs("error"))
		if !strings.Contains(e["error"].(string), "answers no requests") || e["id"].(float64) != 7 {
			t.Fatalf("error %v", e)
		}
		c.Send(`{"type":"pause"}`)
		c.Next("error", typeIs("error"))
	}
}

func TestReportRefusesWhatIsNotJSON(t *testing.T) {
	if _, err := NewReport(Options{}, "x", map[string]float64{"nan": math.NaN()}); err == nil || !strings.Contains(err.Error(), "encoding the experiment report") {
		t.Fatalf("err %v", err)
	}
}
