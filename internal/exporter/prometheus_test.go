package exporter

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

// touchEnv makes TestTouchHelper touch that many fresh pages and exit: a
// workload that allocates a known number of pages.
const touchEnv = "NUMASCOPE_TEST_TOUCH"

func TestTouchHelper(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(touchEnv))
	if n == 0 {
		t.Skip("helper process for TestPrometheus")
	}
	testutil.TouchPages(t, n)
	os.Exit(0)
}

// promServer is a real Prometheus (Debian's) scraping the exporter.
type promServer struct {
	base string // http://127.0.0.1:PORT
}

// freePort picks a free loopback port for Prometheus, which cannot be told
// to pick one itself.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startPrometheus starts Prometheus scraping target every second, with a
// configuration and storage of its own in a temporary directory, and waits
// until it is ready. It is stopped at the end of the test.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	bin := testutil.Prometheus(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: numascope
    static_configs:
      - targets: ['%s']
`, target)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	var log strings.Builder
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", log.String())
		}
	})
	p := &promServer{base: "http://" + addr}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited before it was ready (%v):\n%s", err, log.String())
		default:
		}
		if resp, err := http.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60 s:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sample is one series of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample %v: %v", s, err)
	}
	return v
}

// query runs an instant query through the HTTP API, at time at (zero: now),
// and returns the vector; an error from Prometheus fails the test.
func (p *promServer) query(t *testing.T, expr string, at time.Time) []sample {
	t.Helper()
	res, err := p.tryQuery(expr, at)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (p *promServer) tryQuery(expr string, at time.Time) ([]sample, error) {
	v := url.Values{"query": {expr}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	resp, err := http.PostForm(p.base+"/api/v1/query", v)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %s: HTTP %d, %v: %s", expr, resp.StatusCode, err, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s: %s", expr, r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s, want a vector", expr, r.Data.ResultType)
	}
	return r.Data.Result, nil
}

// waitSample waits until the newest scrape of the exporter began after t0
// (a sample's timestamp is its scrape's start, and the exporter reads after
// that), and returns that scrape's time.
func (p *promServer) waitSample(t *testing.T, t0 time.Time) time.Time {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res := p.query(t, `timestamp(numascope_scrape_reads_total{job="numascope"})`, time.Time{})
		if len(res) == 1 {
			ts := res[0].value(t)
			at := time.UnixMilli(int64(math.Round(ts * 1000)))
			// 5 ms past t0: Prometheus may shift a scrape's timestamp by up
			// to 2 ms to align it with the scrape interval.
			if at.After(t0.Add(5 * time.Millisecond)) {
				return at
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no scrape of the exporter after %v within 30 s", t0)
	return time.Time{}
}

// kernelNumaHit is the sum of numa_hit over the nodes' numastat files.
func kernelNumaHit(t *testing.T, topo *topology.Topology) float64 {
	t.Helper()
	var sum float64
	for _, n := range topo.Nodes {
		sum += kernelCounter(t, "/sys/devices/system/node/node"+strconv.Itoa(n.ID)+"/numastat", "numa_hit")
	}
	return sum
}

// TestPrometheus has Debian's Prometheus scrape the exporter on this
// machine, then checks through Prometheus's HTTP API: the per-node series
// and their labels, that numa_hit follows a workload that allocates a known
// number of pages, and that every query of the Grafana dashboard returns
// data.
func TestPrometheus(t *testing.T) {
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		t.Fatal(err)
	}
	if !topo.NUMA {
		t.Fatal("this kernel has no NUMA nodes in sysfs: numastat, and so the test, needs a kernel built with CONFIG_NUMA")
	}
	x, cgroups := dashboardExporter(t)
	target := strings.TrimPrefix(serve(t, x, ""), "http://")
	prom := startPrometheus(t, target)
	deadline := time.Now().Add(30 * time.Second)
	for {
		up := prom.query(t, `up{job="numascope"}`, time.Time{})
		if len(up) == 1 && up[0].value(t) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus does not scrape the exporter: up = %v", up)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var nodes []string
	for _, n := range topo.Nodes {
		nodes = append(nodes, strconv.Itoa(n.ID))
	}

	t.Run("series", func(t *testing.T) {
		for _, name := range []string{"numascope_node_numa_hit_total", "numascope_node_numa_miss_total",
			"numascope_node_memory_free_bytes", "numascope_node_vmstat_nr_free_pages"} {
			res := prom.query(t, name, time.Time{})
			var got []string
			for _, s := range res {
				want := map[string]string{"__name__": name, "instance": target, "job": "numascope", "numa_node": s.Metric["numa_node"]}
				if !maps(s.Metric, want) {
					t.Errorf("%s series labels %v, want %v", name, s.Metric, want)
				}
				got = append(got, s.Metric["numa_node"])
			}
			sort.Strings(got)
			if !slices.Equal(got, sortedCopy(nodes)) {
				t.Errorf("%s: numa_node labels %v, want the nodes %v", name, got, nodes)
			}
		}
		dist := prom.query(t, "numascope_numa_distance", time.Time{})
		if len(dist) != len(nodes)*len(nodes) {
			t.Errorf("%d distance series for %d nodes", len(dist), len(nodes))
		}
		for _, s := range dist {
			from, _ := strconv.Atoi(s.Metric["from"])
			to, _ := strconv.Atoi(s.Metric["to"])
			if want := topo.Distance(from, to); s.value(t) != float64(want) {
				t.Errorf("distance %d>%d = %v, want %d", from, to, s.value(t), want)
			}
		}
		for _, s := range prom.query(t, "numascope_numa_node_info", time.Time{}) {
			id, _ := strconv.Atoi(s.Metric["numa_node"])
			if n := topo.Node(id); n == nil || s.Metric["cpus"] != sysfs.FormatCPUList(n.CPUs) {
				t.Errorf("node info %v does not match the topology", s.Metric)
			}
		}
		if res := prom.query(t, `numascope_vmstat_numa_hit_total`, time.Time{}); len(res) != 1 || res[0].Metric["numa_node"] != "" {
			t.Errorf("numascope_vmstat_numa_hit_total: %v, want one machine-wide series", res)
		}
	})

	t.Run("numa_hit follows a workload", func(t *testing.T) {
		const pages = 65536 // 256 MiB of 4 KiB pages: more than this machine allocates in the background in a few seconds
		k0 := kernelNumaHit(t, topo)
		tBefore := prom.waitSample(t, time.Now())
		before := prom.query(t, `sum(numascope_node_numa_hit_total{job="numascope"})`, tBefore)
		cmd := exec.Command(os.Args[0], "-test.run=^TestTouchHelper$")
		cmd.Env = append(os.Environ(), touchEnv+"="+strconv.Itoa(pages))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the workload failed: %v\n%s", err, out)
		}
		tAfter := prom.waitSample(t, time.Now())
		after := prom.query(t, `sum(numascope_node_numa_hit_total{job="numascope"})`, tAfter)
		k1 := kernelNumaHit(t, topo)
		if len(before) != 1 || len(after) != 1 {
			t.Fatalf("sum of numa_hit: %v before, %v after", before, after)
		}
		vb, va := before[0].value(t), after[0].value(t)
		t.Logf("numa_hit: kernel %.0f, Prometheus %.0f at %v, %.0f at %v, kernel %.0f; workload %d pages", k0, vb, tBefore.Format(time.StampMilli), va, tAfter.Format(time.StampMilli), k1, pages)
		if vb < k0 || va > k1 {
			t.Errorf("Prometheus's numa_hit (%.0f, then %.0f) is not the kernel's: it read %.0f before and %.0f after", vb, va, k0, k1)
		}
		if va-vb < pages {
			t.Errorf("numa_hit grew by %.0f pages across a workload that allocated %d", va-vb, pages)
		}
		// The same through rate() and increase() over a window that covers
		// both samples, as a dashboard computes them.
		window := int(math.Ceil(tAfter.Sub(tBefore).Seconds())) + 1
		w := strconv.Itoa(window) + "s"
		inc := prom.query(t, `sum(increase(numascope_node_numa_hit_total{job="numascope"}[`+w+`]))`, tAfter)
		rate := prom.query(t, `sum(rate(numascope_node_numa_hit_total{job="numascope"}[`+w+`]))`, tAfter)
		if len(inc) != 1 || inc[0].value(t) < pages {
			t.Errorf("increase(numa_hit[%s]) = %v, want at least the workload's %d pages", w, inc, pages)
		}
		if len(rate) != 1 || rate[0].value(t)*float64(window) < pages {
			t.Errorf("rate(numa_hit[%s]) = %v, × %d s is less than the workload's %d pages", w, rate, window, pages)
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		prom.waitSample(t, time.Now().Add(2*time.Second)) // 10 s rate windows with several samples
		checkDashboard(t, prom, target, nodes, cgroups)
	})
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaEscape is how Grafana writes a value of a multi-value variable
// into a regex matcher: regex metacharacters escaped, the backslash doubled
// for PromQL's string.
func grafanaEscape(v string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// checkDashboard loads contrib/grafana/numascope.json and runs, against
// Prometheus: each variable's label_values query (it must list this
// exporter and its nodes), and every panel's queries with the variables set
// as Grafana sets them, once with All and once per node. Each must succeed
// and return at least one series: a series of value 0 is data (hinting
// faults with NUMA balancing off), no series is not.
func checkDashboard(t *testing.T, prom *promServer, instance string, nodes, cgroups []string) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "contrib/grafana/numascope.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("contrib/grafana/numascope.json: %v", err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", v.Name, v.Definition)
			continue
		}
		sel := strings.ReplaceAll(m[1], "$instance", grafanaEscape(instance))
		var got []string
		for _, s := range prom.query(t, "count by ("+m[2]+") ("+sel+")", time.Time{}) {
			got = append(got, s.Metric[m[2]])
		}
		want := map[string][]string{"instance": {instance}, "numa_node": nodes, "cgroup": cgroups}[v.Name]
		if !slices.Equal(sortedCopy(got), sortedCopy(want)) {
			t.Errorf("variable %s lists %v, want %v", v.Name, got, want)
		}
		if v.AllValue != ".*" {
			t.Errorf("variable %s: allValue %q, want .*", v.Name, v.AllValue)
		}
	}
	if !vars["instance"] || !vars["numa_node"] || !vars["cgroup"] {
		t.Errorf("the dashboard's variables are %v, want instance, numa_node and cgroup", vars)
	}
	choices := append([]string{".*"}, nodes...) // All, then each node
	queries := 0
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, node := range choices {
				expr := strings.NewReplacer("$instance", grafanaEscape(instance), "$numa_node", node, "$cgroup", ".*",
					"$__rate_interval", "10s").Replace(tg.Expr)
				if strings.Contains(expr, "$") {
					t.Errorf("panel %q: %s uses a variable the test does not set", p.Title, tg.Expr)
					break
				}
				res, err := prom.tryQuery(expr, time.Time{})
				queries++
				switch {
				case err != nil:
					t.Errorf("panel %q: %v", p.Title, err)
				case len(res) == 0:
					t.Errorf("panel %q, numa_node %q: %s returns nothing", p.Title, node, expr)
				}
				if !strings.Contains(tg.Expr, "$numa_node") {
					break // the same query for every node
				}
			}
		}
	}
	t.Logf("%d panels, %d queries, all returned data", len(d.Panels), queries)
}
