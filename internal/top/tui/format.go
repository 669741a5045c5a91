package tui

// How values are shown in the TUI's cells: sizes, rates, shares, nodes, and
// a dash for what is not known.

import (
	"slices"
	"strconv"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/top"
)

func bytes(v uint64) string { return term.Human(float64(v), "bytes") }

// rate is a per-second figure of frame f; "-" on the first frame, which
// has no interval to measure over.
func rate(f *top.Frame, v float64) string {
	if f.Interval == 0 {
		return "-"
	}
	return term.Human(v, "")
}

// optRate is rate for a figure that may have no source (nil: "-").
func optRate(f *top.Frame, v *float64) string {
	if v == nil {
		return "-"
	}
	return rate(f, *v)
}

func percent(f *top.Frame, v float64) string {
	if f.Interval == 0 {
		return "-"
	}
	return cpuPercent(v)
}

// threadCPU is a drill-down thread's CPU%: "-" where it is not measured
// yet (a rate needs two readings; the first is unknown, not 0).
func threadCPU(v *float64) string {
	if v == nil {
		return "-"
	}
	return cpuPercent(*v)
}

// cpuPercent is a CPU% in at most 5 characters: a process on 128 CPUs
// shows 12800.
func cpuPercent(v float64) string {
	if v >= 999.95 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return term.Human(v, "%")
}

// faults are the local and remote rates and the remote share; "-" for
// each where no source gives them (nil), or for the share when there were
// no faults to share.
func faults(f *top.Frame, x *top.Faults) (local, remote, share string) {
	if x == nil || f.Interval == 0 {
		return "-", "-", "-"
	}
	share = "-"
	if t := x.Local + x.Remote; t > 0 {
		share = term.Human(100*x.Remote/t, "%")
	}
	return term.Human(x.Local, ""), term.Human(x.Remote, ""), share
}

// node is a node number, "-" for none (-1).
func node(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// nodeList is a list of nodes or CPUs as ranges: "0-3,6"; "-" when empty.
func nodeList(ns []int) string {
	if len(ns) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ns))
	return sysfs.FormatCPUList(slices.Compact(s))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// orUnread is a rate that is -1 where its source lacks it.
func orUnread(f *top.Frame, v float64) string {
	if v < 0 {
		return "-"
	}
	return rate(f, v)
}
