package exporter

import (
	"slices"
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
//
// A word that is an abbreviated unit to Prometheus's linter (the "s" of
// "SReclaimable", the "sec" of "SecPageTables") would make promtool check
// metrics warn that the name abbreviates a unit: the kernel names known to
// hold one are spelt out (spelledOut), and in any other the word is joined
// to its neighbour (abbreviationFree).
func metricPart(name string) string {
	if s, ok := spelledOut[name]; ok {
		return s
	}
	return abbreviationFree(words(name))
}

// spelledOut names the kernel's fields and lines whose words Prometheus's
// linter reads as abbreviated units, with the words the kernel's
// documentation (Documentation/filesystems/proc.rst) gives them.
// docs/exporter.md lists them under "Spelt-out names", for dashboards.
var spelledOut = map[string]string{
	"SReclaimable":            "slab_reclaimable",              // meminfo: the reclaimable part of Slab
	"SUnreclaim":              "slab_unreclaimable",            // meminfo: the part of Slab that cannot be reclaimed
	"SecPageTables":           "secondary_page_tables",         // meminfo: secondary page tables (KVM, IOMMU)
	"nr_sec_page_table_pages": "nr_secondary_page_table_pages", // vmstat: the same, in pages
}

// unitAbbreviations are the words that Prometheus's linter (client_golang's
// promlint, which promtool check metrics runs) rejects in a name as
// abbreviated units. FuzzMetricPartLint checks the names against the linter
// itself, so that a word it adds is noticed.
var unitAbbreviations = []string{"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d"}

// abbreviationFree joins each word of the snake-case part that is in
// unitAbbreviations to the word after it, or, at the end, to the word
// before ("DirectMap2M": "direct_map2_m" becomes "direct_map2m", as
// "DirectMap4k" is "direct_map4k"), until none is left. A part of one such
// word alone stays as it is: no kernel name is one.
func abbreviationFree(part string) string {
	ws := strings.Split(part, "_")
	for len(ws) > 1 {
		i := slices.IndexFunc(ws, func(w string) bool { return slices.Contains(unitAbbreviations, w) })
		if i < 0 {
			break
		}
		if i == len(ws)-1 {
			i-- // the last word joins the one before
		}
		ws[i] += ws[i+1] // a join may make another abbreviation ("t_b"): look again
		ws = slices.Delete(ws, i+1, i+2)
	}
	return strings.Join(ws, "_")
}

// words is name in lower snake case (metricPart's rule, before
// abbreviations are dealt with).
func words(name string) string {
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
