package top

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/numascope/numascope/internal/procnuma"
)

// maxAreas bounds the areas of a Detail: the largest are kept.
const maxAreas = 1000

// Detail implements Feed: it reads process pid in full now.
func (c *Collector) Detail(pid int) (*Detail, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: not a process ID", pid)
	}
	if err := c.rd.ReadStat(pid, 0, &c.stat); err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, errGone)
	}
	d := &Detail{PID: pid, Comm: string(c.stat.Comm), Threads: []Thread{}, Areas: []Area{}}
	now := time.Now()
	st := c.procs[pid]
	if st == nil {
		st = &procState{start: c.stat.StartTime}
	}
	var dt float64
	if !st.thAt.IsZero() {
		dt = now.Sub(st.thAt).Seconds()
	}
	old := st.threads
	prevBoot := st.thBoot
	st.threads, st.thAt, st.thBoot = map[int]uint64{}, now, bootTicks()

	var err error
	c.tids, err = c.rd.Tasks(pid, c.tids)
	if err != nil {
		return nil, fmt.Errorf("process %d: listing its threads: %w", pid, err)
	}
	faults := c.opts.Events != nil
	if faults {
		f, _, _, _ := c.opts.Events.Sources()
		faults = f != ""
	}
	var schedErr error
	for _, tid := range c.tids {
		if len(d.Threads) >= maxThreadsShown {
			d.Errors = append(d.Errors, fmt.Sprintf("only the first %d of %d threads are shown", maxThreadsShown, len(c.tids)))
			break
		}
		if err := c.rd.ReadStat(pid, tid, &c.stat); err != nil {
			continue
		}
		t := Thread{TID: tid, Comm: string(c.stat.Comm), CPU: c.stat.Processor, Node: c.nodeOf(c.stat.Processor), PreferredNode: -1}
		ticks := c.stat.UTime + c.stat.STime
		st.threads[tid] = ticks
		o, ok := old[tid]
		if !ok && dt > 0 && bornSince(c.stat.StartTime, prevBoot) {
			o, ok = 0, true // started since the last look: all its ticks are new
		}
		if ok && dt > 0 && ticks >= o {
			pc := float64(ticks-o) * 100 / userHZ / dt
			t.CPUPercent = &pc
		}
		if err := c.rd.ReadSched(pid, tid, &c.sched); err != nil {
			schedErr = err
		} else if c.sched.NUMA {
			t.PreferredNode = c.sched.PreferredNode
		}
		if faults {
			// The event source's counts of the last refresh interval.
			if e := c.events.Threads[tid]; e != nil {
				t.NUMAFaults = &Faults{Local: rate(e.LocalFaults, c.lastDT), Remote: rate(e.RemoteFaults, c.lastDT)}
			} else {
				t.NUMAFaults = &Faults{}
			}
		}
		d.Threads = append(d.Threads, t)
	}
	if schedErr != nil {
		d.Errors = append(d.Errors, "sched: "+schedErr.Error())
	}

	total := &c.totals
	total.Reset()
	err = c.rd.ReadNUMAMaps(pid, func(m *procnuma.Mapping) error {
		total.Add(m)
		if m.Bytes() == 0 {
			return nil
		}
		a := Area{Start: m.Address, Kind: m.Kind.String(), Policy: string(m.Policy), BytesByNode: map[string]uint64{}}
		if m.Kind == procnuma.KindFile {
			a.Path = string(m.Path)
		}
		if m.Huge {
			a.Kind = "huge"
		}
		for _, np := range m.Nodes {
			if np.Pages > 0 {
				a.BytesByNode[strconv.Itoa(np.Node)] += np.Pages * m.PageSize
			}
		}
		d.Areas = append(d.Areas, a)
		return nil
	})
	if err != nil {
		d.Errors = append(d.Errors, "numa_maps: "+err.Error())
	} else {
		d.MemoryByNode, d.MemoryByCategory = memoryMaps(total)
	}
	// The largest first: a 101 MiB anonymous area listed by address sat
	// among 4 KiB file mappings (issue 31). Ties by address.
	slices.SortStableFunc(d.Areas, func(a, b Area) int {
		return cmp.Or(cmp.Compare(sumBytes(b.BytesByNode), sumBytes(a.BytesByNode)), cmp.Compare(a.Start, b.Start))
	})
	if len(d.Areas) > maxAreas {
		d.Errors = append(d.Errors, fmt.Sprintf("only the %d largest of %d memory areas are shown", maxAreas, len(d.Areas)))
		d.Areas = d.Areas[:maxAreas]
	}
	d.Hint = hint(total.Bytes, d.Threads)
	return d, nil
}

// maxThreadsShown bounds the threads of a Detail.
const maxThreadsShown = 4096

// hint says in one sentence where the memory is against where the threads
// run, when most of it is on nodes none of its threads run on.
func hint(bytesByNode []uint64, threads []Thread) string {
	var sum uint64
	top := -1
	for n, b := range bytesByNode {
		sum += b
		if top < 0 || b > bytesByNode[top] {
			top = n
		}
	}
	if sum == 0 || top < 0 {
		return ""
	}
	var running []int
	for _, t := range threads {
		if t.Node >= 0 && !slices.Contains(running, t.Node) {
			running = append(running, t.Node)
		}
	}
	slices.Sort(running)
	share := 100 * float64(bytesByNode[top]) / float64(sum)
	switch {
	case len(running) == 0:
		return ""
	case share >= 50 && !slices.Contains(running, top):
		return fmt.Sprintf("%.0f%% of its memory is on node %d while its threads run on %s: bind the threads near it (numascope run --nodes %d) or let the memory follow them (first touch by the threads that use it, or interleave)",
			share, top, nodesText(running), top)
	case share >= 60 && len(running) > 1:
		var others []int
		for _, n := range running {
			if n != top {
				others = append(others, n)
			}
		}
		return fmt.Sprintf("%.0f%% of its memory is on node %d while its threads also run on %s: their accesses to it are remote (first-touch each part from the thread that uses it, or interleave)",
			share, top, nodesText(others))
	}
	return ""
}

// nodesText writes a set of nodes as "node 1" or "nodes 1-3" or "nodes 0,2".
func nodesText(nodes []int) string {
	if len(nodes) == 1 {
		return "node " + strconv.Itoa(nodes[0])
	}
	var parts []string
	for i := 0; i < len(nodes); {
		j := i
		for j+1 < len(nodes) && nodes[j+1] == nodes[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", nodes[i], nodes[j]))
		} else {
			parts = append(parts, strconv.Itoa(nodes[i]))
		}
		i = j + 1
	}
	return "nodes " + strings.Join(parts, ",")
}
