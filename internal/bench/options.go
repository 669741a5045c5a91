package bench

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// Kinds are the measurements to make.
type Kinds struct {
	Latency, Bandwidth bool
	// Loaded is loaded latency and peak injection bandwidth.
	Loaded bool
	// C2C is the core-to-core latency of a contended cache line (c2c.go).
	C2C bool
}

// memory says whether a kind that measures memory (buffers bound to
// targets) is asked.
func (k Kinds) memory() bool { return k.Latency || k.Bandwidth || k.Loaded }

// ParseKinds parses --kind: one kind (latency, bandwidth, loaded, c2c or
// all) or several separated by commas, e.g. latency,c2c to have the node
// matrix of core-to-core latency beside the memory latency.
func ParseKinds(s string) (Kinds, error) {
	var k Kinds
	for _, part := range strings.Split(s, ",") {
		one, err := ParseKind(strings.TrimSpace(part))
		if err != nil {
			return Kinds{}, err
		}
		k.Latency, k.Bandwidth, k.Loaded, k.C2C = k.Latency || one.Latency, k.Bandwidth || one.Bandwidth, k.Loaded || one.Loaded, k.C2C || one.C2C
	}
	return k, nil
}

// ParseKind parses one --kind: latency, bandwidth, loaded, c2c or all
// (the memory kinds: c2c is asked by name, since on a big machine it
// measures thousands of CPU pairs).
func ParseKind(s string) (Kinds, error) {
	switch s {
	case "latency":
		return Kinds{Latency: true}, nil
	case "bandwidth":
		return Kinds{Bandwidth: true}, nil
	case "loaded":
		return Kinds{Loaded: true}, nil
	case "c2c":
		return Kinds{C2C: true}, nil
	case "all", "":
		return Kinds{Latency: true, Bandwidth: true, Loaded: true}, nil
	}
	return Kinds{}, fmt.Errorf("--kind %q: want latency, bandwidth, loaded, c2c or all (or a comma list, e.g. latency,c2c)", s)
}

// ParseSize parses a size such as 64M, 1G, 512KiB or 1048576 (bytes);
// the units are binary (K = 1024).
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := uint64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v == 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size like 64M, 1G or 512K", s)
	}
	return v * mult, nil
}

// FormatSize writes a byte count the way ParseSize reads it, in the
// largest unit that divides it (MiB and GiB are written M and G).
func FormatSize(b uint64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if b >= 1<<u.shift && b%(1<<u.shift) == 0 {
			return strconv.FormatUint(b>>u.shift, 10) + u.name
		}
	}
	if b >= 1<<20 {
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + "M"
	}
	return strconv.FormatUint(b, 10)
}

// usableCPUs returns each node's online CPUs that this process may use.
func usableCPUs(topo *topology.Topology) map[int][]int {
	m := map[int][]int{}
	for _, c := range topo.CPUs {
		if c.Online && (c.Allowed || topo.AllowedCPUs == nil) && c.Node >= 0 {
			m[c.Node] = append(m[c.Node], c.ID)
		}
	}
	for n := range m {
		slices.Sort(m[n])
	}
	return m
}

// Initiators resolves --from: nodes with CPUs this process may use. An
// empty list means all of them.
func Initiators(from string, topo *topology.Topology) ([]int, error) {
	cpus := usableCPUs(topo)
	valid := slices.Sorted(maps.Keys(cpus))
	if len(valid) == 0 {
		return nil, errors.New("no node has a CPU this process may use")
	}
	if strings.TrimSpace(from) == "" {
		return valid, nil
	}
	ids, err := sysfs.ParseCPUList(from)
	if err != nil || len(ids) == 0 {
		return nil, fmt.Errorf("--from %q is not a node list like 0-1,3; nodes with CPUs: %s", from, sysfs.FormatCPUList(valid))
	}
	for _, id := range ids {
		n := topo.Node(id)
		switch {
		case n == nil:
			return nil, fmt.Errorf("--from %q: node %d does not exist; nodes with CPUs: %s", from, id, sysfs.FormatCPUList(valid))
		case n.CPULess:
			return nil, fmt.Errorf("--from %q: node %d has no CPUs, so it cannot initiate: name it in --to to measure its memory; nodes with CPUs: %s", from, id, sysfs.FormatCPUList(valid))
		case len(cpus[id]) == 0:
			return nil, fmt.Errorf("--from %q: node %d has no online CPU this process may use (cpuset?); nodes with usable CPUs: %s", from, id, sysfs.FormatCPUList(valid))
		}
	}
	return ids, nil
}

// Targets resolves --to: nodes with memory, CPU-less ones included. An
// empty list means every node with memory, those outside this process's
// cpuset too: they are then skipped with the reason, so that the matrix
// shows the whole machine.
func Targets(to string, topo *topology.Topology) ([]int, error) {
	if strings.TrimSpace(to) == "" {
		var out []int
		for _, n := range topo.Nodes {
			if n.MemoryTotal > 0 {
				out = append(out, n.ID)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("no node has memory")
		}
		return out, nil
	}
	ids, err := sysfs.ParseCPUList(to)
	if err != nil || len(ids) == 0 {
		return nil, fmt.Errorf("--to %q is not a node list like 0-1,3", to)
	}
	if err := placement.CheckMemoryNodes(ids, topo); err != nil {
		return nil, fmt.Errorf("--to %q: %w", to, err)
	}
	return ids, nil
}

// threadCPUs returns the CPUs of initiator node id that the bandwidth
// threads run on: all its usable CPUs, or threads of them, one per core
// first (placement.ResolveCPUs).
func threadCPUs(id, threads int, topo *topology.Topology) ([]int, error) {
	all := usableCPUs(topo)[id]
	if threads > len(all) {
		return nil, fmt.Errorf("--threads %d: node %d has only %d usable CPUs (%s)", threads, id, len(all), sysfs.FormatCPUList(all))
	}
	cpus, err := placement.ResolveCPUs("", strconv.Itoa(id), threads, topo)
	if err != nil {
		return nil, fmt.Errorf("--threads %d on node %d: %w", threads, id, err)
	}
	return cpus, nil
}

// lastLevel returns the total size of the last-level caches that the CPUs
// use (each instance counted once) and the largest cache line, 64 bytes
// when the topology knows no cache.
func lastLevel(topo *topology.Topology, cpus []int) (llc uint64, line int) {
	line = 64
	top := 0
	for _, c := range topo.Caches {
		if c.Type != "Instruction" {
			top = max(top, c.Level)
			line = max(line, c.LineSize)
		}
	}
	for _, c := range topo.Caches {
		if c.Level != top || c.Type == "Instruction" {
			continue
		}
		for _, cpu := range c.CPUs {
			if slices.Contains(cpus, cpu) {
				llc += c.SizeBytes
				break
			}
		}
	}
	return llc, line
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m uint64) uint64 { return (n + m - 1) / m * m }
