package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// serialInitProfile is what a serial-init, pinned-compute run on 4 nodes
// looks like: thread 100 on node 0 places every page at init.c:42, and the
// workers on nodes 1-3 then read them remotely at compute.c:10.
func serialInitProfile() *Profile {
	return &Profile{
		Command: []string{"./app"}, Nodes: []int{0, 1, 2, 3}, NUMABalancing: true, Samples: 5000,
		Totals: Metrics{FirstTouch: 4096, Local: 100, Remote: 900},
		AccessMatrix: Matrix{
			ThreadNodes: []int{-1, 0, 1, 2, 3}, PageNodes: []int{0, 1, 2, 3},
			Counts: [][]uint64{{0, 0, 0, 0}, {100, 0, 0, 0}, {300, 0, 0, 0}, {300, 0, 0, 0}, {300, 0, 0, 0}},
		},
		Locations: []Location{
			{Function: "compute", File: "compute.c", Line: 10, Metrics: Metrics{Local: 100, Remote: 900}},
			{Function: "init_buffer", File: "init.c", Line: 42, Metrics: Metrics{FirstTouch: 4096}},
		},
		Threads: []Thread{
			{TID: 100, Comm: "app", Nodes: []int{0}, Metrics: Metrics{FirstTouch: 4096, Local: 100}},
			{TID: 101, Comm: "app", Nodes: []int{1}, Metrics: Metrics{Remote: 300}},
			{TID: 102, Comm: "app", Nodes: []int{2}, Metrics: Metrics{Remote: 300}},
			{TID: 103, Comm: "app", Nodes: []int{3}, Metrics: Metrics{Remote: 300}},
		},
		Allocations: []Allocation{
			{Function: "main", File: "init.c", Line: 30, Kind: "mmap", Calls: 1, Bytes: 16 << 20, Metrics: Metrics{FirstTouch: 4096, Local: 100, Remote: 900}},
			{Function: "start", File: "main.c", Line: 5, Kind: "heap", Calls: 2, Bytes: 270336},
		},
	}
}

func TestHintsConnectRemoteAccessesToThePlacer(t *testing.T) {
	h := strings.Join(serialInitProfile().Hints(), "\n")
	for _, want := range []string{
		"100% of the remote accesses from pinned threads (nodes 1-3) went to pages on node 0",
		"100% of all pages were first-touched at init.c:42 (init_buffer) (the most by thread 100 on node 0)",
		"initialise the data in parallel",
		"the line with the most remote accesses is compute.c:10 (compute) (100% of them)",
		"100% of the remote accesses went to memory allocated at init.c:30 (main) [mmap] (1 calls, 16.0 MiB)",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("hints lack %q:\n%s", want, h)
		}
	}
}

func TestHintsStayQuietWhenLocal(t *testing.T) {
	p := serialInitProfile()
	p.Totals = Metrics{FirstTouch: 4096, Local: 1000, Remote: 10}
	if h := p.Hints(); len(h) != 0 {
		t.Errorf("a local profile got hints: %q", h)
	}
	p.Totals = Metrics{FirstTouch: 4096}
	if h := strings.Join(p.Hints(), "\n"); !strings.Contains(h, "no sampled accesses") {
		t.Errorf("a profile without accesses should say why: %q", h)
	}
	p.Totals = Metrics{FirstTouch: 100, Local: 100, Remote: 100, UnpinnedThread: 80, UnpinnedBoth: 20}
	if h := strings.Join(p.Hints(), "\n"); !strings.Contains(h, "50% of the sampled accesses come from unpinned threads") {
		t.Errorf("unpinned hint missing: %q", h)
	}
}

func TestWriteReportAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prof.json")
	b, _ := json.Marshal(serialInitProfile())
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.WriteReport(&out, 1); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// Compare lines by their fields, so that column padding does not matter.
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	flat := strings.Join(lines, "\n")
	for _, want := range []string{
		"Profile of ./app: exit status 0", "remote 900 90%", "Access matrix",
		"Top lines by remote accesses\ncount share location\n900 100% compute.c:10 (compute)",
		"Top lines by first touch (base pages placed)\ncount share location\n4096 100% init.c:42 (init_buffer)",
		"(3 more)", "Hints",
		"Top allocation sites (by remote accesses, then first touch)\nremote first touch bytes calls site\n900 4096 16.0 MiB 1 init.c:30 (main) [mmap]\n",
		// The matrix row of node 1 shows its remote reads of node 0.
		"\n1 300 0 0 0\n",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`{"type":"header"}`), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "not a numascope profile") {
		t.Errorf("Load of a non-profile: %v", err)
	}
}

// TestUnknownNodeInSummaryAndReport: a profile with sampled accesses of
// unknown node (handled after the exit) counts them in the stderr summary
// line's sampled accesses and names them there, and numascope report gives
// them a line of their own under the totals, so that local + remote + node
// unknown is every sampled access the file holds; a profile without any
// keeps the lines it had.
func TestUnknownNodeInSummaryAndReport(t *testing.T) {
	p, err := Load(capture)
	if err != nil {
		t.Fatal(err)
	}
	acc := p.Totals.Local + p.Totals.Remote
	if got, want := p.Summary("x.json"), fmt.Sprintf("%d sampled accesses (%d remote), ", acc, p.Totals.Remote); !strings.Contains(got, want) {
		t.Errorf("summary %q lacks %q", got, want)
	}
	var b strings.Builder
	if err := p.WriteReport(&b, 5); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "node unknown") {
		t.Errorf("report of a profile without accesses of unknown node names them:\n%s", b.String())
	}

	p.AccessesNodeUnknown = 9
	if got, want := p.Summary("x.json"), fmt.Sprintf("%d sampled accesses (%d remote, 9 of unknown node), ", acc+9, p.Totals.Remote); !strings.Contains(got, want) {
		t.Errorf("summary %q lacks %q", got, want)
	}
	b.Reset()
	if err := p.WriteReport(&b, 5); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{fmt.Sprintf(`\nsampled accesses +%d +\n`, acc+9), `\n  node unknown \(handled after the exit\) +9 +0%`} {
		if !regexp.MustCompile(re).MatchString(b.String()) {
			t.Errorf("report does not match %q:\n%s", re, b.String())
		}
	}
}
