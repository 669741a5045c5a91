package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteText writes the result as aligned matrices, one row per initiator
// and one column per target, labelled with node numbers, then the
// placement, the conditions, what was skipped and the notes.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	if m := r.Latency; m != nil {
		chain := ChainRandom
		if m.Chain == ChainPageLocal.String() {
			chain = ChainPageLocal
		}
		fmt.Fprintf(&b, "Idle latency (ns): median of %d, %s %s, %d loads per repeat%s\n", m.Repeat, FormatSize(m.SizeBytes), chain.describe(), m.Steps, hugeNote(m))
		writeMatrix(&b, m, 1, r.ratedGrid(true), "HMAT read latency")
		writeSpread(&b, m, 1)
	}
	if m := r.Bandwidth; m != nil {
		if r.Latency != nil {
			b.WriteString("\n")
		}
		threads := "threads"
		if len(m.CPUs) > 0 {
			threads = fmt.Sprintf("%d threads from the first initiator", len(m.CPUs[0]))
		}
		fmt.Fprintf(&b, "Bandwidth (MB/s): %s kernel (%s), best of %d passes after one uncounted, each timed from the threads' common start to the last one's finish, %s of arrays, %s%s\n",
			kernelLabel(m.Kernel, m.Mix), r.Conditions.KernelISA, m.Repeat, FormatSize(m.SizeBytes), threads, hugeNote(m))
		writeMatrix(&b, m, 0, r.ratedGrid(false), "HMAT read bandwidth, converted from MiB/s")
		writeSpread(&b, m, 0)
	}
	r.writeLoaded(&b)
	r.writeC2C(&b)
	b.WriteString("\n")
	if f := r.Placement.MinFractionOnTarget; f != nil {
		fmt.Fprintf(&b, "Placement: at least %.2f%% of every buffer's pages on its target (%d buffers checked with move_pages)\n", 100**f, len(r.Placement.Pairs))
	}
	c := r.Conditions
	bal := "NUMA balancing " + orNone(c.NUMABalancing)
	if c.NUMABalancingOff {
		bal = "NUMA balancing off for the run (was " + c.NUMABalancing + ", restored)"
	}
	virt := "bare metal"
	if c.Virtual {
		virt = "virtual machine (" + orUnknown(c.Hypervisor) + ")"
	}
	gov := strings.Join(c.Governors, ",")
	fmt.Fprintf(&b, "Conditions: %s; kernel %s; THP %s; governor %s; SMT %s; %s; %s\n", orNone(c.CPUModel), orNone(c.Kernel), orNone(c.THP), orNone(gov), orNone(c.SMT), bal, virt)
	r.writeRated(&b)
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "Not measured: %s node %d -> node %d: %s\n", s.Kind, s.Initiator, s.Target, s.Reason)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// hugeNote says which pages backed the buffers.
func hugeNote(m *Matrix) string {
	lo, hi, found := 2.0, -1.0, false
	for _, row := range m.HugeFraction {
		for _, v := range row {
			if v != nil {
				lo, hi, found = min(lo, *v), max(hi, *v), true
			}
		}
	}
	switch {
	case !found:
		return ""
	case hi == 0:
		return "; base pages"
	case lo == hi:
		return fmt.Sprintf("; %.0f%% transparent huge pages", 100*lo)
	}
	return fmt.Sprintf("; %.0f-%.0f%% transparent huge pages", 100*lo, 100*hi)
}

// writeMatrix writes m's main matrix with prec decimals, "-" for a pair
// not measured. With rated values (the kernel's HMAT), each cell is
// "measured (rated)", so that the promise sits beside the figure; what
// names the rated value.
func writeMatrix(b *strings.Builder, m *Matrix, prec int, rated [][]*float64, what string) {
	if rated != nil {
		fmt.Fprintf(b, "measured (rated: %s; - not reported):\n", what)
	}
	writeGrid(b, m, func(r, c int) string {
		cell := "-"
		if v := m.Matrix[r][c]; v != nil {
			cell = strconv.FormatFloat(*v, 'f', prec, 64)
		}
		if rated != nil && (m.Matrix[r][c] != nil || rated[r][c] != nil) {
			cell += " (" + ratedCell(rated[r][c], prec) + ")"
		}
		return cell
	})
}

// ratedGrid is the rated matrix to show beside the latency (or bandwidth)
// one, nil when no pair has a rated value or the rated part does not
// describe the same initiators and targets.
func (r *Result) ratedGrid(latency bool) [][]*float64 {
	if r.Rated == nil || r.Rated.NotReported != "" {
		return nil
	}
	g := r.Rated.ReadBandwidthMBs
	if latency {
		g = r.Rated.ReadLatencyNS
	}
	found := false
	for _, row := range g {
		for _, v := range row {
			if v != nil {
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return g
}

// writeRated says what the rated part found: why there are no rated
// values, which pairs lack them, and the check of the kernel's memory
// tier order against the measurements.
func (r *Result) writeRated(b *strings.Builder) {
	rt := r.Rated
	if rt == nil {
		return
	}
	if rt.NotReported != "" {
		fmt.Fprintf(b, "Rated (HMAT): not reported: %s\n", rt.NotReported)
	} else {
		for _, m := range rt.Missing {
			fmt.Fprintf(b, "Rated (HMAT): node %d -> node %d not rated: %s\n", m.Initiator, m.Target, m.Reason)
		}
	}
	to := rt.TierOrder
	switch {
	case !to.Checked:
		fmt.Fprintf(b, "Tier order: not checked: %s\n", to.Why)
	case len(to.Contradictions) == 0 && to.Why != "":
		fmt.Fprintf(b, "Tier order: nothing to check: %s\n", to.Why)
	case len(to.Contradictions) == 0:
		fmt.Fprintf(b, "Tier order: the measurements agree with the kernel's memory tiers\n")
	default:
		for _, c := range to.Contradictions {
			fmt.Fprintf(b, "Tier order contradicted: %s\n", c.Text)
		}
	}
	ro := rt.RatedOrder
	switch {
	case !ro.Checked && rt.NotReported == "":
		fmt.Fprintf(b, "Rated order: not checked: %s\n", ro.Why)
	case ro.Checked && len(ro.Contradictions) == 0:
		fmt.Fprintf(b, "Rated order: the measurements agree with the order of the HMAT values\n")
	}
	for _, c := range ro.Contradictions {
		fmt.Fprintf(b, "Rated order contradicted: %s\n", c.Text)
	}
}

// writeSpread writes the spread over the repeats, min-max, as a second
// grid, so that a noisy pair is seen.
func writeSpread(b *strings.Builder, m *Matrix, prec int) {
	if m.Repeat < 2 {
		return
	}
	b.WriteString("spread (min-max over the repeats):\n")
	writeGrid(b, m, func(r, c int) string {
		if m.Min[r][c] == nil {
			return "-"
		}
		return strconv.FormatFloat(*m.Min[r][c], 'f', prec, 64) + "-" + strconv.FormatFloat(*m.Max[r][c], 'f', prec, 64)
	})
}

func writeGrid(b *strings.Builder, m *Matrix, cell func(r, c int) string) {
	const corner = "from\\to"
	cells := make([][]string, len(m.Initiators))
	width := len(corner)
	for r := range m.Initiators {
		cells[r] = make([]string, len(m.Targets))
		for c := range m.Targets {
			cells[r][c] = cell(r, c)
			width = max(width, len(cells[r][c]))
		}
	}
	fmt.Fprintf(b, "%*s", len(corner), corner)
	for _, t := range m.Targets {
		fmt.Fprintf(b, " %*d", width, t)
	}
	b.WriteString("\n")
	for r, i := range m.Initiators {
		fmt.Fprintf(b, "%*d", len(corner), i)
		for c := range m.Targets {
			fmt.Fprintf(b, " %*s", width, cells[r][c])
		}
		b.WriteString("\n")
	}
}
