package top

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/procnuma"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ: 100 on
// every architecture numascope builds for).
const userHZ = 100

// Options configure a Collector.
type Options struct {
	Sort   SortKey
	Filter string
	// Detailed is how many processes, the first in sort order, are read in
	// full each refresh: the nodes all their threads run on, the
	// preferred node, and (every MapsEvery) numa_maps. The others cost
	// one read of /proc/PID/stat each.
	Detailed int
	// MapsEvery is how often a detailed process's numa_maps is read again:
	// the kernel walks its page tables to print it.
	MapsEvery time.Duration
	// Cgroups groups the processes by cgroup (Frame.Cgroups): v2, or the
	// v1 memory hierarchy on a hybrid machine.
	Cgroups bool
	// CgroupDepth is how many levels below the root the cgroup rows go
	// (0: DefaultCgroupDepth); a deeper cgroup counts in its ancestor at
	// that depth.
	CgroupDepth int
	// Events is the kernel event source; nil leaves the fault and
	// migration rates to what /proc gives (Source says what is missing).
	Events EventSource
	// EventsMissing is why Events is nil (one line each), shown in
	// Source.Missing.
	EventsMissing []string
	// OpenEvents, when Events is nil, opens the event source at the first
	// Refresh (live opens nothing until its processes page is viewed).
	OpenEvents func() (EventSource, []string)
}

// Defaults of Options.
const (
	DefaultDetailed  = 20
	DefaultMapsEvery = 5 * time.Second
	// DefaultCgroupDepth reaches a Kubernetes container:
	// kubepods.slice/kubepods-burstable.slice/POD.slice/CONTAINER.scope.
	DefaultCgroupDepth = 4
	// MaxCgroupDepth bounds Options.CgroupDepth.
	MaxCgroupDepth = 32
	// maxDetailed bounds Options.Detailed: a refresh must stay cheap.
	maxDetailed = 500
	// maxFilter bounds the filter text a client may set.
	maxFilter = 256
)

// Collector reads the system's processes and nodes into Frames. It is safe
// for concurrent use: one Refresh or Detail runs at a time.
type Collector struct {
	mu   sync.Mutex
	fs   sysfs.FS
	opts Options
	rd   *procnuma.Reader
	topo *topology.Topology
	// cpuNode maps a CPU to its node (-1 unknown).
	cpuNode []int

	procs  map[int]*procState
	gen    uint64
	last   time.Time
	lastDT float64
	// prevBoot is the boot clock (CLOCK_BOOTTIME, in clock ticks, the unit
	// of stat's starttime) when the previous refresh began; bootNow when
	// this one did. A process that started at or after prevBoot was not
	// there to be read by the previous refresh: all its CPU time is this
	// interval's.
	prevBoot, bootNow uint64
	pids              []int
	running           []int // the frame's array of NodesRunning not yet given out (readProcess)
	tids              []int
	stat              procnuma.Stat
	sched             procnuma.Sched
	mapping           procnuma.Mapping
	totals            procnuma.Totals
	events            EventCounts
	lost              uint64
	users             map[uint32]string
	nodes             nodeReader
	cgroups           cgroupReader
	// held counts the stat files held open, at most maxHeld (half the
	// file descriptor limit): beyond it a process's stat is opened and
	// closed at each refresh.
	held, maxHeld int
}

// procState is what a refresh keeps of a process for the next one.
type procState struct {
	start   uint64 // stat's starttime: a reused PID is another process
	ticks   uint64 // utime+stime
	seen    uint64 // Collector.gen of the last refresh that saw it
	mem     map[string]uint64
	memCats *MemoryCategories
	memAt   time.Time
	// migrBy is each thread's numa_pages_migrated at migrAt (no events),
	// migrBoot the boot clock then (bootTicks); migrNext is the map the
	// next reading fills, swapped with it.
	migrBy, migrNext map[int]uint64
	migrAt           time.Time
	migrBoot         uint64
	hasMigr          bool
	threads          map[int]uint64 // tid → ticks, for the drill-down's CPU%
	thAt             time.Time
	thBoot           uint64 // the boot clock in ticks at thAt (bootTicks)
	user             string // the owner of /proc/PID, read once
	comm             string // the last comm read, kept while it is the same
	cgroup           string
	cgOK             bool
	// cpuacct is the process's path in cgroup v1's cpuacct hierarchy
	// (read with cgroup, on v1 only).
	cpuacct   string
	cpuacctOK bool
	cgRead    bool
	// stat is the process's stat file, held open between refreshes (nil
	// beyond Collector.maxHeld).
	stat *procnuma.StatFile
}

// NewCollector returns a Collector of the system under fs.
func NewCollector(fs sysfs.FS, opts Options) (*Collector, error) {
	topo, err := topology.Discover(fs)
	if err != nil {
		return nil, fmt.Errorf("reading the NUMA topology: %w", err)
	}
	if opts.Sort == "" {
		opts.Sort = SortRemote
	}
	if !slices.Contains(SortKeys, opts.Sort) {
		return nil, fmt.Errorf("unknown sort key %q (one of %s)", opts.Sort, sortKeyList())
	}
	if opts.Detailed == 0 {
		opts.Detailed = DefaultDetailed
	}
	if opts.Detailed < 0 || opts.Detailed > maxDetailed {
		return nil, fmt.Errorf("--detailed %d: must be 1 to %d", opts.Detailed, maxDetailed)
	}
	if opts.MapsEvery <= 0 {
		opts.MapsEvery = DefaultMapsEvery
	}
	if len(opts.Filter) > maxFilter {
		return nil, fmt.Errorf("filter longer than %d bytes", maxFilter)
	}
	c := &Collector{
		fs:    fs,
		opts:  opts,
		rd:    procnuma.NewReader(fs),
		topo:  topo,
		procs: map[int]*procState{},
		users: map[uint32]string{},
		events: EventCounts{
			Procs: map[int]*TaskEvents{}, Threads: map[int]*TaskEvents{},
			Nodes: map[int]*TaskEvents{}, Migrations: map[string]uint64{},
		},
	}
	for _, cpu := range topo.CPUs {
		for len(c.cpuNode) <= cpu.ID {
			c.cpuNode = append(c.cpuNode, -1)
		}
		c.cpuNode[cpu.ID] = cpu.Node
	}
	c.maxHeld = maxHeldStats()
	c.nodes.init(fs, topo)
	c.cgroups.init(fs)
	return c, nil
}

func sortKeyList() string {
	s := make([]string, len(SortKeys))
	for i, k := range SortKeys {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// ParseSortKey checks a sort key given by a user or a client.
func ParseSortKey(s string) (SortKey, error) {
	k := SortKey(s)
	if !slices.Contains(SortKeys, k) {
		return "", fmt.Errorf("unknown sort key %q (one of %s)", s, sortKeyList())
	}
	return k, nil
}

// SetSort implements Feed. An unknown key is ignored (ParseSortKey checks
// input first).
func (c *Collector) SetSort(k SortKey) {
	if !slices.Contains(SortKeys, k) {
		return
	}
	c.mu.Lock()
	c.opts.Sort = k
	c.mu.Unlock()
}

// SetFilter implements Feed; text beyond maxFilter bytes is cut.
func (c *Collector) SetFilter(f string) {
	if len(f) > maxFilter {
		f = f[:maxFilter]
	}
	c.mu.Lock()
	c.opts.Filter = f
	c.mu.Unlock()
}

// Close stops the event source and releases the proc directory.
func (c *Collector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.procs {
		c.dropStat(st)
	}
	err := c.rd.Close()
	if c.opts.Events != nil {
		if e := c.opts.Events.Close(); e != nil {
			err = e
		}
	}
	return err
}

// nodeOf is the node of cpu, -1 when unknown.
func (c *Collector) nodeOf(cpu int) int {
	if cpu < 0 || cpu >= len(c.cpuNode) {
		return -1
	}
	return c.cpuNode[cpu]
}

// Refresh implements Feed: it reads every process and node now.
func (c *Collector) Refresh() (*Frame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	dt := 0.0
	if !c.last.IsZero() {
		dt = now.Sub(c.last).Seconds()
	}
	c.last, c.lastDT = now, dt
	c.prevBoot, c.bootNow = c.bootNow, bootTicks()
	c.gen++
	f := &Frame{Time: now, Interval: dt}

	c.events.Reset()
	if c.opts.Events == nil && c.opts.OpenEvents != nil {
		var missing []string
		c.opts.Events, missing = c.opts.OpenEvents()
		c.opts.EventsMissing = append(c.opts.EventsMissing, missing...)
		c.opts.OpenEvents = nil
	}
	if c.opts.Events != nil {
		c.opts.Events.Collect(&c.events)
		c.lost += c.events.Lost
	}
	f.Source = c.source()

	var err error
	c.pids, err = c.rd.PIDs(c.pids)
	if err != nil {
		return nil, fmt.Errorf("listing the processes in %s: %w", c.fs.Proc(), err)
	}
	f.Processes = make([]Process, 0, len(c.pids))
	// Each process's node, from one array a frame (not one per process).
	c.running = make([]int, len(c.pids))
	for _, pid := range c.pids {
		p, ok := c.readProcess(pid, dt)
		if ok && c.matches(&p) {
			f.Processes = append(f.Processes, p)
		}
	}
	for pid, st := range c.procs {
		if st.seen != c.gen {
			c.dropStat(st)
			delete(c.procs, pid)
		}
	}
	if c.opts.Cgroups {
		// Right after the walk, before the numa_maps reads: a new row's
		// first CPU% is its processes' sum and the next ones come from its
		// cpu.stat, so what runs between the processes' reads and the first
		// read of cpu.stat counts in neither.
		f.Cgroups = c.cgroups.group(c, f.Processes)
	}
	// The key really used: the one asked for, unless no process has that
	// figure. The detailed slots go to the first processes in that order
	// (on the first frame, without rates: those that hold the most
	// memory), kernel threads never: they have no memory map to read.
	f.Sort, f.SortNote = ResolveSort(f.Processes, c.opts.Sort)
	SortProcesses(f.Processes, f.Sort)
	last := 0
	for i, n := 0, 0; i < len(f.Processes) && n < c.opts.Detailed; i++ {
		if f.Processes[i].KernelThread {
			continue
		}
		c.detail(&f.Processes[i], now, dt)
		n++
		last = i + 1
	}
	if f.Sort == SortMemory || f.Sort == SortMigrated {
		// The detailed reads refined these figures: keep the order true.
		SortProcesses(f.Processes[:last], f.Sort)
	}
	f.Nodes = c.nodes.read(dt, &c.events)
	f.System, f.SystemPagesMigrated = c.nodes.system()
	f.Source.Missing = append(f.Source.Missing, c.nodes.refused...)
	if c.opts.Events != nil {
		if _, migr, _, _ := c.opts.Events.Sources(); migr != "" {
			f.Migrations = make(map[string]float64, len(c.events.Migrations))
			for r, n := range c.events.Migrations {
				f.Migrations[r] = rate(n, dt)
			}
		}
	}
	if c.opts.Cgroups {
		sortCgroups(f.Cgroups, c.opts.Sort)
		f.Source.Missing = append(f.Source.Missing, c.cgroups.missing(f.Cgroups)...)
	}
	return f, nil
}

// source fills Frame.Source.
func (c *Collector) source() Source {
	s := Source{Lost: c.lost}
	s.Missing = append(s.Missing, c.opts.EventsMissing...)
	if c.opts.Events != nil {
		var missing []string
		s.Faults, s.Migrations, s.PMU, missing = c.opts.Events.Sources()
		s.Missing = append(s.Missing, missing...)
	}
	if s.Faults == "" {
		s.Missing = append(s.Missing, fmt.Sprintf("pages migrated per process and REM%% (marked ~: the remote share of the NUMA balancer's recent, decayed faults, no rate): read from the threads' /proc/PID/task/TID/sched for the first %d processes only", c.opts.Detailed))
	}
	s.Memory = fmt.Sprintf("numa_maps of the first %d processes shown, every %s; the others show only their RSS",
		c.opts.Detailed, c.opts.MapsEvery)
	return s
}

// readStat reads process pid's stat into c.stat: through the file held in
// st when there is one, else through a file opened now, which is kept
// (returned) while fewer than maxHeld are held. A held file whose process
// exited is closed, and the PID read again, in case a new process took it.
func (c *Collector) readStat(pid int, st *procState) (*procnuma.StatFile, bool) {
	if st != nil && st.stat != nil {
		err := c.rd.ReadStatFile(st.stat, &c.stat)
		if err == nil {
			return st.stat, true
		}
		c.dropStat(st)
		if !errors.Is(err, procnuma.ErrGone) {
			return nil, false
		}
	}
	if c.held >= c.maxHeld {
		return nil, c.rd.ReadStat(pid, 0, &c.stat) == nil
	}
	f, err := c.rd.OpenStat(pid)
	if err != nil {
		return nil, false
	}
	if err := c.rd.ReadStatFile(f, &c.stat); err != nil {
		f.Close()
		return nil, false
	}
	c.held++
	return f, true
}

// dropStat closes the stat file held in st, if any.
func (c *Collector) dropStat(st *procState) {
	if st.stat != nil {
		st.stat.Close()
		st.stat = nil
		c.held--
	}
}

// maxHeldStats is how many stat files a Collector holds open: half the
// soft limit on file descriptors (which Go raises to the hard limit at
// start), at most 1<<16.
func maxHeldStats() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(rl.Cur/2, 1<<16))
}

// matches applies the filter: a substring of the command, or the PID.
func (c *Collector) matches(p *Process) bool {
	f := c.opts.Filter
	if f == "" {
		return true
	}
	if strconv.Itoa(p.PID) == f {
		return true
	}
	return strings.Contains(strings.ToLower(p.Comm), strings.ToLower(f))
}

// bootTicks is the boot clock in clock ticks (USER_HZ), the clock of
// /proc/PID/stat's starttime (boot-based since Linux 5.5; before it the
// monotonic clock, which differs only by time spent suspended). 0 if it
// cannot be read, which makes no process new.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Sec)*userHZ + uint64(ts.Nsec)/(1e9/userHZ)
}

// bornSince says whether a task that started at start (clock ticks after
// boot) started at or after the boot clock read at since: both are
// truncated to a tick, so a task of the same tick counts as new. A
// since of 0 (unknown) makes no task new.
func bornSince(start, since uint64) bool {
	return since > 0 && start >= since
}

// readProcess reads one process's stat: the cheap part every process pays.
func (c *Collector) readProcess(pid int, dt float64) (Process, bool) {
	st := c.procs[pid]
	f, ok := c.readStat(pid, st)
	if !ok {
		return Process{}, false // exited, or unreadable: not a row
	}
	s := &c.stat
	ticks := s.UTime + s.STime
	if st == nil || st.start != s.StartTime {
		if st != nil {
			c.dropStat(st) // the PID's earlier process
		}
		st = &procState{start: s.StartTime, ticks: ticks, user: c.user(pid)}
		if dt > 0 && bornSince(s.StartTime, c.prevBoot) {
			// Started within the interval: every tick it has is the
			// interval's (a build's short jobs would otherwise never show).
			st.ticks = 0
		}
		c.procs[pid] = st
	}
	if f != nil && st.stat == nil {
		st.stat = f
	}
	if string(s.Comm) != st.comm {
		st.comm = string(s.Comm)
	}
	p := Process{
		PID:           pid,
		Comm:          st.comm,
		KernelThread:  s.Flags&procnuma.PFKThread != 0,
		Threads:       s.Threads,
		RSSBytes:      s.RSSPages * uint64(os.Getpagesize()),
		PreferredNode: -1,
		NodesRunning:  []int{},
	}
	if dt > 0 && ticks >= st.ticks {
		p.CPUPercent = float64(ticks-st.ticks) * 100 / userHZ / dt
	}
	st.ticks, st.seen = ticks, c.gen
	if n := c.nodeOf(s.Processor); n >= 0 && len(c.running) > 0 {
		// One node, in the frame's array: a slice of capacity 1, so that
		// detail's appends of more nodes copy it elsewhere.
		c.running[0] = n
		p.NodesRunning, c.running = c.running[:1:1], c.running[1:]
	}
	p.User = st.user
	if c.opts.Events != nil {
		if faults, _, pmu, _ := c.opts.Events.Sources(); faults != "" {
			e := c.events.Procs[pid]
			if e == nil {
				e = &TaskEvents{}
			}
			p.NUMAFaults = &Faults{Local: rate(e.LocalFaults, dt), Remote: rate(e.RemoteFaults, dt)}
			m := rate(e.MigratedPages, dt)
			p.PagesMigrated = &m
			if pmu != "" {
				p.PMU = &Faults{Local: rate(e.PMULocal, dt), Remote: rate(e.PMURemote, dt)}
			}
		}
	}
	if st.mem != nil {
		p.MemoryByNode, p.MemoryByCategory = st.mem, st.memCats
	}
	return p, true
}

// user names the owner of /proc/PID (its uid as text when the name is
// unknown, or when reading a captured tree).
func (c *Collector) user(pid int) string {
	var st syscall.Stat_t
	if err := syscall.Lstat(c.fs.Proc(strconv.Itoa(pid)), &st); err != nil {
		return ""
	}
	if name, ok := c.users[st.Uid]; ok {
		return name
	}
	name := strconv.FormatUint(uint64(st.Uid), 10)
	if c.fs.Live() {
		if u, err := user.LookupId(name); err == nil {
			name = u.Username
		}
	}
	if len(c.users) < 4096 {
		c.users[st.Uid] = name
	}
	return name
}

// detail reads the costlier figures of a process shown near the top.
func (c *Collector) detail(p *Process, now time.Time, dt float64) {
	st := c.procs[p.PID]
	if st == nil {
		return
	}
	if err := c.rd.ReadSched(p.PID, 0, &c.sched); err == nil && c.sched.NUMA {
		p.PreferredNode = c.sched.PreferredNode
	}
	var err error
	c.tids, err = c.rd.Tasks(p.PID, c.tids)
	if err != nil {
		return
	}
	running := p.NodesRunning[:0]
	var migr, recentLocal, recentRemote uint64
	migrOK := p.PagesMigrated == nil
	if migrOK {
		if st.migrNext == nil {
			st.migrNext = map[int]uint64{}
		}
		clear(st.migrNext)
	}
	for _, tid := range c.tids {
		if err := c.rd.ReadStat(p.PID, tid, &c.stat); err != nil {
			continue
		}
		node := c.nodeOf(c.stat.Processor)
		if node >= 0 && !slices.Contains(running, node) {
			running = append(running, node)
		}
		if migrOK {
			if err := c.rd.ReadSched(p.PID, tid, &c.sched); err == nil && c.sched.NUMA {
				v := c.sched.PagesMigrated
				if old, ok := st.migrBy[tid]; ok {
					if v >= old {
						migr += v - old
					}
				} else if st.hasMigr && bornSince(c.stat.StartTime, st.migrBoot) {
					migr += v // a thread started since: all of its count is the interval's
				}
				st.migrNext[tid] = v
				if p.NUMAFaults == nil {
					l, r := recentFaults(&c.sched, node)
					recentLocal += l
					recentRemote += r
				}
			} else {
				migrOK = false
			}
		}
	}
	if migrOK && recentLocal+recentRemote > 0 {
		share := float64(recentRemote) / float64(recentLocal+recentRemote)
		p.RecentRemoteShare = &share
	}
	slices.Sort(running)
	p.NodesRunning = running
	if migrOK && p.PagesMigrated == nil {
		// Without an event source: the sum of each thread's increase of
		// its cumulative count since the last reading. Not the increase
		// of the threads' sum: a thread that exited takes its whole count
		// out of the sum, which then understates the interval or falls.
		// What an exited thread migrated since the last reading is lost.
		if st.hasMigr && dt > 0 {
			r := float64(migr) / now.Sub(st.migrAt).Seconds()
			p.PagesMigrated = &r
		}
		st.migrBy, st.migrNext = st.migrNext, st.migrBy
		st.migrAt, st.migrBoot, st.hasMigr = now, c.bootNow, true
	}
	if st.mem == nil || now.Sub(st.memAt) >= c.opts.MapsEvery {
		if mem, cats, err := c.memory(p.PID); err == nil {
			st.mem, st.memCats, st.memAt = mem, cats, now
		} else {
			p.MemoryError = err.Error()
		}
	}
	if st.mem != nil {
		p.MemoryByNode, p.MemoryByCategory = st.mem, st.memCats
		p.MemoryAge = now.Sub(st.memAt).Seconds()
	}
}

// recentFaults splits a thread's decayed hinting faults (its own, private
// and shared, by the node of the memory) into those on the node it runs on
// (sched's current_node, else node) and those elsewhere.
func recentFaults(s *procnuma.Sched, node int) (local, remote uint64) {
	if s.CurrentNode >= 0 {
		node = s.CurrentNode
	}
	for _, f := range s.Faults {
		if f.Node == node {
			local += f.TaskPrivate + f.TaskShared
		} else {
			remote += f.TaskPrivate + f.TaskShared
		}
	}
	return local, remote
}

// memory sums numa_maps per node, in all and by numastat's categories.
// The totals are the Collector's, reused from process to process.
func (c *Collector) memory(pid int) (map[string]uint64, *MemoryCategories, error) {
	c.totals.Reset()
	err := c.rd.ReadNUMAMaps(pid, func(m *procnuma.Mapping) error {
		c.totals.Add(m)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	mem, cats := memoryMaps(&c.totals)
	return mem, cats, nil
}

// rate is n per second over dt (0 for the first frame).
func rate(n uint64, dt float64) float64 {
	if dt <= 0 {
		return 0
	}
	return float64(n) / dt
}

// errGone is returned by Detail for a process that is not there.
var errGone = errors.New("no such process")
