// Command ntrace runs a command under a numatrace.Tracer in the NUMA VM
// (TestNUMATrace builds it and adds it to the VM): it opens the Tracer,
// starts the command, collects every interval until the command exits,
// closes the Tracer and prints, as one JSON object, the sources, the
// counts of the command's process and its threads, the machine's
// migrations by reason, and kprobe_events while open and after Close.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/numascope/numascope/internal/numatrace"
	"github.com/numascope/numascope/internal/sysfs"
)

type result struct {
	PID              int                               `json:"pid"`
	Sources          []numatrace.SourceStatus          `json:"sources"`
	Stale            []string                          `json:"stale"`
	Intervals        int                               `json:"intervals"`
	Proc             *numatrace.ProcCounts             `json:"proc"`
	Threads          map[int32]*numatrace.ThreadCounts `json:"threads"`
	Nodes            []numatrace.NodeCounts            `json:"nodes"`
	MigratedByReason map[string]uint64                 `json:"migrated_by_reason"`
	Samples          uint64                            `json:"samples"`
	Lost             uint64                            `json:"lost"`
	Malformed        uint64                            `json:"malformed"`
	ProbesOpen       string                            `json:"probes_open"`
	ProbesClosed     string                            `json:"probes_closed"`
	CloseError       string                            `json:"close_error"`
	CommandError     string                            `json:"command_error"`
}

func main() {
	interval := flag.Duration("interval", time.Second, "collect every")
	ringBytes := flag.Int("ring-bytes", 0, "each CPU's ring (0: numatrace's default)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: ntrace [-interval D] CMD [ARGS...]")
		os.Exit(2)
	}
	tr, err := numatrace.Open(sysfs.New(""), numatrace.Options{PMU: true, RingBytes: *ringBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ntrace:", err)
		os.Exit(1)
	}
	res := result{Sources: tr.Sources(), Stale: tr.Stale}
	res.ProbesOpen = readProbes()
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "ntrace:", err)
		os.Exit(1)
	}
	res.PID = cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	c := numatrace.NewCounts()
	tick := time.NewTicker(*interval)
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				res.CommandError = err.Error()
			}
			running = false
		case <-tick.C:
		}
		tr.Collect(c)
		res.Intervals++
	}
	// Once more: losses are confirmed by the Collect after the one that
	// first sees them.
	time.Sleep(100 * time.Millisecond)
	tr.Collect(c)
	if err := tr.Close(); err != nil {
		res.CloseError = err.Error()
	}
	res.ProbesClosed = readProbes()
	res.Proc = c.Procs[int32(res.PID)]
	res.Threads = map[int32]*numatrace.ThreadCounts{}
	for tid, th := range c.Threads {
		if th.TGID == int32(res.PID) {
			res.Threads[tid] = th
		}
	}
	res.Nodes, res.MigratedByReason = c.Nodes, c.MigratedByReason
	res.Samples, res.Lost, res.Malformed = c.Samples, c.Lost, c.Malformed
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "ntrace:", err)
		os.Exit(1)
	}
}

func readProbes() string {
	b, err := os.ReadFile("/sys/kernel/tracing/kprobe_events")
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}
