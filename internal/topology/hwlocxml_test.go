package topology

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
)

func TestHwlocBitmap(t *testing.T) {
	for want, set := range map[string][]int{
		"0x0":                              nil,
		"0x00000003":                       {0, 1},
		"0x00000001,0x00000000":            {32},
		"0x80000000,0x00000000,0x00000001": {0, 95},
	} {
		if got := hwlocBitmap(set); got != want {
			t.Errorf("hwlocBitmap(%v) = %s, want %s", set, got, want)
		}
		if back, _ := sysfs.ParseCPUMask(want); !slices.Equal(back, set) {
			t.Errorf("%s reads back as %v", want, back)
		}
	}
}

// xmlMemAttr is a <memattr> of hwloc's XML.
type xmlMemAttr struct {
	Name   string `xml:"name,attr"`
	Flags  int    `xml:"flags,attr"`
	Values []struct {
		TargetType string `xml:"target_obj_type,attr"`
		TargetGP   int    `xml:"target_obj_gp_index,attr"`
		Initiator  string `xml:"initiator_cpuset,attr"`
		Value      uint64 `xml:"value,attr"`
	} `xml:"memattr_value"`
}

// hwlocXML writes top's XML with attrs and returns it.
func hwlocXML(t *testing.T, top *Topology, attrs []MemAttr) []byte {
	t.Helper()
	var b bytes.Buffer
	notes, err := top.WriteHwlocXML(&b, attrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) > 0 {
		t.Logf("notes: %q", notes)
	}
	return b.Bytes()
}

var benchAttrs = []MemAttr{
	{"Latency", 0, 0, 95}, {"Latency", 0, 2, 310}, {"Latency", 1, 2, 330},
	{"Bandwidth", 0, 0, 20000}, {"Bandwidth", 1, 2, 7000},
}

// TestWriteHwlocXML checks the XML itself, read with the same parser that
// reads hwloc's own expected output: nodes with their locality, PUs,
// distances, and the memory attributes naming their targets by gp_index.
func TestWriteHwlocXML(t *testing.T) {
	top, err := Discover(sysfs.New(hmatTree(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	out := hwlocXML(t, top, benchAttrs)
	exp, err := parseHwlocXML(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := sysfs.FormatCPUList(exp.pus); got != "0-3" {
		t.Errorf("PUs %s", got)
	}
	// Node 2 is CPU-less, rated from nodes 0 and 1: its locality is
	// their CPUs, the whole machine.
	want := map[int]string{0: "0-1", 1: "2-3", 2: "0-3"}
	if len(exp.nodes) != 3 {
		t.Fatalf("nodes %+v", exp.nodes)
	}
	for _, n := range exp.nodes {
		if got := sysfs.FormatCPUList(n.pus); got != want[n.os] || n.mem != top.Node(n.os).MemoryTotal {
			t.Errorf("node %d: cpuset %s memory %d, want %s and %d", n.os, got, n.mem, want[n.os], top.Node(n.os).MemoryTotal)
		}
	}
	if exp.dist[[2]int{0, 2}] != 14 || exp.dist[[2]int{2, 1}] != 24 || len(exp.dist) != 9 {
		t.Errorf("distances %v", exp.dist)
	}
	var x struct {
		Objects  []xmlObject  `xml:"object"`
		MemAttrs []xmlMemAttr `xml:"memattr"`
	}
	if err := xml.Unmarshal(out, &x); err != nil {
		t.Fatal(err)
	}
	gp := map[int]int{} // gp_index -> node
	var walk func(o xmlObject)
	walk = func(o xmlObject) {
		if o.Type == "NUMANode" {
			gp[o.GPIndex] = *o.OSIndex
		}
		for _, c := range o.Children {
			walk(c)
		}
	}
	walk(x.Objects[0])
	if len(x.MemAttrs) != 2 || x.MemAttrs[0].Name != "Latency" || x.MemAttrs[0].Flags != 6 || x.MemAttrs[1].Flags != 5 {
		t.Fatalf("memattrs %+v", x.MemAttrs)
	}
	v := x.MemAttrs[0].Values[2]
	if v.TargetType != "NUMANode" || gp[v.TargetGP] != 2 || v.Initiator != "0x0000000c" || v.Value != 330 {
		t.Errorf("Latency 1 -> 2 written as %+v (gp %v)", v, gp)
	}
	if _, err := top.WriteHwlocXML(&bytes.Buffer{}, []MemAttr{{"Latency", 0, 7, 1}}); err == nil || !strings.Contains(err.Error(), "no node 7") {
		t.Errorf("a target the topology lacks: %v", err)
	}
	if _, err := top.WriteHwlocXML(&bytes.Buffer{}, []MemAttr{{"Latency", 2, 0, 1}}); err == nil || !strings.Contains(err.Error(), "node 2 has no online CPU") {
		t.Errorf("a CPU-less initiator: %v", err)
	}
}

// runLstopo runs hwloc's lstopo on an XML file and returns its stdout,
// failing with hwloc's own complaint (HWLOC_XML_VERBOSE) when it exits
// non-zero or reports an XML problem.
func runLstopo(t *testing.T, lstopo, file string, args ...string) string {
	t.Helper()
	cmd := exec.Command(lstopo, append([]string{"--input", file}, args...)...)
	cmd.Env = append(os.Environ(), "HWLOC_XML_VERBOSE=1")
	out, errs, code := testutil.Run(t, cmd)
	if code != 0 || strings.TrimSpace(errs) != "" {
		xmlText, _ := os.ReadFile(file)
		t.Fatalf("%s --input %s %s: exit %d\nstderr: %s\nXML:\n%s", lstopo, file, strings.Join(args, " "), code, errs, xmlText)
	}
	return out
}

// lstopoRoundTrip writes top's XML with attrs to a file, has lstopo load
// it and export it again, and returns the file and what lstopo exported.
func lstopoRoundTrip(t *testing.T, lstopo string, top *Topology, attrs []MemAttr) (string, *hwlocExpect) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "topo.xml")
	if err := os.WriteFile(file, hwlocXML(t, top, attrs), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := parseHwlocXML([]byte(runLstopo(t, lstopo, file, "--of", "xml", "-")))
	if err != nil {
		t.Fatalf("lstopo's re-export: %v", err)
	}
	return file, back
}

// TestHwlocXMLLstopo reads the XML back with Debian's hwloc: lstopo must
// load it without a complaint, re-export the same nodes, PUs and
// distances, and show the measured values as memory attributes.
func TestHwlocXMLLstopo(t *testing.T) {
	lstopo := testutil.Lstopo(t)
	for name, root := range map[string]string{"synthetic": hmatTree(t, nil), "two-node-cxl": filepath.Join("testdata", "two-node-cxl"), "no-numa": filepath.Join("testdata", "no-numa")} {
		t.Run(name, func(t *testing.T) {
			top, err := Discover(sysfs.New(root))
			if err != nil {
				t.Fatal(err)
			}
			var attrs []MemAttr
			if name == "synthetic" {
				attrs = benchAttrs
			}
			file, back := lstopoRoundTrip(t, lstopo, top, attrs)
			checkRoundTrip(t, top, back)
			if attrs == nil {
				return
			}
			// lstopo names nodes by logical index in --memattrs; the
			// console tree maps them to OS indexes.
			osOf := map[string]int{}
			for _, m := range reNodeLogical.FindAllStringSubmatch(runLstopo(t, lstopo, file, "-v", "--of", "console"), -1) {
				osOf[m[1]], _ = strconv.Atoi(m[2])
			}
			got := map[string]bool{}
			attr := ""
			for _, l := range strings.Split(runLstopo(t, lstopo, file, "--memattrs"), "\n") {
				if m := reMemAttr.FindStringSubmatch(l); m != nil {
					attr = m[1]
				}
				if m := reMemAttrVal.FindStringSubmatch(l); m != nil {
					got[attr+" node "+strconv.Itoa(osOf[m[1]])+" = "+m[2]+" from "+m[3]] = true
				}
			}
			for _, a := range attrs {
				k := a.Name + " node " + strconv.Itoa(a.Target) + " = " + strconv.FormatUint(a.Value, 10) + " from " + hwlocBitmap(top.Node(a.Initiator).CPUs)
				if !got[k] {
					t.Errorf("lstopo --memattrs lacks %q; it shows %v", k, got)
				}
			}
		})
	}
}

// checkRoundTrip compares what lstopo re-exported with the topology: every
// node, its memory and (for nodes with CPUs) its CPUs, every online CPU as a
// PU, and the distances.
func checkRoundTrip(t *testing.T, top *Topology, back *hwlocExpect) {
	t.Helper()
	var online []int
	for _, c := range top.CPUs {
		if c.Online && c.Allowed && len(c.Siblings) > 0 {
			online = append(online, c.ID)
		}
	}
	if got, want := sysfs.FormatCPUList(back.pus), sysfs.FormatCPUList(online); got != want {
		t.Errorf("PUs: lstopo %s, numascope's online allowed CPUs %s", got, want)
	}
	var ids, hids []int
	for _, n := range top.Nodes {
		if n.Allowed {
			ids = append(ids, n.ID)
		}
	}
	for _, h := range back.nodes {
		hids = append(hids, h.os)
		n := top.Node(h.os)
		if n == nil {
			continue
		}
		if h.mem != n.MemoryTotal {
			t.Errorf("node %d memory: lstopo %d, numascope %d", n.ID, h.mem, n.MemoryTotal)
		}
		if !n.CPULess {
			var want []int
			for _, c := range n.CPUs {
				if slices.Contains(online, c) {
					want = append(want, c)
				}
			}
			if got, w := sysfs.FormatCPUList(h.pus), sysfs.FormatCPUList(want); got != w {
				t.Errorf("node %d CPUs: lstopo %s, numascope %s", n.ID, got, w)
			}
		}
	}
	sort.Ints(hids)
	if !slices.Equal(hids, ids) {
		t.Errorf("nodes: lstopo %v, numascope %v", hids, ids)
	}
	for k, v := range back.dist {
		if got := top.Distance(k[0], k[1]); got != v {
			t.Errorf("distance %d->%d: lstopo %d, numascope %d", k[0], k[1], v, got)
		}
	}
	if len(ids) > 1 && len(back.dist) != len(ids)*len(ids) {
		t.Errorf("lstopo shows %d distances for %d nodes", len(back.dist), len(ids))
	}
}

// TestHwlocXMLFixtures is the cross-check on real machines: each captured
// tree goes through numascope's discovery and XML, then Debian's lstopo
// reads it back, and the NUMA nodes and PUs must be those hwloc itself
// found in the same tree (its expected output in the fixture set).
func TestHwlocXMLFixtures(t *testing.T) {
	lstopo := testutil.Lstopo(t)
	dir := hwlocFixtureDir(t)
	trees, _ := fixtureTrees(t, dir)
	tests, _ := filepath.Glob(filepath.Join(dir, "*.test"))
	compared := 0
	for _, tf := range tests {
		ht, err := parseHwlocTest(tf)
		if err != nil {
			t.Fatal(err)
		}
		root, ok := trees[ht.source]
		q := hwlocQuirks[ht.name]
		// Options and environment change what hwloc shows (merged
		// levels, kept disallowed objects); quirks are where hwloc
		// shows something else than the kernel on purpose.
		if !ok || len(ht.options) > 0 || len(ht.env) > 0 || q.skipNodes != "" || q.hidden != nil {
			continue
		}
		t.Run(ht.name, func(t *testing.T) {
			top, err := Discover(sysfs.New(root))
			if err != nil {
				t.Fatal(err)
			}
			exp, err := loadHwlocExpect(filepath.Join(dir, ht.target))
			if err != nil {
				t.Fatal(err)
			}
			_, back := lstopoRoundTrip(t, lstopo, top, nil)
			if got, want := sysfs.FormatCPUList(back.pus), sysfs.FormatCPUList(exp.pus); got != want {
				t.Errorf("PUs: hwloc on the tree %s, lstopo on numascope's XML %s", want, got)
			}
			var hw, mine []int
			for _, n := range exp.nodes {
				hw = append(hw, n.os)
			}
			for _, n := range back.nodes {
				mine = append(mine, n.os)
			}
			sort.Ints(hw)
			sort.Ints(mine)
			if !slices.Equal(hw, mine) {
				t.Errorf("NUMA nodes: hwloc on the tree %v, lstopo on numascope's XML %v", hw, mine)
			}
			// What lstopo read back of each node's memory, of the distances,
			// the packages and the cores, against hwloc on the tree (the
			// XML holds no caches: WriteHwlocXML).
			backMem := map[int]uint64{}
			for _, n := range back.nodes {
				backMem[n.os] = n.mem
			}
			for _, n := range exp.nodes {
				switch m := backMem[n.os]; {
				case exp.fromXML && m != n.mem:
					t.Errorf("node %d memory: hwloc on the tree %d bytes, lstopo on numascope's XML %d", n.os, n.mem, m)
				case !exp.fromXML && n.hasMem && hwlocSize(m) != n.memText:
					t.Errorf("node %d memory: hwloc on the tree local=%s, lstopo on numascope's XML %d bytes = %s", n.os, n.memText, m, hwlocSize(m))
				}
			}
			for k, v := range exp.dist {
				if got, ok := back.dist[k]; !ok || got != v {
					t.Errorf("distance %d->%d: hwloc on the tree %d, lstopo on numascope's XML %d (present %v)", k[0], k[1], v, got, ok)
				}
			}
			if q.skipPackages == "" {
				pk := func(e *hwlocExpect) []string {
					var out []string
					for _, p := range e.packages {
						out = append(out, groupKey(0, false, p.pus))
					}
					sort.Strings(out)
					return out
				}
				if hw, mine := pk(exp), pk(back); len(hw) > 0 && !slices.Equal(hw, mine) {
					t.Errorf("packages, hwloc on the tree (-) and lstopo on numascope's XML (+):\n%s", diffLines(hw, mine))
				}
			}
			if len(exp.cores) > 0 && !slices.Equal(exp.cores, back.cores) {
				t.Errorf("cores, hwloc on the tree (-) and lstopo on numascope's XML (+):\n%s", diffLines(exp.cores, back.cores))
			}
			compared++
		})
	}
	if compared < 10 {
		t.Errorf("only %d captured trees went through lstopo", compared)
	}
}

// reXMLVersion guards the header hwloc 2.x needs to pick its v2 reader.
var reXMLVersion = regexp.MustCompile(`<topology version="2\.0">`)

func TestHwlocXMLHeader(t *testing.T) {
	out := hwlocXML(t, discoverTree(t, "no-numa"), nil)
	if !bytes.HasPrefix(out, []byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n")) || !reXMLVersion.Match(out) {
		t.Errorf("header:\n%s", out)
	}
	if bytes.Contains(out, []byte("<distances2")) {
		t.Errorf("a one-node machine has no distance matrix:\n%s", out)
	}
}
