package top

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/term"
)

// WriteJSON writes f as one line of JSON (the --format json stream: one
// frame per line).
func WriteJSON(w io.Writer, f *Frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteText writes f as top -b does: a header, the node view, then the
// first rows processes (all when rows <= 0), kernel threads left out, as
// plain text: every name from the kernel is sanitised (no escape sequence
// reaches the terminal). The JSON stream keeps the kernel threads, marked.
func WriteText(w io.Writer, f *Frame, rows int, cgroups bool) error {
	bw := bufio.NewWriter(w)
	procs, kthreads := WithoutKernelThreads(f.Processes)
	fmt.Fprintf(bw, "numascope top - %s, interval %.1fs, %s (%s not shown), sorted by %s\n",
		f.Time.Format("15:04:05"), f.Interval, term.Plural(len(procs), "process", "processes"),
		term.Plural(kthreads, "kernel thread", "kernel threads"), orDash(string(f.Sort)))
	if f.SortNote != "" {
		fmt.Fprintf(bw, "sort: %s\n", recording.SanitizeText(f.SortNote))
	}
	src := f.Source
	fmt.Fprintf(bw, "faults: %s; migrations: %s; memory: %s", orDash(src.Faults), orDash(src.Migrations), src.Memory)
	if src.PMU != "" {
		fmt.Fprintf(bw, "; PMU: %s", src.PMU)
	}
	if src.Lost > 0 {
		fmt.Fprintf(bw, "; %s lost (the rates of those intervals are low)", term.Plural(int(src.Lost), "kernel record", "kernel records"))
	}
	bw.WriteByte('\n')
	for _, m := range src.Missing {
		fmt.Fprintf(bw, "missing: %s\n", recording.SanitizeText(m))
	}
	if f.System != nil {
		fmt.Fprintf(bw, "system: NUMA faults %s local/s, %s remote/s, %s pages migrated/s\n",
			num(f.System.Local), num(f.System.Remote), num(f.SystemPagesMigrated))
	}
	if len(f.Migrations) > 0 {
		reasons := make([]string, 0, len(f.Migrations))
		for r := range f.Migrations {
			reasons = append(reasons, r)
		}
		slices.Sort(reasons)
		bw.WriteString("migrations/s by reason:")
		for _, r := range reasons {
			fmt.Fprintf(bw, " %s %s", recording.SanitizeText(r), num(f.Migrations[r]))
		}
		bw.WriteByte('\n')
	}
	bw.WriteByte('\n')
	fmt.Fprintf(bw, "%4s %7s %9s %9s %6s %10s %10s %10s %9s\n", "NODE", "CPU%", "USED", "FREE", "", "LOCAL/s", "REMOTE/s", "MIGR/s", "HIT/s")
	for _, n := range f.Nodes {
		loc, rem := "-", "-"
		if n.NUMAFaults != nil {
			loc, rem = num(n.NUMAFaults.Local), num(n.NUMAFaults.Remote)
		}
		fmt.Fprintf(bw, "%4d %7.1f %9s %9s %6s %10s %10s %10s %9s\n", n.Node, n.CPUPercent, bytesText(n.MemUsed), bytesText(n.MemFree), "",
			loc, rem, num(n.PagesMigrated), num(n.NUMAHit))
	}
	bw.WriteByte('\n')
	if cgroups {
		fmt.Fprintf(bw, "%5s %6s %10s %10s %-24s %s\n", "PROCS", "CPU%", "LOCAL/s", "REMOTE/s", "MEMORY/NODE", "CGROUP")
		for i, g := range f.Cgroups {
			if rows > 0 && i >= rows {
				break
			}
			loc, rem := "-", "-"
			if g.NUMAFaults != nil {
				loc, rem = num(g.NUMAFaults.Local), num(g.NUMAFaults.Remote)
			}
			fmt.Fprintf(bw, "%5d %6.1f %10s %10s %-24s %s\n", g.Processes, g.CPUPercent, loc, rem, memText(g.MemoryByNode), recording.SanitizeText(g.Path))
		}
	} else {
		fmt.Fprintf(bw, "%7s %-9s %6s %8s %-24s %-7s %4s %9s %9s %7s %7s %s\n",
			"PID", "USER", "CPU%", "RSS", "MEMORY/NODE", "RUN", "PREF", "LOCAL/s", "REMOTE/s", "REM%", "MIGR/s", "COMMAND")
		for i := range procs {
			if rows > 0 && i >= rows {
				break
			}
			p := &procs[i]
			loc, rem, share := "-", "-", p.ShareText()
			if p.NUMAFaults != nil {
				loc, rem = num(p.NUMAFaults.Local), num(p.NUMAFaults.Remote)
			}
			migr := "-"
			if p.PagesMigrated != nil {
				migr = num(*p.PagesMigrated)
			}
			pref := "-"
			if p.PreferredNode >= 0 {
				pref = strconv.Itoa(p.PreferredNode)
			}
			fmt.Fprintf(bw, "%7d %-9.9s %6.1f %8s %-24s %-7s %4s %9s %9s %7s %7s %s\n",
				p.PID, recording.SanitizeText(p.User), p.CPUPercent, bytesText(p.RSSBytes), memText(p.MemoryByNode),
				intsText(p.NodesRunning), pref, loc, rem, share, migr, recording.SanitizeText(p.Comm))
		}
	}
	bw.WriteByte('\n')
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// num writes a rate compactly.
func num(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v == float64(int64(v)):
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// bytesText writes a size in binary units.
func bytesText(b uint64) string {
	const units = "KMGTPE"
	if b < 1024 {
		return strconv.FormatUint(b, 10) + "B"
	}
	v, u := float64(b)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f%c", v, units[u])
	}
	return fmt.Sprintf("%.1f%c", v, units[u])
}

// memText writes memory per node as "0:1.2G 1:30M", "-" when unknown.
func memText(m map[string]uint64) string {
	if m == nil {
		return "-"
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		if n, err := strconv.Atoi(k); err == nil {
			keys = append(keys, n)
		}
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, n := range keys {
		parts = append(parts, strconv.Itoa(n)+":"+bytesText(m[strconv.Itoa(n)]))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

func intsText(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
