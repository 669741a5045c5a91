package vmtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

// docVMExamples are the docs' examples that need several NUMA nodes, keyed
// as TestDocExamples (cmd/numascope) keys them; its table sends them here.
// They run in one 4-node VM (the docs' default), as written: of a
// scripts/numavm line, the command after its --; a bench line bounded as
// testutil.DocBounded says.
var docVMExamples = []string{
	"docs/bench.md: numascope bench --kind latency --to 2 --size 256M",
	"docs/testing.md: scripts/numavm -- numascope topology",
	`docs/testing.md: scripts/numavm -- sh -c 'numascope record -o /tmp/r.jsonl -e "node.*.numa_hit" -- interleave && numascope convert /tmp/r.jsonl'`,
	`docs/testing.md: scripts/numavm --nodes 4 -- sh -c ' numascope record -o /tmp/r.jsonl -i 200ms -e "node.*.numa_hit,node.*.AnonPages,vmstat.numa_hint_faults,vmstat.numa_pages_migrated" -- firsttouch --serial --mb 32 --seconds 6 numascope convert /tmp/r.jsonl'`,
}

// TestDocExamplesInVM runs docVMExamples, extracted from the docs, in the
// NUMA VM: each must exit 0, and a line that converts a recording must
// print its CSV, with a column for each of the four nodes where it
// selected node.*.
func TestDocExamplesInVM(t *testing.T) {
	requireVM(t)
	root := testutil.RepoRoot(t)
	found := map[string]string{}
	for _, b := range testutil.DocBlocks(t, root, testutil.DocFiles(t, root)) {
		for _, c := range testutil.DocCommands(b) {
			if key := b.File + ": " + c.Key(); slices.Contains(docVMExamples, key) {
				found[key] = c.Text
			}
		}
	}
	var script strings.Builder
	for i, key := range docVMExamples {
		line, ok := found[key]
		if !ok {
			t.Errorf("no doc has %q any more: update docVMExamples and TestDocExamples' table", key)
			continue
		}
		if strings.HasPrefix(line, "scripts/numavm ") {
			_, line, _ = strings.Cut(line, " -- ")
		}
		fmt.Fprintf(&script, "sec doc%d sh -c '%s' 2>&1\n", i, strings.ReplaceAll(testutil.DocBounded(line), "'", `'\''`))
	}
	if t.Failed() {
		return
	}
	r := runVM(t, []string{"--nodes", "4"}, script.String())
	for i, key := range docVMExamples {
		name := fmt.Sprintf("doc%d", i)
		s, ok := r.Sections[name]
		switch {
		case !ok:
			t.Errorf("%s: the VM printed nothing for it\n%s", key, tail(r.Stdout, 4000))
		case s.RC != 0:
			t.Errorf("%s: exit %d in the VM:\n%s", key, s.RC, tail(s.Body, 4000))
		case strings.Contains(key, "numascope convert"):
			if !strings.Contains(s.Body, "time_s,") || strings.Contains(key, "node.*") && !strings.Contains(s.Body, "node.3.") {
				t.Errorf("%s: no CSV with a column of node 3:\n%s", key, tail(s.Body, 4000))
			} else {
				t.Logf("%s: ok in the VM", key)
			}
		default:
			t.Logf("%s: ok in the VM", key)
		}
	}
}
