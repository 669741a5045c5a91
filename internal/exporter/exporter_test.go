package exporter

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"

	"github.com/numascope/numascope/internal/testutil"
)

// twoNode is a real two-node capture (internal/sensor's fixture).
const twoNode = "../sensor/testdata/twonode"

// newTestExporter opens the exporter on root ("" for this machine).
func newTestExporter(t testing.TB, root string) *Exporter {
	t.Helper()
	fs := sysfs.New(root)
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(Config{Env: sensor.Env{FS: fs, Topology: topo}, Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// get requests path from h with the Accept header and returns the body and
// the Content-Type.
func get(t *testing.T, h http.Handler, accept string) (string, string) {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String(), rec.Header().Get("Content-Type")
}

// parseText parses the text format with Prometheus's own parser.
func parseText(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the text format: %v", err)
	}
	return fams
}

// byLabel maps a family's series to their value by the value of label.
func byLabel(f *dto.MetricFamily, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == label {
				out[l.GetValue()] = value(m)
			}
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.Untyped.GetValue()
}

// kernelCounter reads one "name value" line of a kernel file.
func kernelCounter(t *testing.T, path, name string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[0] == "Node" { // a node's meminfo: "Node 0 MemFree: N kB"
			f = f[2:]
		}
		if len(f) >= 2 && strings.TrimSuffix(f[0], ":") == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("%s has no %s", path, name)
	return 0
}

// TestTextFormatHelpTypeAndConventions scrapes this machine and checks every
// family with Prometheus's parser: HELP and TYPE on each, counters ending
// in _total and gauges not, the numa_node label on every per-node family,
// and the names issue 17 requires.
func TestTextFormatHelpTypeAndConventions(t *testing.T) {
	x := newTestExporter(t, "")
	body, ctype := get(t, x.Handler(), "")
	if !strings.HasPrefix(ctype, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q without an Accept header, want the text format", ctype)
	}
	fams := parseText(t, body)
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
		case dto.MetricType_GAUGE:
			if strings.HasSuffix(name, "_total") {
				t.Errorf("gauge %s ends in _total", name)
			}
		default:
			t.Errorf("%s has type %v: no TYPE line", name, f.GetType())
		}
		if strings.HasPrefix(name, "numascope_node_") {
			for _, m := range f.Metric {
				if len(m.Label) != 1 || m.Label[0].GetName() != "numa_node" {
					t.Errorf("%s: labels %v, want numa_node only", name, m.Label)
				}
			}
		}
	}
	topo, err := topology.Discover(sysfs.New(""))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, n := range topo.Nodes {
		nodes = append(nodes, strconv.Itoa(n.ID))
	}
	perNode := []string{"numascope_node_memory_free_bytes", "numascope_node_memory_total_bytes"}
	if topo.NUMA {
		perNode = append(perNode, "numascope_node_numa_hit_total", "numascope_node_numa_miss_total",
			"numascope_node_numa_foreign_total", "numascope_node_local_node_total", "numascope_node_other_node_total",
			"numascope_node_interleave_hit_total", "numascope_node_vmstat_nr_free_pages")
	}
	for _, name := range perNode {
		f := fams[name]
		if f == nil {
			t.Errorf("no %s", name)
			continue
		}
		got := byLabel(f, "numa_node")
		for _, n := range nodes {
			if _, ok := got[n]; !ok {
				t.Errorf("%s has no series for numa_node=%q: %v", name, n, got)
			}
		}
	}
	for _, name := range []string{"numascope_vmstat_numa_hit_total", "numascope_vmstat_pgfault_total",
		"numascope_vmstat_nr_free_pages", "numascope_numa_distance", "numascope_numa_node_info",
		"numascope_scrape_errors_total", "numascope_scrape_collector_success"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	// Every numa_*, pgpromote_*, pgdemote_* and pgmigrate_* line of
	// /proc/vmstat is there as a counter.
	vm, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(vm), "\n") {
		name, _, _ := strings.Cut(l, " ")
		for _, p := range []string{"numa_", "pgpromote_", "pgdemote_", "pgmigrate_"} {
			if strings.HasPrefix(name, p) && fams["numascope_vmstat_"+name+"_total"] == nil {
				t.Errorf("/proc/vmstat has %s but there is no numascope_vmstat_%s_total", name, name)
			}
		}
	}
	// The values are the kernel's: a counter read before the scrape is at
	// most the exported value, one read after at least.
	if topo.NUMA {
		path := "/sys/devices/system/node/node" + nodes[0] + "/numastat"
		before := kernelCounter(t, path, "numa_hit")
		body, _ := get(t, x.Handler(), "")
		after := kernelCounter(t, path, "numa_hit")
		got := byLabel(parseText(t, body)["numascope_node_numa_hit_total"], "numa_node")[nodes[0]]
		if got < before || got > after {
			t.Errorf("numa_hit of node %s exported as %v, the kernel's went from %v to %v", nodes[0], got, before, after)
		}
	}
	free := byLabel(fams["numascope_node_memory_total_bytes"], "numa_node")[nodes[0]]
	if free < 1<<20 {
		t.Errorf("node %s MemTotal exported as %v bytes: not in bytes?", nodes[0], free)
	}
}

// TestOpenMetricsNegotiation asks for OpenMetrics as Prometheus does and
// checks the format: its content type, a HELP and TYPE for every family,
// counters' samples with _total under a family named without it, # EOF.
func TestOpenMetricsNegotiation(t *testing.T) {
	x := newTestExporter(t, twoNode)
	body, ctype := get(t, x.Handler(), "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	if !strings.HasPrefix(ctype, "application/openmetrics-text; version=1.0.0") {
		t.Fatalf("Content-Type %q, want OpenMetrics 1.0.0", ctype)
	}
	if !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("OpenMetrics body does not end in # EOF")
	}
	help, typ := map[string]bool{}, map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "# HELP "):
			help[strings.Fields(l)[2]] = true
		case strings.HasPrefix(l, "# TYPE "):
			f := strings.Fields(l)
			typ[f[2]] = f[3]
		case l == "# EOF" || l == "":
		default:
			name := l[:strings.IndexAny(l, "{ ")]
			fam := name
			if typ[strings.TrimSuffix(name, "_total")] == "counter" {
				fam = strings.TrimSuffix(name, "_total")
				if fam == name {
					t.Errorf("counter sample %s without _total", name)
				}
			}
			if typ[fam] == "" || !help[fam] {
				t.Errorf("sample %s: family %s has no TYPE or HELP", name, fam)
			}
		}
	}
	if typ["numascope_node_numa_hit"] != "counter" || typ["numascope_node_memory_free_bytes"] != "gauge" {
		t.Errorf("numa_hit is %q and MemFree %q, want counter and gauge", typ["numascope_node_numa_hit"], typ["numascope_node_memory_free_bytes"])
	}
	if !strings.Contains(body, `numascope_node_numa_hit_total{numa_node="1"} `) {
		t.Errorf("no numa_hit of node 1 in the OpenMetrics body")
	}
}

// TestTwoNodeCapture checks every per-node family on a real two-node
// capture against its files: labels 0 and 1, numastat values, meminfo in
// bytes, the distance matrix and the node info.
func TestTwoNodeCapture(t *testing.T) {
	x := newTestExporter(t, twoNode)
	body, _ := get(t, x.Handler(), "")
	fams := parseText(t, body)
	node := filepath.Join(twoNode, "sys/devices/system/node")
	for _, n := range []string{"0", "1"} {
		dir := filepath.Join(node, "node"+n)
		for _, c := range []string{"numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node"} {
			want := kernelCounter(t, filepath.Join(dir, "numastat"), c)
			if got, ok := byLabel(fams["numascope_node_"+c+"_total"], "numa_node")[n]; !ok || got != want {
				t.Errorf("node %s %s = %v (present %v), numastat says %v", n, c, got, ok, want)
			}
		}
		want := kernelCounter(t, filepath.Join(dir, "meminfo"), "MemFree") * 1024 // "Node 0 MemFree: N kB"
		if got := byLabel(fams["numascope_node_memory_free_bytes"], "numa_node")[n]; got != want {
			t.Errorf("node %s MemFree = %v bytes, meminfo says %v", n, got, want)
		}
	}
	dist := map[string]float64{}
	for _, m := range fams["numascope_numa_distance"].Metric {
		l := labelsOf(m)
		dist[l["from"]+">"+l["to"]] = value(m)
	}
	for _, n := range []string{"0", "1"} {
		b, err := os.ReadFile(filepath.Join(node, "node"+n, "distance"))
		if err != nil {
			t.Fatal(err)
		}
		for to, d := range strings.Fields(string(b)) {
			want, _ := strconv.ParseFloat(d, 64)
			if got := dist[n+">"+strconv.Itoa(to)]; got != want {
				t.Errorf("distance %s>%d = %v, want %v", n, to, got, want)
			}
		}
	}
	info := fams["numascope_numa_node_info"]
	if len(info.Metric) != 2 {
		t.Fatalf("%d numa_node_info series, want 2", len(info.Metric))
	}
	for _, m := range info.Metric {
		labels := labelsOf(m)
		cpus, err := os.ReadFile(filepath.Join(node, "node"+labels["numa_node"], "cpulist"))
		if err != nil {
			t.Fatal(err)
		}
		if labels["cpus"] != strings.TrimSpace(string(cpus)) {
			t.Errorf("node %s cpus=%q, cpulist says %q", labels["numa_node"], labels["cpus"], cpus)
		}
	}
}

// TestNodeGoneMidRun makes node 1's numastat unreadable after start: the
// scrape still succeeds, with node 0's numastat and node 1's other files,
// and numascope_scrape_errors_total{collector="numastat"} counts it.
func TestNodeGoneMidRun(t *testing.T) {
	root := testutil.CopyTree(t, twoNode)
	x := newTestExporter(t, root)
	path := filepath.Join(root, "sys/devices/system/node/node1/numastat")
	if err := os.WriteFile(path, []byte("\x00 not numastat any more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for scrape := 1; scrape <= 2; scrape++ {
		body, _ := get(t, x.Handler(), "")
		fams := parseText(t, body)
		hit := byLabel(fams["numascope_node_numa_hit_total"], "numa_node")
		if _, ok := hit["1"]; ok {
			t.Errorf("scrape %d: node 1's numa_hit is exported though its numastat is garbage", scrape)
		}
		if _, ok := hit["0"]; !ok {
			t.Errorf("scrape %d: node 0's numa_hit is missing", scrape)
		}
		if _, ok := byLabel(fams["numascope_node_memory_free_bytes"], "numa_node")["1"]; !ok {
			t.Errorf("scrape %d: node 1's meminfo went with its numastat", scrape)
		}
		if got := byLabel(fams["numascope_scrape_errors_total"], "collector")["numastat"]; got != float64(scrape) {
			t.Errorf("scrape %d: numastat errors_total = %v", scrape, got)
		}
		if got := byLabel(fams["numascope_scrape_collector_success"], "collector"); got["numastat"] != 0 || got["node_meminfo"] != 1 {
			t.Errorf("scrape %d: collector_success %v, want numastat 0 and node_meminfo 1", scrape, got)
		}
	}
	if err := os.WriteFile(path, []byte("numa_hit 5\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 0\nlocal_node 5\nother_node 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fams := parseText(t, first(get(t, x.Handler(), "")))
	if got := byLabel(fams["numascope_node_numa_hit_total"], "numa_node")["1"]; got != 5 {
		t.Errorf("after node 1's numastat came back: numa_hit = %v, want 5", got)
	}
	if got := byLabel(fams["numascope_scrape_collector_success"], "collector")["numastat"]; got != 1 {
		t.Errorf("after node 1's numastat came back: success = %v", got)
	}
}

func first(a, _ string) string { return a }

// TestStartErrors: an unreadable file at start is a one-line error naming it.
func TestStartErrors(t *testing.T) {
	root := testutil.CopyTree(t, twoNode)
	if err := os.Remove(filepath.Join(root, "proc/vmstat")); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(root)
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Env: sensor.Env{FS: fs, Topology: topo}})
	if err == nil || !strings.Contains(err.Error(), "proc/vmstat") || strings.Contains(err.Error(), "\n") {
		t.Errorf("New without /proc/vmstat: %v; want one line naming it", err)
	}
	// One node's file missing: an error naming it, not zeros for that node.
	root = testutil.CopyTree(t, twoNode)
	meminfo := filepath.Join(root, "sys/devices/system/node/node1/meminfo")
	if err := os.Remove(meminfo); err != nil {
		t.Fatal(err)
	}
	fs = sysfs.New(root)
	if topo, err = topology.Discover(fs); err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Env: sensor.Env{FS: fs, Topology: topo}})
	if err == nil || !strings.Contains(err.Error(), meminfo) || strings.Contains(err.Error(), "\n") {
		t.Errorf("New without node 1's meminfo: %v; want one line naming it", err)
	}
}

// countingCollector counts its reads and holds each until released.
type countingCollector struct {
	reads   atomic.Int32
	started chan struct{}
	release chan struct{}
	fam     *family
}

func (c *countingCollector) Name() string { return "counting" }
func (c *countingCollector) Close() error { return nil }
func (c *countingCollector) Update(b *builder) error {
	n := c.reads.Add(1)
	c.started <- struct{}{}
	<-c.release
	b.begin(c.fam)
	b.add(nil, float64(n))
	return nil
}

// TestConcurrentScrapesShareOneRead holds a read in flight while more
// scrapes arrive over HTTP: they wait for it and get its result, the
// collector is read once and the read encoded once; the next scrape reads
// again.
func TestConcurrentScrapesShareOneRead(t *testing.T) {
	c := &countingCollector{started: make(chan struct{}, 1), release: make(chan struct{}),
		fam: newFamily("test_reads_total", "reads", counter)}
	x := newExporter([]collector{c}, nil)
	srv := httptest.NewServer(x.Handler())
	defer srv.Close()
	const scrapes = 8
	bodies := make([]string, scrapes)
	var wg sync.WaitGroup
	errs := make(chan error, scrapes)
	scrape := func(i int) {
		defer wg.Done()
		resp, err := http.Get(srv.URL)
		if err != nil {
			errs <- err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			errs <- err
		}
		bodies[i] = string(b)
	}
	wg.Add(1)
	go scrape(0)
	<-c.started // the first read is in flight
	for i := 1; i < scrapes; i++ {
		wg.Add(1)
		go scrape(i)
	}
	deadline := time.Now().Add(20 * time.Second)
	for x.waiting.Load() != scrapes-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d scrapes wait for the read in flight, want %d", x.waiting.Load(), scrapes-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(c.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("%d concurrent scrapes read the collector %d times, want once", scrapes, n)
	}
	x.mu.Lock()
	if n := x.spare.encodings; n != 1 {
		t.Errorf("%d concurrent scrapes of the text format encoded their read %d times, want once", scrapes, n)
	}
	x.mu.Unlock()
	for i, b := range bodies {
		if !strings.Contains(b, "test_reads_total 1\n") || !strings.Contains(b, "numascope_scrape_reads_total 1\n") {
			t.Errorf("scrape %d did not get the shared read:\n%s", i, b)
		}
	}
	go func() { <-c.started }()
	body, _ := get(t, x.Handler(), "")
	if c.reads.Load() != 2 || !strings.Contains(body, "numascope_scrape_reads_total 2\n") {
		t.Errorf("a later scrape did not read again: %d reads\n%s", c.reads.Load(), body)
	}
}

// failingCollector fails every read.
type failingCollector struct{}

func (failingCollector) Name() string { return "failing" }
func (failingCollector) Close() error { return nil }
func (failingCollector) Update(*builder) error {
	return errors.New("node 3 went away")
}

// TestFailureLoggedOncePerStreak: a collector failing at every scrape is
// logged once, not at every scrape.
func TestFailureLoggedOncePerStreak(t *testing.T) {
	var logged []string
	x := newExporter([]collector{failingCollector{}}, func(s string) { logged = append(logged, s) })
	for range 3 {
		x.Read()
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "failing: node 3 went away") {
		t.Errorf("logged %q, want the failure once", logged)
	}
}

func TestMetricNames(t *testing.T) {
	for in, want := range map[string]string{
		"numa_hit": "numa_hit", "AnonPages": "anon_pages", "KReclaimable": "k_reclaimable",
		"Active(anon)": "active_anon", "NFS_Unstable": "nfs_unstable", "HugePages_Surp": "huge_pages_surp",
		"page-faults": "page_faults", "sched:sched_move_numa": "sched_sched_move_numa",
		"ShmemPmdMapped": "shmem_pmd_mapped", "nr_zone_inactive_anon": "nr_zone_inactive_anon",
		"L3_miss": "l3_miss", "pgdemote_kswapd": "pgdemote_kswapd", "__x__": "x",
	} {
		if got := metricPart(in); got != want {
			t.Errorf("metricPart(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"MemFree": "free", "MemTotal": "total", "MemUsed": "used", "Mlocked": "mlocked",
		"HugePages_Total": "huge_pages_pool", "Active(file)": "active_file",
	} {
		if got := meminfoPart(in); got != want {
			t.Errorf("meminfoPart(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBuilderGrows fills a builder far past its first storage, with an
// empty family: every series keeps its value and family, the empty family
// is left out; a second read into the same builder allocates nothing.
func TestBuilderGrows(t *testing.T) {
	b := newBuilder(0, 0)
	fams := []*family{newFamily("a_total", "a", counter), newFamily("empty", "e", gauge), newFamily("b", "b", gauge), newFamily("c_total", "c", counter)}
	sizes := []int{50, 0, 100, 300}
	lp := newLabels([]string{"numa_node"}, []string{"7"})
	fill := func() {
		b.reset()
		for i, f := range fams {
			b.begin(f)
			for k := range sizes[i] {
				b.add(lp, float64(i*1000+k))
			}
		}
		b.finish()
	}
	fill()
	got := b.dtoFamilies()
	if len(got) != 3 {
		t.Fatalf("%d families, want 3 (the empty one left out)", len(got))
	}
	for j, i := range []int{0, 2, 3} {
		f := got[j]
		if f.GetName() != fams[i].name || len(f.Metric) != sizes[i] {
			t.Fatalf("family %d: %s with %d series, want %s with %d", j, f.GetName(), len(f.Metric), fams[i].name, sizes[i])
		}
		for k, m := range f.Metric {
			if v := value(m); v != float64(i*1000+k) || m.Label[0].GetValue() != "7" {
				t.Fatalf("%s series %d = %v %v", f.GetName(), k, v, m.Label)
			}
		}
	}
	if a := testing.AllocsPerRun(20, fill); a != 0 {
		t.Errorf("a read into a builder that held one as big allocates %v times", a)
	}
}

// TestReadAllocations: once no scrape holds the previous read, a read
// reuses its storage: it allocates its bookkeeping only (the read and its
// channel), not per series (the two-node capture has about 500).
func TestReadAllocations(t *testing.T) {
	x := newTestExporter(t, twoNode)
	x.Read()
	if a := testing.AllocsPerRun(50, func() { x.Read() }); a > 2 {
		t.Errorf("a read allocates %v times", a)
	}
}

// TestReadStorageReuse: a read and its encoding stay as they were while a
// scrape holds them, even as later reads run; after the last release the
// next read reuses the storage.
func TestReadStorageReuse(t *testing.T) {
	root := testutil.CopyTree(t, twoNode)
	x := newTestExporter(t, root)
	numastat := filepath.Join(root, "sys/devices/system/node/node0/numastat")
	setHit := func(v int) {
		if err := os.WriteFile(numastat, []byte("numa_hit "+strconv.Itoa(v)+"\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 0\nlocal_node 0\nother_node 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hitOf := func(body []byte) float64 {
		return byLabel(parseText(t, string(body))["numascope_node_numa_hit_total"], "numa_node")["0"]
	}
	setHit(100)
	held := x.acquire()
	heldBody := held.encode(encText).body
	for v := 200; v <= 400; v += 100 {
		setHit(v)
		r := x.acquire()
		if got := hitOf(r.encode(encText).body); got != float64(v) {
			t.Errorf("read with numa_hit %d gave %v", v, got)
		}
		x.release(r)
		if got := hitOf(heldBody); got != 100 {
			t.Fatalf("a held read changed under its scrape: numa_hit %v, want 100", got)
		}
	}
	hb := held.b
	x.release(held)
	r := x.acquire()
	if r.b != hb {
		t.Errorf("the read after the held one's release did not reuse its storage")
	}
	x.release(r)
}

// TestEveryNameDocumented: every family the exporter gives, on this machine
// and on the two-node capture, is named in docs/exporter.md, or is of a
// family of names it documents by rule (a vmstat line, a meminfo field).
func TestEveryNameDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/exporter.md")
	if err != nil {
		t.Fatal(err)
	}
	byRule := []string{"numascope_vmstat_", "numascope_node_vmstat_", "numascope_node_memory_", "numascope_perf_", "numascope_uncore_"}
	for _, root := range []string{"", twoNode} {
		body, _ := get(t, newTestExporter(t, root).Handler(), "")
		for name := range parseText(t, body) {
			if strings.Contains(string(doc), "`"+name+"`") {
				continue
			}
			ok := false
			for _, p := range byRule {
				ok = ok || strings.HasPrefix(name, p)
			}
			if !ok {
				t.Errorf("%s is not in docs/exporter.md", name)
			}
		}
	}
}

// FuzzMetricPart: whatever a kernel file or a perf event calls a value,
// the metric name made of it is a valid Prometheus name (the exporter
// builds its families without a registry's checks).
func FuzzMetricPart(f *testing.F) {
	for _, s := range []string{"numa_hit", "Active(anon)", "KReclaimable", "sched:sched_move_numa", "", "é", "__", "9x", "HugePages_Total"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"numascope_vmstat_" + metricPart(s) + "_total", "numascope_node_memory_" + meminfoPart(s) + "_bytes"} {
			if !model.LegacyValidation.IsValidMetricName(name) {
				t.Errorf("%q gives the invalid name %q", s, name)
			}
		}
	})
}
