package vmtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// regimeSpec is the experiment: the known-answer firsttouch workload
// under three placement regimes, 3 replications each, plus a warm-up run.
// Remote hinting faults are all hinting faults minus the local ones.
//
// Under serial first touch the workers compute until balancing has moved
// every page of theirs to their node ({until} = --until-local), not for a
// fixed 3 s: on a busy host the TCG guest's scanner and workers got through
// only 80% of the remote pages in 3 s (9788 remote hinting faults of 12288,
// issue 29). Once every page is local, each took at least one remote
// hinting fault: the count no longer hangs on the host's speed. The other
// regimes' pages are local from the start, or interleaved (balancing
// leaves those where they are): they compute for the 3 s.
const regimeSpec = `name = "regimes"
command = "firsttouch --{mode} {until} --mb 16 --settle 1 --seconds 3 --lead 0 --linger 0"
replications = 3
warmup = 1
seed = 6
interval = "200ms"
results = "/tmp/regimes.results.jsonl"
runs = "/tmp/regimes.runs"
responses = ["wall_time", "total:node.0.numa_hit", "total:vmstat.numa_hint_faults-vmstat.numa_hint_faults_local"]

[[regime]]
name = "serial-first-touch"
policy = "first-touch"
vars = { mode = "serial", until = "--until-local" }

[[regime]]
name = "parallel-first-touch"
policy = "first-touch"
vars = { mode = "parallel", until = "" }

[[regime]]
name = "interleave"
policy = "interleave"
vars = { mode = "serial", until = "" }
`

// analysisJSON is the part of `numascope experiment --format json` checked.
type analysisJSON struct {
	Measured  int `json:"measured"`
	Warmups   int `json:"warmups"`
	Responses []struct {
		Response string `json:"response"`
		Error    string `json:"error"`
		Anova    *struct {
			Terms []struct {
				Name             string   `json:"name"`
				P                *float64 `json:"p"`
				PercentVariation float64  `json:"percent_variation"`
				Significant      bool     `json:"significant"`
				Verdict          string   `json:"verdict"`
			} `json:"terms"`
			Error struct {
				PercentVariation float64 `json:"percent_variation"`
			} `json:"error"`
			Effects map[string]map[string]float64 `json:"effects"`
			Cells   []struct {
				Levels []string `json:"levels"`
				Mean   float64  `json:"mean"`
			} `json:"cells"`
		} `json:"anova"`
	} `json:"responses"`
	Comparisons []struct {
		Base    string   `json:"base"`
		Other   string   `json:"other"`
		Speedup *float64 `json:"speedup"`
		Events  []struct {
			Event  string   `json:"event"`
			Base   float64  `json:"base"`
			Other  float64  `json:"other"`
			Change *float64 `json:"change_percent"`
		} `json:"events"`
	} `json:"comparisons"`
	Distributions []struct {
		Regime string `json:"regime"`
		Event  string `json:"event"`
		Dist   struct {
			MaxNode  string  `json:"max_node"`
			MaxShare float64 `json:"max_share"`
			Outlier  bool    `json:"outlier"`
		} `json:"distribution"`
		OutlierRuns int `json:"outlier_runs"`
		Runs        int `json:"runs"`
	} `json:"distributions"`
}

// TestExperimentRegimes runs `numascope experiment` in a 4-node VM: the
// regime effect on node 0's allocations and on remote hinting faults must
// be significant, the replications must agree closely, and the per-node
// distribution must single out node 0 under serial first touch.
func TestExperimentRegimes(t *testing.T) {
	requireVM(t)
	spec := filepath.Join(t.TempDir(), "regimes.toml")
	if err := os.WriteFile(spec, []byte(regimeSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	// NUMA balancing scans every 100 ms from 100 ms after start instead of
	// 1 s: its hinting faults then come in numbers that do not hang on
	// whether a loaded machine let the VM reach its second scan.
	//
	// Transparent huge pages are off in this VM (the guest kernel's default
	// is "always"). The test counts every page that balancing migrates on
	// the whole machine, and one huge page migrates as 512 in
	// numa_pages_migrated. firsttouch opts out (PR_SET_THP_DISABLE), but
	// numascope's own Go heap does not: in one loaded run (issue 29) serial
	// first touch migrated 12 810 pages a run on average against the 12 288
	// of its buffers, 3 x 522 over three runs, one huge page each plus the
	// usual few, while its remote hinting faults were one a page. The
	// "thp" section counts huge page migrations over the whole experiment,
	// so that a failure of the bound below says whether it is this again.
	r := runVM(t, []string{"--nodes", "4", "--add", spec},
		"echo never > /sys/kernel/mm/transparent_hugepage/enabled\n"+
			"mount -t debugfs none /sys/kernel/debug 2>/dev/null; d=/sys/kernel/debug/sched/numa_balancing; "+
			"echo 100 > $d/scan_delay_ms; echo 100 > $d/scan_period_min_ms\n"+
			"sec balancing cat $d/scan_delay_ms $d/scan_period_min_ms /sys/kernel/mm/transparent_hugepage/enabled\n"+
			"sec experiment sh -c 'numascope experiment /data/regimes.toml --format json 2>/tmp/progress; r=$?; cat /tmp/progress >&2; exit $r'\n"+
			"sec thp grep ^thp_migration /proc/vmstat\n"+
			"sec report numascope experiment /data/regimes.toml --analyze\n")
	var a analysisJSON
	body := r.section(t, "experiment")
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("numascope experiment --format json: %v\n%s", err, tail(body, 3000))
	}
	t.Logf("report:\n%s", r.section(t, "report"))
	if b := strings.Fields(r.section(t, "balancing")); len(b) != 5 || b[0] != "100" || b[1] != "100" || b[4] != "[never]" {
		t.Errorf("NUMA balancing scan delay and period, and transparent huge pages: %v, want 100 ms, 100 ms and [never]", b)
	}
	if a.Measured != 9 || a.Warmups != 1 {
		t.Fatalf("%d measured runs and %d warm-up runs, want 9 and 1", a.Measured, a.Warmups)
	}
	cell := map[string]float64{} // "response/regime" -> cell mean
	regime := func(resp string) (p, pct, errPct float64, effects map[string]float64) {
		t.Helper()
		for _, ra := range a.Responses {
			if ra.Response != resp {
				continue
			}
			if ra.Anova == nil {
				t.Fatalf("%s: no analysis: %s", resp, ra.Error)
			}
			for _, c := range ra.Anova.Cells {
				cell[resp+"/"+c.Levels[0]] = c.Mean
			}
			for _, term := range ra.Anova.Terms {
				if term.Name == "regime" {
					t.Logf("%s: %s", resp, term.Verdict)
					if term.P == nil {
						t.Fatalf("%s: regime has no p-value", resp)
					}
					return *term.P, term.PercentVariation, ra.Anova.Error.PercentVariation, ra.Anova.Effects["regime"]
				}
			}
		}
		t.Fatalf("no analysis of %s", resp)
		return
	}
	// Node 0's allocations: all 4 buffers under serial first touch, one
	// under parallel first touch and under interleave.
	p, pct, errPct, eff := regime("total:node.0.numa_hit")
	if p > 0.001 || pct < 95 || errPct > 5 {
		t.Errorf("node 0 numa_hit: regime p = %.2g, %.1f%% of the variation, error %.1f%%: want p < 0.001, over 95%%, under 5%%", p, pct, errPct)
	}
	if !(eff["serial-first-touch"] > 0 && eff["parallel-first-touch"] < 0 && eff["interleave"] < 0) {
		t.Errorf("node 0 numa_hit effects %v: serial first touch must be above the mean, the others below", eff)
	}
	// The known answers: 4 buffers of 4096 pages on node 0, or one (plus
	// the workload's and the shell's own few hundred pages).
	const buf = 16 << 20 / pageSize
	within(t, "node 0 numa_hit, serial first touch", cell["total:node.0.numa_hit/serial-first-touch"], 4*buf, 4*buf+2000)
	within(t, "node 0 numa_hit, parallel first touch", cell["total:node.0.numa_hit/parallel-first-touch"], buf, buf+2000)
	within(t, "node 0 numa_hit, interleave", cell["total:node.0.numa_hit/interleave"], buf, buf+2000)
	// Remote hinting faults: serial first touch leaves 3 of 4 buffers
	// remote from their workers, parallel first touch none.
	p, pct, errPct, eff = regime("total:vmstat.numa_hint_faults-vmstat.numa_hint_faults_local")
	if p > 0.01 || pct < 80 {
		t.Errorf("remote hint faults: regime p = %.2g, %.1f%% of the variation (error %.1f%%): want p < 0.01 and over 80%%", p, pct, errPct)
	}
	if !(eff["serial-first-touch"] > eff["parallel-first-touch"]) {
		t.Errorf("remote hint faults effects %v: serial first touch must have more than parallel", eff)
	}
	// Serial first touch leaves 3 of the 4 buffers remote from their
	// workers: balancing's scans take a remote hinting fault on each of
	// their pages, and the workers compute until all are migrated
	// (--until-local). A hinting fault is the only way balancing migrates a
	// page, so at least one remote fault per page; at most two: the kernel
	// may decline a page's first fault (should_numa_migrate_memory: once the
	// task has been scanned more than 4 times and its threads share a NUMA
	// group, a shared fault moves a page only if the group's faults favour
	// the destination), but the fault records its CPU on the page, and the
	// worker's next fault there, from the same node, is a private one, which
	// always migrates. Under load that happens: a 4-busy-loop run (issue 29)
	// counted 13 642 on average over 3 runs; a kretprobe on
	// should_numa_migrate_memory in the same VM under six loops counted, in
	// one run of six, 4 082 declined and 12 308 allowed, remote faults
	// 16 377 = 12 296 migrated + 4 081 declined, pgmigrate_fail 0 (about
	// one buffer whose pages each took two faults); the other five runs
	// declined 1 to 4. So no over-count: the tight check is on the pages
	// migrated, below. Parallel first touch: next to none.
	within(t, "remote hint faults, serial first touch", cell["total:vmstat.numa_hint_faults-vmstat.numa_hint_faults_local/serial-first-touch"],
		3*buf, 2*3*buf)
	within(t, "remote hint faults, parallel first touch", cell["total:vmstat.numa_hint_faults-vmstat.numa_hint_faults_local/parallel-first-touch"],
		0, 0.02*3*buf)
	// The per-node distribution of allocations: node 0 is the outlier under
	// serial first touch (with over half of them: all 4 buffers, less what
	// NUMA balancing moved, which counts as allocations on the other
	// nodes), no node under parallel first touch (a quarter each).
	found := 0
	for _, d := range a.Distributions {
		if d.Event != "node.numa_hit" {
			continue
		}
		switch d.Regime {
		case "serial-first-touch":
			found++
			if d.Dist.MaxNode != "0" || !d.Dist.Outlier || d.Dist.MaxShare < 0.5 || d.OutlierRuns != d.Runs {
				t.Errorf("serial first touch: numa_hit distribution %+v", d)
			}
		case "parallel-first-touch":
			found++
			if d.Dist.Outlier || d.Dist.MaxShare > 0.4 {
				t.Errorf("parallel first touch: numa_hit distribution %+v", d)
			}
		}
	}
	if found != 2 {
		t.Errorf("numa_hit distributions for %d of the 2 first-touch regimes", found)
	}
	// Regime B vs regime A: parallel against serial first touch cuts the
	// pages that NUMA balancing migrates.
	ok := false
	for _, c := range a.Comparisons {
		if c.Base != "serial-first-touch" || c.Other != "parallel-first-touch" {
			continue
		}
		for _, e := range c.Events {
			if e.Event == "vmstat.numa_pages_migrated" {
				ok = true
				// Every page of the 3 remote buffers migrates once, whatever
				// the faults it took (a few more: the process's other pages).
				t.Logf("huge page migrations over the experiment:\n%s", r.section(t, "thp"))
				within(t, "pages migrated, serial first touch", e.Base, 3*buf, 1.02*3*buf)
				if e.Change == nil || *e.Change > -50 {
					t.Errorf("parallel vs serial first touch: numa_pages_migrated %v -> %v, want a cut of over 50%%", e.Base, e.Other)
				}
			}
		}
	}
	if !ok {
		t.Errorf("no parallel-vs-serial comparison of numa_pages_migrated")
	}
	if !strings.Contains(r.section(t, "report"), "parallel-first-touch vs serial-first-touch: speedup") {
		t.Errorf("the text report has no regime comparison")
	}
}
