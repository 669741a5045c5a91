package experiment

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/recording"
)

// EventSummary is one event over one run.
type EventSummary struct {
	Kind recording.ValueKind `json:"kind"`
	Unit string              `json:"unit,omitempty"`
	// Total is, for a counter, the count over the run (the integral of its
	// rate); for a gauge, the mean level.
	Total float64 `json:"total"`
	// PerNode is the same per source (node), when the event has several.
	PerNode map[string]float64 `json:"per_node,omitempty"`
	// Distribution summarises PerNode.
	Distribution *Distribution `json:"distribution,omitempty"`
}

// Distribution is the spread of a per-node value over the nodes: what shows
// that one node carries most of the traffic.
type Distribution struct {
	Min    float64 `json:"min"`
	Q1     float64 `json:"q1"`
	Median float64 `json:"median"`
	Q3     float64 `json:"q3"`
	Max    float64 `json:"max"`
	// MaxNode is the node with the largest value, and MaxShare its share of
	// the sum over the nodes (0 to 1).
	MaxNode  string  `json:"max_node"`
	MaxShare float64 `json:"max_share"`
	// Outlier is true when MaxNode stands out: above Tukey's fence (Q3 +
	// 1.5 IQR) of the other nodes, the boxplot definition of an outlier,
	// and holding over 1.5 times its fair share of the sum (1.5/nodes), so
	// that tiny differences between otherwise equal nodes do not count.
	Outlier bool `json:"outlier"`
}

// Quantile returns the q-quantile of sorted values by linear interpolation
// between order statistics (the default of R and numpy).
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// NewDistribution summarises per-node values; nil for fewer than 2 nodes.
func NewDistribution(perNode map[string]float64) *Distribution {
	if len(perNode) < 2 {
		return nil
	}
	nodes := make([]string, 0, len(perNode))
	for k := range perNode {
		nodes = append(nodes, k)
	}
	sort.Slice(nodes, func(a, b int) bool { return nodeLess(nodes[a], nodes[b]) })
	vals := make([]float64, 0, len(nodes))
	sum := 0.0
	d := &Distribution{Max: math.Inf(-1)}
	for _, n := range nodes {
		v := perNode[n]
		vals = append(vals, v)
		sum += v
		if v > d.Max {
			d.Max, d.MaxNode = v, n
		}
	}
	sort.Float64s(vals)
	d.Min, d.Q1, d.Median, d.Q3 = vals[0], Quantile(vals, 0.25), Quantile(vals, 0.5), Quantile(vals, 0.75)
	if sum != 0 {
		d.MaxShare = d.Max / sum
	}
	// The others: the sorted values without one copy of the maximum.
	others := vals[:len(vals)-1]
	q1, q3 := Quantile(others, 0.25), Quantile(others, 0.75)
	d.Outlier = d.Max > q3+1.5*(q3-q1) && d.MaxShare > 1.5/float64(len(vals))
	return d
}

// nodeLess orders node names numerically when they are numbers.
func nodeLess(a, b string) bool {
	ia, ea := strconv.Atoi(a)
	ib, eb := strconv.Atoi(b)
	if ea == nil && eb == nil {
		return ia < ib
	}
	return a < b
}

// Summarize computes each event's total and per-node values over a
// recording. Events are keyed "sensor.event"; per-source columns
// ("node.1.numa_miss") feed PerNode and, when the recording has no summed
// column, the total.
func Summarize(rec *recording.Recording) map[string]EventSummary {
	type acc struct {
		sum     EventSummary
		hasSum  bool
		perNode map[string]float64
	}
	groups := map[string]*acc{}
	var order []string
	for i, c := range rec.Columns {
		key := c.Sensor + "." + c.Event
		g := groups[key]
		if g == nil {
			g = &acc{sum: EventSummary{Kind: c.Kind, Unit: c.Unit}, perNode: map[string]float64{}}
			groups[key] = g
			order = append(order, key)
		}
		v := columnTotal(rec, i, c.Kind)
		if math.IsNaN(v) {
			continue
		}
		if c.Name == key || len(c.Sources) != 1 || c.Sources[0] == "" || !strings.HasPrefix(c.Name, c.Sensor+"."+c.Sources[0]+".") {
			g.sum.Total, g.hasSum = v, true
			continue
		}
		g.perNode[c.Sources[0]] = v
	}
	out := make(map[string]EventSummary, len(groups))
	for _, key := range order {
		g := groups[key]
		s := g.sum
		if len(g.perNode) > 0 {
			s.PerNode = g.perNode
			if !g.hasSum {
				s.Total = 0
				for _, v := range g.perNode {
					s.Total += v
				}
				if s.Kind == recording.Gauge && strings.HasSuffix(s.Unit, "%") {
					s.Total /= float64(len(g.perNode)) // percentages average
				}
			}
			s.Distribution = NewDistribution(g.perNode)
		} else if !g.hasSum {
			continue
		}
		out[key] = s
	}
	return out
}

// columnTotal integrates a counter column's rates over the samples (each
// rate covers the interval that ends at its sample; the first interval
// starts at t = 0, when the sampler primed its counters) or averages a
// gauge column. NaN when the column has no value.
func columnTotal(rec *recording.Recording, col int, kind recording.ValueKind) float64 {
	sum, n := 0.0, 0
	prev := 0.0
	paused := pauses(rec)
	for _, s := range rec.Samples {
		dt := s.T - prev
		if r, ok := paused[prev]; ok && r < s.T {
			dt = s.T - r // the first sample after a resume covers the time since it
		}
		prev = s.T
		if col >= len(s.V) || math.IsNaN(s.V[col]) {
			continue
		}
		n++
		if kind == recording.Counter {
			sum += s.V[col] * dt
		} else {
			sum += s.V[col]
		}
	}
	if n == 0 {
		return math.NaN()
	}
	if kind != recording.Counter {
		return sum / float64(n)
	}
	return sum
}

// pauses maps the time of the last sample before each pause to the time of
// the matching resume.
func pauses(rec *recording.Recording) map[float64]float64 {
	var out map[float64]float64
	var pausedAt float64
	in := false
	for _, m := range rec.Marks {
		switch m.Type {
		case recording.MarkPause:
			pausedAt, in = m.T, true
		case recording.MarkResume:
			if in {
				if out == nil {
					out = map[float64]float64{}
				}
				last := 0.0
				for _, s := range rec.Samples {
					if s.T <= pausedAt {
						last = s.T
					}
				}
				out[last] = m.T
				in = false
			}
		}
	}
	return out
}
