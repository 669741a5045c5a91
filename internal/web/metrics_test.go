package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/exporter"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// twoNodeMetrics is the exporter's handler on the two-node capture.
func twoNodeMetrics(t *testing.T) http.Handler {
	t.Helper()
	fs := sysfs.New("../sensor/testdata/twonode")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	x, err := exporter.New(exporter.Config{Env: sensor.Env{FS: fs, Topology: topo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x.Handler()
}

// getHost GETs path from s with the given Host header.
func getHost(t *testing.T, s *Server, path, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+s.Addr().String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	return testutil.Get(t, req)
}

// TestMetricsOutsideToken: /metrics answers without the token, and to any
// Host (a Prometheus server names the machine as it knows it), while the
// websocket still needs the token and a token-less server still refuses
// other Host names for everything else.
func TestMetricsOutsideToken(t *testing.T) {
	l := startServer(t, Options{Metrics: twoNodeMetrics(t)})
	code, body := getHost(t, l.Server, "/metrics", "numa-box.example:9864")
	if code != 200 || !strings.Contains(body, `numascope_node_numa_hit_total{numa_node="1"}`) {
		t.Errorf("/metrics without a token: HTTP %d\n%.300s", code, body)
	}
	if code, _ := getHost(t, l.Server, "/ws", l.Addr().String()); code != http.StatusUnauthorized {
		t.Errorf("/ws without a token: HTTP %d, want 401", code)
	}

	open := startServer(t, Options{NoToken: true, Metrics: twoNodeMetrics(t)})
	if code, _ := getHost(t, open.Server, "/metrics", "evil.example"); code != 200 {
		t.Errorf("--no-token server, /metrics for Host evil.example: HTTP %d, want 200", code)
	}
	if code, _ := getHost(t, open.Server, "/", "evil.example"); code != http.StatusForbidden {
		t.Errorf("--no-token server, / for Host evil.example: HTTP %d, want 403", code)
	}

	without := startServer(t, Options{})
	if code, _ := getHost(t, without.Server, "/metrics", without.Addr().String()); code == 200 {
		t.Errorf("a server without Options.Metrics answers /metrics")
	}
}
