package profile

import (
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/numascope/numascope/internal/sysfs"
)

// Load reads a profile written by numascope profile.
func Load(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: not a numascope profile: %v", path, err)
	}
	if len(p.AccessMatrix.PageNodes) == 0 && len(p.Locations) == 0 && p.Samples == 0 {
		return nil, fmt.Errorf("%s: not a numascope profile (no access_matrix, locations or samples)", path)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%s: %v: the profile is corrupt or crafted (numascope profile never writes this); profile the program again", path, err)
	}
	return &p, nil
}

// check refuses what numascope profile never writes and the report would
// get wrong: an access matrix that is not one row per thread node of one
// count per page node (ragged), and counts whose sums, as the report and
// its hints form them, wrap around 64 bits (a crafted file printed
// "sampled accesses 18446744073709551614"). The error names the field.
func (p *Profile) check() error {
	m := p.AccessMatrix
	if len(m.Counts) != len(m.ThreadNodes) {
		return fmt.Errorf("access_matrix.counts has %d rows for %d thread_nodes", len(m.Counts), len(m.ThreadNodes))
	}
	var total uint64
	for i, row := range m.Counts {
		if len(row) != len(m.PageNodes) {
			return fmt.Errorf("access_matrix.counts[%d] has %d counts for %d page_nodes (a ragged matrix)", i, len(row), len(m.PageNodes))
		}
		for j, c := range row {
			var ok bool
			if total, ok = add64(total, c); !ok {
				return fmt.Errorf("access_matrix.counts[%d][%d]: the matrix's sum overflows 64 bits", i, j)
			}
		}
	}
	if err := p.Totals.check("totals"); err != nil {
		return err
	}
	if _, ok := add64(p.Totals.Accesses(), p.AccessesNodeUnknown); !ok {
		return fmt.Errorf("totals.local + totals.remote + accesses_node_unknown overflows 64 bits")
	}
	for i := range p.Locations {
		if err := p.Locations[i].Metrics.check(fmt.Sprintf("locations[%d].metrics", i)); err != nil {
			return err
		}
	}
	for i := range p.Threads {
		if err := p.Threads[i].Metrics.check(fmt.Sprintf("threads[%d].metrics", i)); err != nil {
			return err
		}
	}
	for i := range p.Allocations {
		if err := p.Allocations[i].Metrics.check(fmt.Sprintf("allocations[%d].metrics", i)); err != nil {
			return err
		}
	}
	return nil
}

// check reports a sum of m's counts that the report forms (accesses =
// local + remote, first touches + accesses, the unpinned shares) and that
// would wrap around 64 bits, naming the field as field.name.
func (m *Metrics) check(field string) error {
	acc, ok := add64(m.Local, m.Remote)
	if !ok {
		return fmt.Errorf("%s: local + remote (%d + %d) overflows 64 bits", field, m.Local, m.Remote)
	}
	if _, ok := add64(acc, m.FirstTouch); !ok {
		return fmt.Errorf("%s: first_touch + local + remote overflows 64 bits", field)
	}
	if _, ok := add64(m.UnpinnedThread, m.UnpinnedBoth); !ok {
		return fmt.Errorf("%s: unpinned_thread + unpinned_both overflows 64 bits", field)
	}
	return nil
}

// add64 is a + b, and whether it fits in 64 bits.
func add64(a, b uint64) (uint64, bool) {
	s, carry := bits.Add64(a, b, 0)
	return s, carry == 0
}

// WriteReport prints the terminal summary of numascope report: what ran,
// the totals, the access matrix, the top lines by remote accesses and by
// first touch, the threads, and plain-language hints that connect the
// remote accesses to the code that placed the pages.
func (p *Profile) WriteReport(w io.Writer, top int) error {
	if top <= 0 {
		top = 10
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "Profile of %s: exit status %d%s, %.2f s, %d page faults sampled",
		strings.Join(p.Command, " "), p.ExitStatus, ifSignal(p.Signal), p.Duration, p.Samples)
	if p.Lost > 0 {
		fmt.Fprintf(w, ", %d LOST (ring buffer full)", p.Lost)
	}
	fmt.Fprintln(w)
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}

	t := p.Totals
	fmt.Fprintf(w, "\nTotals\n")
	if err := writeTotals(tw, t, p.AccessesNodeUnknown); err != nil {
		return err
	}
	if t.Accesses() > 0 {
		fmt.Fprintf(w, "\nAccess matrix (sampled accesses; rows: the accessing thread's node, -1 unpinned; columns: the page's node)\n")
		if err := writeMatrix(tw, p.AccessMatrix); err != nil {
			return err
		}
	}

	byRemote := topLocations(p.Locations, top, func(m Metrics) uint64 { return m.Remote })
	if len(byRemote) > 0 {
		fmt.Fprintf(w, "\nTop lines by remote accesses\n")
		if err := writeLocations(tw, byRemote, t.Remote, func(m Metrics) uint64 { return m.Remote }); err != nil {
			return err
		}
	}
	byTouch := topLocations(p.Locations, top, func(m Metrics) uint64 { return m.FirstTouch })
	if len(byTouch) > 0 {
		fmt.Fprintf(w, "\nTop lines by first touch (base pages placed)\n")
		if err := writeLocations(tw, byTouch, t.FirstTouch, func(m Metrics) uint64 { return m.FirstTouch }); err != nil {
			return err
		}
	}

	if sites := topAllocations(p.Allocations, top); len(sites) > 0 {
		fmt.Fprintf(w, "\nTop allocation sites (by remote accesses, then first touch)\n")
		fmt.Fprintf(tw, "remote\tfirst touch\tbytes\tcalls\tsite\t\n")
		for i := range sites {
			al := &sites[i]
			fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t\n", al.Metrics.Remote, al.Metrics.FirstTouch, bytesIEC(al.Bytes), al.Calls, allocWhere(al))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if len(p.Threads) > 0 {
		fmt.Fprintf(w, "\nThreads\n")
		fmt.Fprintf(tw, "tid\tcomm\tnodes\tfirst touch\tlocal\tremote\t\n")
		threads := append([]Thread(nil), p.Threads...)
		sort.SliceStable(threads, func(i, j int) bool {
			a, b := threads[i].Metrics, threads[j].Metrics
			return a.FirstTouch+a.Local+a.Remote > b.FirstTouch+b.Local+b.Remote
		})
		for i, th := range threads {
			if i == top {
				fmt.Fprintf(tw, "(%d more)\t\t\t\t\t\t\n", len(threads)-top)
				break
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t\n", th.TID, th.Comm, nodeSet(th.Nodes),
				th.Metrics.FirstTouch, th.Metrics.Local, th.Metrics.Remote)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	hints := p.Hints()
	if len(hints) > 0 {
		fmt.Fprintf(w, "\nHints\n")
		for _, h := range hints {
			fmt.Fprintf(w, "- %s\n", h)
		}
	}
	return nil
}

// Hints are the plain-language conclusions of a profile: where remote
// accesses go, which code and thread placed those pages, and what to do.
func (p *Profile) Hints() []string {
	var out []string
	t := p.Totals
	acc := t.Local + t.Remote
	if acc == 0 {
		if t.FirstTouch > 0 {
			out = append(out, "no sampled accesses: without NUMA balancing (or on one node) only first touches are known; "+
				"run on a multi-node machine with kernel.numa_balancing=1 to see local and remote accesses")
		}
	} else if float64(t.Remote) >= 0.1*float64(acc) {
		// The page node that receives most remote accesses.
		m := p.AccessMatrix
		remoteTo := make([]uint64, len(m.PageNodes))
		fromNodes := map[int]bool{}
		for i, row := range m.Counts {
			if i >= len(m.ThreadNodes) {
				continue
			}
			for j, c := range row {
				if j < len(m.PageNodes) && m.ThreadNodes[i] != m.PageNodes[j] && m.ThreadNodes[i] != -1 && c > 0 {
					remoteTo[j] += c
					fromNodes[m.ThreadNodes[i]] = true
				}
			}
		}
		best := 0
		for j := range remoteTo {
			if remoteTo[j] > remoteTo[best] {
				best = j
			}
		}
		if len(remoteTo) > 0 && remoteTo[best] > 0 {
			var total uint64
			for _, c := range remoteTo {
				total += c
			}
			node := m.PageNodes[best]
			var from []int
			for n := range fromNodes {
				from = append(from, n)
			}
			sort.Ints(from)
			h := fmt.Sprintf("%s of the remote accesses from pinned threads (nodes %s) went to pages on node %d",
				pct(remoteTo[best], total), nodeSet(from), node)
			if loc, share := p.topPlacer(); loc != nil {
				h += fmt.Sprintf("; %s of all pages were first-touched at %s", pct(share, t.FirstTouch), where(loc))
				if th := p.topToucher(); th != nil {
					h += fmt.Sprintf(" (the most by thread %d on node %s)", th.TID, nodeSet(th.Nodes))
				}
				h += ": initialise the data in parallel from the threads that use it, or interleave it " +
					"(numascope run --policy interleave)"
			}
			out = append(out, h)
		}
		if loc := topLocations(p.Locations, 1, func(m Metrics) uint64 { return m.Remote }); len(loc) == 1 {
			out = append(out, fmt.Sprintf("the line with the most remote accesses is %s (%s of them)",
				where(&loc[0]), pct(loc[0].Metrics.Remote, t.Remote)))
		}
		if al := topAllocations(p.Allocations, 1); len(al) == 1 && float64(al[0].Metrics.Remote) >= 0.25*float64(t.Remote) {
			out = append(out, fmt.Sprintf("%s of the remote accesses went to memory allocated at %s (%d calls, %s): "+
				"that is the data to place (first-touch it where it is used, or mbind/interleave that allocation)",
				pct(al[0].Metrics.Remote, t.Remote), allocWhere(&al[0]), al[0].Calls, bytesIEC(al[0].Bytes)))
		}
	}
	if both := t.UnpinnedThread + t.UnpinnedBoth; acc > 0 && float64(both) >= 0.25*float64(acc) {
		out = append(out, fmt.Sprintf("%s of the sampled accesses come from unpinned threads, whose locality is left "+
			"to the scheduler: pin them (numascope run --nodes, or the program's own affinity)", pct(both, acc)))
	}
	if t.FirstTouch > 0 && float64(t.UnpinnedFirstTouch) >= 0.5*float64(t.FirstTouch) && len(p.Nodes) > 1 {
		out = append(out, fmt.Sprintf("%s of the pages were placed by unpinned threads: where they land depends on where "+
			"the scheduler ran them", pct(t.UnpinnedFirstTouch, t.FirstTouch)))
	}
	if p.Lost > 0 {
		out = append(out, fmt.Sprintf("%d page faults were lost (ring buffer full): the counts are lower bounds", p.Lost))
	}
	return out
}

// topPlacer is the location that placed the most pages, with its count.
func (p *Profile) topPlacer() (*Location, uint64) {
	top := topLocations(p.Locations, 1, func(m Metrics) uint64 { return m.FirstTouch })
	if len(top) == 0 {
		return nil, 0
	}
	return &top[0], top[0].Metrics.FirstTouch
}

// topToucher is the thread that placed the most pages.
func (p *Profile) topToucher() *Thread {
	var best *Thread
	for i := range p.Threads {
		if p.Threads[i].Metrics.FirstTouch > 0 && (best == nil || p.Threads[i].Metrics.FirstTouch > best.Metrics.FirstTouch) {
			best = &p.Threads[i]
		}
	}
	return best
}

func topLocations(locs []Location, n int, key func(Metrics) uint64) []Location {
	var out []Location
	for _, l := range locs {
		if key(l.Metrics) > 0 {
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i].Metrics) > key(out[j].Metrics) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// topAllocations are the n allocation sites with the most remote accesses,
// then first touches.
func topAllocations(all []Allocation, n int) []Allocation {
	var out []Allocation
	for _, al := range all {
		if al.Metrics.Remote+al.Metrics.FirstTouch > 0 {
			out = append(out, al)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Metrics.Remote != out[j].Metrics.Remote {
			return out[i].Metrics.Remote > out[j].Metrics.Remote
		}
		return out[i].Metrics.FirstTouch > out[j].Metrics.FirstTouch
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// allocWhere renders an allocation site as file:line (function) [kind].
func allocWhere(al *Allocation) string {
	return where(&Location{Function: al.Function, File: al.File, Line: al.Line}) + " [" + al.Kind + "]"
}

// bytesIEC renders a size in bytes with a binary unit.
func bytesIEC(b uint64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatUint(b, 10) + " B"
	}
	v, i := float64(b), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[i]
}

func writeLocations(tw *tabwriter.Writer, locs []Location, total uint64, key func(Metrics) uint64) error {
	fmt.Fprintf(tw, "count\tshare\tlocation\n")
	for i := range locs {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", key(locs[i].Metrics), pct(key(locs[i].Metrics), total), where(&locs[i]))
	}
	return tw.Flush()
}

// where renders a location as file:line (function).
func where(l *Location) string {
	s := l.File
	if l.Line > 0 {
		s += ":" + strconv.Itoa(l.Line)
	}
	if l.Function != "" {
		if s == "" {
			return l.Function
		}
		s += " (" + l.Function + ")"
	}
	return s
}

func pct(a, b uint64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 0, 64) + "%"
}

func sum(v []uint64) uint64 {
	var s uint64
	for _, x := range v {
		s += x
	}
	return s
}

func nodeName(n int) string {
	if n == -1 {
		return "unpinned"
	}
	return strconv.Itoa(n)
}

// nodeSet renders node IDs in the kernel's list format, e.g. "1-3" or "0,2".
func nodeSet(nodes []int) string {
	if len(nodes) == 0 {
		return "-"
	}
	s := append([]int(nil), nodes...)
	sort.Ints(s)
	return sysfs.FormatCPUList(s)
}

func ifSignal(sig string) string {
	if sig == "" {
		return ""
	}
	return " (killed by " + sig + ")"
}

// writeTotals writes the first touches and sampled accesses of t. unknown
// are the sampled accesses counted neither local nor remote
// (Profile.AccessesNodeUnknown): when there are any they get a line of their
// own and count in the sampled accesses, so that the lines add up to the
// accesses the profile holds.
func writeTotals(tw *tabwriter.Writer, t Metrics, unknown uint64) error {
	fmt.Fprintf(tw, "first touch (base pages)\t%d\t\n", t.FirstTouch)
	fmt.Fprintf(tw, "  by unpinned threads\t%d\t%s\t\n", t.UnpinnedFirstTouch, pct(t.UnpinnedFirstTouch, t.FirstTouch))
	acc, ok := add64(t.Accesses(), unknown)
	if !ok {
		return fmt.Errorf("sampled accesses: local + remote + node unknown (%d + %d + %d) overflows 64 bits", t.Local, t.Remote, unknown)
	}
	fmt.Fprintf(tw, "sampled accesses\t%d\t\n", acc)
	fmt.Fprintf(tw, "  local\t%d\t%s\t\n", t.Local, pct(t.Local, acc))
	fmt.Fprintf(tw, "  remote\t%d\t%s\t\n", t.Remote, pct(t.Remote, acc))
	if unknown > 0 {
		fmt.Fprintf(tw, "  node unknown (handled after the exit)\t%d\t%s\t\n", unknown, pct(unknown, acc))
	}
	fmt.Fprintf(tw, "  unpinned page / thread / both\t%d / %d / %d\t\n", t.UnpinnedPage, t.UnpinnedThread, t.UnpinnedBoth)
	return tw.Flush()
}

// writeMatrix writes an access matrix's rows that have accesses.
func writeMatrix(tw *tabwriter.Writer, m Matrix) error {
	fmt.Fprintf(tw, "thread \\ page\t")
	for _, n := range m.PageNodes {
		fmt.Fprintf(tw, "%d\t", n)
	}
	fmt.Fprintln(tw)
	for i, row := range m.Counts {
		if i >= len(m.ThreadNodes) || sum(row) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t", nodeName(m.ThreadNodes[i]))
		for _, c := range row {
			fmt.Fprintf(tw, "%d\t", c)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
