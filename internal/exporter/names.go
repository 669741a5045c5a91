package exporter

import (
	"strings"
	"unicode"
)

// metricPart turns a kernel name into a Prometheus name part: lower snake
// case, with every character Prometheus does not allow in a name replaced
// by '_' and runs of '_' collapsed. CamelCase breaks into words the way
// the kernel's meminfo names read: "AnonPages" becomes "anon_pages",
// "KReclaimable" "k_reclaimable", "Active(anon)" "active_anon",
// "NFS_Unstable" "nfs_unstable"; names already in snake case (vmstat's,
// perf's "page-faults", "sched:sched_move_numa") only lose the characters
// a name cannot hold.
func metricPart(name string) string {
	rs := []rune(name)
	var b strings.Builder
	under := true // at the start, or just after '_': no second '_'
	put := func(r rune) {
		if r == '_' {
			if !under {
				b.WriteByte('_')
			}
			under = true
			return
		}
		b.WriteRune(r)
		under = false
	}
	for i, r := range rs {
		switch {
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && i > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				// a word starts at "aB" and at the B of "ABc" (KReclaimable).
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					put('_')
				}
			}
			put(unicode.ToLower(r))
		default:
			put('_')
		}
	}
	return strings.TrimRight(b.String(), "_")
}

// meminfoPart is the name part of a meminfo field in
// numascope_node_memory_<part>_bytes: the Mem of MemTotal, MemFree and
// MemUsed goes (numascope_node_memory_free_bytes, as node_exporter's
// node_memory_MemFree_bytes reads without the repetition), and the
// hugetlb pool's HugePages_Total, whose "_total" would make a gauge look
// like a counter, becomes huge_pages_pool.
func meminfoPart(field string) string {
	if field == "HugePages_Total" {
		return "huge_pages_pool"
	}
	if rest, ok := strings.CutPrefix(field, "Mem"); ok && rest != "" && unicode.IsUpper(rune(rest[0])) {
		field = rest
	}
	return metricPart(field)
}
