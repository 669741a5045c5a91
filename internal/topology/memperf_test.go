package topology

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
)

// hmatTree builds, in a temporary directory, a three-node machine with
// everything this file reads, laid out as the kernel lays it out
// (Documentation/admin-guide/mm/numaperf.rst, ABI/testing/
// sysfs-kernel-mm-memory-tiers): nodes 0 and 1 with two CPUs each in the
// DRAM tier, node 2 a CPU-less slow memory in a lower tier with two levels
// of memory-side cache. extra adds or overrides files ("" content: none).
func hmatTree(t *testing.T, extra map[string]string) string {
	t.Helper()
	root := t.TempDir()
	node := "sys/devices/system/node/"
	files := map[string]string{
		"sys/devices/system/cpu/online": "0-3\n",
		node + "online":                 "0-2\n",
		node + "node0/cpulist":          "0-1\n",
		node + "node1/cpulist":          "2-3\n",
		node + "node2/cpulist":          "\n",
		node + "node0/meminfo":          "Node 0 MemTotal: 1048576 kB\nNode 0 MemFree: 524288 kB\n",
		node + "node1/meminfo":          "Node 1 MemTotal: 1048576 kB\nNode 1 MemFree: 524288 kB\n",
		node + "node2/meminfo":          "Node 2 MemTotal: 4194304 kB\nNode 2 MemFree: 4194304 kB\n",
		node + "node0/distance":         "10 20 14\n",
		node + "node1/distance":         "20 10 24\n",
		node + "node2/distance":         "14 24 10\n",
		// Node 0 rates itself; 0 is what the kernel writes for a value
		// the firmware left out.
		node + "node0/access0/initiators/read_latency":    "80\n",
		node + "node0/access0/initiators/write_latency":   "90\n",
		node + "node0/access0/initiators/read_bandwidth":  "131072\n",
		node + "node0/access0/initiators/write_bandwidth": "0\n",
		node + "node0/access1/initiators/read_latency":    "80\n",
		node + "node0/access1/initiators/write_latency":   "90\n",
		node + "node0/access1/initiators/read_bandwidth":  "131072\n",
		node + "node0/access1/initiators/write_bandwidth": "65536\n",
		// Node 2: rated from both CPU nodes, latency only.
		node + "node2/access0/initiators/read_latency":                "250\n",
		node + "node2/memory_side_cache/index1/size":                  "1073741824\n",
		node + "node2/memory_side_cache/index1/line_size":             "64\n",
		node + "node2/memory_side_cache/index1/indexing":              "0\n",
		node + "node2/memory_side_cache/index1/write_policy":          "1\n",
		node + "node2/memory_side_cache/index2/size":                  "2147483648\n",
		"sys/devices/virtual/memory_tiering/memory_tier1/nodelist":    "0-1\n",
		"sys/devices/virtual/memory_tiering/memory_tier4/nodes":       "2\n",
		"sys/devices/virtual/memory_tiering/memory_tier4/power/async": "disabled\n",
	}
	for c := 0; c < 4; c++ {
		d := "sys/devices/system/cpu/cpu" + strconv.Itoa(c) + "/topology/"
		files[d+"physical_package_id"] = strconv.Itoa(c/2) + "\n"
		files[d+"core_id"] = strconv.Itoa(c%2) + "\n"
		files[d+"thread_siblings_list"] = strconv.Itoa(c) + "\n"
	}
	for k, v := range extra {
		if v == "" {
			delete(files, k)
			continue
		}
		files[k] = v
	}
	writeTree(t, root, files)
	// The initiator and target links, as symbolic links to the node
	// directories (never followed: only their names are read).
	links := map[string]string{
		node + "node0/access0/initiators/node0": "../../../node0",
		node + "node0/access1/initiators/node0": "../../../node0",
		node + "node0/access0/targets/node0":    "../../../node0",
		node + "node2/access0/initiators/node0": "../../../node0",
		node + "node2/access0/initiators/node1": "../../../node1",
		node + "node0/access0/targets/node2":    "../../../node2",
		node + "node1/access0/targets/node2":    "../../../node2",
	}
	// Node 1 is an initiator only: its access0 has an empty initiators
	// directory, as the kernel makes it.
	if err := os.MkdirAll(filepath.Join(root, node, "node1/access0/initiators"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, target := range links {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func u64(v uint64) *uint64 { return &v }

func TestMemoryPerformance(t *testing.T) {
	top, err := Discover(sysfs.New(hmatTree(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, top)
	if len(top.Warnings) != 0 {
		t.Errorf("warnings: %q", top.Warnings)
	}
	if want := []MemoryTier{{1, []int{0, 1}}, {4, []int{2}}}; !reflect.DeepEqual(top.MemoryTiers, want) {
		t.Errorf("tiers = %+v, want %+v", top.MemoryTiers, want)
	}
	for id, want := range map[int]int{0: 1, 1: 1, 2: 4} {
		if n := top.Node(id); n.MemoryTier == nil || *n.MemoryTier != want {
			t.Errorf("node %d tier = %v, want %d", id, n.MemoryTier, want)
		}
	}
	want0 := []Access{
		{Class: 0, Initiators: []int{0}, ReadLatencyNS: u64(80), WriteLatencyNS: u64(90), ReadBandwidthMiBs: u64(131072)},
		{Class: 1, Initiators: []int{0}, ReadLatencyNS: u64(80), WriteLatencyNS: u64(90), ReadBandwidthMiBs: u64(131072), WriteBandwidthMiBs: u64(65536)},
	}
	if got := top.Node(0).Access; !reflect.DeepEqual(got, want0) {
		t.Errorf("node 0 access = %s, want %s", js(got), js(want0))
	}
	if got := top.Node(1).Access; len(got) != 0 {
		t.Errorf("node 1 (initiator only) access = %s, want none", js(got))
	}
	want2 := []Access{{Class: 0, Initiators: []int{0, 1}, ReadLatencyNS: u64(250)}}
	if got := top.Node(2).Access; !reflect.DeepEqual(got, want2) {
		t.Errorf("node 2 access = %s, want %s", js(got), js(want2))
	}
	if a := top.Node(2).AccessFrom(1); a == nil || a.Class != 0 {
		t.Errorf("AccessFrom(1) = %v", a)
	}
	if a := top.Node(0).AccessFrom(1); a != nil {
		t.Errorf("node 0 rated from node 1: %v", a)
	}
	wantMSC := []MemorySideCache{
		{Index: 1, SizeBytes: u64(1 << 30), LineSize: u64(64), Indexing: u64(0), WritePolicy: u64(1)},
		{Index: 2, SizeBytes: u64(2 << 30)},
	}
	if got := top.Node(2).MemorySideCaches; !reflect.DeepEqual(got, wantMSC) {
		t.Errorf("node 2 memory-side caches = %s, want %s", js(got), js(wantMSC))
	}

	var b bytes.Buffer
	if err := top.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"  node  cpus   memory     free  tier  notes\n",
		"     2  -     4.0 GiB  4.0 GiB     4  CPU-less",
		"  memory tiers (memory_tierN; a lower N is faster):\n    tier  nodes\n       1  0-1\n       4  2\n",
		"       0  0 (any initiator)  0                  80 ns          90 ns    131072 MiB/s                -\n",
		"       0  1 (CPUs)           0                  80 ns          90 ns    131072 MiB/s      65536 MiB/s\n",
		"       2  0 (any initiator)  0-1               250 ns              -               -                -\n",
		"       2      1  1.0 GiB  64 B  direct-mapped  write-through\n",
		"       2      2  2.0 GiB     -  -              -\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if regexp.MustCompile(`\b0 (ns|MiB/s)`).MatchString(text) {
		t.Errorf("a value not reported is shown as 0:\n%s", text)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMemoryPerformanceAbsent: a machine that reports none of it (most
// machines, every VM without HMAT) says so in words and JSON nulls.
func TestMemoryPerformanceAbsent(t *testing.T) {
	top := discoverTree(t, "two-node-cxl")
	if top.MemoryTiers != nil {
		t.Errorf("tiers = %v, want nil (not reported)", top.MemoryTiers)
	}
	var b bytes.Buffer
	if err := top.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memory tiers:        not reported", "rated performance:   not reported", "memory-side caches:  not reported"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "tier  notes") {
		t.Errorf("a tier column without tiers:\n%s", b.String())
	}
}

// TestMemoryPerformanceQuirks: garbage values, the tier list under both
// names disagreeing, and a tier naming a node that does not exist are each
// one warning; the garbage is "not reported", never 0.
func TestMemoryPerformanceQuirks(t *testing.T) {
	node := "sys/devices/system/node/"
	root := hmatTree(t, map[string]string{
		node + "node0/access0/initiators/read_latency":             "fast\x1b[31m\n",
		node + "node2/memory_side_cache/index1/size":               "-1\n",
		"sys/devices/virtual/memory_tiering/memory_tier1/nodes":    "0\n",
		"sys/devices/virtual/memory_tiering/memory_tier9/nodelist": "7\n",
	})
	top, err := Discover(sysfs.New(root))
	if err != nil {
		t.Fatal(err)
	}
	if a := top.Node(0).Access[0]; a.ReadLatencyNS != nil || a.WriteLatencyNS == nil {
		t.Errorf("node 0 access0 = %s", js(a))
	}
	if c := top.Node(2).MemorySideCaches[0]; c.SizeBytes != nil {
		t.Errorf("garbage size read as %d", *c.SizeBytes)
	}
	for _, want := range []string{
		`read_latency: "fast\x1b[31m" is not an unsigned integer; taken as not reported`,
		`size: "-1" is not an unsigned integer`,
		`memory_tier1: nodelist says "0-1", nodes "0"; using nodelist`,
		"memory_tier9 lists node 7, which has no node directory",
	} {
		if !hasWarning(top, want) {
			t.Errorf("no warning %q in %q", want, top.Warnings)
		}
	}
	var b bytes.Buffer
	if err := top.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("an escape sequence from a file reached the text:\n%q", b.String())
	}
	// A tier directory with neither file.
	root = hmatTree(t, map[string]string{"sys/devices/virtual/memory_tiering/memory_tier4/nodes": ""})
	if err := os.MkdirAll(filepath.Join(root, "sys/devices/virtual/memory_tiering/memory_tier4"), 0o755); err != nil {
		t.Fatal(err)
	}
	top, err = Discover(sysfs.New(root))
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(top, "memory_tier4 has neither a readable nodelist nor nodes file") || top.Node(2).MemoryTier != nil {
		t.Errorf("tier without a list: node 2 tier %v, warnings %q", top.Node(2).MemoryTier, top.Warnings)
	}
}

func TestParseSysfsUint(t *testing.T) {
	for in, want := range map[string]uint64{"0": 0, "80\n": 80, "131072\x00\x00": 131072, " 18446744073709551615 ": 1<<64 - 1} {
		if v, ok, err := parseSysfsUint(in); err != nil || !ok || v != want {
			t.Errorf("parseSysfsUint(%q) = %d, %v, %v", in, v, ok, err)
		}
	}
	if _, ok, err := parseSysfsUint("\n"); ok || err != nil {
		t.Errorf("empty: ok=%v err=%v", ok, err)
	}
	for _, bad := range []string{"-1", "1e3", "0x10", "12 34", "18446744073709551616"} {
		if _, _, err := parseSysfsUint(bad); err == nil {
			t.Errorf("parseSysfsUint(%q): no error", bad)
		}
	}
}

func FuzzParseSysfsUint(f *testing.F) {
	for _, s := range []string{"0", "80\n", "131072\x00", "", "-1", "99999999999999999999", "1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok, err := parseSysfsUint(s)
		clean := string(sysfs.Clean([]byte(s)))
		switch {
		case err != nil:
			// One line, bounded: %q turns a byte of garbage into at
			// most four characters of the 30 kept.
			if ok || v != 0 || len(err.Error()) > 200 || strings.ContainsAny(err.Error(), "\n\r\x1b") {
				t.Fatalf("%q: error %v with ok=%v v=%d", s, err, ok, v)
			}
		case !ok:
			if clean != "" {
				t.Fatalf("%q: neither a value nor an error", s)
			}
		default:
			digits := strings.TrimLeft(clean, "0")
			if digits == "" {
				digits = "0"
			}
			if strconv.FormatUint(v, 10) != digits {
				t.Fatalf("%q parsed as %d", s, v)
			}
		}
	})
}

var (
	reMemAttr     = regexp.MustCompile("^Memory attribute #\\d+ name `(\\w+)' flags \\d+$")
	reMemAttrVal  = regexp.MustCompile(`^  NUMANode L#(\d+) = (\d+) from cpuset (\S+)`)
	reNodeLogical = regexp.MustCompile(`NUMANode(?:\([^)]*\))? L#(\d+) \(P#(\d+)`)
	reMemCache    = regexp.MustCompile(`^( *)MemCache L#\d+ \(.*size=(\d+[KMGT]i?B) linesize=(\d+)(?: ways=(\d+))?`)
)

// TestMemoryPerformanceHwloc compares the rated values and memory-side
// caches with what hwloc shows for the same captured trees: its memory
// attributes ReadLatency, WriteLatency, ReadBandwidth and WriteBandwidth
// come from the same files, and its MemCache objects from
// memory_side_cache. Every value hwloc shows must be one of an access
// class's, for the CPUs of that class's initiator nodes.
func TestMemoryPerformanceHwloc(t *testing.T) {
	dir := hwlocFixtureDir(t)
	trees, _ := fixtureTrees(t, dir)
	tests, _ := filepath.Glob(filepath.Join(dir, "*.test"))
	comparedAttrs, comparedCaches := 0, 0
	for _, tf := range tests {
		ht, err := parseHwlocTest(tf)
		if err != nil || !strings.HasSuffix(ht.target, ".console") {
			continue
		}
		root, ok := trees[ht.source]
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ht.target))
		if err != nil {
			t.Fatal(err)
		}
		top, err := Discover(sysfs.New(root))
		if err != nil {
			t.Fatalf("%s: %v", ht.name, err)
		}
		lines := strings.Split(string(b), "\n")
		osOf := map[string]int{}
		for _, l := range lines {
			if m := reNodeLogical.FindStringSubmatch(l); m != nil {
				osOf[m[1]], _ = strconv.Atoi(m[2])
			}
		}
		attr := ""
		for i, l := range lines {
			if m := reMemAttr.FindStringSubmatch(l); m != nil {
				attr = m[1]
				continue
			}
			if m := reMemCache.FindStringSubmatch(l); m != nil && i+1 < len(lines) {
				nm := reNodeLogical.FindStringSubmatch(lines[i+1])
				if nm == nil {
					t.Errorf("%s: no NUMANode under %q", ht.name, l)
					continue
				}
				id, _ := strconv.Atoi(nm[2])
				found := false
				for _, c := range top.Node(id).MemorySideCaches {
					if c.SizeBytes != nil && hwlocSize(*c.SizeBytes) == m[2] && c.LineSize != nil && strconv.FormatUint(*c.LineSize, 10) == m[3] &&
						(m[4] != "1" || (c.Indexing != nil && *c.Indexing == 0)) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: hwloc shows %q above node %d; numascope has %s", ht.name, strings.TrimSpace(l), id, js(top.Node(id).MemorySideCaches))
				}
				comparedCaches++
				continue
			}
			m := reMemAttrVal.FindStringSubmatch(l)
			if m == nil {
				if !strings.HasPrefix(l, "  ") {
					attr = ""
				}
				continue
			}
			get := map[string]func(a Access) *uint64{
				"ReadLatency":    func(a Access) *uint64 { return a.ReadLatencyNS },
				"WriteLatency":   func(a Access) *uint64 { return a.WriteLatencyNS },
				"ReadBandwidth":  func(a Access) *uint64 { return a.ReadBandwidthMiBs },
				"WriteBandwidth": func(a Access) *uint64 { return a.WriteBandwidthMiBs },
			}[attr]
			if get == nil {
				continue // Bandwidth, Latency (derived), Capacity, Locality
			}
			id, ok := osOf[m[1]]
			if !ok {
				t.Errorf("%s: NUMANode L#%s not in the tree", ht.name, m[1])
				continue
			}
			cpus, _, err := parseHwlocSet(m[3])
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, a := range top.Node(id).Access {
				var from []int
				for _, in := range a.Initiators {
					from = append(from, top.Node(in).CPUs...)
				}
				v := get(a)
				if v != nil && strconv.FormatUint(*v, 10) == m[2] && sysfs.FormatCPUList(union(from, nil)) == sysfs.FormatCPUList(cpus) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: hwloc's %s of node %d is %s from CPUs %s; numascope's access classes are %s",
					ht.name, attr, id, m[2], sysfs.FormatCPUList(cpus), js(top.Node(id).Access))
			}
			comparedAttrs++
		}
		if top.MemoryTiers != nil {
			t.Errorf("%s: memory tiers %v from a tree without memory_tiering", ht.name, top.MemoryTiers)
		}
	}
	t.Logf("compared %d rated values and %d memory-side caches with hwloc's", comparedAttrs, comparedCaches)
	if comparedAttrs < 20 || comparedCaches < 4 {
		t.Errorf("compared only %d rated values and %d memory-side caches: the fixtures with HMAT files were not read", comparedAttrs, comparedCaches)
	}
}
