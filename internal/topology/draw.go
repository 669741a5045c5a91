package topology

import (
	"bufio"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

// The package drawing follows likwid-topology's graphical output: one frame
// per package, a box per core listing its hardware threads, and under the
// cores one row of boxes per shared cache level, each box spanning the cores
// that share the instance. Caches private to a core are written inside the
// core box instead of as rows of identical boxes, and a last row shows the
// NUMA nodes, which is what this tool is about. Wide packages wrap onto
// several bands of cores, and packages laid out like an earlier one are
// summarised in one line, so a 256-CPU machine stays a few screens long.

// drawCore is one core in a package drawing.
type drawCore struct {
	threads []int
	label   string
	private []string // private cache labels, lowest level first
	node    int
	die     int
}

// drawRow is one row of boxes under the cores: per core the instance it
// belongs to (-1: none) and per instance its label.
type drawRow struct {
	inst   []int
	labels map[int][]string // longest first; the first that fits is drawn
	isNode bool
}

func (t *Topology) writeDrawing(w *bufio.Writer, width int) {
	if len(t.Packages) == 0 {
		return
	}
	anyDenied := false
	for _, c := range t.CPUs {
		if !c.Allowed {
			anyDenied = true
		}
	}
	fmt.Fprintf(w, "\nPackages (cores list their hardware threads):\n")
	if anyDenied {
		fmt.Fprintf(w, "  * marks CPUs this process may not use\n")
	}
	type twin struct {
		first      int
		ids, cpus  []int
		nodes      []int
		firstCPUID int
	}
	seen := map[string]*twin{}
	var twins []*twin
	for _, p := range t.Packages {
		cores, rows := t.layoutPackage(p)
		if len(cores) == 0 {
			continue // all its CPUs are offline
		}
		name := "Package " + strconv.Itoa(p.ID)
		if p.ID == Unknown {
			name = "Package ?"
		}
		switch len(p.Nodes) {
		case 0:
		case 1:
			name += " (node " + strconv.Itoa(p.Nodes[0]) + ")"
		default:
			name += " (nodes " + sysfs.FormatCPUList(p.Nodes) + ")"
		}
		sig := layoutSignature(cores, rows)
		if tw, ok := seen[sig]; ok {
			tw.ids = append(tw.ids, p.ID)
			tw.cpus = append(tw.cpus, p.CPUs...)
			tw.nodes = append(tw.nodes, p.Nodes...)
			continue
		}
		tw := &twin{first: p.ID}
		seen[sig] = tw
		twins = append(twins, tw)
		drawPackage(w, name, cores, rows, width)
	}
	// Packages laid out like a drawn one: one line each when there are a
	// few, one line in all when there are many (a 128-socket ia64).
	for _, tw := range twins {
		if len(tw.ids) == 0 {
			continue
		}
		nodes := ""
		if len(tw.nodes) > 0 {
			nodes = ", nodes " + sysfs.FormatCPUList(slices.Sorted(maps.Keys(toSet(tw.nodes))))
		}
		if len(tw.ids) <= 4 {
			for _, id := range tw.ids {
				fmt.Fprintf(w, "Package %d: same layout as package %d\n", id, tw.first)
			}
		} else {
			fmt.Fprintf(w, "%d more packages have the same layout as package %d\n", len(tw.ids), tw.first)
		}
		fmt.Fprintf(w, "  (CPUs %s%s)\n", sysfs.FormatCPUList(slices.Sorted(maps.Keys(toSet(tw.cpus)))), nodes)
	}
}

// layoutPackage builds the cores of a package in drawing order and the rows
// of shared caches and nodes under them.
func (t *Topology) layoutPackage(p Package) ([]drawCore, []drawRow) {
	inPkg := toSet(p.CPUs)
	byKey := map[string]*drawCore{}
	var order []string
	for _, c := range t.CPUs {
		// Offline CPUs are listed in the header; a hand-edited tree can
		// leave one with a topology directory, but it runs nothing.
		if !inPkg[c.ID] || !c.Online {
			continue
		}
		k := coreKey(c)
		dc := byKey[k]
		if dc == nil {
			dc = &drawCore{node: c.Node, die: c.Die}
			byKey[k] = dc
			order = append(order, k)
		}
		dc.threads = append(dc.threads, c.ID)
	}
	allowed := map[int]bool{}
	for _, c := range t.CPUs {
		allowed[c.ID] = c.Allowed
	}
	cores := make([]drawCore, 0, len(order))
	for _, k := range order {
		dc := byKey[k]
		var parts []string
		for _, id := range dc.threads {
			s := strconv.Itoa(id)
			if !allowed[id] {
				s += "*"
			}
			parts = append(parts, s)
		}
		dc.label = strings.Join(parts, " ")
		cores = append(cores, *dc)
	}

	// Cache levels present in this package (instruction caches left out:
	// they mirror the data caches and would only add rows).
	type level struct {
		name  string
		level int
		insts []Cache
	}
	var levels []*level
	byName := map[string]*level{}
	for _, c := range t.Caches {
		if c.Type == "Instruction" || !intersects(c.CPUs, inPkg) {
			continue
		}
		n := cacheName(c)
		l := byName[n]
		if l == nil {
			l = &level{name: n, level: c.Level}
			byName[n] = l
			levels = append(levels, l)
		}
		l.insts = append(l.insts, c)
	}
	sort.SliceStable(levels, func(i, j int) bool { return levels[i].level < levels[j].level })

	// instanceOf maps each core to the instance of a level holding its first thread.
	instanceOf := func(l *level) []int {
		out := make([]int, len(cores))
		for i, dc := range cores {
			out[i] = -1
			for j, c := range l.insts {
				if slices.Contains(c.CPUs, dc.threads[0]) {
					out[i] = j
					break
				}
			}
		}
		return out
	}
	var shared []*level
	for _, l := range levels {
		inst := instanceOf(l)
		count := map[int]int{}
		for _, x := range inst {
			if x >= 0 {
				count[x]++
			}
		}
		private := true
		for _, n := range count {
			if n > 1 {
				private = false
			}
		}
		if private {
			for i, x := range inst {
				if x >= 0 {
					cores[i].private = append(cores[i].private, l.name+" "+compactSize(l.insts[x].SizeBytes))
				}
			}
			continue
		}
		shared = append(shared, l)
	}

	// Order cores so that every shared instance covers consecutive cores:
	// by die, node, then the instances from the outermost level inwards.
	keys := make([][]int, len(cores))
	for i, dc := range cores {
		keys[i] = []int{dc.die, dc.node}
	}
	for k := len(shared) - 1; k >= 0; k-- {
		inst := instanceOf(shared[k])
		for i := range cores {
			first := 1 << 30
			if inst[i] >= 0 {
				first = shared[k].insts[inst[i]].CPUs[0]
			}
			keys[i] = append(keys[i], first)
		}
	}
	for i, dc := range cores {
		keys[i] = append(keys[i], dc.threads[0])
	}
	perm := make([]int, len(cores))
	for i := range perm {
		perm[i] = i
	}
	sort.SliceStable(perm, func(a, b int) bool { return slices.Compare(keys[perm[a]], keys[perm[b]]) < 0 })
	sorted := make([]drawCore, len(cores))
	for i, j := range perm {
		sorted[i] = cores[j]
	}
	cores = sorted

	var rows []drawRow
	for _, l := range shared {
		inst := instanceOf(l)
		r := drawRow{inst: inst, labels: map[int][]string{}}
		for _, x := range inst {
			if x >= 0 {
				size := compactSize(l.insts[x].SizeBytes)
				r.labels[x] = []string{l.name + " " + size, size, l.name}
			}
		}
		rows = append(rows, r)
	}
	if t.NUMA {
		r := drawRow{inst: make([]int, len(cores)), labels: map[int][]string{}, isNode: true}
		for i, dc := range cores {
			r.inst[i] = dc.node
			if dc.node >= 0 {
				id := strconv.Itoa(dc.node)
				var alts []string
				if n := t.Node(dc.node); n != nil && n.MemoryTotal > 0 {
					alts = append(alts, "node "+id+" "+humanBytes(n.MemoryTotal))
				}
				r.labels[dc.node] = append(alts, "node "+id, "n"+id)
			}
		}
		rows = append(rows, r)
	}
	return cores, rows
}

func intersects(v []int, set map[int]bool) bool {
	for _, x := range v {
		if set[x] {
			return true
		}
	}
	return false
}

// layoutSignature describes a package's shape without its CPU and node
// numbers, so that identical packages are drawn once.
func layoutSignature(cores []drawCore, rows []drawRow) string {
	var b strings.Builder
	for _, c := range cores {
		fmt.Fprintf(&b, "%d:%s;", len(c.threads), strings.Join(c.private, ","))
	}
	for _, r := range rows {
		b.WriteString("|")
		for i, x := range r.inst {
			if i > 0 && x == r.inst[i-1] {
				b.WriteString("=")
				continue
			}
			switch {
			case x < 0:
				b.WriteString("-")
			case r.isNode:
				b.WriteString("n")
			default:
				b.WriteString(r.labels[x][0])
			}
			b.WriteString(",")
		}
	}
	return b.String()
}

// drawPackage draws one package frame, wrapping its cores into bands that
// fit the width.
func drawPackage(w *bufio.Writer, name string, cores []drawCore, rows []drawRow, width int) {
	inner := 4
	for _, c := range cores {
		inner = max(inner, len(c.label)+2)
		for _, p := range c.private {
			inner = max(inner, len(p)+2)
		}
	}
	slot := inner + 2 // a core box with its borders
	// Frame: "| " + band + " |"; bands are slots separated by one space.
	perBand := (width - 4 + 1) / (slot + 1)
	if perBand < 1 {
		perBand = 1
	}
	perBand = min(perBand, len(cores))
	bandWidth := max(perBand*slot+perBand-1, len(name)+2)
	nPrivate := 0
	for _, c := range cores {
		nPrivate = max(nPrivate, len(c.private))
	}

	title := "+- " + name + " "
	if len(title) > bandWidth+3 {
		title = title[:bandWidth+3]
	}
	fmt.Fprintln(w, title+strings.Repeat("-", bandWidth+3-len(title))+"+")
	line := func(s string) {
		fmt.Fprintln(w, "| "+s+strings.Repeat(" ", bandWidth-len(s))+" |")
	}
	for start := 0; start < len(cores); start += perBand {
		end := min(start+perBand, len(cores))
		band := cores[start:end]
		if start > 0 {
			line("")
		}
		// Core boxes.
		border := make([]string, len(band))
		for i := range band {
			border[i] = "+" + strings.Repeat("-", inner) + "+"
		}
		line(strings.Join(border, " "))
		texts := make([]string, len(band))
		for i, c := range band {
			texts[i] = "|" + center(c.label, inner) + "|"
		}
		line(strings.Join(texts, " "))
		for k := 0; k < nPrivate; k++ {
			for i, c := range band {
				s := ""
				if k < len(c.private) {
					s = c.private[k]
				}
				texts[i] = "|" + center(s, inner) + "|"
			}
			line(strings.Join(texts, " "))
		}
		line(strings.Join(border, " "))
		// Shared caches and nodes.
		for _, r := range rows {
			empty := true
			for _, x := range r.inst[start:end] {
				if x >= 0 {
					empty = false
				}
			}
			if empty {
				continue
			}
			top, mid := spanRow(r, start, end, slot)
			line(top)
			line(mid)
			line(top)
		}
	}
	fmt.Fprintln(w, "+"+strings.Repeat("-", bandWidth+2)+"+")
}

// spanRow renders the boxes of one row for cores [start,end): a box per run
// of consecutive cores in the same instance, blanks where there is none.
func spanRow(r drawRow, start, end, slot int) (border, text string) {
	var b, t strings.Builder
	for i := start; i < end; {
		j := i + 1
		for j < end && r.inst[j] == r.inst[i] {
			j++
		}
		n := j - i
		wd := n*slot + n - 1
		if i > start {
			b.WriteByte(' ')
			t.WriteByte(' ')
		}
		if r.inst[i] < 0 {
			b.WriteString(strings.Repeat(" ", wd))
			t.WriteString(strings.Repeat(" ", wd))
		} else {
			b.WriteString("+" + strings.Repeat("-", wd-2) + "+")
			t.WriteString("|" + center(fitting(r.labels[r.inst[i]], wd-2), wd-2) + "|")
		}
		i = j
	}
	return b.String(), t.String()
}

// fitting returns the first label that fits width w (the last one when none does).
func fitting(alts []string, w int) string {
	for _, a := range alts {
		if len(a) <= w {
			return a
		}
	}
	return alts[len(alts)-1]
}

// center pads s to width w, truncating when it does not fit.
func center(s string, w int) string {
	if len(s) > w {
		if w <= 1 {
			return s[:w]
		}
		return s[:w-1] + "~"
	}
	left := (w - len(s)) / 2
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", w-len(s)-left)
}
