package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// Rated puts what the firmware promises beside what was measured: the
// kernel's HMAT values (nodeY/accessN/initiators) for every initiator ×
// target pair of the run, and the kernel's memory tiers checked against
// the measured order. Its JSON keys are public: only ever added to.
type Rated struct {
	// Initiators and Targets are the measured matrices' rows and columns.
	Initiators []int `json:"initiators"`
	Targets    []int `json:"targets"`
	// NotReported, when not empty, says why no pair has a rated value
	// (most machines and VMs: no HMAT); the matrices are then all null.
	NotReported string `json:"not_reported,omitempty"`
	// AccessClass is the kernel's access class the pair's values come
	// from (0: best initiators of any kind, 1: best CPU initiators).
	AccessClass [][]*int `json:"access_class"`
	// The rated values, null where the kernel gives none (Missing says
	// why). Bandwidths are converted from the kernel's MiB/s to MB/s
	// (10^6 bytes per second), the unit of the measured matrix.
	ReadLatencyNS     [][]*float64 `json:"read_latency_ns"`
	WriteLatencyNS    [][]*float64 `json:"write_latency_ns"`
	ReadBandwidthMBs  [][]*float64 `json:"read_bandwidth_mbs"`
	WriteBandwidthMBs [][]*float64 `json:"write_bandwidth_mbs"`
	// Missing lists the pairs without a rated value, and why, when some
	// pairs have one.
	Missing []RatedMissing `json:"missing"`
	// MemoryTiers maps each target (as a string, for JSON) to the N of
	// its kernel memory_tierN, null when no tier lists it.
	MemoryTiers map[string]*int `json:"memory_tiers"`
	TierOrder   TierOrder       `json:"tier_order"`
	// RatedOrder is the same check against the HMAT values themselves:
	// seen from one initiator, a target rated better should not measure
	// worse.
	RatedOrder RatedOrder `json:"rated_order"`
}

// OrderCheck is the check of an order the targets are expected in (the
// kernel's memory tiers', the HMAT ratings') against the measured figures.
type OrderCheck[C any] struct {
	// Checked is false when there was nothing to check; Why says why.
	Checked bool   `json:"checked"`
	Why     string `json:"why,omitempty"`
	// Contradictions are the pairs of targets, seen from one initiator,
	// where the target expected worse measured better than the one
	// expected better, by more than the spread of the repeats.
	Contradictions []C `json:"contradictions"`
}

// TierOrder checks the kernel's tier order: a node of a faster tier is
// expected better.
type TierOrder = OrderCheck[Contradiction]

// RatedOrder checks the order of the rated values: a target rated better
// is expected better (not checked when no initiator has ratings for two
// measured targets).
type RatedOrder = OrderCheck[RatedContradiction]

// RatedContradiction is one measured inversion of the rated order: the
// latency matrix against the rated read latency, the bandwidth matrix
// against the rated read bandwidth.
type RatedContradiction struct {
	Kind      string `json:"kind"` // "latency" or "bandwidth"
	Initiator int    `json:"initiator"`
	// Better is the target rated better, Worse the one rated worse that
	// measured better.
	Better      int     `json:"rated_better_node"`
	Worse       int     `json:"rated_worse_node"`
	BetterRated float64 `json:"rated_better_value"`
	WorseRated  float64 `json:"rated_worse_value"`
	// The measured figures of both, with min and max over the repeats.
	BetterMeasured float64    `json:"rated_better_measured"`
	WorseMeasured  float64    `json:"rated_worse_measured"`
	BetterRange    [2]float64 `json:"rated_better_range"`
	WorseRange     [2]float64 `json:"rated_worse_range"`
	// Text says it in one sentence.
	Text string `json:"text"`
}

// RatedMissing is a pair without rated values.
type RatedMissing struct {
	Initiator int    `json:"initiator"`
	Target    int    `json:"target"`
	Reason    string `json:"reason"`
}

// Contradiction is one measured inversion of the tier order.
type Contradiction struct {
	Kind      string `json:"kind"` // "latency" or "bandwidth"
	Initiator int    `json:"initiator"`
	// Faster is the target in the faster (lower-numbered) tier, Slower
	// the one in the slower tier that measured better.
	Faster     int `json:"faster_tier_node"`
	FasterTier int `json:"faster_tier"`
	Slower     int `json:"slower_tier_node"`
	SlowerTier int `json:"slower_tier"`
	// The measured figures (the matrix's value, with min and max over
	// the repeats) of both.
	FasterValue float64    `json:"faster_tier_value"`
	SlowerValue float64    `json:"slower_tier_value"`
	FasterRange [2]float64 `json:"faster_tier_range"`
	SlowerRange [2]float64 `json:"slower_tier_range"`
	// Text says it in one sentence.
	Text string `json:"text"`
}

// mibToMB converts the kernel's MiB/s to the MB/s bench measures in.
const mibToMB = 1.048576

// Rate builds res's Rated part from the topology the run measured.
func Rate(topo *topology.Topology, res *Result) *Rated {
	m := res.Latency
	if m == nil {
		m = res.Bandwidth
	}
	if m == nil {
		m = res.PeakInjection // --kind loaded: the same pairs
	}
	r := &Rated{Missing: []RatedMissing{}, MemoryTiers: map[string]*int{}, TierOrder: TierOrder{Contradictions: []Contradiction{}},
		RatedOrder: RatedOrder{Contradictions: []RatedContradiction{}}}
	if m == nil {
		r.NotReported = "nothing was measured"
		r.RatedOrder.Why = r.NotReported
		return r
	}
	r.Initiators, r.Targets = m.Initiators, m.Targets
	grid := func() [][]*float64 {
		g := make([][]*float64, len(r.Initiators))
		for i := range g {
			g[i] = make([]*float64, len(r.Targets))
		}
		return g
	}
	r.ReadLatencyNS, r.WriteLatencyNS, r.ReadBandwidthMBs, r.WriteBandwidthMBs = grid(), grid(), grid(), grid()
	r.AccessClass = make([][]*int, len(r.Initiators))
	for i := range r.AccessClass {
		r.AccessClass[i] = make([]*int, len(r.Targets))
	}

	anyAccess := false
	for _, n := range topo.Nodes {
		if len(n.Access) > 0 {
			anyAccess = true
		}
	}
	for c, t := range r.Targets {
		n := topo.Node(t)
		if n != nil && n.MemoryTier != nil {
			v := *n.MemoryTier
			r.MemoryTiers[strconv.Itoa(t)] = &v
		} else {
			r.MemoryTiers[strconv.Itoa(t)] = nil
		}
		if !anyAccess {
			continue
		}
		for row, i := range r.Initiators {
			why := ""
			switch a := accessOf(n, i); {
			case n == nil:
				why = fmt.Sprintf("node %d is not in the topology", t)
			case len(n.Access) == 0:
				why = fmt.Sprintf("the kernel has no HMAT values for node %d (no node%d/access0 or access1)", t, t)
			case a == nil:
				why = fmt.Sprintf("the kernel rates node %d only from its best initiators (%s); node %d is not one of them", t, describeClasses(n), i)
			default:
				cl := a.Class
				r.AccessClass[row][c] = &cl
				r.ReadLatencyNS[row][c] = asFloat(a.ReadLatencyNS, 1)
				r.WriteLatencyNS[row][c] = asFloat(a.WriteLatencyNS, 1)
				r.ReadBandwidthMBs[row][c] = asFloat(a.ReadBandwidthMiBs, mibToMB)
				r.WriteBandwidthMBs[row][c] = asFloat(a.WriteBandwidthMiBs, mibToMB)
				if a.ReadLatencyNS == nil && a.WriteLatencyNS == nil && a.ReadBandwidthMiBs == nil && a.WriteBandwidthMiBs == nil {
					why = fmt.Sprintf("node%d/access%d lists node %d as an initiator but gives no value", t, a.Class, i)
				}
			}
			if why != "" {
				r.Missing = append(r.Missing, RatedMissing{i, t, why})
			}
		}
	}
	if !anyAccess {
		r.NotReported = "the kernel reports no HMAT values on this machine (no nodeN/access0 or access1 in sysfs): the firmware has no HMAT table, or, in a VM, the hypervisor gives none"
	}
	r.TierOrder = checkTiers(res, tierOf(topo))
	r.RatedOrder = checkRatedOrder(res, r)
	return r
}

// accessOf is the access class of n rating accesses from initiator, or nil.
func accessOf(n *topology.Node, initiator int) *topology.Access {
	if n == nil {
		return nil
	}
	return n.AccessFrom(initiator)
}

// describeClasses names each access class's initiators: "node 0 in
// access0, nodes 0-1 in access1", or "node 0 in access0 and access1" when
// the classes agree, as they do on machines without generic initiators.
func describeClasses(n *topology.Node) string {
	var lists, order []string
	classes := map[string][]string{}
	for _, a := range n.Access {
		who := "no node"
		switch len(a.Initiators) {
		case 0:
		case 1:
			who = "node " + strconv.Itoa(a.Initiators[0])
		default:
			who = "nodes " + sysfs.FormatCPUList(a.Initiators)
		}
		if _, ok := classes[who]; !ok {
			order = append(order, who)
		}
		classes[who] = append(classes[who], "access"+strconv.Itoa(a.Class))
	}
	for _, who := range order {
		lists = append(lists, who+" in "+strings.Join(classes[who], " and "))
	}
	return strings.Join(lists, ", ")
}

func asFloat(v *uint64, scale float64) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v) * scale
	return &f
}

// tierOf looks up a node's memory tier in topo.
func tierOf(topo *topology.Topology) func(int) (int, bool) {
	return func(id int) (int, bool) {
		if n := topo.Node(id); n != nil && n.MemoryTier != nil {
			return *n.MemoryTier, true
		}
		return 0, false
	}
}

// checkTiers compares the kernel's tier order with the measured matrices:
// seen from each initiator, a target in a faster tier should not measure
// worse than one in a slower tier. Noise must not raise the flag, so an
// inversion counts only when the two ranges over the repeats do not
// overlap: the slower tier's worst repeat beat the faster tier's best.
func checkTiers(res *Result, tier func(int) (int, bool)) TierOrder {
	out := TierOrder{Contradictions: []Contradiction{}}
	m := res.Latency
	if m == nil {
		m = res.Bandwidth
	}
	if m == nil {
		out.Why = "nothing was measured"
		if res.PeakInjection != nil {
			out.Why = "only loaded latency was measured: the order is checked against idle latency and bandwidth (--kind all)"
		}
		return out
	}
	tiers := map[int]bool{}
	for _, t := range m.Targets {
		if v, ok := tier(t); ok {
			tiers[v] = true
		}
	}
	switch {
	case len(tiers) == 0:
		out.Why = "the kernel reports no memory tiers for the measured nodes (no devices/virtual/memory_tiering, or a kernel before 6.1)"
		return out
	case len(tiers) == 1:
		out.Checked = true
		out.Why = "every measured node with a tier is in the same tier: there is no order to contradict"
		return out
	}
	out.Checked = true
	if res.Latency != nil {
		out.Contradictions = append(out.Contradictions, contradictions(res.Latency, "latency", tier)...)
	}
	if res.Bandwidth != nil {
		out.Contradictions = append(out.Contradictions, contradictions(res.Bandwidth, "bandwidth", tier)...)
	}
	return out
}

// inversions calls found for each pair of targets a and b, seen from the
// initiator of row r, that expect(r, a, b) says should measure a better
// than b but where b measured better beyond the spread of the repeats:
// its worst repeat beat a's best. Latency is better lower, bandwidth
// higher; pairs not measured are never compared.
func inversions(m *Matrix, lowerBetter bool, expect func(r, a, b int) bool, found func(r, a, b int, aRange, bRange [2]float64)) {
	for r := range m.Initiators {
		for a := range m.Targets {
			if m.Matrix[r][a] == nil || m.Min[r][a] == nil || m.Max[r][a] == nil {
				continue
			}
			for b := range m.Targets {
				if a == b || m.Matrix[r][b] == nil || m.Min[r][b] == nil || m.Max[r][b] == nil || !expect(r, a, b) {
					continue
				}
				aRange := [2]float64{*m.Min[r][a], *m.Max[r][a]}
				bRange := [2]float64{*m.Min[r][b], *m.Max[r][b]}
				if lowerBetter && bRange[1] < aRange[0] || !lowerBetter && bRange[0] > aRange[1] {
					found(r, a, b, aRange, bRange)
				}
			}
		}
	}
}

// units formats a kind's figures: its unit and a value's precision.
func units(kind string) (unit string, f func(float64) string) {
	unit, prec := "MB/s", 0
	if kind == "latency" {
		unit, prec = "ns", 1
	}
	return unit, func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
}

// contradictions finds the inversions of the tier order in one matrix.
func contradictions(m *Matrix, kind string, tier func(int) (int, bool)) []Contradiction {
	var out []Contradiction
	unit, f := units(kind)
	better := "was faster"
	if kind != "latency" {
		better = "gave more bandwidth"
	}
	expect := func(_, a, b int) bool {
		ta, okA := tier(m.Targets[a])
		tb, okB := tier(m.Targets[b])
		return okA && okB && ta < tb
	}
	inversions(m, kind == "latency", expect, func(r, a, b int, fast, slow [2]float64) {
		i, ta, tb := m.Initiators[r], m.Targets[a], m.Targets[b]
		tierA, _ := tier(ta)
		tierB, _ := tier(tb)
		c := Contradiction{
			Kind: kind, Initiator: i,
			Faster: ta, FasterTier: tierA, Slower: tb, SlowerTier: tierB,
			FasterValue: *m.Matrix[r][a], SlowerValue: *m.Matrix[r][b],
			FasterRange: fast, SlowerRange: slow,
		}
		c.Text = fmt.Sprintf("%s from node %d: node %d (memory_tier%d, slower tier) measured %s %s (%s-%s), node %d (memory_tier%d, faster tier) %s %s (%s-%s): the slower tier %s, beyond the spread of the repeats",
			kind, i, tb, tierB, f(c.SlowerValue), unit, f(slow[0]), f(slow[1]), ta, tierA, f(c.FasterValue), unit, f(fast[0]), f(fast[1]), better)
		out = append(out, c)
	})
	sort.SliceStable(out, func(x, y int) bool { return out[x].Initiator < out[y].Initiator })
	return out
}

// checkRatedOrder compares the order of the rated values with the
// measured one, as checkTiers does the tiers': from each initiator, a
// target with a better rated read latency (bandwidth) should not measure
// a worse latency (bandwidth) beyond the spread. Equal ratings expect
// nothing.
func checkRatedOrder(res *Result, rt *Rated) RatedOrder {
	out := RatedOrder{Contradictions: []RatedContradiction{}}
	if rt.NotReported != "" {
		out.Why = rt.NotReported
		return out
	}
	for _, k := range []struct {
		kind  string
		m     *Matrix
		rated [][]*float64
	}{{"latency", res.Latency, rt.ReadLatencyNS}, {"bandwidth", res.Bandwidth, rt.ReadBandwidthMBs}} {
		if k.m == nil || len(k.rated) != len(k.m.Initiators) {
			continue
		}
		lowerBetter := k.kind == "latency"
		unit, f := units(k.kind)
		for r := range k.rated {
			n := 0
			for c, v := range k.rated[r] {
				if v != nil && c < len(k.m.Targets) && k.m.Matrix[r][c] != nil {
					n++
				}
			}
			out.Checked = out.Checked || n >= 2
		}
		expect := func(r, a, b int) bool {
			ra, rb := k.rated[r][a], k.rated[r][b]
			return ra != nil && rb != nil && (lowerBetter && *ra < *rb || !lowerBetter && *ra > *rb)
		}
		inversions(k.m, lowerBetter, expect, func(r, a, b int, good, bad [2]float64) {
			i, ta, tb := k.m.Initiators[r], k.m.Targets[a], k.m.Targets[b]
			c := RatedContradiction{Kind: k.kind, Initiator: i, Better: ta, Worse: tb,
				BetterRated: *k.rated[r][a], WorseRated: *k.rated[r][b],
				BetterMeasured: *k.m.Matrix[r][a], WorseMeasured: *k.m.Matrix[r][b], BetterRange: good, WorseRange: bad}
			c.Text = fmt.Sprintf("%s from node %d: node %d, rated %s %s (HMAT read), measured %s %s (%s-%s); node %d, rated better at %s %s, measured %s %s (%s-%s): the measured order is the reverse of the rated one, beyond the spread of the repeats",
				k.kind, i, tb, f(c.WorseRated), unit, f(c.WorseMeasured), unit, f(bad[0]), f(bad[1]), ta, f(c.BetterRated), unit, f(c.BetterMeasured), unit, f(good[0]), f(good[1]))
			out.Contradictions = append(out.Contradictions, c)
		})
	}
	if !out.Checked {
		out.Why = "no initiator has rated values for two measured targets: there is no rated order to contradict"
	}
	sort.SliceStable(out.Contradictions, func(x, y int) bool { return out.Contradictions[x].Initiator < out.Contradictions[y].Initiator })
	return out
}

// ratedCell formats a rated value for the text beside a measured one.
func ratedCell(v *float64, prec int) string {
	if v == nil || math.IsNaN(*v) {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}
