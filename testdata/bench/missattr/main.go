// Command missattr attributes a sampler's missed deadlines from a scheduler
// trace (internal/benchtest/misses), for scripts/bench-misses.
//
// Usage: missattr -pid PID -interval 100us TRACE
//
// It prints one line of key=value pairs: samples, missed, the missed
// deadlines by the cause that took most of their lateness (miss_CAUSE), the
// lateness spent on each cause in µs (us_CAUSE), the sampling delay's
// percentiles (p50, p99, p999, in µs) and the five tasks that held the
// sampler's CPU longest while it waited (holders, "comm:µs" joined by ",").
// Causes are spelled with "_" for spaces.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/numascope/numascope/internal/benchtest/misses"
)

func main() {
	pid := flag.Int("pid", 0, "the sampler's process id (its tgid in the trace)")
	interval := flag.Duration("interval", 100*time.Microsecond, "the sampling interval")
	flag.Parse()
	if *pid <= 0 || flag.NArg() != 1 || *interval < time.Microsecond {
		fmt.Fprintln(os.Stderr, "usage: missattr -pid PID -interval 100us TRACE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "missattr:", err)
		os.Exit(1)
	}
	defer f.Close()
	r, err := misses.Analyze(f, *pid, interval.Microseconds())
	if err != nil {
		fmt.Fprintln(os.Stderr, "missattr:", err)
		os.Exit(1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "samples=%d missed=%d", r.Samples, r.Missed)
	key := func(c misses.Cause) string {
		return strings.NewReplacer(" ", "_", ":", "", "-", "_").Replace(string(c))
	}
	for _, c := range misses.Causes {
		fmt.Fprintf(&b, " miss_%s=%d us_%s=%d", key(c), r.ByCause[c], key(c), r.TimeByCause[c])
	}
	fmt.Fprintf(&b, " p50=%d p99=%d p999=%d", r.Percentile(50), r.Percentile(99), r.Percentile(99.9))
	names := slices.SortedFunc(maps.Keys(r.Holders), func(a, c string) int {
		return int(r.Holders[c] - r.Holders[a])
	})
	var hs []string
	for _, n := range names[:min(5, len(names))] {
		hs = append(hs, fmt.Sprintf("%s:%d", strings.ReplaceAll(misses.Printable(n), " ", "_"), r.Holders[n]))
	}
	fmt.Fprintf(&b, " holders=%s", strings.Join(hs, ","))
	fmt.Println(b.String())
}
