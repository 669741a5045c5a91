package testutil

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// NumastatRows are the category rows of numactl's `numastat -p PID`, in
// its order; numascope's memory_bytes_by_category keys are their names in
// lower case.
var NumastatRows = []string{"Huge", "Heap", "Stack", "Private"}

// NumastatTable is `numastat -p PID`'s table: row (one of NumastatRows, or
// Total) to column (a node number, or Total) to the MB it prints.
type NumastatTable map[string]map[string]string

// NumastatEnv keeps a table of many nodes on one line: numastat otherwise
// wraps its columns at the terminal's width, or 80 without one.
const NumastatEnv = "NUMASTAT_WIDTH=100000"

// ParseNumastat reads the output of `numastat -p PID` (numactl 2.0.x, run
// with NumastatEnv): the header's node columns, then the five rows.
func ParseNumastat(out []byte) (NumastatTable, error) {
	var cols []string
	table := NumastatTable{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 2 && f[0] == "Node" && f[len(f)-1] == "Total":
			if cols != nil {
				return nil, fmt.Errorf("numastat printed a second header %q (a table wrapped at its width?)", l)
			}
			for i := 0; i+1 < len(f)-1; i += 2 {
				if f[i] != "Node" {
					return nil, fmt.Errorf("numastat's header %q", l)
				}
				cols = append(cols, f[i+1])
			}
			cols = append(cols, "Total")
		case len(f) > 0 && (f[0] == "Total" || slices.Contains(NumastatRows, f[0])):
			if len(f)-1 != len(cols) {
				return nil, fmt.Errorf("numastat's row %q has %d figures for %d columns", f[0], len(f)-1, len(cols))
			}
			table[f[0]] = map[string]string{}
			for i, c := range cols {
				table[f[0]][c] = f[i+1]
			}
		}
	}
	if len(table) != len(NumastatRows)+1 {
		return nil, fmt.Errorf("%d of numastat's 5 rows", len(table))
	}
	return table, nil
}

// Nodes are the table's node columns, in ascending order.
func (t NumastatTable) Nodes() []string {
	nodes := slices.DeleteFunc(slices.Collect(maps.Keys(t["Total"])), func(c string) bool { return c == "Total" })
	slices.SortFunc(nodes, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return nodes
}

// CompareNumastat holds numascope's figures of a process against its
// numastat table, cell by cell, each printed as numastat prints it (MiB
// with two decimals): byNode is the memory per node, cats the same split
// by category (memory_bytes_by_category: huge, heap, stack, private). It
// returns one line per cell that differs, and per node numascope shows
// that numastat does not.
func CompareNumastat(ref NumastatTable, byNode map[string]uint64, cats map[string]map[string]uint64) []string {
	var diffs []string
	mb := func(b uint64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<20)) }
	check := func(row, col string, got uint64) {
		if want := ref[row][col]; mb(got) != want {
			diffs = append(diffs, fmt.Sprintf("%s on %s: %s MB (%d bytes), numastat %s MB", row, col, mb(got), got, want))
		}
	}
	sum := func(m map[string]uint64) (s uint64) {
		for _, v := range m {
			s += v
		}
		return s
	}
	nodes := ref.Nodes()
	for _, row := range NumastatRows {
		m := cats[strings.ToLower(row)]
		for n := range m {
			if !slices.Contains(nodes, n) {
				diffs = append(diffs, fmt.Sprintf("%s has memory on node %s, which numastat does not show", row, n))
			}
		}
		for _, n := range nodes {
			check(row, n, m[n])
		}
		check(row, "Total", sum(m))
	}
	for _, n := range nodes {
		check("Total", n, byNode[n])
	}
	check("Total", "Total", sum(byNode))
	return diffs
}
