package perfevent

import "strings"

// SplitSpecs splits a list of specifications at the commas (or semicolons,
// spaces) that are not between the slashes of a PMU/TERMS/ specification,
// as perf -e does: "cycles,cpu/event=0xd3,umask=0x01/" is two events.
func SplitSpecs(s string) []string {
	var out []string
	inPMU := false
	start := 0
	flush := func(end int) {
		if p := strings.TrimSpace(s[start:end]); p != "" {
			out = append(out, p)
		}
		start = end + 1
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '/':
			inPMU = !inPMU
		case !inPMU && (c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n'):
			flush(i)
		}
	}
	flush(len(s))
	return out
}
