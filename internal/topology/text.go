package topology

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/term"
)

// DefaultTextWidth is the line width WriteText aims for. The drawing wraps
// packages wider than this rather than printing lines no terminal shows.
const DefaultTextWidth = 100

// WriteText writes a human summary in the spirit of likwid-topology: counts,
// the node table, the distance matrix, the caches and a drawing of each
// package. It is meant for a terminal; programs should use the JSON form.
func (t *Topology) WriteText(w io.Writer) error {
	return t.WriteTextWidth(w, DefaultTextWidth)
}

// WriteTextWidth is WriteText for a given line width (e.g. the terminal's).
// Widths below 40 are raised to 40.
func (t *Topology) WriteTextWidth(w io.Writer, width int) error {
	if width < 40 {
		width = 40
	}
	bw := bufio.NewWriter(w)
	t.writeHeader(bw)
	t.writeNodes(bw)
	t.writeDistances(bw, width)
	t.writeCaches(bw)
	t.writeMemoryPerf(bw)
	t.writeDrawing(bw, width)
	if len(t.Warnings) > 0 {
		fmt.Fprintf(bw, "\nWarnings:\n")
		for _, s := range t.Warnings {
			fmt.Fprintf(bw, "  - %s\n", s)
		}
	}
	return bw.Flush()
}

// coreKey identifies a core by its SMT sibling set: core_id alone is not
// unique (it repeats per package, and per die or cluster on some machines).
func coreKey(c CPU) string {
	if len(c.Siblings) == 0 {
		return "cpu" + strconv.Itoa(c.ID)
	}
	return sysfs.FormatCPUList(c.Siblings)
}

func (t *Topology) writeHeader(w *bufio.Writer) {
	cores := map[string]bool{}
	dies := map[[2]int]bool{}
	online, cpuless := 0, 0
	var offline, denied []int
	for _, c := range t.CPUs {
		if c.Online {
			online++
		} else {
			offline = append(offline, c.ID)
		}
		if !c.Allowed {
			denied = append(denied, c.ID)
		}
		if len(c.Siblings) > 0 {
			cores[coreKey(c)] = true
		}
		if c.Package != Unknown {
			if c.Die != Unknown {
				dies[[2]int{c.Package, c.Die}] = true
			}
		}
	}
	var deniedNodes []int
	for _, n := range t.Nodes {
		if n.CPULess {
			cpuless++
		}
		if !n.Allowed {
			deniedNodes = append(deniedNodes, n.ID)
		}
	}
	nodes := term.Plural(len(t.Nodes), "NUMA node", "NUMA nodes")
	if cpuless > 0 {
		nodes += fmt.Sprintf(" (%d CPU-less)", cpuless)
	}
	threads := term.Plural(len(t.CPUs), "thread", "threads")
	if len(offline) > 0 {
		threads += fmt.Sprintf(" (%d online)", online)
	}
	fmt.Fprintf(w, "Machine: %s, %s, %s, %s\n",
		term.Plural(len(t.Packages), "package", "packages"), nodes, term.Plural(len(cores), "core", "cores"), threads)
	if len(dies) > len(t.Packages) {
		fmt.Fprintf(w, "  dies:          %d\n", len(dies))
	}
	if len(cores) > 0 && len(cores) < online {
		fmt.Fprintf(w, "  SMT:           up to %d threads per core\n", maxThreads(t.CPUs))
	}
	if !t.NUMA {
		fmt.Fprintf(w, "  NUMA:          no node directory in sysfs; node 0 is the whole machine\n")
	}
	if len(offline) > 0 {
		fmt.Fprintf(w, "  offline CPUs:  %s\n", sysfs.FormatCPUList(offline))
	}
	if len(denied) > 0 || len(deniedNodes) > 0 {
		var parts []string
		if len(denied) > 0 {
			parts = append(parts, "CPUs "+sysfs.FormatCPUList(denied))
		}
		if len(deniedNodes) > 0 {
			parts = append(parts, "nodes "+sysfs.FormatCPUList(deniedNodes))
		}
		fmt.Fprintf(w, "  not allowed:   %s (cpuset of this process)\n", strings.Join(parts, "; "))
	}
	if t.AllowedSource != "" {
		fmt.Fprintf(w, "  allowed sets:  from %s\n", t.AllowedSource)
	} else {
		fmt.Fprintf(w, "  allowed sets:  not found; everything is taken as allowed\n")
	}
}

func maxThreads(cpus []CPU) int {
	m := 0
	for _, c := range cpus {
		if len(c.Siblings) > m {
			m = len(c.Siblings)
		}
	}
	return m
}

func (t *Topology) writeNodes(w *bufio.Writer) {
	fmt.Fprintf(w, "\nNUMA nodes:\n")
	// The tier column appears only when the kernel reports tiers; without
	// them a column of "-" would say nothing the memory section does not.
	tiers := t.MemoryTiers != nil
	rows := [][]string{{"node", "cpus", "memory", "free", "notes"}}
	right := []bool{true, false, true, true, false}
	if tiers {
		rows[0] = slices.Insert(rows[0], 4, "tier")
		right = slices.Insert(right, 4, true)
	}
	for _, n := range t.Nodes {
		cpus := sysfs.FormatCPUList(n.CPUs)
		if cpus == "" {
			cpus = "-"
		}
		var notes []string
		if n.CPULess {
			note := "CPU-less"
			if near, d := t.nearestCPUNode(n); near >= 0 {
				note += fmt.Sprintf(" (nearest CPUs: node %d, distance %d)", near, d)
			}
			notes = append(notes, note)
		}
		if !n.Allowed {
			notes = append(notes, "not allowed")
		}
		row := []string{strconv.Itoa(n.ID), cpus, humanBytes(n.MemoryTotal), humanBytes(n.MemoryFree), strings.Join(notes, ", ")}
		if tiers {
			row = slices.Insert(row, 4, optInt(n.MemoryTier))
		}
		rows = append(rows, row)
	}
	writeTable(w, rows, right)
}

// nearestCPUNode finds, for a CPU-less node, the closest node that has
// CPUs: that is where a CXL or HBM expander's memory is "local" to.
func (t *Topology) nearestCPUNode(n Node) (int, int) {
	best, bestD := -1, 0
	for _, m := range t.Nodes {
		if m.CPULess {
			continue
		}
		d, ok := n.Distances[strconv.Itoa(m.ID)]
		if !ok {
			continue
		}
		if best < 0 || d < bestD {
			best, bestD = m.ID, d
		}
	}
	return best, bestD
}

// writeTable aligns columns; right[i] right-aligns column i.
func writeTable(w *bufio.Writer, rows [][]string, right []bool) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if len(c) > widths[i] {
				widths[i] = len(c)
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len(c))
			if right[i] {
				b.WriteString(pad + c)
			} else if i < len(r)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// writeDistances prints the matrix in column blocks that fit the width, so
// that a 64-node machine gives a few readable blocks instead of 300-column
// lines.
func (t *Topology) writeDistances(w *bufio.Writer, width int) {
	if len(t.Nodes) < 2 {
		return
	}
	known := false
	cell := 3
	for _, n := range t.Nodes {
		for _, v := range n.Distances {
			known = true
			if l := len(strconv.Itoa(v)); l > cell {
				cell = l
			}
		}
		if l := len(strconv.Itoa(n.ID)); l > cell {
			cell = l
		}
	}
	fmt.Fprintf(w, "\nNode distances:\n")
	if !known {
		fmt.Fprintf(w, "  unknown (no distance files)\n")
		return
	}
	if len(t.Nodes) > 16 {
		t.writeDistanceGroups(w, width)
		return
	}
	label := 6
	perBlock := (width - 2 - label) / (cell + 1)
	if perBlock < 1 {
		perBlock = 1
	}
	for start := 0; start < len(t.Nodes); start += perBlock {
		end := min(start+perBlock, len(t.Nodes))
		if start > 0 {
			fmt.Fprintln(w)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "  %*s", label, "node")
		for _, m := range t.Nodes[start:end] {
			fmt.Fprintf(&b, " %*d", cell, m.ID)
		}
		fmt.Fprintln(w, b.String())
		for _, n := range t.Nodes {
			b.Reset()
			fmt.Fprintf(&b, "  %*d", label, n.ID)
			for _, m := range t.Nodes[start:end] {
				if v, ok := n.Distances[strconv.Itoa(m.ID)]; ok {
					fmt.Fprintf(&b, " %*d", cell, v)
				} else {
					fmt.Fprintf(&b, " %*s", cell, "?")
				}
			}
			fmt.Fprintln(w, b.String())
		}
	}
}

// writeDistanceGroups prints, for machines with many nodes, one line per
// node grouping the other nodes by distance ("10: 0  22: 1-3  26: 4-11"),
// which shows the machine's hierarchy of distances in a screenful where the
// full matrix would take several.
func (t *Topology) writeDistanceGroups(w *bufio.Writer, width int) {
	fmt.Fprintf(w, "  (%d nodes: nodes grouped by distance; the full matrix is in the JSON output)\n", len(t.Nodes))
	for _, n := range t.Nodes {
		byDist := map[int][]int{}
		for _, m := range t.Nodes {
			if v, ok := n.Distances[strconv.Itoa(m.ID)]; ok {
				byDist[v] = append(byDist[v], m.ID)
			}
		}
		dists := make([]int, 0, len(byDist))
		for d := range byDist {
			dists = append(dists, d)
		}
		sort.Ints(dists)
		var parts []string
		for _, d := range dists {
			parts = append(parts, fmt.Sprintf("%d: %s", d, sysfs.FormatCPUList(byDist[d])))
		}
		if len(parts) == 0 {
			parts = []string{"unknown"}
		}
		// Wrap long lines under the first group.
		line := fmt.Sprintf("  node %3d ", n.ID)
		indent := strings.Repeat(" ", len(line))
		for i, p := range parts {
			if i > 0 && len(line)+2+len(p) > width {
				fmt.Fprintln(w, strings.TrimRight(line, " "))
				line = indent
			}
			line += " " + p
			if i < len(parts)-1 {
				line += " "
			}
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

func cacheName(c Cache) string {
	switch c.Type {
	case "Data":
		return fmt.Sprintf("L%dd", c.Level)
	case "Instruction":
		return fmt.Sprintf("L%di", c.Level)
	}
	return fmt.Sprintf("L%d", c.Level)
}

// writeCaches summarises the cache instances by kind: one line per level,
// type, size and sharing degree, rather than one per instance.
func (t *Topology) writeCaches(w *bufio.Writer) {
	if len(t.Caches) == 0 {
		return
	}
	type group struct {
		c     Cache
		n     int
		share int
	}
	var groups []*group
	idx := map[string]*group{}
	for _, c := range t.Caches {
		k := fmt.Sprintf("%d/%s/%d/%d/%d/%d", c.Level, c.Type, c.SizeBytes, c.LineSize, c.Associativity, len(c.CPUs))
		g := idx[k]
		if g == nil {
			g = &group{c: c, share: len(c.CPUs)}
			idx[k] = g
			groups = append(groups, g)
		}
		g.n++
	}
	fmt.Fprintf(w, "\nCaches:\n")
	rows := [][]string{{"cache", "size", "line", "ways", "count", "shared by"}}
	for _, g := range groups {
		line, ways := "-", "-"
		if g.c.LineSize > 0 {
			line = fmt.Sprintf("%d B", g.c.LineSize)
		}
		if g.c.Associativity > 0 {
			ways = strconv.Itoa(g.c.Associativity)
		}
		size := "?"
		if g.c.SizeBytes > 0 {
			size = humanBytes(g.c.SizeBytes)
		}
		rows = append(rows, []string{cacheName(g.c), size, line, ways,
			strconv.Itoa(g.n), term.Plural(g.share, "CPU", "CPUs")})
	}
	writeTable(w, rows, []bool{false, true, true, true, true, false})
}

// humanBytes renders a size with a binary unit and at most one decimal.
func humanBytes(b uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(b)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 || v >= 100 {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// compactSize renders a cache size for a box label: "48K", "2M", "1.25M".
func compactSize(b uint64) string {
	switch {
	case b == 0:
		return "?"
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dG", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dM", b>>20)
	case b >= 10<<20:
		return fmt.Sprintf("%.0fM", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%dK", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}
