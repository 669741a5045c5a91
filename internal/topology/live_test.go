package topology

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sysfs"
)

// TestLiveMachine runs discovery on the machine running the tests and checks
// it against what the kernel says through other channels: the status file,
// the scheduler's affinity mask and the global online list and meminfo.
func TestLiveMachine(t *testing.T) {
	// numascope reads the live machine through sysfs and procfs: a Linux
	// system without them fails the test rather than skip it.
	if _, err := os.Stat("/sys/devices/system/cpu"); err != nil {
		t.Fatalf("no sysfs on this system: %v", err)
	}
	top, err := Discover(sysfs.New(""))
	if err != nil {
		t.Fatalf("Discover on the live system: %v", err)
	}
	checkInvariants(t, top)
	if len(top.CPUs) == 0 {
		t.Fatal("no CPUs")
	}

	// Allowed sets: as /proc/self/status lists them.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("no /proc/self/status: %v", err)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	if got, want := sysfs.FormatCPUList(top.AllowedCPUs), kv["Cpus_allowed_list"]; got != want {
		t.Errorf("allowed CPUs %q, status says %q", got, want)
	}
	if got, want := sysfs.FormatCPUList(top.AllowedNodes), kv["Mems_allowed_list"]; got != want {
		t.Errorf("allowed nodes %q, status says %q", got, want)
	}
	if top.AllowedSource != "/proc/self/status" {
		t.Errorf("allowed source %q", top.AllowedSource)
	}

	// The affinity mask is an independent witness of the allowed CPUs
	// (the kernel initialises it from the cpuset).
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		for _, c := range top.CPUs {
			if set.IsSet(c.ID) && !c.Allowed {
				t.Errorf("CPU %d is in the affinity mask but not allowed", c.ID)
			}
		}
		if n := set.Count(); n != len(top.AllowedCPUs) {
			t.Logf("affinity mask has %d CPUs, allowed list %d (threads may differ)", n, len(top.AllowedCPUs))
		}
	}

	// Online CPUs: as the global list says.
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	want, err := sysfs.ParseCPUList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, c := range top.CPUs {
		if c.Online {
			got = append(got, c.ID)
		}
	}
	if sysfs.FormatCPUList(got) != sysfs.FormatCPUList(want) {
		t.Errorf("online CPUs %v, kernel says %v", got, want)
	}

	// Memory: a node's MemTotal is the sum of its zones' managed pages,
	// which /proc/zoneinfo lists. (/proc/meminfo is no witness: container
	// runtimes such as LXCFS virtualise it but not sysfs, and on this very
	// test machine it reports three times what the nodes hold.) Without
	// NUMA the one node's MemTotal is /proc/meminfo's, which has no witness.
	if b, err = os.ReadFile("/proc/zoneinfo"); err != nil {
		t.Fatal(err)
	}
	managed, present := map[int]uint64{}, map[int]uint64{}
	node := -1
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "Node":
			node, _ = strconv.Atoi(strings.TrimSuffix(f[1], ","))
		case len(f) == 2 && (f[0] == "managed" || f[0] == "present"):
			v, _ := strconv.ParseUint(f[1], 10, 64)
			m := managed
			if f[0] == "present" {
				m = present
			}
			m[node] += v * uint64(os.Getpagesize())
		}
	}
	// A kernel booted with deferred_init=lazy (the AMD build machines'
	// since 2026-12: "N pages left to deferred_grow_zone()" in its log)
	// initialises most of a node's pages only when the zone first runs
	// short, and counts the pages not yet initialised in the node's
	// MemTotal but not in the zones' managed pages: there MemTotal lies
	// between the managed and the present pages (7.5 GB, 25.3 GB and 25.8
	// GB on a fresh one).
	cmdline, _ := os.ReadFile("/proc/cmdline")
	lazy := slices.Contains(strings.Fields(string(cmdline)), "deferred_init=lazy")
	compared := 0
	for _, n := range top.Nodes {
		if want, ok := managed[n.ID]; ok && top.NUMA {
			compared++
			switch {
			case lazy && (n.MemoryTotal < want || n.MemoryTotal > present[n.ID]):
				t.Errorf("node %d MemTotal %d bytes, its zones manage %d and have %d present (deferred_init=lazy)", n.ID, n.MemoryTotal, want, present[n.ID])
			case !lazy && n.MemoryTotal != want:
				t.Errorf("node %d MemTotal %d bytes, its zones manage %d", n.ID, n.MemoryTotal, want)
			}
		}
	}
	if top.NUMA && compared == 0 {
		t.Errorf("no node's MemTotal compared: /proc/zoneinfo names none of nodes %v", top.Nodes)
	}

	var buf bytes.Buffer
	if err := top.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "Machine: ") {
		t.Errorf("text output starts with %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	if testing.Verbose() {
		t.Logf("live machine:\n%s", buf.String())
	}
}
