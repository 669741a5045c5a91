package bench

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
)

func ip(v int) *int       { return &v }
func up(v uint64) *uint64 { return &v }

// ratedMatrix is a latency (or bandwidth) matrix of one initiator, node 0,
// over targets with the given repeats per target (nil: not measured).
func ratedMatrix(latency bool, targets []int, samples ...[]float64) *Matrix {
	p := &plan{initiators: []int{0}, targets: targets, opt: Options{Repeat: 3}}
	m := p.newMatrix("")
	for c, s := range samples {
		if s != nil {
			m.set(0, c, s, latency)
		}
	}
	return m
}

// tiers maps nodes to memory tiers for checkTiers.
func tiers(m map[int]int) func(int) (int, bool) {
	return func(id int) (int, bool) { v, ok := m[id]; return v, ok }
}

// TestTierContradictions: a node of a slower tier that measures better
// than a node of a faster tier is flagged only when the two ranges over the
// repeats do not overlap, for latency (lower is better) and bandwidth
// (higher is better) alike; equal tiers and untiered nodes are never
// compared.
func TestTierContradictions(t *testing.T) {
	dram := []float64{90, 80, 100}
	cases := []struct {
		name    string
		res     *Result
		tiers   map[int]int
		checked bool
		want    []string // "kind initiator faster->slower"
		why     string
	}{
		{"slow tier clearly faster", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, []float64{60, 55, 65})},
			map[int]int{0: 1, 2: 4}, true, []string{"latency 0 0->2"}, ""},
		{"within the spread", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, []float64{85, 79, 105})},
			map[int]int{0: 1, 2: 4}, true, nil, ""},
		{"ranges touch", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, []float64{80, 70, 75})},
			map[int]int{0: 1, 2: 4}, true, nil, ""},
		{"order as rated", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, []float64{300, 290, 310})},
			map[int]int{0: 1, 2: 4}, true, nil, ""},
		{"bandwidth inverted", &Result{Bandwidth: ratedMatrix(false, []int{0, 2}, []float64{10000, 9000, 11000}, []float64{20000, 19000, 21000})},
			map[int]int{0: 1, 2: 4}, true, []string{"bandwidth 0 0->2"}, ""},
		{"bandwidth as rated", &Result{Bandwidth: ratedMatrix(false, []int{0, 2}, []float64{20000, 19000, 21000}, []float64{10000, 9000, 11000})},
			map[int]int{0: 1, 2: 4}, true, nil, ""},
		{"three tiers, middle inverted", &Result{Latency: ratedMatrix(true, []int{0, 1, 2}, dram, []float64{60, 58, 62}, []float64{400, 390, 410})},
			map[int]int{0: 1, 1: 2, 2: 4}, true, []string{"latency 0 0->1"}, ""},
		{"not measured", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, nil)},
			map[int]int{0: 1, 2: 4}, true, nil, ""},
		{"untiered node", &Result{Latency: ratedMatrix(true, []int{0, 1, 2}, dram, []float64{10, 9, 11}, []float64{300, 290, 310})},
			map[int]int{0: 1, 2: 4}, true, nil, ""},
		{"one tier", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, []float64{10, 9, 11})},
			map[int]int{0: 4, 2: 4}, true, nil, "same tier"},
		{"no tiers", &Result{Latency: ratedMatrix(true, []int{0, 2}, dram, []float64{10, 9, 11})},
			nil, false, nil, "reports no memory tiers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkTiers(c.res, tiers(c.tiers))
			if got.Checked != c.checked || !strings.Contains(got.Why, c.why) || (c.why == "" && got.Why != "") {
				t.Errorf("checked %v why %q; want %v, %q", got.Checked, got.Why, c.checked, c.why)
			}
			var keys []string
			for _, x := range got.Contradictions {
				keys = append(keys, x.Kind+" "+itoa(x.Initiator)+" "+itoa(x.Faster)+"->"+itoa(x.Slower))
				if x.Text == "" || x.FasterTier >= x.SlowerTier {
					t.Errorf("contradiction %+v", x)
				}
			}
			if strings.Join(keys, ",") != strings.Join(c.want, ",") {
				t.Errorf("contradictions %v, want %v", keys, c.want)
			}
		})
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// hmatTopology: nodes 0 and 1 with CPUs in tier 1, node 2 CPU-less in tier
// 4; node 0 rated from itself, node 2 from both (latency only), node 1 not
// at all.
func hmatTopology() *topology.Topology {
	return &topology.Topology{Nodes: []topology.Node{
		{ID: 0, CPUs: []int{0}, MemoryTier: ip(1), Access: []topology.Access{
			{Class: 0, Initiators: []int{0}, ReadLatencyNS: up(80), WriteLatencyNS: up(90), ReadBandwidthMiBs: up(10000)}}},
		{ID: 1, CPUs: []int{1}, MemoryTier: ip(1), Access: []topology.Access{}},
		{ID: 2, CPUs: []int{}, CPULess: true, MemoryTier: ip(4), Access: []topology.Access{
			{Class: 0, Initiators: []int{0, 1}, ReadLatencyNS: up(250)}}},
	}}
}

func TestRate(t *testing.T) {
	p := &plan{initiators: []int{0, 1}, targets: []int{0, 1, 2}, opt: Options{Repeat: 3}}
	lat := p.newMatrix("")
	for r := range 2 {
		lat.set(r, 0, []float64{90, 85, 95}, true)
		lat.set(r, 1, []float64{140, 135, 145}, true)
		lat.set(r, 2, []float64{60, 55, 65}, true) // CXL faster than DRAM: contradicts the tiers
	}
	bw := p.newMatrix("copy")
	bw.set(0, 0, []float64{12000, 11000, 11500}, false)
	res := &Result{Latency: lat, Bandwidth: bw}
	r := Rate(hmatTopology(), res)
	if r.NotReported != "" {
		t.Fatalf("not reported: %s", r.NotReported)
	}
	eq := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	eq("read latency 0->0", r.ReadLatencyNS[0][0], 80)
	eq("write latency 0->0", r.WriteLatencyNS[0][0], 90)
	eq("read bandwidth 0->0 (MB/s)", r.ReadBandwidthMBs[0][0], 10000*1.048576)
	eq("read latency 1->2", r.ReadLatencyNS[1][2], 250)
	if r.WriteBandwidthMBs[0][0] != nil || r.ReadLatencyNS[1][0] != nil || r.ReadLatencyNS[0][1] != nil {
		t.Errorf("values the kernel does not give: %v %v %v", r.WriteBandwidthMBs[0][0], r.ReadLatencyNS[1][0], r.ReadLatencyNS[0][1])
	}
	if r.AccessClass[1][2] == nil || *r.AccessClass[1][2] != 0 || r.AccessClass[1][0] != nil {
		t.Errorf("access classes %v", r.AccessClass)
	}
	why := map[[2]int]string{}
	for _, m := range r.Missing {
		why[[2]int{m.Initiator, m.Target}] = m.Reason
	}
	if len(why) != 3 || !strings.Contains(why[[2]int{1, 0}], "only from its best initiators (node 0 in access0); node 1 is not one of them") ||
		!strings.Contains(why[[2]int{0, 1}], "no HMAT values for node 1") {
		t.Errorf("missing %+v", r.Missing)
	}
	if r.MemoryTiers["2"] == nil || *r.MemoryTiers["2"] != 4 {
		t.Errorf("tiers %v", r.MemoryTiers)
	}
	if !r.TierOrder.Checked || len(r.TierOrder.Contradictions) != 4 {
		t.Errorf("tier order %+v", r.TierOrder)
	}

	res.Rated = r
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"measured (rated: HMAT read latency; - not reported):\n",
		"      0  90.0 (80.0)    140.0 (-) 60.0 (250.0)\n",
		"      0 12000 (10486)             -             -\n",
		"Rated (HMAT): node 1 -> node 0 not rated: the kernel rates node 0 only from its best initiators (node 0 in access0); node 1 is not one of them\n",
		"Tier order contradicted: latency from node 0: node 2 (memory_tier4, slower tier) measured 60.0 ns (55.0-65.0), node 0 (memory_tier1, faster tier) 90.0 ns (85.0-95.0): the slower tier was faster, beyond the spread of the repeats\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"read_latency_ns":[[80,null,250],[null,null,250]]`, `"memory_tiers":{"0":1,"1":1,"2":4}`, `"tier_order":{"checked":true,"contradictions":[{"kind":"latency"`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON lacks %s: %s", want, j)
		}
	}

	// A machine without HMAT or tiers: one reason, not a list of pairs.
	plain := &topology.Topology{Nodes: []topology.Node{{ID: 0}, {ID: 1}, {ID: 2}}}
	r = Rate(plain, &Result{Latency: lat})
	if !strings.Contains(r.NotReported, "no HMAT values") || len(r.Missing) != 0 || r.TierOrder.Checked || r.MemoryTiers["0"] != nil {
		t.Errorf("plain machine: %+v", r)
	}
	res = &Result{Latency: lat, Rated: r}
	b.Reset()
	res.WriteText(&b)
	for _, want := range []string{"Rated (HMAT): not reported: the kernel reports no HMAT values", "Tier order: not checked: the kernel reports no memory tiers", "      0    90.0   140.0    60.0\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestDescribeClasses: the reason for an unrated pair names each class's
// initiators once, merged where the classes agree.
func TestDescribeClasses(t *testing.T) {
	same := &topology.Node{Access: []topology.Access{{Class: 0, Initiators: []int{0}}, {Class: 1, Initiators: []int{0}}}}
	if got := describeClasses(same); got != "node 0 in access0 and access1" {
		t.Errorf("same initiators: %q", got)
	}
	gi := &topology.Node{Access: []topology.Access{{Class: 0, Initiators: []int{4}}, {Class: 1, Initiators: []int{0, 1}}}}
	if got := describeClasses(gi); got != "node 4 in access0, nodes 0-1 in access1" {
		t.Errorf("a generic initiator in access0: %q", got)
	}
}

// TestViewFixturesTierOrder: the bench page's test documents
// (testdata/bench/view) carry the tier-order and rated-order checks bench
// computes from their own matrices, tiers and ratings, so that the page is
// tested on what bench writes: 2x3-loaded.json without a contradiction,
// 2x3-contradicted.json with one of each (the CPU-less node of the slower
// tier, rated 240 ns, faster from node 0 than the remote DRAM of the faster
// tier, rated 130).
func TestViewFixturesTierOrder(t *testing.T) {
	for file, want := range map[string]int{"2x3-loaded.json": 0, "2x3-contradicted.json": 1} {
		res, err := LoadResult(filepath.Join(testutil.RepoRoot(t), "testdata", "bench", "view", file))
		if err != nil {
			t.Fatal(err)
		}
		got := checkTiers(res, func(id int) (int, bool) {
			v := res.Rated.MemoryTiers[strconv.Itoa(id)]
			if v == nil {
				return 0, false
			}
			return *v, true
		})
		if len(got.Contradictions) != want || !reflect.DeepEqual(got, res.Rated.TierOrder) {
			g, _ := json.Marshal(got)
			t.Errorf("%s: bench computes tier_order %s; the file has %+v (want %d contradictions)", file, g, res.Rated.TierOrder, want)
		}
		ro := checkRatedOrder(res, res.Rated)
		if len(ro.Contradictions) != want || !reflect.DeepEqual(ro, res.Rated.RatedOrder) {
			g, _ := json.Marshal(ro)
			t.Errorf("%s: bench computes rated_order %s; the file has %+v (want %d contradictions)", file, g, res.Rated.RatedOrder, want)
		}
	}
}

// TestRatedOrder: a target rated better (HMAT read latency lower, read
// bandwidth higher) that measured worse beyond the spread is flagged, as
// the tier order is; overlapping ranges, equal ratings and unrated pairs
// are not; without ratings nothing is checked.
func TestRatedOrder(t *testing.T) {
	fp := func(v float64) *float64 { return &v }
	targets := []int{0, 1, 2}
	lat := ratedMatrix(true, targets, []float64{90, 91, 92}, []float64{138, 140, 142}, []float64{115, 118, 121})
	bw := ratedMatrix(false, targets, []float64{12000, 12100, 12200}, []float64{7400, 7500, 7600}, []float64{7550, 7700, 9000})
	rt := &Rated{ReadLatencyNS: [][]*float64{{fp(85), fp(130), fp(240)}}, ReadBandwidthMBs: [][]*float64{{fp(12000), fp(8000), fp(6000)}}}
	got := checkRatedOrder(&Result{Latency: lat, Bandwidth: bw}, rt)
	if !got.Checked || len(got.Contradictions) != 1 {
		t.Fatalf("rated order %+v, want one contradiction (latency: node 2 rated 240 measured 115-121, node 1 rated 130 measured 138-142; bandwidth ranges overlap)", got)
	}
	var text strings.Builder
	if err := (&Result{Latency: lat, Rated: &Rated{RatedOrder: got}}).WriteText(&text); err != nil || !strings.Contains(text.String(), "\nRated order contradicted: latency from node 0: node 2, rated 240.0 ns") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
	c := got.Contradictions[0]
	if c.Kind != "latency" || c.Initiator != 0 || c.Better != 1 || c.Worse != 2 || c.BetterRated != 130 || c.WorseRated != 240 ||
		c.WorseRange != [2]float64{115, 121} || c.BetterMeasured != 140 || !strings.Contains(c.Text, "node 2, rated 240.0 ns") {
		t.Errorf("contradiction %+v", c)
	}
	// Bandwidth beyond the spread: node 2 (rated 6000) measured above node 1's best.
	bw2 := ratedMatrix(false, targets, []float64{12000, 12100, 12200}, []float64{7400, 7500, 7600}, []float64{8000, 8500, 9000})
	if got := checkRatedOrder(&Result{Bandwidth: bw2}, rt); len(got.Contradictions) != 1 || got.Contradictions[0].Kind != "bandwidth" || got.Contradictions[0].Worse != 2 {
		t.Errorf("bandwidth: %+v", got)
	}
	// Equal ratings, or one target rated: no order to contradict.
	rt.ReadLatencyNS = [][]*float64{{fp(85), fp(130), fp(130)}}
	if got := checkRatedOrder(&Result{Latency: lat}, rt); !got.Checked || len(got.Contradictions) != 0 {
		t.Errorf("equal ratings: %+v", got)
	}
	rt.ReadLatencyNS = [][]*float64{{fp(85), nil, nil}}
	if got := checkRatedOrder(&Result{Latency: lat}, rt); got.Checked || got.Why == "" {
		t.Errorf("one rated target: %+v", got)
	}
	if got := checkRatedOrder(&Result{Latency: lat}, &Rated{NotReported: "no HMAT"}); got.Checked || got.Why != "no HMAT" {
		t.Errorf("not reported: %+v", got)
	}
}
