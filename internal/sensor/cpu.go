package sensor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/numascope/numascope/internal/sysfs"
)

func init() { Register("cpu", func(Options) Sensor { return &cpuSensor{} }) }

// userHZ is the unit of the times in /proc/stat: clock ticks of USER_HZ,
// which the kernel fixes at 100 per second for user space on every
// architecture it supports today (it converts from its internal HZ), so no
// sysconf(_SC_CLK_TCK) is needed. Alpha, with USER_HZ 1024, is the historic
// exception and is not supported.
const userHZ = 100

// cpuFields are the columns of a cpuN line of /proc/stat, in order. Older
// kernels print fewer (steal since 2.6.11, guest since 2.6.24, guest_nice
// since 2.6.33); missing ones read 0.
var cpuFields = [...]struct{ name, desc string }{
	{"user", "CPU time in user mode (includes guest)"},
	{"nice", "CPU time in user mode at a positive nice value (includes guest_nice)"},
	{"system", "CPU time in kernel mode"},
	{"idle", "CPU time idle"},
	{"iowait", "CPU time idle while I/O was outstanding (not reliable on multi-core; counts as idle)"},
	{"irq", "CPU time servicing hardware interrupts"},
	{"softirq", "CPU time servicing softirqs"},
	{"steal", "CPU time stolen by the hypervisor for other guests"},
	{"guest", "CPU time running a guest's virtual CPU (also counted in user)"},
	{"guest_nice", "CPU time running a niced guest's virtual CPU (also counted in nice)"},
}

const nCPUFields = len(cpuFields)

// ticksField is the index of the sensor's last event, "ticks": all the CPU
// time the kernel accounted, the sum of the fields that partition it (guest
// and guest_nice are already in user and nice). Every other event is a
// share of it (Event.ShareOf).
const ticksField = nCPUFields

// ticksParts are the fields whose sum is ticksField.
var ticksParts = [...]int{0, 1, 2, 3, 4, 5, 6, 7}

// cpuSensor reports CPU time from /proc/stat summed per NUMA node: one source
// per node that has CPUs online at Open, named by node ID. Each state (user,
// system, idle, ...) is a counter of USER_HZ ticks with unit "%" that is a
// share of the event "ticks", the sum of the states: the sampler shows
// 100*Δstate/Δticks, the share of the node's CPU time spent in that state in
// the interval (a summed column: of the machine's), which stays within 0-100%
// and sums to 100% over the states at every interval. Max (100 ticks/s times
// the node's online CPUs) is what "ticks" can reach per second.
//
// CPU hotplug: an offline CPU vanishes from /proc/stat. The sensor keeps every
// CPU's accumulated time and, while a CPU is missing, goes on counting its
// last values, so a node's sum never goes backwards (the CPU contributes a
// rate of 0). A CPU that appears after the first read contributes only what it
// accumulates from then on, so its history since boot does not show as one
// huge spike. Per CPU, a value that goes backwards (iowait can, on nohz
// kernels) is held until it passes its previous high. Max counts the CPUs
// online at Open and does not follow later hotplug: a node that lost CPUs
// shows less than 100% in total, one that gained CPUs can show more. Reopen
// the sensor to follow the new set.
//
// CPU-less nodes (memory-only: CXL, HBM, GPU memory) and nodes whose CPUs are
// all offline at Open are not sources: they have no CPU time and their Max
// would be 0. CPUs the topology does not place on a node are ignored.
type cpuSensor struct {
	path    string
	sources []string
	events  []Event
	srcCPUs [][]int // CPU IDs of each source
	nodeOf  []int   // CPU ID -> source index, -1 when not on a source
	size    int     // bytes of /proc/stat up to the end of the cpu lines at Open

	enabled  []int // field indexes, in Enable order
	maxField int   // highest enabled field index
	file     *preadFile
	primed   bool     // a read succeeded since Enable
	gen      uint32   // read generation, for present
	present  []uint32 // CPU ID -> generation in which it was last seen
	known    []bool   // CPU ID -> seen since Enable
	raw      []uint64 // CPU ID*nCPUFields+field -> value of this read
	last     []uint64 // ... highest raw value seen
	acc      []uint64 // ... accumulated value reported
}

func (c *cpuSensor) Name() string { return "cpu" }

func (c *cpuSensor) Open(env Env) error {
	c.Close()
	*c = cpuSensor{} // Open may be called again
	t := env.Topology
	if t == nil {
		return errors.New("cpu: no topology: discover the topology before opening sensors")
	}
	c.path = env.FS.Proc("stat")
	data, err := sysfs.ReadFile(c.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cpu: %s not found: /proc is not mounted (or the --root tree lacks proc/stat)", c.path)
		}
		return fmt.Errorf("cpu: cannot read %s: %v", c.path, err)
	}
	online, end := statCPUs(data)
	if len(online) == 0 {
		return fmt.Errorf("cpu: %s has no per-CPU lines (cpu0 ...): not a Linux /proc/stat", c.path)
	}
	c.size = end

	// CPU -> node from the topology: a CPU's own record wins over the node
	// lists, where (on buggy firmware) several nodes may claim one CPU.
	nodeID := map[int]int{}
	maxID := 0
	for _, nd := range t.Nodes {
		for _, cpu := range nd.CPUs {
			if _, dup := nodeID[cpu]; !dup {
				nodeID[cpu] = nd.ID
			}
		}
	}
	for _, cpu := range t.CPUs {
		nodeID[cpu.ID] = cpu.Node
	}
	for cpu := range nodeID {
		maxID = max(maxID, cpu)
	}
	onlineOn := map[int]int{} // node ID -> online CPUs
	for _, cpu := range online {
		if nd, ok := nodeID[cpu]; ok {
			onlineOn[nd]++
		}
	}
	srcOf := map[int]int{}
	var maxes []float64
	for _, nd := range t.Nodes {
		if onlineOn[nd.ID] == 0 {
			continue
		}
		srcOf[nd.ID] = len(c.sources)
		c.sources = append(c.sources, strconv.Itoa(nd.ID))
		maxes = append(maxes, float64(userHZ*onlineOn[nd.ID]))
	}
	if len(c.sources) == 0 {
		return fmt.Errorf("cpu: none of the %d CPUs in %s is on a node of the topology", len(online), c.path)
	}
	c.nodeOf = make([]int, maxID+1)
	c.srcCPUs = make([][]int, len(c.sources))
	for cpu := range c.nodeOf {
		c.nodeOf[cpu] = -1
		if nd, ok := nodeID[cpu]; ok {
			if s, ok := srcOf[nd]; ok {
				c.nodeOf[cpu] = s
				c.srcCPUs[s] = append(c.srcCPUs[s], cpu)
			}
		}
	}
	for _, f := range cpuFields {
		c.events = append(c.events, Event{Name: f.name, Desc: f.desc, Unit: "%", Kind: Counter,
			Max: append([]float64(nil), maxes...), ShareOf: "ticks"})
	}
	c.events = append(c.events, Event{Name: "ticks", Unit: "ticks", Kind: Counter, Max: maxes,
		Desc: "CPU time accounted, in USER_HZ ticks (100 a second per CPU): the sum of user, nice, system, idle, iowait, irq, softirq and steal, of which the other cpu events are shares"})
	n := len(c.nodeOf)
	c.present = make([]uint32, n)
	c.known = make([]bool, n)
	c.raw = make([]uint64, n*nCPUFields)
	c.last = make([]uint64, n*nCPUFields)
	c.acc = make([]uint64, n*nCPUFields)
	return nil
}

// statCPUs lists the CPU IDs of the cpuN lines of /proc/stat and returns the
// offset just past the last of them.
func statCPUs(data []byte) (cpus []int, end int) {
	for pos := 0; pos < len(data); {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			nl = len(data) - pos
		}
		line := data[pos : pos+nl]
		if !bytes.HasPrefix(line, []byte("cpu")) {
			break
		}
		pos += nl + 1
		end = min(pos, len(data))
		if id, ok := statCPUID(line); ok {
			cpus = append(cpus, id)
		}
	}
	return cpus, end
}

// statCPUID returns N of a "cpuN ..." line; ok is false for the "cpu " total.
func statCPUID(line []byte) (id int, ok bool) {
	i := 3
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		id = id*10 + int(line[i]-'0')
		if id > 1<<24 {
			return 0, false
		}
		i++
	}
	return id, i > 3 && (i == len(line) || line[i] == ' ')
}

// parseStatCPULine parses a "cpuN v1 v2 ..." line into vals (as many fields
// as vals holds; missing fields are 0). ok is false for the "cpu" total line
// and malformed IDs; bad is the index of a field that is not a number, or -1.
func parseStatCPULine(line []byte, vals []uint64) (id int, ok bool, bad int) {
	id, ok = statCPUID(line)
	if !ok {
		return 0, false, -1
	}
	pos := 3
	for pos < len(line) && line[pos] != ' ' {
		pos++
	}
	for f := range vals {
		for pos < len(line) && isSpace(line[pos]) {
			pos++
		}
		start := pos
		for pos < len(line) && !isSpace(line[pos]) {
			pos++
		}
		if start == pos {
			vals[f] = 0
			continue
		}
		v, good := parseUint(line[start:pos])
		if !good {
			return id, true, f
		}
		vals[f] = uint64(v)
	}
	return id, true, -1
}

func (c *cpuSensor) Sources() []string { return c.sources }
func (c *cpuSensor) Events() []Event   { return c.events }

func (c *cpuSensor) Enable(events []int) error {
	if err := checkEnable(events, len(c.events)); err != nil {
		return err
	}
	c.file.close()
	c.file = nil
	c.enabled = append(c.enabled[:0], events...)
	c.maxField = -1
	for _, e := range events {
		if e == ticksField {
			e = ticksParts[len(ticksParts)-1]
		}
		c.maxField = max(c.maxField, e)
	}
	c.primed = false
	clear(c.known)
	clear(c.acc)
	if len(events) == 0 {
		return nil
	}
	// Only the cpu lines are needed: read a prefix of /proc/stat that holds
	// them with room to grow, and skip copying the long intr line.
	f, err := openPread(c.path, c.size, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", c.path, err)
	}
	c.file = f
	return nil
}

// Read reads a prefix of /proc/stat that holds every cpu line, parses the
// lines into raw, and only then commits, so that a bad line leaves the
// state as it was.
func (c *cpuSensor) Read(dst []int64) error {
	if c.file == nil {
		return nil
	}
	c.gen++
	p := c.file
	for {
		n, err := p.pread(p.buf, 0)
		if err != nil {
			return err
		}
		done, err := c.parse(p.buf[:n], n == len(p.buf))
		if err != nil {
			return err
		}
		if done {
			break
		}
		if err := p.grow(); err != nil {
			return err
		}
	}
	// All lines parsed: commit.
	nf := c.maxField + 1
	for id, g := range c.present {
		if g != c.gen {
			continue
		}
		row := id * nCPUFields
		if !c.known[id] {
			c.known[id] = true
			for f := 0; f < nf; f++ {
				c.last[row+f] = c.raw[row+f]
				if !c.primed {
					c.acc[row+f] = c.raw[row+f]
				}
			}
			continue
		}
		for f := 0; f < nf; f++ {
			if r := c.raw[row+f]; r > c.last[row+f] {
				c.acc[row+f] += r - c.last[row+f]
				c.last[row+f] = r
			}
		}
	}
	c.primed = true
	ns := len(c.sources)
	for k, f := range c.enabled {
		for s, cpus := range c.srcCPUs {
			var sum uint64
			for _, id := range cpus {
				if f == ticksField {
					for _, p := range ticksParts {
						sum += c.acc[id*nCPUFields+p]
					}
					continue
				}
				sum += c.acc[id*nCPUFields+f]
			}
			dst[k*ns+s] = int64(sum)
		}
	}
	return nil
}

// parse parses the cpu lines at the start of data into raw and marks the
// CPUs seen as present. full says data filled the buffer, so that its end may
// cut a line: done is false when the cpu lines may go on past data.
func (c *cpuSensor) parse(data []byte, full bool) (done bool, err error) {
	nf := c.maxField + 1
	line := 0
	for pos := 0; pos < len(data); line++ {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			if full {
				// The line is cut. Past the cpu lines, that does not matter.
				rest := data[pos:]
				return len(rest) >= 3 && !bytes.HasPrefix(rest, []byte("cpu")), nil
			}
			nl = len(data) - pos
		}
		l := data[pos : pos+nl]
		pos += nl + 1
		if !bytes.HasPrefix(l, []byte("cpu")) {
			return true, nil // past the cpu lines
		}
		id, ok := statCPUID(l)
		if !ok || id >= len(c.nodeOf) || c.nodeOf[id] < 0 {
			continue
		}
		_, _, bad := parseStatCPULine(l, c.raw[id*nCPUFields:id*nCPUFields+nf])
		if bad >= 0 {
			return false, fmt.Errorf("%s line %d: %s time of cpu%d is not a number: %s",
				c.path, line+1, cpuFields[bad].name, id, strconv.Quote(truncate(string(l), 80)))
		}
		c.present[id] = c.gen
	}
	return !full, nil
}

// Files lists the files Read reads for the current Enable set.
func (c *cpuSensor) Files() []string {
	if c.file == nil {
		return nil
	}
	return []string{c.path}
}

func (c *cpuSensor) Close() error {
	err := c.file.close()
	c.file = nil
	return err
}
