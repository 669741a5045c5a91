package cli

import (
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sensor"
)

// TestEventsGroupsSharedReason: `numascope events` prints a reason shared
// by many unavailable events (no PMU in a VM, with its long fix) once for
// the group, then each event with its own description, instead of the same
// reason on every line.
func TestEventsGroupsSharedReason(t *testing.T) {
	noPMU := "no core PMU (a VM without a virtual PMU); fix: give the guest a PMU (QEMU/KVM: -cpu host,pmu=on)"
	noUncore := "no uncore_imc PMU; fix: run on the host"
	un := func(name, desc, reason string) sensor.Event {
		return sensor.Event{Name: name, Unit: "events", Unavailable: reason, Desc: "UNAVAILABLE: " + reason + " (" + desc + ")"}
	}
	evs := []sensor.Event{{Name: "page-faults", Unit: "faults", Desc: "page faults"}}
	for _, n := range []string{"cycles", "instructions", "cache-misses", "node-loads", "node-load-misses"} {
		evs = append(evs, un(n, n+" of the CPU", noPMU))
	}
	evs = append(evs, un("imc-reads", "DRAM reads", noUncore), un("branch-misses", "branch-misses of the CPU", noPMU))
	cat := &sampler.Catalog{Entries: []*sampler.Entry{{Name: "perf", Sources: []string{"0"}, Events: evs}}}
	var b strings.Builder
	if err := writeEventsText(&b, cat, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, noPMU); n != 1 {
		t.Errorf("the shared reason is printed %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "6 events unavailable: "+noPMU+"\n") || !strings.Contains(out, "1 event unavailable: "+noUncore+"\n") {
		t.Errorf("no group line with the count and reason:\n%s", out)
	}
	if strings.Contains(out, "UNAVAILABLE") {
		t.Errorf("an event line repeats its reason:\n%s", out)
	}
	for _, ev := range evs {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "perf."+ev.Name+" ") {
				line = l
			}
		}
		want := ev.Desc
		if ev.Unavailable != "" {
			want = strings.TrimPrefix(strings.TrimSuffix(ev.Desc, ")"), "UNAVAILABLE: "+ev.Unavailable+" (")
		}
		if line == "" || !strings.HasSuffix(line, "  "+want) || (ev.Unavailable != "") != strings.Contains(line, " unavailable ") {
			t.Errorf("perf.%s: line %q, want its description %q", ev.Name, line, want)
		}
	}
	// Each group's events follow its reason: branch-misses, listed after
	// imc-reads, is with the PMU group.
	if strings.Index(out, "perf.branch-misses") > strings.Index(out, noUncore) {
		t.Errorf("branch-misses is not with the other events of its reason:\n%s", out)
	}
}
