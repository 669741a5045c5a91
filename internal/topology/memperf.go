package topology

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/sysfs"
)

// This file reads what the kernel says about the performance of each node's
// memory, as opposed to its distance: the memory tiers it demotes and
// promotes pages between, the firmware's rated latencies and bandwidths
// (ACPI HMAT, Documentation/admin-guide/mm/numaperf.rst) and the
// memory-side caches in front of a node. Most machines and every VM the
// tests boot expose none of it, so every value is optional: an absent file
// is "not reported", never a zero that a reader could take for a rating.
// Only names and numbers are read; symbolic links (initiators/nodeX) are
// parsed by name and never followed.

// maxAccessClass bounds the accessN directories read. The kernel creates
// access0 (best initiators of any kind) and, since 5.10, access1 (best CPU
// initiators); a few more are read in case later kernels add classes.
const maxAccessClass = 8

// parseSysfsUint parses one unsigned decimal value of a sysfs attribute
// (a latency, a bandwidth, a cache size or policy). ok is false for an
// empty file; a value that is not a number is an error naming it.
func parseSysfsUint(s string) (v uint64, ok bool, err error) {
	s = string(sysfs.Clean([]byte(s)))
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%q is not an unsigned integer", truncate(s, 30))
	}
	return v, true, nil
}

// readUint reads an optional unsigned attribute: nil when the file is
// absent or empty, and when zeroMeansAbsent and the kernel wrote 0. Garbage
// is warned about and read as absent.
func (d *discoverer) readUint(path string, zeroMeansAbsent bool) *uint64 {
	s, ok := d.read(path)
	if !ok {
		return nil
	}
	v, ok, err := parseSysfsUint(s)
	if err != nil {
		d.warnf("%s: %v; taken as not reported", path, err)
		return nil
	}
	if !ok || (zeroMeansAbsent && v == 0) {
		return nil
	}
	return &v
}

// access reads nodeY/accessN/initiators for every class present. The
// performance files sit in the initiators directory beside the nodeX
// links; the kernel creates them all at once but writes 0 for a value the
// firmware did not give, so 0 is "not reported".
func (d *discoverer) access(nodeDir string) []Access {
	out := []Access{}
	for class := 0; class < maxAccessClass; class++ {
		dir := filepath.Join(nodeDir, "access"+strconv.Itoa(class), "initiators")
		ids, present := d.listNumbered(dir, "node")
		if !present {
			continue
		}
		a := Access{
			Class:              class,
			Initiators:         nonNil(ids),
			ReadLatencyNS:      d.readUint(filepath.Join(dir, "read_latency"), true),
			WriteLatencyNS:     d.readUint(filepath.Join(dir, "write_latency"), true),
			ReadBandwidthMiBs:  d.readUint(filepath.Join(dir, "read_bandwidth"), true),
			WriteBandwidthMiBs: d.readUint(filepath.Join(dir, "write_bandwidth"), true),
		}
		if len(a.Initiators) == 0 && a.ReadLatencyNS == nil && a.WriteLatencyNS == nil &&
			a.ReadBandwidthMiBs == nil && a.WriteBandwidthMiBs == nil {
			// The kernel creates accessN for initiators too (with only
			// targets/): nothing about this node as a target.
			continue
		}
		out = append(out, a)
	}
	return out
}

// memorySideCaches reads nodeY/memory_side_cache/indexN. Here 0 is a real
// value (direct-mapped, write-back), so only absent files are nil.
func (d *discoverer) memorySideCaches(nodeDir string) []MemorySideCache {
	dir := filepath.Join(nodeDir, "memory_side_cache")
	idx, _ := d.listNumbered(dir, "index")
	out := []MemorySideCache{}
	for _, i := range idx {
		ix := filepath.Join(dir, "index"+strconv.Itoa(i))
		out = append(out, MemorySideCache{
			Index:       i,
			SizeBytes:   d.readUint(filepath.Join(ix, "size"), false),
			LineSize:    d.readUint(filepath.Join(ix, "line_size"), false),
			Indexing:    d.readUint(filepath.Join(ix, "indexing"), false),
			WritePolicy: d.readUint(filepath.Join(ix, "write_policy"), false),
		})
	}
	return out
}

// memoryTiers reads /sys/devices/virtual/memory_tiering/memory_tierN. The
// node list is in "nodelist" on released kernels (6.1 on) and in "nodes"
// in the ABI document and the patches before them; both are read, and
// when both exist and disagree, nodelist wins and the difference is
// warned about. nil means the directory is absent: tiers not reported.
func (d *discoverer) memoryTiers() []MemoryTier {
	root := d.fs.Sys("devices/virtual/memory_tiering")
	ids, present := d.listNumbered(root, "memory_tier")
	if !present {
		return nil
	}
	out := []MemoryTier{}
	for _, id := range ids {
		dir := filepath.Join(root, "memory_tier"+strconv.Itoa(id))
		var lists [][]int
		var found []string
		for _, name := range []string{"nodelist", "nodes"} {
			s, ok := d.read(filepath.Join(dir, name))
			if !ok {
				continue
			}
			v, err := sysfs.ParseCPUList(s)
			if err != nil {
				d.warnf("%s: %v; ignored", filepath.Join(dir, name), err)
				continue
			}
			lists = append(lists, nonNil(v))
			found = append(found, name)
		}
		switch {
		case len(lists) == 0:
			d.warnf("%s has neither a readable nodelist nor nodes file; the tier's nodes are unknown", dir)
			continue
		case len(lists) == 2 && !slices.Equal(lists[0], lists[1]):
			d.warnf("%s: nodelist says %q, nodes %q; using nodelist", dir, sysfs.FormatCPUList(lists[0]), sysfs.FormatCPUList(lists[1]))
		}
		out = append(out, MemoryTier{ID: id, Nodes: lists[0]})
	}
	return out
}

// assignTiers sets each node's MemoryTier from the tiers. A node listed by
// two tiers cannot happen on a sane kernel; the first (fastest) wins and
// the oddity is warned about.
func (d *discoverer) assignTiers(t *Topology) {
	var twice []string
	for _, tier := range t.MemoryTiers {
		for _, id := range tier.Nodes {
			n := t.Node(id)
			if n == nil {
				d.warnf("memory_tier%d lists node %d, which has no node directory; ignored", tier.ID, id)
				continue
			}
			if n.MemoryTier != nil {
				twice = append(twice, strconv.Itoa(id))
				continue
			}
			v := tier.ID
			n.MemoryTier = &v
		}
	}
	if len(twice) > 0 {
		d.warnf("nodes %s are listed by more than one memory tier; each is taken to be in the fastest", strings.Join(twice, ","))
	}
}
