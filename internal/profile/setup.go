package profile

// Setting up a run, before the program exists, in the order each part
// needs the one before: the options checked, the kernel interface and the
// analyzer over it, and the profile begun. Run then builds the command and
// starts it (start.go), stopped before its first instruction while the
// profiler attaches to it. Run calls setUp and nothing else of the set-up,
// so that the set-up reads in one place, in order.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/numascope/numascope/internal/perfring"
	"github.com/numascope/numascope/internal/topology"
)

// profiler is the rest of what setUp and attach (start.go) build for Run, beside the
// analyzer: the kernel interface, the profile begun (its head and notes),
// and, once attached, the perf rings and the capture.
type profiler struct {
	kern *procKernel
	p    *Profile
	// cpus are the CPUs sampled, each with a ring; stackCopy is the
	// user-stack copy of each page-fault sample, in bytes.
	cpus      []int
	stackCopy int
	ps        *perfSession
	// capture is nil unless Options.Capture asked for one.
	capture *perfring.CaptureWriter
}

// setUp checks Run's options and builds the kernel interface and the
// analyzer over it, for the machine. The caller closes pr.kern.
func setUp(opt Options, args []string) (*analyzer, *profiler, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("no command to profile")
	}
	topo := opt.Topology
	if topo == nil {
		return nil, nil, errors.New("profile: no topology")
	}
	procRoot := opt.ProcRoot
	if procRoot == "" {
		procRoot = "/proc"
	}
	stackCopy := opt.StackCopy
	switch {
	case stackCopy == 0:
		stackCopy = DefaultStackCopy
	case stackCopy < 0:
		stackCopy = 0
	}
	if err := CheckStackCopy(stackCopy); err != nil {
		return nil, nil, fmt.Errorf("stack copy of %w", err)
	}
	cpuNode, cpus := cpuNodes(topo)
	pageNodes, threadNodes := []int{}, []int{-1}
	for _, n := range topo.Nodes {
		pageNodes = append(pageNodes, n.ID)
		if len(n.CPUs) > 0 {
			threadNodes = append(threadNodes, n.ID)
		}
	}
	p := &Profile{Host: opt.Host, Rank: opt.Rank, Command: args, Nodes: pageNodes}
	var hinting bool
	p.NUMABalancing, hinting, p.Notes = balancingNotes(procRoot, topo)
	thpOff := thpDisabled("/sys")
	kern := newProcKernel(procRoot, "/sys", uint64(os.Getpagesize()))
	a := newAnalyzer(cpuNode, pageNodes, threadNodes)
	a.setKernel(kern)
	a.hinting = hinting
	a.thp.disable(thpOff)
	return a, &profiler{kern: kern, p: p, cpus: cpus, stackCopy: stackCopy}, nil
}

// CheckStackCopy says whether n bytes is a stack copy numascope asks the
// kernel for: a multiple of 8 from 0 (none) to MaxStackCopy.
func CheckStackCopy(n int) error {
	if n < 0 || n > MaxStackCopy || n%8 != 0 {
		return fmt.Errorf("%d bytes: give a multiple of 8 from 0 (none) to %d", n, MaxStackCopy)
	}
	return nil
}

// cpuNodes maps CPU -> node and lists the online CPUs to sample on.
func cpuNodes(topo *topology.Topology) (cpuNode []int, cpus []int) {
	maxCPU := -1
	for _, c := range topo.CPUs {
		maxCPU = max(maxCPU, c.ID)
	}
	cpuNode = make([]int, maxCPU+1)
	for i := range cpuNode {
		cpuNode[i] = -1
	}
	for _, c := range topo.CPUs {
		cpuNode[c.ID] = c.Node
		if c.Online {
			cpus = append(cpus, c.ID)
		}
	}
	return cpuNode, cpus
}

// balancingNotes says whether NUMA balancing is on, and whether a page
// fault can be a NUMA hinting fault (a sampled access): with more than one
// node, and balancing on or not known to be off.
func balancingNotes(procRoot string, topo *topology.Topology) (on, hinting bool, notes []string) {
	notes = []string{}
	b, err := os.ReadFile(procRoot + "/sys/kernel/numa_balancing")
	on = err == nil && strings.TrimSpace(string(b)) != "0"
	hinting = len(topo.Nodes) > 1 && (on || err != nil)
	switch {
	case len(topo.Nodes) < 2:
		notes = append(notes, "this machine has one NUMA node: there are no NUMA hinting faults, so no sampled accesses (local/remote); first touches are reported")
	case err != nil:
		notes = append(notes, "cannot read kernel.numa_balancing ("+err.Error()+"): sampled accesses depend on it")
	case !on:
		notes = append(notes, "automatic NUMA balancing is off (kernel.numa_balancing=0): no sampled accesses (local/remote), only first touches; enable it with sysctl kernel.numa_balancing=1")
	}
	return on, hinting, notes
}

// thpDisabled says whether THP is off on the live system under sysRoot.
func thpDisabled(sysRoot string) bool {
	b, err := os.ReadFile(sysRoot + "/kernel/mm/transparent_hugepage/enabled")
	return err == nil && strings.Contains(string(b), "[never]")
}
