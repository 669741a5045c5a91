package profile

// Output: the analyzer's counts, symbolised and sorted, into the Profile
// document.

import (
	"fmt"
	"sort"
	"strings"
)

// fill writes the analyzer's counts into p, symbolizing the locations.
func (a *analyzer) fill(p *Profile) {
	p.Samples, p.Lost, p.HugePages = a.samples, a.lost, a.hugePages
	p.FaultsAfterLoss, p.RepeatFaults, p.AccessesNodeUnknown = a.afterLoss, a.repeats, a.unknownNode
	if a.lost > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("the kernel dropped %d records because numascope fell behind: counts are low by about that much", a.lost))
	}
	if a.afterLoss > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d faults on pages known from before records were lost are counted neither as first touches nor as accesses "+
			"(an munmap may have been among the lost records, and the address reused): first touches and local/remote accesses are low by up to that much", a.afterLoss))
	}
	if a.unknownNode > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d sampled accesses are counted neither local nor remote: numascope, short of CPU, handled them after the program had exited, "+
			"and their pages may have been migrated by the access before; give numascope a CPU of its own (taskset) for exact counts", a.unknownNode))
	}
	// Candidates still waiting when the program ended cannot be checked
	// any more (its pagemap is gone).
	if n := a.thp.finish(); n > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d first touches that may have placed a transparent huge page were not checked, the kernel being slow to answer "+
			"(its mmap lock contended) or not showing the page: first touches may be low by up to 511 pages each", n))
	}
	if a.repeats > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d later faults on pages already touched are not accesses: without NUMA hinting faults here they are memory unmapped and mapped again, "+
			"copy-on-write or reclaim", a.repeats))
	}
	p.Totals = a.totals
	p.AccessMatrix = Matrix{ThreadNodes: a.threadNodes, PageNodes: p.Nodes, Counts: a.matrix}

	defer a.code.closeSymbols()
	agg := map[Frame]*Metrics{}
	for k, m := range a.locs {
		fr := a.code.symbolize(k)
		if agg[fr] == nil {
			agg[fr] = &Metrics{}
		}
		agg[fr].add(m)
	}
	for fr, m := range agg {
		p.Locations = append(p.Locations, Location{Function: fr.Function, File: fr.File, Line: fr.Line, Metrics: *m})
	}
	sort.Slice(p.Locations, func(i, j int) bool {
		x, y := &p.Locations[i], &p.Locations[j]
		if kx, ky := x.Metrics.FirstTouch+x.Metrics.Accesses(), y.Metrics.FirstTouch+y.Metrics.Accesses(); kx != ky {
			return kx > ky
		}
		if x.File != y.File {
			return x.File < y.File
		}
		if x.Line != y.Line {
			return x.Line < y.Line
		}
		return x.Function < y.Function
	})
	if p.Locations == nil {
		p.Locations = []Location{}
	}
	p.Mappings = []Mapping{}
	for _, m := range a.mp.all() {
		if m.Metrics != (Metrics{}) {
			p.Mappings = append(p.Mappings, m)
		}
	}
	sort.SliceStable(p.Mappings, func(i, j int) bool {
		x, y := &p.Mappings[i].Metrics, &p.Mappings[j].Metrics
		return x.FirstTouch+x.Accesses() > y.FirstTouch+y.Accesses()
	})
	if a.syscalls != nil {
		p.Allocations = a.allocations()
	}
	p.CompDirs = map[string][]string{}
	note := func(file string) {
		if _, done := p.CompDirs[file]; !done && file != "" {
			if dirs := a.code.compDirs(file); len(dirs) > 0 {
				p.CompDirs[file] = dirs
			}
		}
	}
	for i := range p.Locations {
		note(p.Locations[i].File)
	}
	for i := range p.Allocations {
		note(p.Allocations[i].File)
	}
	p.Threads = []Thread{}
	for _, t := range a.th.all() {
		th := Thread{TID: int(t.tid), PID: int(t.pid), Comm: t.comm, Nodes: t.nodes, Metrics: t.metrics, BindingLog: t.log}
		if th.Nodes == nil {
			th.Nodes = []int{}
		}
		if th.BindingLog == nil {
			th.BindingLog = []Binding{}
		}
		p.Threads = append(p.Threads, th)
	}
}

// lossNote says where lost records were lost: the rings the kernel found
// full (each PERF_RECORD_LOST names its ring), and those only the events'
// counts tell of (a ring still full when the program ended, so that no
// PERF_RECORD_LOST could be written). "" when nothing was lost.
func (st *ProfilerStats) lossNote(lost uint64) string {
	if lost == 0 {
		return ""
	}
	var b strings.Builder
	var told uint64
	for _, r := range st.Rings {
		if r.Lost == 0 {
			continue
		}
		if told == 0 {
			b.WriteString("where records were lost: full rings (")
		} else {
			b.WriteString(", ")
		}
		told += r.Lost
		fmt.Fprintf(&b, "cpu %d: %d of %d KiB, %d lost", r.CPU, r.HighWater>>10, r.Size>>10, r.Lost)
	}
	if told > 0 {
		b.WriteString(")")
	}
	if lost > told {
		if told > 0 {
			b.WriteString("; ")
		} else {
			b.WriteString("where records were lost: ")
		}
		fmt.Fprintf(&b, "%d counted by the events and never read, the rings full when the program ended", lost-told)
	}
	b.WriteString(": the consumer fell behind the faulting threads (docs/profile.md, \"Lost records\")")
	return b.String()
}

// Summary is the line numascope profile prints on stderr once the profile
// is written to out. The sampled accesses it counts are all of them, and
// those of unknown node (handled after the exit) are named beside the
// remote ones when there are any, so that the line agrees with the file's
// local + remote + accesses_node_unknown.
func (p *Profile) Summary(out string) string {
	acc := p.Totals.Accesses() + p.AccessesNodeUnknown // Load and the analyzer keep this within 64 bits
	unknown := ""
	if p.AccessesNodeUnknown > 0 {
		unknown = fmt.Sprintf(", %d of unknown node", p.AccessesNodeUnknown)
	}
	return fmt.Sprintf("%d page faults, %d first touches, %d sampled accesses (%d remote%s), %d lost; wrote %s",
		p.Samples, p.Totals.FirstTouch, acc, p.Totals.Remote, unknown, p.Lost, out)
}
