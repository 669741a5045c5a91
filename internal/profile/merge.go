package profile

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// OutlierFactor is how far above the median rank's remote accesses the
// rank with the most must be to be called an outlier: below it the ranks
// differ by no more than the sampling's own noise between similar runs.
const OutlierFactor = 1.5

// Merged is what numascope report makes of the profiles of one job's
// ranks (numascope profile -o prof.%h.%r.json under mpirun or srun): the
// totals over every rank, each rank's own, and the rank with the most
// remote accesses against the median.
type Merged struct {
	Ranks []RankSummary
	// Totals sums every rank's totals; Samples, Lost, FaultsAfterLoss and
	// AccessesNodeUnknown likewise, so that the merged report accounts for
	// every fault the ranks' files hold, not only the local and remote ones.
	Totals                               Metrics
	Samples, Lost                        uint64
	FaultsAfterLoss, AccessesNodeUnknown uint64
	// Matrix sums the ranks' access matrices when they all have the same
	// rows and columns; nil otherwise (Notes says why).
	Matrix *Matrix
	// Notes are caveats: profiles of other shapes (other nodes), other
	// commands, ranks named by file because the profile records none.
	Notes []string
	// Outlier is the rank with the most remote accesses; nil when no
	// rank has any.
	Outlier *Outlier
}

// RankSummary is one rank's line of the breakdown.
type RankSummary struct {
	// Rank is the profile's own rank, or its file's name when it records
	// none (a profile written without a rank variable, or before ranks
	// were recorded); Host likewise the profile's host, "" when unknown.
	Rank, Host, File string
	Command          []string
	ExitStatus       int
	Duration         float64
	Samples, Lost    uint64
	Nodes            []int
	Totals           Metrics
	// AccessesNodeUnknown are the rank's sampled accesses counted neither
	// local nor remote (Profile.AccessesNodeUnknown).
	AccessesNodeUnknown uint64
}

// Outlier is the rank with the most remote accesses, and how it compares
// with the median rank.
type Outlier struct {
	Rank, Host string
	Remote     uint64
	Median     float64
	// Factor is Remote / Median; 0 when the median is 0.
	Factor float64
	// Outlier is whether Factor reaches OutlierFactor (or the median is 0).
	Outlier bool
}

// Merge combines the profiles of several ranks, files[i] holding ps[i].
// Totals are always summed; the access matrices only when every profile
// has the same rows and columns (the same machine shape), else a note says
// so. The ranks are sorted by rank, numerically where both are numbers.
func Merge(files []string, ps []*Profile) (*Merged, error) {
	if len(files) != len(ps) || len(ps) == 0 {
		return nil, fmt.Errorf("merge: %d files for %d profiles", len(files), len(ps))
	}
	m := &Merged{}
	var unnamed []string
	for i, p := range ps {
		r := RankSummary{Rank: p.Rank, Host: p.Host, File: files[i], Command: p.Command, ExitStatus: p.ExitStatus,
			Duration: p.Duration, Samples: p.Samples, Lost: p.Lost, Nodes: p.Nodes, Totals: p.Totals,
			AccessesNodeUnknown: p.AccessesNodeUnknown}
		if r.Rank == "" {
			r.Rank = filepath.Base(files[i])
			unnamed = append(unnamed, r.Rank)
		}
		m.Ranks = append(m.Ranks, r)
		if err := m.sum(p); err != nil {
			return nil, fmt.Errorf("%s: %v: summed over the ranks, the counts wrap around 64 bits; these are not one job's profiles, or one is crafted", files[i], err)
		}
	}
	if err := m.Totals.check("totals summed over the ranks"); err != nil {
		return nil, fmt.Errorf("%v: these are not one job's profiles, or one is crafted", err)
	}
	if _, ok := add64(m.Totals.Accesses(), m.AccessesNodeUnknown); !ok {
		return nil, errors.New("totals summed over the ranks: local + remote + accesses_node_unknown overflows 64 bits: these are not one job's profiles, or one is crafted")
	}
	if len(unnamed) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%s record no rank (profiled outside mpirun or srun, or by an older numascope): named by file", strings.Join(unnamed, ", ")))
	}
	seen := map[string]string{}
	for _, r := range m.Ranks {
		if f, dup := seen[r.Rank]; dup {
			m.Notes = append(m.Notes, fmt.Sprintf("rank %s appears twice (%s and %s): profiles of different runs?", r.Rank, f, r.File))
		}
		seen[r.Rank] = r.File
	}
	sort.SliceStable(m.Ranks, func(i, j int) bool { return rankLess(m.Ranks[i].Rank, m.Ranks[j].Rank) })

	first := ps[0]
	same := true
	for i, p := range ps[1:] {
		if !slices.Equal(p.Nodes, first.Nodes) {
			m.Notes = append(m.Notes, fmt.Sprintf("%s has nodes %s, %s nodes %s: profiles of machines of another shape; the totals are summed, the access matrices are not",
				files[i+1], nodeSet(p.Nodes), files[0], nodeSet(first.Nodes)))
			same = false
			break
		}
	}
	for i, p := range ps[1:] {
		if !slices.Equal(p.Command, first.Command) {
			m.Notes = append(m.Notes, fmt.Sprintf("%s ran %q, %s %q: not one job's ranks?", files[i+1], strings.Join(p.Command, " "), files[0], strings.Join(first.Command, " ")))
			break
		}
	}
	if same {
		var err error
		m.Matrix, err = sumMatrices(files, ps)
		if err != nil {
			return nil, err
		}
		if m.Matrix == nil {
			m.Notes = append(m.Notes, "the access matrices have different rows or columns: they are not summed")
		}
	}
	m.Outlier = outlier(m.Ranks)
	return m, nil
}

// rankLess orders ranks numerically when both are integers, else as text
// (numbers first).
func rankLess(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return x < y
	case errA == nil:
		return true
	case errB == nil:
		return false
	}
	return a < b
}

// sum adds p's totals, samples, lost records, faults after a loss and
// accesses of unknown node to m's, refusing a sum that
// would wrap around 64 bits (naming the field) rather than print a wrapped
// number.
func (m *Merged) sum(p *Profile) error {
	fields := []struct {
		name     string
		dst, src *uint64
	}{
		{"samples", &m.Samples, &p.Samples}, {"lost", &m.Lost, &p.Lost},
		{"faults_after_loss", &m.FaultsAfterLoss, &p.FaultsAfterLoss},
		{"accesses_node_unknown", &m.AccessesNodeUnknown, &p.AccessesNodeUnknown},
		{"totals.first_touch", &m.Totals.FirstTouch, &p.Totals.FirstTouch},
		{"totals.unpinned_first_touch", &m.Totals.UnpinnedFirstTouch, &p.Totals.UnpinnedFirstTouch},
		{"totals.local", &m.Totals.Local, &p.Totals.Local}, {"totals.remote", &m.Totals.Remote, &p.Totals.Remote},
		{"totals.unpinned_page", &m.Totals.UnpinnedPage, &p.Totals.UnpinnedPage},
		{"totals.unpinned_thread", &m.Totals.UnpinnedThread, &p.Totals.UnpinnedThread},
		{"totals.unpinned_both", &m.Totals.UnpinnedBoth, &p.Totals.UnpinnedBoth},
	}
	for _, f := range fields {
		s, ok := add64(*f.dst, *f.src)
		if !ok {
			return fmt.Errorf("%s (%d + %d)", f.name, *f.dst, *f.src)
		}
		*f.dst = s
	}
	return nil
}

// sumMatrices adds the access matrices up, or returns nil when they do not
// all have the same rows, columns and shape. A sum that wraps around 64
// bits is an error naming the file and the cell.
func sumMatrices(files []string, ps []*Profile) (*Matrix, error) {
	f := ps[0].AccessMatrix
	out := &Matrix{ThreadNodes: f.ThreadNodes, PageNodes: f.PageNodes, Counts: make([][]uint64, len(f.ThreadNodes))}
	for i := range out.Counts {
		out.Counts[i] = make([]uint64, len(f.PageNodes))
	}
	for k, p := range ps {
		m := p.AccessMatrix
		if !slices.Equal(m.ThreadNodes, f.ThreadNodes) || !slices.Equal(m.PageNodes, f.PageNodes) || len(m.Counts) != len(f.ThreadNodes) {
			return nil, nil
		}
		for i, row := range m.Counts {
			if len(row) != len(f.PageNodes) {
				return nil, nil
			}
			for j, c := range row {
				var ok bool
				if out.Counts[i][j], ok = add64(out.Counts[i][j], c); !ok {
					return nil, fmt.Errorf("%s: access_matrix.counts[%d][%d]: summed over the ranks, the count wraps around 64 bits; these are not one job's profiles, or one is crafted", files[k], i, j)
				}
			}
		}
	}
	var total uint64
	for _, row := range out.Counts {
		for _, c := range row {
			var ok bool
			if total, ok = add64(total, c); !ok {
				return nil, errors.New("the access matrix summed over the ranks overflows 64 bits: these are not one job's profiles, or one is crafted")
			}
		}
	}
	return out, nil
}

// outlier finds the rank with the most remote accesses (the first in rank
// order on a tie) and compares it with the median over all ranks.
func outlier(ranks []RankSummary) *Outlier {
	if len(ranks) == 0 {
		return nil
	}
	top := 0
	remote := make([]float64, len(ranks))
	for i, r := range ranks {
		remote[i] = float64(r.Totals.Remote)
		if r.Totals.Remote > ranks[top].Totals.Remote {
			top = i
		}
	}
	if ranks[top].Totals.Remote == 0 {
		return nil
	}
	sort.Float64s(remote)
	n := len(remote)
	median := remote[n/2]
	if n%2 == 0 {
		median = (remote[n/2-1] + remote[n/2]) / 2
	}
	o := &Outlier{Rank: ranks[top].Rank, Host: ranks[top].Host, Remote: ranks[top].Totals.Remote, Median: median}
	if median > 0 {
		o.Factor = float64(o.Remote) / median
	}
	o.Outlier = median == 0 || o.Factor >= OutlierFactor
	return o
}

// Verdict is the outlier line in words.
func (o *Outlier) Verdict() string {
	who := "rank " + o.Rank
	if o.Host != "" {
		who += " on " + o.Host
	}
	switch {
	case o.Median == 0:
		return fmt.Sprintf("%s has %d remote accesses, while the median rank has none: it is the outlier", who, o.Remote)
	case o.Outlier:
		return fmt.Sprintf("%s has %d remote accesses, %.1f× the median rank's %s: it is the outlier", who, o.Remote, o.Factor, fmtMedian(o.Median))
	}
	return fmt.Sprintf("no outlier: the most remote accesses, %d by %s, are %.1f× the median rank's %s (below %.1f×)", o.Remote, who, o.Factor, fmtMedian(o.Median), OutlierFactor)
}

func fmtMedian(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// WriteReport prints the merged report: the ranks' summed totals and
// access matrix, a line per rank, and the outlier by remote accesses.
func (m *Merged) WriteReport(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cmd := ""
	if len(m.Ranks) > 0 {
		cmd = strings.Join(m.Ranks[0].Command, " ")
	}
	fmt.Fprintf(w, "Profiles of %d ranks of %s: %d page faults sampled", len(m.Ranks), cmd, m.Samples)
	if m.Lost > 0 {
		fmt.Fprintf(w, ", %d LOST (ring buffer full)", m.Lost)
	}
	if m.FaultsAfterLoss > 0 {
		fmt.Fprintf(w, ", %d after a loss (counted neither as first touches nor as accesses)", m.FaultsAfterLoss)
	}
	fmt.Fprintln(w)
	for _, n := range m.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}

	t := m.Totals
	acc := t.Accesses()
	fmt.Fprintf(w, "\nTotals (summed over the ranks)\n")
	if err := writeTotals(tw, t, m.AccessesNodeUnknown); err != nil {
		return err
	}
	if mx := m.Matrix; mx != nil && acc > 0 {
		fmt.Fprintf(w, "\nAccess matrix, summed over the ranks (rows: the accessing thread's node, -1 unpinned; columns: the page's node)\n")
		if err := writeMatrix(tw, *mx); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nPer rank\n")
	fmt.Fprintf(tw, "rank\thost\texit\tduration_s\tsamples\tlost\tfirst touch\tlocal\tremote\tremote share\tnode unknown\tfile\t\n")
	for _, r := range m.Ranks {
		host := r.Host
		if host == "" {
			host = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t\n", r.Rank, host, r.ExitStatus, r.Duration, r.Samples, r.Lost,
			r.Totals.FirstTouch, r.Totals.Local, r.Totals.Remote, pct(r.Totals.Remote, r.Totals.Accesses()), r.AccessesNodeUnknown, r.File)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nOutlier by remote accesses\n")
	if m.Outlier == nil {
		fmt.Fprintf(w, "- no rank has sampled remote accesses\n")
	} else {
		fmt.Fprintf(w, "- %s\n", m.Outlier.Verdict())
	}
	fmt.Fprintf(w, "(numascope report FILE shows one rank's lines, threads and hints)\n")
	return nil
}
