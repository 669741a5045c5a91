package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// kernelLabel names a kernel for the text: "copy", or "mix 3:1".
func kernelLabel(kernel, mix string) string {
	if mix != "" {
		return kernel + " " + mix
	}
	return kernel
}

// writeLoaded writes peak injection as a matrix, then each pair's loaded
// latency curve as a table of steps (or why it has none).
func (r *Result) writeLoaded(b *strings.Builder) {
	if m := r.PeakInjection; m != nil {
		if r.Latency != nil || r.Bandwidth != nil {
			b.WriteString("\n")
		}
		threads := "threads"
		if len(m.CPUs) > 0 {
			threads = fmt.Sprintf("%d threads from the first initiator", len(m.CPUs[0]))
		}
		fmt.Fprintf(b, "Peak injection bandwidth (MB/s): %s kernel (%s) at full rate, best of %d %s windows counted while every thread streams, after one uncounted, %s%s\n",
			kernelLabel(m.Kernel, m.Mix), r.Conditions.KernelISA, m.Repeat, peakWindow, threads, hugeNote(m))
		writeMatrix(b, m, 0, nil, "")
		writeSpread(b, m, 0)
		b.WriteString(peakAgainstBandwidth + "\n")
	}
	l := r.Loaded
	if l == nil {
		return
	}
	chain := "random"
	if l.Chain != "" {
		chain = l.Chain
	}
	fmt.Fprintf(b, "\nLoaded latency (ns) against injected bandwidth (MB/s): the initiator's other CPUs stream the %s kernel with a delay after each %s piece; median of %d, %d loads each over the %s chain\n",
		kernelLabel(l.Kernel, l.Mix), FormatSize(pieceElems*8), l.Repeat, l.Loads, chain)
	for _, p := range l.Pairs {
		if p.LatencyNS == nil {
			fmt.Fprintf(b, "node %d -> node %d: not measured: %s\n", p.Initiator, p.Target, p.Reason)
			continue
		}
		inj := fmt.Sprintf("%d injectors (CPUs %s)", len(p.Injectors), formatInts(p.Injectors))
		if len(p.Injectors) == 1 {
			inj = fmt.Sprintf("1 injector (CPU %d)", p.Injectors[0])
		}
		fmt.Fprintf(b, "node %d -> node %d: chain on CPU %d, %s\n", p.Initiator, p.Target, p.CPU, inj)
		rows := [][]string{{"delay", "injected MB/s", "latency ns", "spread"}}
		for k := range p.LatencyNS {
			delay := "idle"
			if k < len(p.DelayNS) && p.DelayNS[k] != nil {
				delay = strconv.FormatFloat(*p.DelayNS[k], 'f', 0, 64) + " ns"
			}
			rows = append(rows, []string{delay, strconv.FormatFloat(p.BandwidthMBs[k], 'f', 0, 64), strconv.FormatFloat(p.LatencyNS[k], 'f', 1, 64),
				strconv.FormatFloat(p.LatencyMinNS[k], 'f', 1, 64) + "-" + strconv.FormatFloat(p.LatencyMaxNS[k], 'f', 1, 64)})
		}
		width := make([]int, len(rows[0]))
		for _, row := range rows {
			for c, cell := range row {
				width[c] = max(width[c], len(cell))
			}
		}
		for _, row := range rows {
			b.WriteString(" ")
			for c, cell := range row {
				fmt.Fprintf(b, " %*s", width[c], cell)
			}
			b.WriteString("\n")
		}
		if p.NotMonotonic != "" {
			fmt.Fprintf(b, "  not monotonic: %s\n", p.NotMonotonic)
		}
	}
}

func formatInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
