package procnuma

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/sysfs"
)

// Size limits of the files read: memory per input is bounded. numa_maps has
// one line of about 100 bytes per mapping, and a process has at most
// vm.max_map_count (65530 by default) of them: 64 MiB leaves room for a
// raised limit without letting a runaway file take the memory.
const (
	maxSmallFile    = 1 << 20
	maxNUMAMapsFile = 64 << 20
	maxThreads      = 1 << 16
)

// ErrGone is what a GoneError matches with errors.Is.
var ErrGone = errors.New("the process exited")

// GoneError says that the process (or, for a thread, the thread) exited
// while it was being read: the files vanished (ENOENT) or the kernel
// refused them for a dead task (ESRCH). Callers drop the process from
// their view; it is not a failure.
type GoneError struct {
	PID int
	Err error
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("process %d exited while it was read (%v)", e.PID, e.Err)
}

func (e *GoneError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrGone) true.
func (e *GoneError) Is(target error) bool { return target == ErrGone }

// Thread is one task of a process.
type Thread struct {
	TID   int
	Stat  Stat
	Sched Sched
	// SchedErr says why Sched could not be read (nil when it was; check
	// Sched.NUMA for whether it has NUMA statistics).
	SchedErr error
}

// Process is what Snapshot read of one process.
type Process struct {
	PID    int
	Stat   Stat
	Status Status
	// Sched is the thread-group leader's (see Sched); SchedErr why it
	// could not be read (a kernel without /proc/PID/sched).
	Sched    Sched
	SchedErr error
	// Mappings are the lines of numa_maps, Memory their total per node.
	// MapsErr says why they could not be read: numa_maps needs the right to
	// ptrace the process (the same user, or root).
	Mappings []Mapping
	Memory   Totals
	MapsErr  error
	// Threads are the process's tasks, the leader included, in the order
	// of /proc/PID/task. A thread that exited while it was read is left out.
	Threads []Thread
	// Cgroup is the process's cgroup v2 path (relative to the cgroup2
	// mount), CgroupNUMA its memory.numa_stat; CgroupErr says why that
	// could not be read (no cgroup v2, the root cgroup, no memory
	// controller).
	Cgroup     string
	CgroupNUMA *CgroupNUMA
	CgroupErr  error
}

// Reader reads processes under one root, reusing its read buffer.
type Reader struct {
	fs      sysfs.FS
	proc    *beneath.Dir
	buf     []byte
	scratch Mapping
}

// NewReader returns a Reader of the processes under fs's proc directory.
func NewReader(fs sysfs.FS) *Reader { return &Reader{fs: fs} }

// Snapshot reads everything this package knows of one process and its
// threads under fs: stat, status, sched and numa_maps, each thread's stat
// and sched, and the process's cgroup's memory.numa_stat. The process's own
// stat and status must be readable; the other sources, which a kernel or a
// permission may withhold, leave an error in their field instead. A process
// that exits meanwhile gives a *GoneError.
func Snapshot(fs sysfs.FS, pid int) (*Process, error) {
	p := &Process{}
	r := NewReader(fs)
	defer r.Close()
	if err := r.Read(pid, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Read is Snapshot into p.
func (r *Reader) Read(pid int, p *Process) error {
	if pid <= 0 {
		return fmt.Errorf("pid %d: not a process ID", pid)
	}
	*p = Process{PID: pid}
	dir := strconv.Itoa(pid)
	data, err := r.read(pid, path.Join(dir, "stat"), maxSmallFile)
	if err != nil {
		return err
	}
	if err := ParseStat(data, &p.Stat); err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if data, err = r.read(pid, path.Join(dir, "status"), maxSmallFile); err != nil {
		return err
	}
	if err := ParseStatus(data, &p.Status); err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	p.SchedErr = r.readSched(pid, dir, &p.Sched)
	if isGone(p.SchedErr) {
		return p.SchedErr
	}
	p.MapsErr = r.readMaps(pid, dir, p)
	if isGone(p.MapsErr) {
		return p.MapsErr
	}
	if err := r.readThreads(pid, dir, p); err != nil {
		return err
	}
	p.CgroupErr = r.readCgroup(pid, dir, p)
	if isGone(p.CgroupErr) {
		return p.CgroupErr
	}
	return nil
}

func isGone(err error) bool { return errors.Is(err, ErrGone) }

// readSched reads dir/sched into s. A missing file while the process is
// still there is a kernel without it (before 6.15, /proc/PID/sched needs
// CONFIG_SCHED_DEBUG), not an exit.
func (r *Reader) readSched(pid int, dir string, s *Sched) error {
	data, err := r.readOptional(pid, dir, "sched", maxSmallFile,
		"a kernel before 6.15 built without CONFIG_SCHED_DEBUG has none, so no NUMA balancing statistics per task")
	if err != nil {
		return err
	}
	if err := ParseSched(data, s); err != nil {
		return fmt.Errorf("%s: %w", r.fs.Proc(dir, "sched"), err)
	}
	return nil
}

func (r *Reader) readMaps(pid int, dir string, p *Process) error {
	data, err := r.readOptional(pid, dir, "numa_maps", maxNUMAMapsFile, "the kernel is built without CONFIG_NUMA")
	if err != nil {
		return err
	}
	err = ParseNUMAMaps(data, &r.scratch, func(m *Mapping) error {
		p.Memory.Add(m)
		c := *m
		c.Policy, c.Path, c.Nodes, c.path = bytes.Clone(m.Policy), bytes.Clone(m.Path), slices.Clone(m.Nodes), nil
		p.Mappings = append(p.Mappings, c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", r.fs.Proc(dir, "numa_maps"), err)
	}
	return nil
}

func (r *Reader) readThreads(pid int, dir string, p *Process) error {
	taskDir := path.Join(dir, "task")
	f, err := beneath.Open(r.fs.Proc(), taskDir, unix.O_DIRECTORY)
	if err != nil {
		return r.explain(pid, err)
	}
	names, err := f.Readdirnames(maxThreads + 1)
	f.Close()
	if err != nil && err != io.EOF {
		return r.explain(pid, err)
	}
	if len(names) > maxThreads {
		return fmt.Errorf("%s: more than %d threads", r.fs.Proc(taskDir), maxThreads)
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil && tid > 0 {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	for _, tid := range tids {
		td := path.Join(taskDir, strconv.Itoa(tid))
		t := Thread{TID: tid}
		data, err := r.read(tid, path.Join(td, "stat"), maxSmallFile)
		if isGone(err) {
			continue // this thread exited; the others go on
		}
		if err != nil {
			return err
		}
		if err := ParseStat(data, &t.Stat); err != nil {
			return fmt.Errorf("thread %d of process %d: %w", tid, pid, err)
		}
		t.SchedErr = r.readSched(tid, td, &t.Sched)
		if isGone(t.SchedErr) {
			continue
		}
		p.Threads = append(p.Threads, t)
	}
	if len(p.Threads) == 0 {
		return &GoneError{PID: pid, Err: errors.New("no thread left")}
	}
	return nil
}

func (r *Reader) readCgroup(pid int, dir string, p *Process) error {
	data, err := r.read(pid, path.Join(dir, "cgroup"), maxSmallFile)
	if err != nil {
		return err
	}
	cg, ok, err := CgroupPath(data)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", r.fs.Proc(dir, "cgroup"), err)
	case !ok:
		return errors.New("the process is in no cgroup v2 hierarchy (a cgroup v1 machine): no memory.numa_stat")
	case len(cg) == 0:
		return errors.New("the process is in the root cgroup, which has no memory.numa_stat (the nodes' own meminfo covers it)")
	}
	p.Cgroup = string(cg)
	data, err = r.read(pid, path.Join(p.Cgroup, "memory.numa_stat"), maxSmallFile, r.fs.Sys("fs", "cgroup"))
	if err != nil {
		if isGone(err) {
			return fmt.Errorf("%s: missing: no cgroup2 mounted there, or the memory controller is not enabled for the cgroup", r.fs.Sys("fs", "cgroup", p.Cgroup, "memory.numa_stat"))
		}
		return err
	}
	p.CgroupNUMA = &CgroupNUMA{}
	if err := ParseCgroupNUMA(data, p.CgroupNUMA); err != nil {
		p.CgroupNUMA = nil
		return fmt.Errorf("%s: %w", r.fs.Sys("fs", "cgroup", p.Cgroup, "memory.numa_stat"), err)
	}
	return nil
}

// readOptional reads dir/name, a file the kernel may not have: missing
// while the task's stat is still there, it is absent from this kernel
// (why), not a task that exited.
func (r *Reader) readOptional(pid int, dir, name string, limit int, why string) ([]byte, error) {
	data, err := r.read(pid, path.Join(dir, name), limit)
	if isGone(err) && r.exists(path.Join(dir, "stat")) {
		return nil, fmt.Errorf("%s: no such file: %s", r.fs.Proc(dir, name), why)
	}
	return data, err
}

// exists reports whether name opens under the proc directory.
func (r *Reader) exists(name string) bool {
	// O_NONBLOCK: a FIFO in a --root tree must not block the open.
	f, err := beneath.Open(r.fs.Proc(), name, unix.O_NONBLOCK)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// read reads name beneath the proc directory (or beneath base), never
// through a symbolic link, into r.buf, refusing more than limit bytes. The
// data is valid until the next read.
//
// The proc directory is held open (Close releases it), and the file is
// read with raw system calls: a process table reads thousands of files a
// second, and each costs its open, one read and its close. A short read
// ends it for the files the kernel prints whole on the first read
// (single_open: stat, status, sched, cgroup); numa_maps, printed a mapping
// at a time, is read to its end.
func (r *Reader) read(pid int, name string, limit int, base ...string) ([]byte, error) {
	var dir *beneath.Dir
	if len(base) > 0 {
		d, err := beneath.OpenDir(base[0])
		if err != nil {
			return nil, r.explain(pid, err)
		}
		defer d.Close()
		dir = d
	} else {
		d, err := r.procDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	fd, err := dir.OpenFD(name, unix.O_NONBLOCK)
	if err != nil {
		return nil, r.explain(pid, err)
	}
	defer unix.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, 16<<10)
	}
	whole := limit <= maxSmallFile && path.Base(name) != "numa_maps"
	n := 0
	for {
		if n == len(r.buf) {
			if len(r.buf) > limit {
				return nil, fmt.Errorf("%s: larger than %d KiB, not a kernel file", path.Join(dir.Path(), name), limit>>10)
			}
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, r.explain(pid, fmt.Errorf("reading %s: %w", path.Join(dir.Path(), name), err))
		}
		n += m
		if m == 0 || (whole && n < len(r.buf)) {
			break
		}
	}
	if n > limit {
		return nil, fmt.Errorf("%s: larger than %d KiB, not a kernel file", path.Join(dir.Path(), name), limit>>10)
	}
	return r.buf[:n], nil
}

// Close releases the proc directory the Reader holds open.
func (r *Reader) Close() error {
	if r.proc == nil {
		return nil
	}
	err := r.proc.Close()
	r.proc = nil
	return err
}

// explain turns the errors of a task that exited into a *GoneError.
func (r *Reader) explain(pid int, err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return &GoneError{PID: pid, Err: err}
	}
	return err
}
