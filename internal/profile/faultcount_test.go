package profile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSamplesAreTheProcessFaults holds the profile's counts of faults to
// the kernel's own per-process fault counters, which share nothing with
// perf: testdata/faultcount.c, written apart from numascope, counts its
// faults with getrusage (minor + major) in two phases and in all. Phase 1
// writes to PAGES fresh pages (a first touch each); phase 2 reads PAGES
// more and then writes to them (two faults a page: the read maps the
// kernel's zero page, the write places the page); the whole process counts
// its start-up (the loader, the C library) too.
//
//   - samples + lost: the process's faults from exec to its last count,
//     within 64 either way. getrusage also counts faults taken in the
//     kernel (execve setting up the stack), which a user-space sampling
//     event does not see; the profile also sees faults after the last
//     count (the exit path's first run of its code).
//   - first touches: phase 1's faults and half of phase 2's (a page's first
//     fault), and the start-up's: at least those of the phases, at most all
//     faults but phase 2's second half, + 64.
//   - on a machine without NUMA hinting faults (one node, or balancing
//     off), repeat faults (with those after a loss): phase 2's second half,
//     within 64, and no sampled access at all.
//
// Measured on the build machine: 50 053 samples against the process's
// 50 051 faults (docs/fidelity.md, with the phases of today's version).
// Caught: a repeat fault also counted as a first touch.
func TestSamplesAreTheProcessFaults(t *testing.T) {
	const pages = 25000
	p, phase1, phase2, all := profileFaultcount(t, Options{}, pages, 1)
	t.Logf("getrusage: phase 1 %d, phase 2 %d, whole process %d faults; profile: %d samples, %d lost, %d first touches, %d repeat faults, %d after a loss, %d accesses",
		phase1, phase2, all, p.Samples, p.Lost, p.Totals.FirstTouch, p.RepeatFaults, p.FaultsAfterLoss, p.Totals.Accesses())
	if phase1 < pages/2 || phase2 < pages || phase2%2 != 0 {
		t.Fatalf("faultcount's phases took %d and %d faults for %d pages each (want one a page and two)", phase1, phase2, pages)
	}
	const slack = 64
	if got := p.Samples + p.Lost; got+slack < all || got > all+slack {
		t.Errorf("%d samples + %d lost = %d; the process counted %d faults of its own (bound %d either way)", p.Samples, p.Lost, got, all, slack)
	}
	if ft := p.Totals.FirstTouch; ft < phase1+phase2/2 || ft > all-phase2/2+slack {
		t.Errorf("%d first touches; the phases' first faults are %d, and all but phase 2's second faults %d (+%d)", ft, phase1+phase2/2, all-phase2/2, slack)
	}
	balancing, _ := os.ReadFile("/proc/sys/kernel/numa_balancing")
	if len(liveTopology(t).Nodes) > 1 && strings.TrimSpace(string(balancing)) != "0" {
		return // phase 2's faults may be hinting faults here
	}
	if r := p.RepeatFaults + p.FaultsAfterLoss; r+slack < phase2/2 || r > phase2/2+slack {
		t.Errorf("%d repeat faults and %d after a loss; phase 2 took %d second faults on its pages (bound %d either way)", p.RepeatFaults, p.FaultsAfterLoss, phase2/2, slack)
	}
	if a := p.Totals.Accesses(); a != 0 {
		t.Errorf("%d sampled accesses on a machine that takes no hinting faults", a)
	}
}

// TestLostRecordsAreTheProcessFaults: the same count under loss. Eight
// threads of faultcount fault at once into 16 KiB rings, which cannot hold
// what arrives between two drains, so the kernel drops records. What was
// sampled and what the profile says was lost must still add up to the
// process's own faults (getrusage, every thread): the kernel's
// PERF_RECORD_LOST counts, and at the end the events' own count of the
// faults that never arrived.
//
// Bounds: 64 below, as in TestSamplesAreTheProcessFaults; above, 64 and 8
// for each of the 16 threads started, since a lost record may have been a
// thread's FORK, COMM or EXIT record or an MMAP2 (its stack, each phase's
// pages) rather than a sample: `lost` counts records. Seen: -1 to +69,
// the most beside four busy loops under -race, with 55-85% of the records
// lost. Caught: PERF_RECORD_LOST counts 1% high (+628). Not exercised: the
// end-of-run count of records lost without a PERF_RECORD_LOST (every loss
// here was told by one: the test passes with that count left out).
func TestLostRecordsAreTheProcessFaults(t *testing.T) {
	p, _, _, all := profileFaultcount(t, Options{RingBytes: 16 << 10}, 40000, 8)
	t.Logf("getrusage: whole process %d faults; profile: %d samples, %d lost, %d first touches, %d repeat faults, %d after a loss; notes %q",
		all, p.Samples, p.Lost, p.Totals.FirstTouch, p.RepeatFaults, p.FaultsAfterLoss, p.Notes)
	if p.Lost == 0 {
		t.Fatalf("no record lost with 16 KiB rings and 8 threads faulting %d times: the test needs a loss to hold the count of it", all)
	}
	const below, above = 64, 64 + 8*16
	if got := p.Samples + p.Lost; got+below < all || got > all+above {
		t.Errorf("%d samples + %d lost = %d; the process counted %d faults of its own (bounds -%d, +%d)", p.Samples, p.Lost, got, all, below, above)
	}
}

// profileFaultcount profiles testdata/faultcount.c over pages pages a
// phase, in threads threads, and returns the profile and the faults the
// program counted: in phase 1, in phase 2 and in all.
func profileFaultcount(t *testing.T, opt Options, pages, threads int) (p *Profile, phase1, phase2, all uint64) {
	t.Helper()
	bin := buildC(t, filepath.Join("testdata", "faultcount.c"), false)
	out := filepath.Join(t.TempDir(), "faults.txt")
	p = runProfileWith(t, opt, bin, fmt.Sprint(pages), out, fmt.Sprint(threads))
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("faultcount wrote nothing: %v", err)
	}
	if n, err := fmt.Sscan(string(b), &phase1, &phase2, &all); n != 3 || err != nil {
		t.Fatalf("faultcount wrote %q: %v", b, err)
	}
	return p, phase1, phase2, all
}
