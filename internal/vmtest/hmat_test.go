package vmtest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHMAT boots a VM whose firmware has an ACPI HMAT (numavm --hmat:
// QEMU's hmat=on, latencies and bandwidths from every CPU node to every
// node, a memory-side cache on the CPU-less node 2), so that the real
// kernel, not a hand-made tree, lays out nodeY/accessN/initiators and
// memory_side_cache. numascope topology must report exactly the files'
// values and initiator links, and bench's "rated" must carry them for the
// pairs the kernel rates. Timings are not asserted (TCG).
func TestHMAT(t *testing.T) {
	requireVM(t)
	script := "sec files sh -c 'for f in /sys/devices/system/node/node*/access*/initiators/* /sys/devices/system/node/node*/memory_side_cache/index*/*; do " +
		"if [ -L \"$f\" ]; then echo \"$f link\"; elif [ -f \"$f\" ]; then echo \"$f $(cat $f)\"; fi; done; true'\n" +
		"sec topo numascope topology --format json\n" +
		"sec text numascope topology\n" +
		"sec bench gtimeout 120 numascope bench --kind latency --size 4M --repeat 1 --format json\n"
	r := runVM(t, []string{"--nodes", "3", "--cpuless", "1", "--hmat", "--distances", "10,20,14;20,10,24;14,24,10"}, script)

	files := r.section(t, "files")
	t.Logf("the kernel's files:\n%s", files)
	var topo hmatTopo
	if err := json.Unmarshal([]byte(r.section(t, "topo")), &topo); err != nil {
		t.Fatalf("topology JSON: %v", err)
	}
	// What numascope read, keyed like the kernel's paths.
	got := map[string]string{}
	for _, n := range topo.Nodes {
		dir := fmt.Sprintf("/sys/devices/system/node/node%d/", n.ID)
		for _, a := range n.Access {
			base := fmt.Sprintf("%saccess%d/initiators/", dir, a.Class)
			for _, in := range a.Initiators {
				got[base+"node"+strconv.Itoa(in)] = "link"
			}
			for name, v := range map[string]*uint64{"read_latency": a.ReadLat, "write_latency": a.WriteLat, "read_bandwidth": a.ReadBW, "write_bandwidth": a.WriteBW} {
				if v != nil {
					got[base+name] = strconv.FormatUint(*v, 10)
				}
			}
		}
		for _, c := range n.Caches {
			base := fmt.Sprintf("%smemory_side_cache/index%d/", dir, *c["index"])
			for _, name := range []string{"size", "line_size", "indexing", "write_policy"} {
				if v := c[name+map[bool]string{true: "_bytes"}[name == "size"]]; v != nil {
					got[base+name] = strconv.FormatUint(*v, 10)
				}
			}
		}
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(files), "\n") {
		path, val, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		name := filepath.Base(path)
		known := strings.HasPrefix(name, "node") || strings.Contains(name, "latency") || strings.Contains(name, "bandwidth") ||
			name == "size" || name == "line_size" || name == "indexing" || name == "write_policy"
		// The kernel writes 0 for a value the firmware left out:
		// numascope reports it as not reported.
		if !known || (val == "0" && (strings.Contains(name, "latency") || strings.Contains(name, "bandwidth"))) {
			continue
		}
		want[path] = val
	}
	if len(want) == 0 {
		t.Fatalf("the VM's kernel exposes no HMAT file: QEMU's HMAT did not reach it")
	}
	agreeBothWays(t, "the kernel", want, got)
	if !strings.Contains(files, "node2/memory_side_cache/index1/size") {
		t.Errorf("no memory-side cache on node 2")
	}
	text := r.section(t, "text")
	t.Logf("topology:\n%s", text)
	if !strings.Contains(text, "rated performance (firmware HMAT") || !strings.Contains(text, "direct-mapped") {
		t.Errorf("the text shows no rated performance or memory-side cache")
	}

	var b struct {
		Rated struct {
			Initiators  []int        `json:"initiators"`
			Targets     []int        `json:"targets"`
			NotReported string       `json:"not_reported"`
			ReadLatency [][]*float64 `json:"read_latency_ns"`
			Missing     []struct {
				Initiator int `json:"initiator"`
				Target    int `json:"target"`
			} `json:"missing"`
		} `json:"rated"`
	}
	if err := json.Unmarshal([]byte(r.section(t, "bench")), &b); err != nil {
		t.Fatalf("bench JSON: %v", err)
	}
	rt := b.Rated
	if rt.NotReported != "" || len(rt.ReadLatency) != len(rt.Initiators) {
		t.Fatalf("rated %+v", rt)
	}
	rated := 0
	for i, from := range rt.Initiators {
		for j, to := range rt.Targets {
			v := rt.ReadLatency[i][j]
			path := fmt.Sprintf("/sys/devices/system/node/node%d/access0/initiators/", to)
			in0 := want[path+"node"+strconv.Itoa(from)] == "link"
			in1 := want[strings.Replace(path, "access0", "access1", 1)+"node"+strconv.Itoa(from)] == "link"
			switch {
			case v != nil:
				rated++
				cls := "access0"
				if !in0 {
					cls = "access1"
				}
				if k := strings.Replace(path, "access0", cls, 1) + "read_latency"; strconv.FormatFloat(*v, 'f', -1, 64) != want[k] {
					t.Errorf("rated read latency %d->%d = %v, the kernel's %s = %q", from, to, *v, k, want[k])
				}
			case in0 || in1:
				t.Errorf("rated read latency %d->%d is null, but the kernel links node %d as an initiator of node %d", from, to, from, to)
			}
		}
	}
	if rated == 0 || len(rt.Missing) == 0 {
		t.Errorf("%d rated pairs and %d missing: want some of each (the kernel rates a node only from its best initiators)", rated, len(rt.Missing))
	}
}
