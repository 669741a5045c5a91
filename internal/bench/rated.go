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
}

// RatedMissing is a pair without rated values.
type RatedMissing struct {
	Initiator int    `json:"initiator"`
	Target    int    `json:"target"`
	Reason    string `json:"reason"`
}

// TierOrder is the check of the kernel's tier order against the measured
// figures.
type TierOrder struct {
	// Checked is false when there was nothing to check; Why says why.
	Checked bool   `json:"checked"`
	Why     string `json:"why,omitempty"`
	// Contradictions are the pairs of targets, seen from one initiator,
	// where the node in the slower tier measured better than the node in
	// the faster tier by more than the spread of the repeats.
	Contradictions []Contradiction `json:"contradictions"`
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
	r := &Rated{Missing: []RatedMissing{}, MemoryTiers: map[string]*int{}, TierOrder: TierOrder{Contradictions: []Contradiction{}}}
	if m == nil {
		r.NotReported = "nothing was measured"
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

// contradictions finds the inversions in one matrix. Latency is better
// lower, bandwidth higher.
func contradictions(m *Matrix, kind string, tier func(int) (int, bool)) []Contradiction {
	var out []Contradiction
	lowerBetter := kind == "latency"
	unit, prec := "MB/s", 0
	if lowerBetter {
		unit, prec = "ns", 1
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	for r, i := range m.Initiators {
		for a, ta := range m.Targets {
			tierA, okA := tier(ta)
			if !okA || m.Matrix[r][a] == nil || m.Min[r][a] == nil || m.Max[r][a] == nil {
				continue
			}
			for b, tb := range m.Targets {
				tierB, okB := tier(tb)
				if !okB || tierA >= tierB || m.Matrix[r][b] == nil || m.Min[r][b] == nil || m.Max[r][b] == nil {
					continue
				}
				// ta is in the faster tier.
				fastLo, fastHi := *m.Min[r][a], *m.Max[r][a]
				slowLo, slowHi := *m.Min[r][b], *m.Max[r][b]
				inverted := false
				if lowerBetter {
					inverted = slowHi < fastLo
				} else {
					inverted = slowLo > fastHi
				}
				if !inverted {
					continue
				}
				better := "was faster"
				if !lowerBetter {
					better = "gave more bandwidth"
				}
				c := Contradiction{
					Kind: kind, Initiator: i,
					Faster: ta, FasterTier: tierA, Slower: tb, SlowerTier: tierB,
					FasterValue: *m.Matrix[r][a], SlowerValue: *m.Matrix[r][b],
					FasterRange: [2]float64{fastLo, fastHi}, SlowerRange: [2]float64{slowLo, slowHi},
				}
				c.Text = fmt.Sprintf("%s from node %d: node %d (memory_tier%d, slower tier) measured %s %s (%s-%s), node %d (memory_tier%d, faster tier) %s %s (%s-%s): the slower tier %s, beyond the spread of the repeats",
					kind, i, tb, tierB, f(c.SlowerValue), unit, f(slowLo), f(slowHi), ta, tierA, f(c.FasterValue), unit, f(fastLo), f(fastHi), better)
				out = append(out, c)
			}
		}
	}
	sort.SliceStable(out, func(x, y int) bool { return out[x].Initiator < out[y].Initiator })
	return out
}

// ratedCell formats a rated value for the text beside a measured one.
func ratedCell(v *float64, prec int) string {
	if v == nil || math.IsNaN(*v) {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}
