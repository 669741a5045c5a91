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
)

// WriteHwlocXML writes the topology in hwloc's XML format (version 2, read
// by hwloc 2.0 and later: lstopo --input FILE, HWLOC_XMLFILE=FILE for any
// hwloc-based program), so that the tools built on hwloc (MPI launchers,
// job schedulers, lstopo's drawing) see what numascope saw, captured trees
// included. It holds the Machine, Packages, the NUMA nodes with their
// memory, Cores and PUs with their OS indexes, cpusets and nodesets, and
// the SLIT distances as a NUMALatency matrix. Caches are left out: hwloc
// reads them better from the machine itself, and nothing of numascope's
// depends on them.
//
// attrs are memory attributes to add (hwloc 2.3 and later): numascope
// bench's measured latency and bandwidth, each from the CPUs of the
// initiator node to the target node. Their values are hwloc's units:
// nanoseconds for Latency, MiB/s for Bandwidth.
//
// A node whose CPUs straddle packages in a way a tree cannot hold (which
// no real machine does) is attached to the Machine: its locality is then
// the whole machine, and the returned notes say so.
func (t *Topology) WriteHwlocXML(w io.Writer, attrs []MemAttr) (notes []string, err error) {
	b := newXMLBuilder(t)
	root := b.build()
	bw := bufio.NewWriter(w)
	bw.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n")
	b.write(bw, root, 1)
	b.writeDistances(bw)
	if err := b.writeMemAttrs(bw, attrs); err != nil {
		return b.notes, err
	}
	bw.WriteString("</topology>\n")
	return b.notes, bw.Flush()
}

// MemAttr is one value of an hwloc memory attribute: Name is "Latency"
// (nanoseconds) or "Bandwidth" (MiB/s), hwloc's predefined attributes.
type MemAttr struct {
	Name      string
	Initiator int // the node whose CPUs made the accesses
	Target    int // the node whose memory was accessed
	Value     uint64
}

// memAttrFlags are hwloc's flags of its predefined attributes: HIGHER_FIRST
// (1) or LOWER_FIRST (2), plus NEED_INITIATOR (4). hwloc ignores values of
// an attribute whose flags differ from its own definition.
var memAttrFlags = map[string]int{"Bandwidth": 1 | 4, "Latency": 2 | 4}

// xobj is one object of the hwloc tree being built.
type xobj struct {
	typ      string
	os       int // -1: none
	pus      []int
	mem      []*xobj // memory children (NUMANodes)
	children []*xobj
	node     *Node // NUMANode only
	gp       int
	cpuset   []int
	nodeset  []int
}

type xmlBuilder struct {
	t       *Topology
	online  []CPU
	byNode  map[int]*xobj // NUMANode objects by node ID
	notes   []string
	nextGP  int
	machine *xobj
}

func newXMLBuilder(t *Topology) *xmlBuilder {
	b := &xmlBuilder{t: t, byNode: map[int]*xobj{}, nextGP: 1}
	// PUs are the online CPUs whose topology the kernel exposes: like
	// hwloc, which ignores a CPU without a topology directory, numascope
	// cannot place one in a package or core.
	for _, c := range t.CPUs {
		if c.Online && len(c.Siblings) > 0 {
			b.online = append(b.online, c)
		}
	}
	return b
}

// build lays the objects out as hwloc would for the common shapes: a node
// covering one package is the package's memory child; a node covering
// several whole packages is the memory child of a Group of them (or of the
// Machine when it covers them all); several nodes in one package (sub-NUMA
// clustering) each get a Group in the package. CPU-less nodes go where
// their HMAT initiators' CPUs are, else to the Machine, as hwloc does.
func (b *xmlBuilder) build() *xobj {
	m := &xobj{typ: "Machine", os: 0}
	b.machine = m
	pkgCPUs := map[int][]CPU{}
	var pkgIDs []int
	for _, c := range b.online {
		if _, ok := pkgCPUs[c.Package]; !ok {
			pkgIDs = append(pkgIDs, c.Package)
		}
		pkgCPUs[c.Package] = append(pkgCPUs[c.Package], c)
	}
	sort.Ints(pkgIDs)
	nodesOfPkg := map[int][]int{}
	pkgsOfNode := map[int][]int{}
	for _, p := range pkgIDs {
		for _, c := range pkgCPUs[p] {
			if c.Node == Unknown {
				continue
			}
			if !slices.Contains(nodesOfPkg[p], c.Node) {
				nodesOfPkg[p] = append(nodesOfPkg[p], c.Node)
			}
			if !slices.Contains(pkgsOfNode[c.Node], p) {
				pkgsOfNode[c.Node] = append(pkgsOfNode[c.Node], p)
			}
		}
	}
	numa := func(id int) *xobj {
		n := b.t.Node(id)
		o := &xobj{typ: "NUMANode", os: id, node: n}
		b.byNode[id] = o
		return o
	}
	// A node is "whole-package" when each of its packages holds only it.
	wholePkgs := func(id int) bool {
		for _, p := range pkgsOfNode[id] {
			if len(nodesOfPkg[p]) != 1 {
				return false
			}
		}
		return true
	}
	pkgObj := map[int]*xobj{}
	for _, p := range pkgIDs {
		o := &xobj{typ: "Package", os: p}
		pkgObj[p] = o
		if len(nodesOfPkg[p]) <= 1 {
			o.children = cores(pkgCPUs[p])
			continue
		}
		// Several nodes in this package: a Group per node when the node
		// lies wholly inside it.
		var rest []CPU
		for _, id := range nodesOfPkg[p] {
			if len(pkgsOfNode[id]) != 1 {
				continue
			}
			var cs []CPU
			for _, c := range pkgCPUs[p] {
				if c.Node == id {
					cs = append(cs, c)
				}
			}
			g := &xobj{typ: "Group", os: -1, children: cores(cs)}
			g.mem = append(g.mem, numa(id))
			o.children = append(o.children, g)
		}
		for _, c := range pkgCPUs[p] {
			if c.Node == Unknown || len(pkgsOfNode[c.Node]) != 1 {
				rest = append(rest, c)
			}
		}
		o.children = append(o.children, cores(rest)...)
	}
	placed := map[int]bool{}
	for _, p := range pkgIDs {
		placed[p] = false
	}
	for _, n := range b.t.Nodes {
		if _, done := b.byNode[n.ID]; done || len(pkgsOfNode[n.ID]) == 0 {
			continue
		}
		ps := pkgsOfNode[n.ID]
		switch {
		case !wholePkgs(n.ID):
			b.notes = append(b.notes, fmt.Sprintf("node %d shares packages %s with other nodes in a way hwloc's tree cannot hold; it is attached to the Machine", n.ID, sysfs.FormatCPUList(ps)))
			m.mem = append(m.mem, numa(n.ID))
		case len(ps) == 1:
			pkgObj[ps[0]].mem = append(pkgObj[ps[0]].mem, numa(n.ID))
		case len(ps) == len(pkgIDs):
			m.mem = append(m.mem, numa(n.ID))
		default:
			g := &xobj{typ: "Group", os: -1}
			g.mem = append(g.mem, numa(n.ID))
			for _, p := range ps {
				g.children = append(g.children, pkgObj[p])
				placed[p] = true
			}
			m.children = append(m.children, g)
		}
	}
	for _, p := range pkgIDs {
		if !placed[p] {
			m.children = append(m.children, pkgObj[p])
		}
	}
	sortByFirstPU(m)
	b.sets(m)

	// Nodes without (online) CPUs: memory children of the object whose
	// CPUs are their best initiators' (the HMAT access class 1, else 0),
	// else of the Machine.
	bySet := map[string]*xobj{}
	var index func(o *xobj)
	index = func(o *xobj) {
		k := sysfs.FormatCPUList(o.cpuset)
		if _, ok := bySet[k]; !ok {
			bySet[k] = o
		}
		for _, c := range o.children {
			index(c)
		}
	}
	index(m)
	for _, n := range b.t.Nodes {
		if _, done := b.byNode[n.ID]; done {
			continue
		}
		parent := m
		if cpus := b.initiatorCPUs(&n); len(cpus) > 0 {
			if o, ok := bySet[sysfs.FormatCPUList(cpus)]; ok {
				parent = o
			}
		}
		parent.mem = append(parent.mem, numa(n.ID))
	}
	b.sets(m)
	b.nodesets(m, nil)
	b.number(m)
	return m
}

// initiatorCPUs is the union of the online CPUs of a CPU-less node's best
// CPU initiators by HMAT: access class 1 (CPU initiators) when the kernel
// has it, else class 0.
func (b *xmlBuilder) initiatorCPUs(n *Node) []int {
	var best *Access
	for i := range n.Access {
		if a := &n.Access[i]; len(a.Initiators) > 0 && (best == nil || a.Class == 1) {
			best = a
		}
	}
	if best == nil {
		return nil
	}
	var out []int
	for _, id := range best.Initiators {
		out = append(out, b.nodeCPUs(id)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nodeCPUs is the online CPUs of node id.
func (b *xmlBuilder) nodeCPUs(id int) []int {
	var out []int
	for _, c := range b.online {
		if c.Node == id {
			out = append(out, c.ID)
		}
	}
	return out
}

// cores groups CPUs into Core objects by SMT sibling set, each holding its
// PUs, in the order of their first CPU.
func cores(cpus []CPU) []*xobj {
	var out []*xobj
	byKey := map[string]*xobj{}
	for _, c := range cpus {
		k := coreKey(c)
		o := byKey[k]
		if o == nil {
			o = &xobj{typ: "Core", os: c.Core}
			byKey[k] = o
			out = append(out, o)
		}
		o.children = append(o.children, &xobj{typ: "PU", os: c.ID, pus: []int{c.ID}})
	}
	return out
}

func sortByFirstPU(o *xobj) {
	first := func(x *xobj) int {
		v := 1 << 30
		var walk func(y *xobj)
		walk = func(y *xobj) {
			for _, p := range y.pus {
				v = min(v, p)
			}
			for _, c := range y.children {
				walk(c)
			}
		}
		walk(x)
		return v
	}
	sort.SliceStable(o.children, func(i, j int) bool { return first(o.children[i]) < first(o.children[j]) })
	for _, c := range o.children {
		sortByFirstPU(c)
	}
}

// sets computes each object's cpuset, the union of its PUs; a NUMANode's
// is its parent's (its locality), as in hwloc.
func (b *xmlBuilder) sets(o *xobj) []int {
	set := slices.Clone(o.pus)
	for _, c := range o.children {
		set = append(set, b.sets(c)...)
	}
	slices.Sort(set)
	o.cpuset = slices.Compact(set)
	for _, n := range o.mem {
		n.cpuset = o.cpuset
	}
	return o.cpuset
}

// nodesets gives each object the nodes local to its CPUs: those attached
// to it, to its ancestors and to its descendants. A NUMANode's nodeset is
// itself.
func (b *xmlBuilder) nodesets(o *xobj, above []int) []int {
	own := slices.Clone(above)
	for _, n := range o.mem {
		own = append(own, n.os)
		n.nodeset = []int{n.os}
	}
	below := []int{}
	for _, c := range o.children {
		below = append(below, b.nodesets(c, own)...)
	}
	set := append(slices.Clone(own), below...)
	slices.Sort(set)
	o.nodeset = slices.Compact(set)
	mine := []int{}
	for _, n := range o.mem {
		mine = append(mine, n.os)
	}
	return append(mine, below...)
}

// number gives every object an hwloc gp_index in the order the file lists
// them; memory attributes name their targets by it.
func (b *xmlBuilder) number(o *xobj) {
	o.gp = b.nextGP
	b.nextGP++
	for _, n := range o.mem {
		n.gp = b.nextGP
		b.nextGP++
	}
	for _, c := range o.children {
		b.number(c)
	}
}

// hwlocBitmap renders a set in hwloc's bitmap syntax: 32-bit words in hex,
// most significant first, comma separated ("0x00000003",
// "0x00000001,0x00000000"); the empty set is "0x0".
func hwlocBitmap(set []int) string {
	if len(set) == 0 {
		return "0x0"
	}
	top := set[len(set)-1]
	words := make([]uint32, top/32+1)
	for _, v := range set {
		words[v/32] |= 1 << uint(v%32)
	}
	var sb strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "0x%08x", words[i])
	}
	return sb.String()
}

func (b *xmlBuilder) write(w *bufio.Writer, o *xobj, depth int) {
	ind := strings.Repeat("  ", depth)
	fmt.Fprintf(w, "%s<object type=\"%s\"", ind, o.typ)
	if o.os >= 0 {
		fmt.Fprintf(w, " os_index=\"%d\"", o.os)
	}
	cs, ns := hwlocBitmap(o.cpuset), hwlocBitmap(o.nodeset)
	fmt.Fprintf(w, " cpuset=\"%s\" complete_cpuset=\"%s\"", cs, cs)
	if o == b.machine {
		var allowed []int
		for _, c := range b.online {
			if c.Allowed {
				allowed = append(allowed, c.ID)
			}
		}
		fmt.Fprintf(w, " allowed_cpuset=\"%s\"", hwlocBitmap(allowed))
	}
	fmt.Fprintf(w, " nodeset=\"%s\" complete_nodeset=\"%s\"", ns, ns)
	if o == b.machine {
		var allowed []int
		for _, n := range b.t.Nodes {
			if n.Allowed {
				allowed = append(allowed, n.ID)
			}
		}
		fmt.Fprintf(w, " allowed_nodeset=\"%s\"", hwlocBitmap(allowed))
	}
	fmt.Fprintf(w, " gp_index=\"%d\"", o.gp)
	if o.node != nil {
		fmt.Fprintf(w, " local_memory=\"%d\"", o.node.MemoryTotal)
	}
	if len(o.mem) == 0 && len(o.children) == 0 {
		w.WriteString("/>\n")
		return
	}
	w.WriteString(">\n")
	if o == b.machine {
		fmt.Fprintf(w, "%s  <info name=\"Backend\" value=\"numascope\"/>\n", ind)
	}
	for _, n := range o.mem {
		b.write(w, n, depth+1)
	}
	for _, c := range o.children {
		b.write(w, c, depth+1)
	}
	fmt.Fprintf(w, "%s</object>\n", ind)
}

// writeDistances writes the SLIT as hwloc's NUMALatency matrix (kind 5:
// from the OS, meaning latency), indexed by node OS index, when every
// distance is known: hwloc refuses a partial matrix.
func (b *xmlBuilder) writeDistances(w *bufio.Writer) {
	nodes := b.t.Nodes
	if len(nodes) < 2 {
		return
	}
	var vals []string
	for _, a := range nodes {
		for _, c := range nodes {
			v, ok := a.Distances[strconv.Itoa(c.ID)]
			if !ok {
				b.notes = append(b.notes, "the distance matrix is incomplete; it is left out")
				return
			}
			vals = append(vals, strconv.Itoa(v))
		}
	}
	var idx strings.Builder
	for _, n := range nodes {
		idx.WriteString(strconv.Itoa(n.ID) + " ")
	}
	fmt.Fprintf(w, "  <distances2 type=\"NUMANode\" nbobjs=\"%d\" kind=\"5\" name=\"NUMALatency\" indexing=\"os\">\n", len(nodes))
	fmt.Fprintf(w, "    <indexes length=\"%d\">%s</indexes>\n", idx.Len(), idx.String())
	// hwloc writes ten values per element; a reader accepts any split.
	for i := 0; i < len(vals); i += 10 {
		s := strings.Join(vals[i:min(i+10, len(vals))], " ") + " "
		fmt.Fprintf(w, "    <u64values length=\"%d\">%s</u64values>\n", len(s), s)
	}
	w.WriteString("  </distances2>\n")
}

// writeMemAttrs writes the values, one <memattr> per attribute name, each
// value naming its target NUMANode by gp_index and its initiator by the
// cpuset of the initiator node's online CPUs.
func (b *xmlBuilder) writeMemAttrs(w *bufio.Writer, attrs []MemAttr) error {
	var names []string
	by := map[string][]MemAttr{}
	for _, a := range attrs {
		if _, ok := memAttrFlags[a.Name]; !ok {
			return fmt.Errorf("memory attribute %q: numascope writes only Latency and Bandwidth", a.Name)
		}
		if _, ok := by[a.Name]; !ok {
			names = append(names, a.Name)
		}
		by[a.Name] = append(by[a.Name], a)
	}
	for _, name := range names {
		fmt.Fprintf(w, "  <memattr name=\"%s\" flags=\"%d\">\n", name, memAttrFlags[name])
		for _, a := range by[name] {
			target, ok := b.byNode[a.Target]
			if !ok {
				return fmt.Errorf("%s from node %d to node %d: this topology has no node %d; give the bench result of this machine", name, a.Initiator, a.Target, a.Target)
			}
			cpus := b.nodeCPUs(a.Initiator)
			if len(cpus) == 0 {
				return fmt.Errorf("%s from node %d to node %d: node %d has no online CPU in this topology; give the bench result of this machine", name, a.Initiator, a.Target, a.Initiator)
			}
			fmt.Fprintf(w, "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"%d\" initiator_cpuset=\"%s\" value=\"%d\"/>\n",
				target.gp, hwlocBitmap(cpus), a.Value)
		}
		w.WriteString("  </memattr>\n")
	}
	return nil
}
