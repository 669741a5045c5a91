package topology

import (
	"bufio"
	"fmt"
	"strconv"

	"github.com/numascope/numascope/internal/sysfs"
)

// notReported is what the text shows for a value the kernel does not give:
// a dash in a table, never 0, which would read as a rating.
const notReported = "-"

func optInt(v *int) string {
	if v == nil {
		return notReported
	}
	return strconv.Itoa(*v)
}

func optUnit(v *uint64, unit string) string {
	if v == nil {
		return notReported
	}
	return strconv.FormatUint(*v, 10) + " " + unit
}

// writeMemoryPerf shows the memory tiers, the firmware's rated performance
// (HMAT) and the memory-side caches. Each part the kernel does not report
// is one line saying so, so that "nothing" is visibly an absence rather
// than a forgotten section.
func (t *Topology) writeMemoryPerf(w *bufio.Writer) {
	fmt.Fprintf(w, "\nMemory tiers, HMAT ratings, memory-side caches (as the kernel reports them):\n")
	if t.MemoryTiers == nil {
		fmt.Fprintf(w, "  memory tiers:        not reported (no devices/virtual/memory_tiering)\n")
	} else {
		fmt.Fprintf(w, "  memory tiers (memory_tierN; a lower N is faster):\n")
		rows := [][]string{{"tier", "nodes"}}
		for _, tr := range t.MemoryTiers {
			nodes := sysfs.FormatCPUList(tr.Nodes)
			if nodes == "" {
				nodes = "none"
			}
			rows = append(rows, []string{strconv.Itoa(tr.ID), nodes})
		}
		writeIndentedTable(w, rows, []bool{true, false})
	}

	var access [][]string
	for _, n := range t.Nodes {
		for _, a := range n.Access {
			from := sysfs.FormatCPUList(a.Initiators)
			if from == "" {
				from = "none linked"
			}
			access = append(access, []string{strconv.Itoa(n.ID), accessClassName(a.Class), from,
				optUnit(a.ReadLatencyNS, "ns"), optUnit(a.WriteLatencyNS, "ns"),
				optUnit(a.ReadBandwidthMiBs, "MiB/s"), optUnit(a.WriteBandwidthMiBs, "MiB/s")})
		}
	}
	if len(access) == 0 {
		fmt.Fprintf(w, "  rated performance:   not reported (no HMAT: no nodeN/access0 or access1)\n")
	} else {
		fmt.Fprintf(w, "  rated performance (firmware HMAT, from the initiator nodes; %s not reported):\n", notReported)
		rows := append([][]string{{"node", "class", "initiators", "read latency", "write latency", "read bandwidth", "write bandwidth"}}, access...)
		writeIndentedTable(w, rows, []bool{true, false, false, true, true, true, true})
	}

	var caches [][]string
	for _, n := range t.Nodes {
		for _, c := range n.MemorySideCaches {
			size := notReported
			if c.SizeBytes != nil {
				size = humanBytes(*c.SizeBytes)
			}
			caches = append(caches, []string{strconv.Itoa(n.ID), strconv.Itoa(c.Index), size,
				optUnit(c.LineSize, "B"), cacheIndexing(c.Indexing), cacheWritePolicy(c.WritePolicy)})
		}
	}
	if len(caches) == 0 {
		fmt.Fprintf(w, "  memory-side caches:  not reported\n")
	} else {
		fmt.Fprintf(w, "  memory-side caches (a higher level is nearer the CPUs):\n")
		rows := append([][]string{{"node", "level", "size", "line", "indexing", "write policy"}}, caches...)
		writeIndentedTable(w, rows, []bool{true, true, true, true, false, false})
	}
}

// writeIndentedTable is writeTable two more spaces in, under a sub-heading.
func writeIndentedTable(w *bufio.Writer, rows [][]string, right []bool) {
	for _, r := range rows {
		r[0] = "  " + r[0]
	}
	writeTable(w, rows, right)
}

func accessClassName(class int) string {
	switch class {
	case 0:
		return "0 (any initiator)"
	case 1:
		return "1 (CPUs)"
	}
	return strconv.Itoa(class)
}

func cacheIndexing(v *uint64) string {
	switch {
	case v == nil:
		return notReported
	case *v == 0:
		return "direct-mapped"
	}
	return "indexed"
}

func cacheWritePolicy(v *uint64) string {
	switch {
	case v == nil:
		return notReported
	case *v == 0:
		return "write-back"
	case *v == 1:
		return "write-through"
	}
	return "other (" + strconv.FormatUint(*v, 10) + ")"
}
