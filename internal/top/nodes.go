package top

import (
	"bytes"
	"io"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// maxKVFile bounds the node and vmstat files read here.
const maxKVFile = 256 << 10

// nodeReader reads the node view: each node's meminfo, numastat and
// vmstat, the CPUs' times from /proc/stat, and /proc/vmstat's NUMA
// balancing counters.
type nodeReader struct {
	// refused lists the files skipped for not being regular files (a FIFO
	// in a --root tree), once each, for the frame's Source.Missing.
	refused []string
	fs      sysfs.FS
	topo    *topology.Topology
	buf     []byte
	counts  counters // "N/key" → a counter's last value and read
	// cpuBusy, cpuTotal are the last /proc/stat ticks of each CPU.
	cpuBusy, cpuTotal []uint64
}

func (r *nodeReader) init(fs sysfs.FS, topo *topology.Topology) {
	r.fs, r.topo = fs, topo
	r.counts.init()
}

// readFile reads name beneath dir, never through a symbolic link. The
// open does not block and what is not a regular file is skipped (a FIFO
// planted in a --root tree, sysfs.CheckRegular): one fstat per file per
// refresh, without allocating.
func (r *nodeReader) readFile(dir, name string) ([]byte, bool) {
	f, err := beneath.Open(dir, name, unix.O_NONBLOCK)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	// Fd makes the descriptor blocking again, harmless once it is known
	// to be a regular file, whose reads never wait.
	if err := sysfs.CheckRegular(int(f.Fd()), f.Name()); err != nil {
		if msg := err.Error(); !slices.Contains(r.refused, msg) {
			r.refused = append(r.refused, msg)
		}
		return nil, false
	}
	if r.buf == nil {
		r.buf = make([]byte, 0, 16<<10)
	}
	b := r.buf[:0]
	for len(b) <= maxKVFile {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return nil, false
		}
	}
	r.buf = b
	return b, len(b) <= maxKVFile
}

// eachKV calls fn with the last two fields of each line ("Node 0 MemFree:
// 123 kB" gives "MemFree" and 123×1024; "numa_hit 5" gives "numa_hit", 5).
func eachKV(data []byte, fn func(key []byte, v uint64)) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		f := bytes.Fields(line)
		mul := uint64(1)
		if len(f) >= 2 && string(f[len(f)-1]) == "kB" {
			f, mul = f[:len(f)-1], 1024
		}
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(string(f[len(f)-1]), 10, 64)
		if err != nil {
			continue
		}
		if k := bytes.TrimSuffix(f[len(f)-2], []byte(":")); len(k) > 0 {
			fn(k, v*mul)
		}
	}
}

// read returns the node view.
func (r *nodeReader) read(dt float64, ev *EventCounts) []Node {
	r.readCPUs()
	out := make([]Node, 0, len(r.topo.Nodes))
	for _, tn := range r.topo.Nodes {
		n := Node{Node: tn.ID, CPUs: tn.CPUs, MemTotal: tn.MemoryTotal, MemFree: tn.MemoryFree}
		id := strconv.Itoa(tn.ID)
		dir := r.fs.Sys("devices", "system", "node", "node"+id)
		if data, ok := r.readFile(dir, "meminfo"); ok {
			eachKV(data, func(k []byte, v uint64) {
				switch string(k) {
				case "MemTotal":
					n.MemTotal = v
				case "MemFree":
					n.MemFree = v
				case "MemUsed":
					n.MemUsed = v
				}
			})
		}
		if n.MemUsed == 0 && n.MemTotal >= n.MemFree {
			n.MemUsed = n.MemTotal - n.MemFree
		}
		if data, ok := r.readFile(dir, "numastat"); ok {
			at := r.counts.now()
			eachKV(data, func(k []byte, v uint64) {
				switch string(k) {
				case "numa_hit":
					n.NUMAHit = r.counts.rate(id+"/numa_hit", v, at)
				case "numa_miss":
					n.NUMAMiss = r.counts.rate(id+"/numa_miss", v, at)
				}
			})
		}
		if data, ok := r.readFile(dir, "vmstat"); ok {
			at := r.counts.now()
			var demoted uint64
			eachKV(data, func(k []byte, v uint64) {
				switch string(k) {
				case "pgpromote_success":
					n.Promoted = r.counts.rate(id+"/pgpromote_success", v, at)
				case "pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged", "pgdemote_proactive":
					demoted += v
				}
			})
			n.Demoted = r.counts.rate(id+"/pgdemote", demoted, at)
		}
		var busy, total uint64
		for _, cpu := range tn.CPUs {
			if cpu < len(r.cpuBusy) {
				busy += r.cpuBusy[cpu]
				total += r.cpuTotal[cpu]
			}
		}
		b, _ := r.counts.diff(id+"/cpu_busy", busy)
		if t, ok := r.counts.diff(id+"/cpu_total", total); ok && t > 0 {
			n.CPUPercent = 100 * float64(b) / float64(t)
		}
		if ev != nil && ev.Nodes != nil {
			if e := ev.Nodes[tn.ID]; e != nil {
				n.NUMAFaults = &Faults{Local: rate(e.LocalFaults, dt), Remote: rate(e.RemoteFaults, dt)}
				n.PagesMigrated = rate(e.MigratedPages, dt)
			} else {
				n.NUMAFaults = &Faults{}
			}
		}
		out = append(out, n)
	}
	return out
}

// readCPUs reads each CPU's busy and total ticks from /proc/stat.
func (r *nodeReader) readCPUs() {
	data, ok := r.readFile(r.fs.Proc(), "stat")
	if !ok {
		return
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !bytes.HasPrefix(line, []byte("cpu")) || len(line) < 4 || line[3] < '0' || line[3] > '9' {
			continue
		}
		f := bytes.Fields(line)
		cpu, err := strconv.Atoi(string(f[0][3:]))
		if err != nil || cpu < 0 || cpu > 1<<16 || len(f) < 5 {
			continue
		}
		var busy, total uint64
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(string(s), 10, 64)
			if err != nil || i >= 8 { // guest time is already in user
				continue
			}
			total += v
			if i != 3 && i != 4 { // idle, iowait
				busy += v
			}
		}
		for len(r.cpuBusy) <= cpu {
			r.cpuBusy, r.cpuTotal = append(r.cpuBusy, 0), append(r.cpuTotal, 0)
		}
		r.cpuBusy[cpu], r.cpuTotal[cpu] = busy, total
	}
}

// system reads /proc/vmstat's NUMA balancing counters as rates.
func (r *nodeReader) system() (*Faults, float64) {
	data, ok := r.readFile(r.fs.Proc(), "vmstat")
	if !ok {
		return nil, 0
	}
	at := r.counts.now()
	var faults, local, migrated uint64
	have := false
	eachKV(data, func(k []byte, v uint64) {
		switch string(k) {
		case "numa_hint_faults":
			faults, have = v, true
		case "numa_hint_faults_local":
			local = v
		case "numa_pages_migrated":
			migrated = v
		}
	})
	if !have {
		return nil, 0
	}
	remote := uint64(0)
	if faults >= local {
		remote = faults - local
	}
	f := &Faults{Local: r.counts.rate("vmstat/local", local, at), Remote: r.counts.rate("vmstat/remote", remote, at)}
	return f, r.counts.rate("vmstat/migrated", migrated, at)
}
