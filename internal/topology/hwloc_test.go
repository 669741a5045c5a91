package topology

import (
	"encoding/xml"
	"fmt"
	"maps"
	"math"
	"os"
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

// The tests in this file run Discover on every captured tree of hwloc's
// Linux test suite and compare the NUMA view with what hwloc itself expects
// from the same tree (its .console or .xml output). hwloc is the reference
// implementation of topology discovery, and the trees are real machines with
// real quirks, so agreement here is the best evidence that numascope reads
// sysfs right. Nothing per fixture is hard-coded: the expected values are
// parsed from hwloc's files; the only per-fixture knowledge is the short list
// of places where hwloc deliberately shows something else than the kernel
// (hwlocQuirks), each with its reason.

// hwlocNode is one NUMANode of hwloc's expected output.
type hwlocNode struct {
	os         int
	pus        []int  // PUs of the node's locality (console) or its cpuset (XML)
	mem        uint64 // XML: local_memory in bytes
	memText    string // console: "local=" value as printed ("8192MiB"); "" when absent
	hasMem     bool
	disallowed bool // console --disallowed marks
}

// hwlocExpect is what hwloc shows for one test.
type hwlocExpect struct {
	fromXML       bool
	nodes         []hwlocNode
	pus           []int // every PU shown
	disallowedPUs []int // PUs marked (disallowed) (console --disallowed)
	dist          map[[2]int]int
	allowedCPUs   []int        // XML root allowed_cpuset; nil when absent or infinite
	complete      []int        // every CPU hwloc knows: shown plus "not represented"
	caches        []string     // cacheKey of every CPU cache object
	packages      []hwlocGroup // every Package object with a PU
	cores         []string     // groupKey of every Core object (its PUs: SMT siblings)
	dies          []string     // groupKey of every Die object
	allowedNodes  []int        // XML root allowed_nodeset
	cgroup        string       // "LinuxCgroup" info: the cpuset path hwloc resolved
}

// hwlocQuirk documents where hwloc's output is not the kernel's raw view.
type hwlocQuirk struct {
	// skipNodes, skipCaches: the comparison does not apply; the reason is logged.
	skipNodes    string
	skipCaches   string
	skipPackages string
	// hidden reports nodes hwloc hides on purpose, with the reason.
	hidden func(n Node) bool
	reason string
	check  func(t *testing.T, top *Topology)
}

var hwlocQuirks = map[string]hwlocQuirk{
	"8em64t-2s2ca2c-buggynuma": {
		skipNodes: "the kernel lists 8 nodes that all hold CPUs 0-7 at distance 10 from each other; hwloc detects this bogus " +
			"firmware description and replaces the 8 nodes by a single one, while numascope reports what the kernel says and warns",
		check: func(t *testing.T, top *Topology) {
			if len(top.Nodes) != 8 || !hasWarning(top, "more than one of nodes 0-7") {
				t.Errorf("want the 8 kernel nodes and a warning about CPUs in several nodes; got %d nodes, warnings %q", len(top.Nodes), top.Warnings)
			}
		},
	},
	"40intel64-4n10c+pci-conflicts": {
		skipCaches: "the tree was edited to hold conflicting cpusets (see its .test file): cpu2's L3 shared_cpu_map says 0-3 " +
			"while its shared_cpu_list and the other CPUs of package 2 say 2,6,...,38; hwloc drops objects that conflict with " +
			"others, numascope reports each cache instance the files describe and warns about the list/map disagreement",
		skipPackages: "the tree was edited the same way for package 3: cpu3's core_siblings map says 0-3 while its list and " +
			"the other CPUs of package 3 say 3,7,...,39; hwloc drops the conflicting package, numascope reads the lists",
		check: func(t *testing.T, top *Topology) {
			if !hasWarning(top, "cpu2/cache/index3/shared_cpu_list says \"2,6,10,14,18,22,26,30,34,38\", shared_cpu_map \"0-3\"") {
				t.Errorf("want a warning about cpu2's L3 list and map; got %q", top.Warnings)
			}
		},
	},
	"nvidiagpunumanodes": {
		hidden: func(n Node) bool { return n.CPULess && n.ID >= 250 },
		reason: "hwloc hides NVIDIA GPU memory nodes (250-255 on this POWER9) unless HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1; " +
			"numascope lists them as CPU-less nodes (compared against nvidiagpunumanodes-kept)",
	},
}

func hasWarning(top *Topology, sub string) bool {
	for _, w := range top.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// TestHwlocFixtures compares Discover with hwloc on every test whose tree exists.
func TestHwlocFixtures(t *testing.T) {
	dir := hwlocFixtureDir(t)
	tests, _ := filepath.Glob(filepath.Join(dir, "*.test"))
	if len(tests) == 0 {
		t.Fatalf("no .test files in %s: nothing to compare with", dir)
	}
	trees, errs := fixtureTrees(t, dir)
	balls, _ := filepath.Glob(filepath.Join(dir, "*.tar.bz2"))
	if len(trees)+len(errs) != len(balls) {
		t.Fatalf("extracted %d trees with %d errors from %d tarballs", len(trees), len(errs), len(balls))
	}
	for name, err := range errs {
		t.Errorf("extracting %s: %v", name, err)
	}
	covered := map[string]bool{}
	textHeaders, textCaches := 0, 0
	for _, tf := range tests {
		ht, err := parseHwlocTest(tf)
		if err != nil {
			t.Error(err)
			continue
		}
		t.Run(ht.name, func(t *testing.T) {
			root, ok := trees[ht.source]
			if !ok {
				testutil.SkipUnless(t, testutil.HwlocRequired, "%s.tar.bz2 is not in the fixture set; hwloc's expected output %s has no tree to compare with", ht.source, ht.target)
			}
			covered[ht.source] = true
			top, err := Discover(sysfs.New(root))
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			checkInvariants(t, top)
			exp, err := loadHwlocExpect(filepath.Join(dir, ht.target))
			if err != nil {
				t.Fatalf("parsing %s: %v", ht.target, err)
			}
			compareWithHwloc(t, ht, root, top, exp)
			q := hwlocQuirks[ht.name]
			if compareTextHeader(t, q, top, exp) {
				textHeaders++
			}
			if q.skipCaches == "" && compareTextCaches(t, ht, top, exp) {
				textCaches++
			}
		})
	}
	// Most trees show every CPU and cache, so the text is compared on
	// most: 46 headers and 26 cache tables of the 51 on 2026-12-07 (the
	// others hide CPUs, or were captured with --merge or --no-caches).
	if textHeaders < 40 || textCaches < 20 {
		t.Errorf("the text's header was compared with hwloc on %d trees and its cache table on %d, want at least 40 and 20", textHeaders, textCaches)
	}
	for _, b := range balls {
		name := strings.TrimSuffix(filepath.Base(b), ".tar.bz2")
		if !covered[name] {
			t.Errorf("tree %s is used by no .test file and was not compared", name)
		}
	}
}

// hwlocVisible returns the CPUs hwloc turns into PUs: online CPUs for which
// the kernel exposes a topology directory (hwloc ignores the others).
func hwlocVisible(root string, top *Topology) map[int]bool {
	out := map[int]bool{}
	for _, c := range top.CPUs {
		if !c.Online {
			continue
		}
		if _, err := os.Stat(filepath.Join(sysfs.New(root).Sys("devices/system/cpu"), "cpu"+strconv.Itoa(c.ID), "topology")); err == nil {
			out[c.ID] = true
		}
	}
	return out
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func compareWithHwloc(t *testing.T, ht hwlocTest, root string, top *Topology, exp *hwlocExpect) {
	keepDisallowed := ht.hasOption("--disallowed")
	q := hwlocQuirks[ht.name]
	if q.check != nil {
		q.check(t, top)
	}

	// The kernel removes cpuN/topology when a CPU goes offline and creates
	// it when it comes online, and cpuN/online says 0 for an offline CPU.
	// Discover reads the system-wide online list first; these per-CPU
	// witnesses must agree with it. hwloc ignores CPUs without topology, so
	// this is also what makes the PU comparison below test online detection.
	visible := hwlocVisible(root, top)
	for _, c := range top.CPUs {
		dir := filepath.Join(sysfs.New(root).Sys("devices/system/cpu"), "cpu"+strconv.Itoa(c.ID))
		flag, _ := os.ReadFile(filepath.Join(dir, "online"))
		want := dirExists(filepath.Join(dir, "topology")) && string(sysfs.Clean(flag)) != "0"
		if c.Online != want {
			t.Errorf("CPU %d: online=%v, but its topology directory and online file say %v", c.ID, c.Online, want)
		}
	}
	// The CPUs hwloc knows are the PUs it shows plus those it says are
	// "not represented" (offline, disallowed, without topology).
	if exp.complete != nil {
		var ids []int
		for _, c := range top.CPUs {
			ids = append(ids, c.ID)
		}
		if got, want := sysfs.FormatCPUList(exp.complete), sysfs.FormatCPUList(ids); got != want {
			t.Errorf("CPUs: hwloc knows %q, numascope lists %q", got, want)
		}
	}

	// PUs: hwloc shows the online CPUs with topology that the cpuset allows
	// (all of them with --disallowed). This checks the online and allowed
	// detection as a whole.
	var wantPUs, wantDisallowed []int
	for _, c := range top.CPUs {
		if !visible[c.ID] {
			continue
		}
		if c.Allowed || keepDisallowed {
			wantPUs = append(wantPUs, c.ID)
		}
		if !c.Allowed {
			wantDisallowed = append(wantDisallowed, c.ID)
		}
	}
	if got, want := sysfs.FormatCPUList(exp.pus), sysfs.FormatCPUList(wantPUs); got != want {
		t.Errorf("PUs: hwloc shows %q, numascope's online+allowed CPUs are %q", got, want)
	}
	if keepDisallowed {
		if got, want := sysfs.FormatCPUList(exp.disallowedPUs), sysfs.FormatCPUList(wantDisallowed); got != want {
			t.Errorf("disallowed PUs: hwloc marks %q, numascope %q", got, want)
		}
	}
	if exp.allowedCPUs != nil {
		var mine []int
		for _, c := range top.CPUs {
			if visible[c.ID] && c.Allowed {
				mine = append(mine, c.ID)
			}
		}
		if got, want := sysfs.FormatCPUList(exp.allowedCPUs), sysfs.FormatCPUList(mine); got != want {
			t.Errorf("allowed cpuset: hwloc %q, numascope %q", got, want)
		}
	}

	if exp.allowedNodes != nil {
		var mine []int
		for _, n := range top.Nodes {
			if n.Allowed {
				mine = append(mine, n.ID)
			}
		}
		if got, want := sysfs.FormatCPUList(exp.allowedNodes), sysfs.FormatCPUList(mine); got != want {
			t.Errorf("allowed nodeset: hwloc %q, numascope %q", got, want)
		}
	}
	// Where both found the cpuset, they found the same cgroup. (hwloc
	// names the cgroup even when the tree lacks its files; numascope then
	// reports no source.)
	if exp.cgroup != "" && exp.cgroup != "/" && top.AllowedSource != "" {
		if !strings.HasSuffix(filepath.Clean(top.AllowedSource), filepath.Clean(exp.cgroup)) {
			t.Errorf("cpuset source %q is not hwloc's cgroup %q", top.AllowedSource, exp.cgroup)
		}
	}

	if q.skipCaches != "" {
		t.Logf("caches not compared: %s", q.skipCaches)
	} else {
		compareCaches(t, ht, top, wantPUs, exp)
	}
	compareGroups(t, q, top, wantPUs, exp)

	if q.skipNodes != "" {
		t.Logf("node comparison skipped: %s", q.skipNodes)
		return
	}

	// Nodes: hwloc shows the allowed nodes (all with --disallowed), minus
	// those it hides on purpose (quirks).
	hw := map[int]hwlocNode{}
	for _, n := range exp.nodes {
		hw[n.os] = n
	}
	var shown []Node
	for _, n := range top.Nodes {
		if !n.Allowed && !keepDisallowed {
			if _, ok := hw[n.ID]; ok {
				t.Errorf("node %d: hwloc shows it but numascope says it is not allowed", n.ID)
			}
			continue
		}
		if q.hidden != nil && q.hidden(n) {
			if _, ok := hw[n.ID]; !ok {
				t.Logf("node %d not compared: %s", n.ID, q.reason)
				continue
			}
		}
		shown = append(shown, n)
	}
	if len(shown) != len(exp.nodes) {
		var ids []int
		for _, n := range shown {
			ids = append(ids, n.ID)
		}
		var hids []int
		for _, n := range exp.nodes {
			hids = append(hids, n.os)
		}
		t.Errorf("node count: hwloc shows %d nodes (%v), numascope %d (%v)", len(exp.nodes), hids, len(shown), ids)
	}
	for _, n := range shown {
		h, ok := hw[n.ID]
		if !ok {
			t.Errorf("node %d: not in hwloc's output", n.ID)
			continue
		}
		// Memory.
		switch {
		case exp.fromXML:
			if h.mem != n.MemoryTotal {
				t.Errorf("node %d memory: hwloc %d bytes, numascope %d", n.ID, h.mem, n.MemoryTotal)
			}
		case !h.hasMem:
			if n.MemoryTotal != 0 {
				t.Errorf("node %d memory: hwloc shows none, numascope %d bytes", n.ID, n.MemoryTotal)
			}
		default:
			if got := hwlocSize(n.MemoryTotal); got != h.memText {
				t.Errorf("node %d memory: hwloc local=%s, numascope %d bytes = %s", n.ID, h.memText, n.MemoryTotal, got)
			}
		}
		if keepDisallowed && h.disallowed == n.Allowed {
			t.Errorf("node %d: hwloc disallowed=%v, numascope allowed=%v", n.ID, h.disallowed, n.Allowed)
		}
		// CPUs. A CPU-less node has no CPUs of its own; hwloc attaches it
		// to the CPUs of its best initiator, which is hwloc's placement, not
		// the kernel's cpulist, so there is nothing to compare.
		if n.CPULess {
			continue
		}
		var want []int
		for _, c := range n.CPUs {
			if visible[c] && (keepDisallowed || top.CPUs[cpuPos(top, c)].Allowed) {
				want = append(want, c)
			}
		}
		if got, w := sysfs.FormatCPUList(h.pus), sysfs.FormatCPUList(want); got != w {
			t.Errorf("node %d CPUs: hwloc %q, numascope %q (kernel cpulist %q)", n.ID, got, w, sysfs.FormatCPUList(n.CPUs))
		}
	}

	// Distances among the nodes hwloc shows.
	if exp.dist == nil {
		if len(exp.nodes) > 1 {
			t.Logf("hwloc's output has no distance matrix; distances not compared")
		}
		return
	}
	compared := 0
	for k, v := range exp.dist {
		if _, ok := hw[k[0]]; !ok {
			continue
		}
		got := top.Distance(k[0], k[1])
		if got != v {
			t.Errorf("distance %d->%d: hwloc %d, numascope %d", k[0], k[1], v, got)
		}
		compared++
	}
	if compared == 0 {
		t.Errorf("distance matrix present but no pair compared")
	}
}

// compareCaches compares the cache instances. hwloc drops the caches of
// CPUs it does not show and restricts the others to the PUs it shows;
// --no-icaches and --no-caches drop kinds of caches; --merge and --filter
// remove levels that are identical to their parent, which changes the set
// rather than the caches, so the comparison does not apply then.
func compareCaches(t *testing.T, ht hwlocTest, top *Topology, shownPUs []int, exp *hwlocExpect) {
	for _, o := range ht.options {
		if o == "--merge" || o == "--filter" {
			t.Logf("caches not compared: %s makes hwloc remove cache levels identical to their parent", o)
			return
		}
	}
	shown := toSet(shownPUs)
	var mine []string
	for _, c := range top.Caches {
		kind := map[string]string{"Data": "d", "Instruction": "i"}[c.Type]
		if ht.hasOption("--no-caches") || (kind == "i" && ht.hasOption("--no-icaches")) {
			continue
		}
		var cpus []int
		for _, x := range c.CPUs {
			if shown[x] {
				cpus = append(cpus, x)
			}
		}
		if len(cpus) == 0 {
			continue
		}
		mine = append(mine, cacheKey(c.Level, kind, hwlocSize(c.SizeBytes), c.LineSize, c.Associativity, cpus))
	}
	sort.Strings(mine)
	if got, want := strings.Join(exp.caches, "\n"), strings.Join(mine, "\n"); got != want {
		t.Errorf("caches differ:\n%s", diffLines(exp.caches, mine))
	}
}

// hwlocGroup is a Package object: its OS index (physical_package_id) and PUs.
type hwlocGroup struct {
	os    int
	hasOS bool
	pus   []int
}

// groupKey names a package (by its OS index, where hwloc gives one) or a
// core the same way for hwloc and numascope: by the PUs it holds.
func groupKey(os int, hasOS bool, pus []int) string {
	if hasOS {
		return fmt.Sprintf("P#%d cpus=%s", os, sysfs.FormatCPUList(pus))
	}
	return "cpus=" + sysfs.FormatCPUList(pus)
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// compareGroups holds numascope's packages (physical_package_id and the
// CPUs of each) and cores (each CPU's SMT siblings) to hwloc's Package and
// Core objects, over the PUs hwloc shows. A tree where hwloc shows none
// (filtered or merged away) is not compared for that kind.
func compareGroups(t *testing.T, q hwlocQuirk, top *Topology, shownPUs []int, exp *hwlocExpect) {
	shown := toSet(shownPUs)
	only := func(cpus []int) []int {
		var out []int
		for _, c := range cpus {
			if shown[c] {
				out = append(out, c)
			}
		}
		return out
	}
	switch {
	case q.skipPackages != "":
		t.Logf("packages not compared: %s", q.skipPackages)
	case len(exp.packages) == 0:
		t.Logf("packages not compared: hwloc shows no Package object")
	default:
		// Where hwloc gives one OS index to two packages (ia64 firmware),
		// numascope numbers the second anew: compare the PUs alone.
		withOS, seen := true, map[int]bool{}
		for _, p := range exp.packages {
			withOS = withOS && p.hasOS && !seen[p.os]
			seen[p.os] = true
		}
		var hw, mine []string
		for _, p := range exp.packages {
			hw = append(hw, groupKey(p.os, withOS, p.pus))
		}
		for _, p := range top.Packages {
			if cpus := only(p.CPUs); len(cpus) > 0 {
				mine = append(mine, groupKey(p.ID, withOS, cpus))
			}
		}
		sort.Strings(hw)
		sort.Strings(mine)
		if !slices.Equal(hw, mine) {
			t.Errorf("packages differ:\n%s", diffLines(hw, mine))
		}
	}
	// Dies: hwloc shows them where a package holds more than one.
	if len(exp.dies) > 0 {
		dies := map[[2]int][]int{}
		for _, c := range top.CPUs {
			if shown[c.ID] {
				k := [2]int{c.Package, c.Die}
				dies[k] = append(dies[k], c.ID)
			}
		}
		var mine []string
		for _, cpus := range dies {
			mine = append(mine, groupKey(0, false, cpus))
		}
		sort.Strings(mine)
		if !slices.Equal(exp.dies, mine) {
			t.Errorf("dies differ:\n%s", diffLines(exp.dies, mine))
		}
	}
	if len(exp.cores) == 0 {
		t.Logf("cores not compared: hwloc shows no Core object")
		return
	}
	seen := map[string]bool{}
	var mine []string
	for _, c := range top.CPUs {
		if !shown[c.ID] {
			continue
		}
		sib := only(c.Siblings)
		if len(sib) == 0 {
			sib = []int{c.ID}
		}
		if k := groupKey(0, false, sib); !seen[k] {
			seen[k] = true
			mine = append(mine, k)
		}
	}
	sort.Strings(mine)
	if !slices.Equal(exp.cores, mine) {
		t.Errorf("cores (SMT siblings) differ:\n%s", diffLines(exp.cores, mine))
	}
}

// textHeader is the first line of `numascope topology`'s text.
var textHeader = regexp.MustCompile(`^Machine: (\d+) packages?, (\d+) NUMA nodes?(?: \(\d+ CPU-less\))?, (\d+) cores?, (\d+) threads?`)

// compareTextHeader holds the counts the text's first lines print to
// hwloc's objects: packages, NUMA nodes, cores and threads, the dies line
// and the most threads per core on the SMT line. The text counts every
// CPU and node the kernel lists, where hwloc shows the allowed and online
// ones; a count is compared only where hwloc shows them all.
func compareTextHeader(t *testing.T, q hwlocQuirk, top *Topology, exp *hwlocExpect) bool {
	var b strings.Builder
	if err := top.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	m := textHeader.FindStringSubmatch(text)
	if m == nil {
		t.Errorf("the text's first line is not \"Machine: N packages, M NUMA nodes, C cores, T threads\":\n%s", firstLines(text, 3))
		return false
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	allCPUs := len(exp.pus) == len(top.CPUs)
	allNodes := len(exp.nodes) == len(top.Nodes) && q.skipNodes == ""
	compared := 0
	check := func(what string, ok bool, got, want int) {
		if !ok {
			return
		}
		compared++
		if got != want {
			t.Errorf("the text says %d %s, hwloc shows %d: %q", got, what, want, m[0])
		}
	}
	check("packages", allCPUs && q.skipPackages == "" && len(exp.packages) > 0, n(1), len(exp.packages))
	check("NUMA nodes", allNodes, n(2), len(exp.nodes))
	check("cores", allCPUs && len(exp.cores) > 0, n(3), len(exp.cores))
	check("threads", allCPUs, n(4), len(exp.pus))
	if allCPUs && len(exp.dies) > 0 && len(exp.dies) > len(exp.packages) {
		check("dies", true, countIn(text, `(?m)^  dies: +(\d+)$`), len(exp.dies))
	}
	if allCPUs && len(exp.cores) > 0 && len(exp.cores) < len(exp.pus) {
		most := 0
		for _, c := range exp.cores {
			pus, err := sysfs.ParseCPUList(strings.TrimPrefix(c, "cpus="))
			if err != nil {
				t.Fatalf("hwloc core %q: %v", c, err)
			}
			most = max(most, len(pus))
		}
		check("threads per core at most", true, countIn(text, `(?m)^  SMT: +up to (\d+) threads per core$`), most)
	}
	if compared == 0 {
		t.Logf("text header not compared: hwloc hides some CPUs and nodes (%q)", m[0])
	} else {
		t.Logf("text header: %d counts compared with hwloc's (%q)", compared, m[0])
	}
	return compared > 0
}

// hwlocCacheKey parses cacheKey's form.
var hwlocCacheKey = regexp.MustCompile(`^(L\d+\w?) size=(\d+)(KiB|MiB|GiB|TiB) line=(\d+) ways=(-?\d+) cpus=(.*)$`)

// textCacheRow is a row of the text's cache table, or a group of hwloc's
// cache objects alike in all but their CPUs.
type textCacheRow struct {
	name, line, ways string
	shared, count    int
	size             float64 // bytes; to the text's printed precision
}

// compareTextCaches holds the text's cache table (one row per kind of
// cache: size, line, ways, how many, shared by how many CPUs) to hwloc's
// cache objects grouped the same way, where hwloc shows every CPU and
// every cache. Sizes agree to 6%: the text prints one decimal (1.25 MiB
// reads 1.2), hwloc whole KiB or MiB. It reports whether it compared.
func compareTextCaches(t *testing.T, ht hwlocTest, top *Topology, exp *hwlocExpect) bool {
	for _, o := range []string{"--merge", "--filter", "--no-caches", "--no-icaches"} {
		if ht.hasOption(o) {
			return false
		}
	}
	if len(exp.pus) != len(top.CPUs) {
		return false
	}
	unit := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
	var hw []*textCacheRow
	for _, k := range exp.caches {
		m := hwlocCacheKey.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("hwloc cache %q", k)
		}
		cpus, err := sysfs.ParseCPUList(m[6])
		if err != nil {
			t.Fatalf("hwloc cache %q: %v", k, err)
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		r := textCacheRow{name: m[1], line: m[4], ways: m[5], shared: len(cpus), size: v * unit[m[3]]}
		// lstopo prints no linesize= or ways= where they are unknown,
		// the text a dash.
		if r.ways == "0" {
			r.ways = "-"
		}
		if r.line == "0" {
			r.line = "-"
		}
		i := slices.IndexFunc(hw, func(g *textCacheRow) bool {
			return g.name == r.name && g.line == r.line && g.ways == r.ways && g.shared == r.shared && g.size == r.size
		})
		if i < 0 {
			hw = append(hw, &r)
			i = len(hw) - 1
		}
		hw[i].count++
	}
	var b strings.Builder
	if err := top.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	start := strings.Index(text, "\nCaches:\n")
	if start < 0 {
		if len(hw) > 0 {
			t.Errorf("the text has no cache table; hwloc shows %d kinds of cache", len(hw))
		}
		return false
	}
	var rows []textCacheRow
	for _, l := range strings.Split(text[start+len("\nCaches:\n"):], "\n")[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			break
		}
		// name size unit (line B | -) ways count N CPU(s)
		n := len(f)
		if n < 7 {
			t.Fatalf("cache row %q", l)
		}
		r := textCacheRow{name: f[0], ways: f[n-4], line: "-"}
		r.count, _ = strconv.Atoi(f[n-3])
		r.shared, _ = strconv.Atoi(f[n-2])
		if f[n-5] == "B" {
			r.line = f[n-6]
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			r.size = v * unit[f[2]]
		}
		rows = append(rows, r)
	}
	matched := make([]bool, len(hw))
	for _, r := range rows {
		i := slices.IndexFunc(hw, func(g *textCacheRow) bool {
			return g.name == r.name && g.line == r.line && g.ways == r.ways && g.shared == r.shared &&
				math.Abs(g.size-r.size) <= 0.06*g.size
		})
		switch {
		case i < 0:
			t.Errorf("the text's cache row %+v matches no hwloc cache", r)
		case hw[i].count != r.count:
			t.Errorf("the text counts %d of %s (%.0f bytes, shared by %d), hwloc %d", r.count, r.name, r.size, r.shared, hw[i].count)
		default:
			matched[i] = true
		}
	}
	for i, g := range hw {
		if !matched[i] {
			t.Errorf("hwloc's %d %s caches (%.0f bytes, line %s, ways %s, shared by %d) are in no row of the text", g.count, g.name, g.size, g.line, g.ways, g.shared)
		}
	}
	return true
}

// countIn returns the number the regular expression's group catches in
// text, or -1.
func countIn(text, re string) int {
	m := regexp.MustCompile(re).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}

// diffLines shows the lines only hwloc has (-) and only numascope has (+).
func diffLines(hw, mine []string) string {
	count := map[string]int{}
	for _, l := range hw {
		count[l]++
	}
	for _, l := range mine {
		count[l]--
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		for i := 0; i < count[k]; i++ {
			out = append(out, "  - hwloc:     "+k)
		}
		for i := 0; i > count[k]; i-- {
			out = append(out, "  + numascope: "+k)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("  ... %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

func cpuPos(top *Topology, id int) int {
	i := sort.Search(len(top.CPUs), func(i int) bool { return top.CPUs[i].ID >= id })
	if i < len(top.CPUs) && top.CPUs[i].ID == id {
		return i
	}
	panic(fmt.Sprintf("CPU %d not in topology", id))
}

// hwlocSize formats bytes the way lstopo prints memory sizes: KiB below 10
// MiB, MiB below 10 GiB, and so on, rounded to nearest.
func hwlocSize(b uint64) string {
	switch {
	case b < 10<<20:
		return fmt.Sprintf("%dKiB", ((b>>9)+1)>>1)
	case b < 10<<30:
		return fmt.Sprintf("%dMiB", ((b>>19)+1)>>1)
	case b < 10<<40:
		return fmt.Sprintf("%dGiB", ((b>>29)+1)>>1)
	}
	return fmt.Sprintf("%dTiB", ((b>>39)+1)>>1)
}

func loadHwlocExpect(path string) (*hwlocExpect, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".xml") {
		return parseHwlocXML(b)
	}
	return parseHwlocConsole(string(b))
}

// consoleObj is one line of lstopo's console tree.
type consoleObj struct {
	typ        string
	indent     int
	os         int
	hasOS      bool
	local      string
	size       string
	line, ways int // a cache's linesize= and ways= (0 where lstopo prints none)
	logical    int
	disallowed bool
	parent     *consoleObj
	children   []*consoleObj
}

var (
	reOS      = regexp.MustCompile(`\(P#(\d+)`)
	reLocal   = regexp.MustCompile(`local=(\d+[KMGT]i?B)`)
	reLogical = regexp.MustCompile(` L#(\d+)`)
	reSize    = regexp.MustCompile(`[( ]size=(\d+[KMGT]i?B)`)
	reLine    = regexp.MustCompile(`[( ]linesize=(\d+)`)
	reWays    = regexp.MustCompile(`[( ]ways=(-?\d+)`)
	// CPU caches: L1dCache, L1iCache, L2Cache...; not memory-side MemCache.
	reCacheType = regexp.MustCompile(`^L(\d)([di]?)Cache$`)
)

// cacheKey names a cache instance the same way for hwloc and numascope:
// level, kind (d, i or empty for unified), size as lstopo prints it, CPUs.
func cacheKey(level int, kind, size string, line, ways int, cpus []int) string {
	return fmt.Sprintf("L%d%s size=%s line=%d ways=%d cpus=%s", level, kind, size, line, ways, sysfs.FormatCPUList(cpus))
}

// parseHwlocConsole reads `lstopo -v -` output: the indented object tree,
// then the summary, then the optional latency matrix.
func parseHwlocConsole(s string) (*hwlocExpect, error) {
	exp := &hwlocExpect{}
	lines := strings.Split(s, "\n")
	var stack []*consoleObj
	var nodes, cacheObjs, groupObjs []*consoleObj
	i := 0
	for ; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "depth ") || strings.HasPrefix(trimmed, "Special depth") {
			break
		}
		o := &consoleObj{indent: len(l) - len(trimmed)}
		o.typ = trimmed
		if j := strings.IndexAny(trimmed, " ("); j >= 0 {
			o.typ = trimmed[:j]
		}
		head := trimmed
		if m := reOS.FindStringSubmatch(head); m != nil {
			o.os, _ = strconv.Atoi(m[1])
			o.hasOS = true
		}
		if m := reLocal.FindStringSubmatch(head); m != nil {
			o.local = m[1]
		}
		if m := reLogical.FindStringSubmatch(head); m != nil {
			o.logical, _ = strconv.Atoi(m[1])
		}
		o.disallowed = strings.HasSuffix(trimmed, "(disallowed)")
		for len(stack) > 0 && stack[len(stack)-1].indent >= o.indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			o.parent = stack[len(stack)-1]
			o.parent.children = append(o.parent.children, o)
		}
		stack = append(stack, o)
		if m := reSize.FindStringSubmatch(head); m != nil {
			o.size = m[1]
		}
		if m := reLine.FindStringSubmatch(head); m != nil {
			o.line, _ = strconv.Atoi(m[1])
		}
		if m := reWays.FindStringSubmatch(head); m != nil {
			o.ways, _ = strconv.Atoi(m[1])
		}
		if reCacheType.MatchString(o.typ) {
			cacheObjs = append(cacheObjs, o)
		}
		switch o.typ {
		case "NUMANode":
			nodes = append(nodes, o)
		case "Package", "Core", "Die":
			groupObjs = append(groupObjs, o)
		case "PU":
			if !o.hasOS {
				return nil, fmt.Errorf("line %d: PU without P#", i+1)
			}
			exp.pus = append(exp.pus, o.os)
			if o.disallowed {
				exp.disallowedPUs = append(exp.disallowedPUs, o.os)
			}
		}
	}
	sort.Ints(exp.pus)
	sort.Ints(exp.disallowedPUs)
	for _, c := range cacheObjs {
		m := reCacheType.FindStringSubmatch(c.typ)
		level, _ := strconv.Atoi(m[1])
		var pus []int
		collectPUs(c, &pus)
		sort.Ints(pus)
		exp.caches = append(exp.caches, cacheKey(level, m[2], c.size, c.line, c.ways, pus))
	}
	sort.Strings(exp.caches)
	for _, g := range groupObjs {
		var pus []int
		collectPUs(g, &pus)
		sort.Ints(pus)
		switch {
		case len(pus) == 0: // a package of disallowed CPUs, kept for its memory
		case g.typ == "Package":
			exp.packages = append(exp.packages, hwlocGroup{os: g.os, hasOS: g.hasOS, pus: pus})
		case g.typ == "Die":
			exp.dies = append(exp.dies, groupKey(0, false, pus))
		default:
			exp.cores = append(exp.cores, groupKey(0, false, pus))
		}
	}
	sort.Strings(exp.cores)
	sort.Strings(exp.dies)
	exp.complete = exp.pus
	for _, l := range lines[i:] {
		if _, rest, ok := strings.Cut(l, "LinuxCgroup="); ok && strings.HasPrefix(l, "Topology infos:") {
			exp.cgroup = strings.Fields(rest)[0]
		}
		// "6 processors not represented in topology: 0x00000f90"
		if _, mask, ok := strings.Cut(l, "processors not represented in topology: "); ok {
			missing, _, err := parseHwlocSet(strings.TrimSpace(mask))
			if err != nil {
				return nil, fmt.Errorf("%q: %v", l, err)
			}
			exp.complete = union(exp.pus, missing)
		}
	}
	byLogical := map[int]int{}
	for _, n := range nodes {
		if !n.hasOS {
			return nil, fmt.Errorf("NUMANode L#%d without P#", n.logical)
		}
		// A NUMANode is a memory child: its locality is its parent's, past
		// memory-side caches (MemCache) that sit between them.
		p := n.parent
		for p != nil && (p.typ == "MemCache" || p.typ == "NUMANode") {
			p = p.parent
		}
		var pus []int
		if p != nil {
			collectPUs(p, &pus)
		}
		sort.Ints(pus)
		exp.nodes = append(exp.nodes, hwlocNode{os: n.os, pus: pus, memText: n.local, hasMem: n.local != "", disallowed: n.disallowed})
		byLogical[n.logical] = n.os
	}
	// Latency matrix, by logical indexes.
	for ; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "Relative latency matrix") {
			continue
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("truncated latency matrix")
		}
		hdr := strings.Fields(lines[i+1])
		if len(hdr) < 2 || hdr[0] != "index" {
			return nil, fmt.Errorf("line %d: no matrix header", i+2)
		}
		cols := make([]int, len(hdr)-1)
		for k, h := range hdr[1:] {
			l, err := strconv.Atoi(h)
			if err != nil {
				return nil, fmt.Errorf("matrix header %q", lines[i+1])
			}
			os, ok := byLogical[l]
			if !ok {
				return nil, fmt.Errorf("matrix names NUMANode L#%d which the tree lacks", l)
			}
			cols[k] = os
		}
		exp.dist = map[[2]int]int{}
		for r := 0; r < len(cols); r++ {
			f := strings.Fields(lines[i+2+r])
			if len(f) != len(cols)+1 {
				return nil, fmt.Errorf("matrix row %q", lines[i+2+r])
			}
			from, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, fmt.Errorf("matrix row %q", lines[i+2+r])
			}
			for k, v := range f[1:] {
				d, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("matrix row %q", lines[i+2+r])
				}
				exp.dist[[2]int{byLogical[from], cols[k]}] = d
			}
		}
		break
	}
	return exp, nil
}

func collectPUs(o *consoleObj, out *[]int) {
	if o.typ == "PU" {
		*out = append(*out, o.os)
	}
	for _, c := range o.children {
		collectPUs(c, out)
	}
}

// xmlObject is an <object> of hwloc's XML export (format v2).
type xmlObject struct {
	Type           string      `xml:"type,attr"`
	OSIndex        *int        `xml:"os_index,attr"`
	CPUSet         string      `xml:"cpuset,attr"`
	AllowedCPUSet  string      `xml:"allowed_cpuset,attr"`
	CompleteCPUSet string      `xml:"complete_cpuset,attr"`
	AllowedNodeSet string      `xml:"allowed_nodeset,attr"`
	LocalMemory    *uint64     `xml:"local_memory,attr"`
	CacheSize      uint64      `xml:"cache_size,attr"`
	CacheType      int         `xml:"cache_type,attr"`
	CacheLine      int         `xml:"cache_linesize,attr"`
	CacheWays      int         `xml:"cache_associativity,attr"`
	Depth          int         `xml:"depth,attr"`
	GPIndex        int         `xml:"gp_index,attr"`
	Children       []xmlObject `xml:"object"`
}

type xmlInfo struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xmlDistances struct {
	Type     string   `xml:"type,attr"`
	NbObjs   int      `xml:"nbobjs,attr"`
	Name     string   `xml:"name,attr"`
	Indexing string   `xml:"indexing,attr"`
	Indexes  []string `xml:"indexes"`
	Values   []string `xml:"u64values"`
}

type xmlTopology struct {
	Objects   []xmlObject    `xml:"object"`
	Infos     []xmlInfo      `xml:"info"`
	Distances []xmlDistances `xml:"distances2"`
}

// parseHwlocSet parses hwloc's bitmap syntax ("0x0000003f", "0x000000ff,0xffffffff").
// ok is false for infinite sets ("0xf...f").
func parseHwlocSet(s string) ([]int, bool, error) {
	if strings.Contains(s, "...") {
		return nil, false, nil
	}
	v, err := sysfs.ParseCPUMask(s)
	return v, true, err
}

func parseHwlocXML(b []byte) (*hwlocExpect, error) {
	var x xmlTopology
	if err := xml.Unmarshal(b, &x); err != nil {
		return nil, err
	}
	if len(x.Objects) != 1 || x.Objects[0].Type != "Machine" {
		return nil, fmt.Errorf("root object is not one Machine")
	}
	exp := &hwlocExpect{fromXML: true}
	root := x.Objects[0]
	if set, ok, err := parseHwlocSet(root.CompleteCPUSet); err == nil && ok && root.CompleteCPUSet != "" {
		exp.complete = nonNil(set)
	}
	if root.AllowedNodeSet != "" {
		set, ok, err := parseHwlocSet(root.AllowedNodeSet)
		if err != nil {
			return nil, fmt.Errorf("allowed_nodeset: %v", err)
		}
		if ok {
			exp.allowedNodes = nonNil(set)
		}
	}
	for _, in := range x.Infos {
		if in.Name == "LinuxCgroup" {
			exp.cgroup = in.Value
		}
	}
	if root.AllowedCPUSet != "" {
		set, ok, err := parseHwlocSet(root.AllowedCPUSet)
		if err != nil {
			return nil, fmt.Errorf("allowed_cpuset: %v", err)
		}
		if ok {
			exp.allowedCPUs = nonNil(set)
		}
	}
	var walk func(o xmlObject) error
	walk = func(o xmlObject) error {
		switch o.Type {
		case "PU":
			if o.OSIndex == nil {
				return fmt.Errorf("PU without os_index")
			}
			exp.pus = append(exp.pus, *o.OSIndex)
		case "L1Cache", "L2Cache", "L3Cache", "L4Cache", "L1iCache", "L2iCache", "L3iCache":
			pus, _, err := parseHwlocSet(o.CPUSet)
			if err != nil {
				return fmt.Errorf("%s cpuset: %v", o.Type, err)
			}
			// XML keeps caches whose CPUs are all disallowed, with an
			// empty cpuset; the console drops them. Drop them here too.
			if len(pus) > 0 {
				kind := map[int]string{0: "", 1: "d", 2: "i"}[o.CacheType]
				exp.caches = append(exp.caches, cacheKey(o.Depth, kind, hwlocSize(o.CacheSize), o.CacheLine, o.CacheWays, pus))
			}
		case "Package", "Core", "Die":
			pus, _, err := parseHwlocSet(o.CPUSet)
			if err != nil {
				return fmt.Errorf("%s cpuset: %v", o.Type, err)
			}
			switch {
			case len(pus) == 0: // all its CPUs disallowed: the console drops it
			case o.Type == "Package":
				exp.packages = append(exp.packages, hwlocGroup{os: deref(o.OSIndex), hasOS: o.OSIndex != nil, pus: pus})
			case o.Type == "Die":
				exp.dies = append(exp.dies, groupKey(0, false, pus))
			default:
				exp.cores = append(exp.cores, groupKey(0, false, pus))
			}
		case "NUMANode":
			if o.OSIndex == nil {
				return fmt.Errorf("NUMANode without os_index")
			}
			pus, _, err := parseHwlocSet(o.CPUSet)
			if err != nil {
				return fmt.Errorf("NUMANode %d cpuset: %v", *o.OSIndex, err)
			}
			n := hwlocNode{os: *o.OSIndex, pus: pus}
			if o.LocalMemory != nil {
				n.mem, n.hasMem = *o.LocalMemory, true
			}
			exp.nodes = append(exp.nodes, n)
		}
		for _, c := range o.Children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	sort.Ints(exp.pus)
	sort.Strings(exp.caches)
	sort.Strings(exp.cores)
	sort.Strings(exp.dies)
	for _, d := range x.Distances {
		if d.Type != "NUMANode" || d.Name != "NUMALatency" {
			continue
		}
		if d.Indexing != "os" {
			return nil, fmt.Errorf("distances indexed by %q", d.Indexing)
		}
		idx, err := parseInts(strings.Join(d.Indexes, " "))
		if err != nil {
			return nil, err
		}
		vals, err := parseInts(strings.Join(d.Values, " "))
		if err != nil {
			return nil, err
		}
		if len(idx) != d.NbObjs || len(vals) != d.NbObjs*d.NbObjs {
			return nil, fmt.Errorf("distances: %d indexes, %d values for %d objects", len(idx), len(vals), d.NbObjs)
		}
		exp.dist = map[[2]int]int{}
		for r := range idx {
			for c := range idx {
				exp.dist[[2]int{idx[r], idx[c]}] = vals[r*len(idx)+c]
			}
		}
	}
	return exp, nil
}

// checkInvariants asserts what must hold for any discovered topology.
func checkInvariants(t *testing.T, top *Topology) {
	t.Helper()
	cpuIDs := map[int]bool{}
	for i, c := range top.CPUs {
		if i > 0 && c.ID <= top.CPUs[i-1].ID {
			t.Errorf("CPUs not sorted: %d after %d", c.ID, top.CPUs[i-1].ID)
		}
		cpuIDs[c.ID] = true
		if c.Siblings == nil {
			t.Errorf("CPU %d: nil siblings", c.ID)
		}
	}
	nodeIDs := map[int]bool{}
	for i, n := range top.Nodes {
		if i > 0 && n.ID <= top.Nodes[i-1].ID {
			t.Errorf("nodes not sorted")
		}
		nodeIDs[n.ID] = true
		if n.CPUs == nil {
			t.Errorf("node %d: nil CPUs", n.ID)
		}
		if n.CPULess != (len(n.CPUs) == 0) && len(n.CPUs) == 0 {
			t.Errorf("node %d: no CPUs but not CPU-less", n.ID)
		}
		for _, c := range n.CPUs {
			if !cpuIDs[c] {
				t.Errorf("node %d lists CPU %d which is not in CPUs", n.ID, c)
			}
		}
		if n.Distances == nil {
			t.Errorf("node %d: nil distances", n.ID)
		}
	}
	for _, c := range top.CPUs {
		if c.Node != Unknown && !nodeIDs[c.Node] {
			t.Errorf("CPU %d in node %d which is not listed", c.ID, c.Node)
		}
	}
	for _, c := range top.Caches {
		if len(c.CPUs) == 0 || c.Level <= 0 {
			t.Errorf("bad cache %+v", c)
		}
	}
	if len(top.Nodes) == 0 {
		t.Errorf("no nodes")
	}
}
