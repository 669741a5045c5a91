package bench

import (
	"fmt"
	"strings"

	"github.com/numascope/numascope/internal/term"
)

// pairNoteExamples is how many pairs a note names before "and N more".
const pairNoteExamples = 4

// pairNote is one note that may hold for many pairs of a run: pairs short
// of windows on a busy host, buffers partly off their node. A note per
// pair made `--kind c2c --pairs all` at 300 CPUs (44 850 pairs) print
// up to 90 000 notes (34 MiB) on a busy host, past what view keeps of a
// document; each pair's own figures are in the JSON (its samples, its
// placement), so the note says what holds, for how many pairs of how
// many, and names the first few.
type pairNote struct {
	kind  string // "c2c", "latency", ...
	what  string // what holds for the pairs, e.g. "the line's page off its node"
	why   string // what it means for the figures
	first []string
	n     int
}

// add counts one pair: pair names it ("CPU 3 <-> CPU 7", "node 0 ->
// node 1"), detail says how it fell short ("2 of 3", "80.0% on node 1").
func (p *pairNote) add(pair, detail string) {
	if p.n++; len(p.first) < pairNoteExamples {
		p.first = append(p.first, pair+" ("+detail+")")
	}
}

// note is the note for total pairs measured (not counting the pairs
// skipped, which the result lists apart); ok is false when no pair was
// added.
func (p *pairNote) note(total int) (string, bool) {
	if p.n == 0 {
		return "", false
	}
	list := strings.Join(p.first, ", ")
	if more := p.n - len(p.first); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%s: %d of %s with %s: %s; %s", p.kind, p.n, term.Plural(total, "pair", "pairs"), p.what, list, p.why), true
}
