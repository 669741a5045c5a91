package procnuma

import (
	"io"
	"path"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
)

// The per-file readers below are for callers that refresh many processes
// often (numascope top): each reads one file, reusing the Reader's buffer,
// so a refresh reads only what it shows. Snapshot reads everything.

// taskDir is the proc directory of a process (tid 0) or of one of its
// threads.
func taskDir(pid, tid int) string {
	if tid == 0 {
		return strconv.Itoa(pid)
	}
	return path.Join(strconv.Itoa(pid), "task", strconv.Itoa(tid))
}

// ReadStat reads the stat file of process pid (tid 0) or of its thread
// tid into s. A task that exited gives a *GoneError.
func (r *Reader) ReadStat(pid, tid int, s *Stat) error {
	id := pid
	if tid != 0 {
		id = tid
	}
	data, err := r.read(id, path.Join(taskDir(pid, tid), "stat"), maxSmallFile)
	if err != nil {
		return err
	}
	return ParseStat(data, s)
}

// ReadStatus reads /proc/PID/status into s.
func (r *Reader) ReadStatus(pid int, s *Status) error {
	data, err := r.read(pid, path.Join(taskDir(pid, 0), "status"), maxSmallFile)
	if err != nil {
		return err
	}
	return ParseStatus(data, s)
}

// ReadSched reads the sched file of process pid's leader (tid 0) or of its
// thread tid into s. A kernel without the file gives an error that says so.
func (r *Reader) ReadSched(pid, tid int, s *Sched) error {
	id := pid
	if tid != 0 {
		id = tid
	}
	return r.readSched(id, taskDir(pid, tid), s)
}

// ReadNUMAMaps hands each line of /proc/PID/numa_maps to fn. The Mapping
// is reused: fn copies what it keeps.
func (r *Reader) ReadNUMAMaps(pid int, fn func(*Mapping) error) error {
	dir := taskDir(pid, 0)
	data, err := r.readOptional(pid, dir, "numa_maps", maxNUMAMapsFile, "the kernel is built without CONFIG_NUMA")
	if err != nil {
		return err
	}
	return ParseNUMAMaps(data, &r.scratch, fn)
}

// CgroupOf returns process pid's cgroup v2 path, relative to the cgroup2
// mount ("" for the root cgroup); ok is false on a machine without cgroup
// v2.
func (r *Reader) CgroupOf(pid int) (cg string, ok bool, err error) {
	data, err := r.read(pid, path.Join(taskDir(pid, 0), "cgroup"), maxSmallFile)
	if err != nil {
		return "", false, err
	}
	b, ok, err := CgroupPath(data)
	return string(b), ok, err
}

// ReadCgroupFile reads the file name of cgroup cg (a path relative to the
// cgroup2 mount, as CgroupOf gives) beneath /sys/fs/cgroup, never through
// a symbolic link. The data is valid until the Reader's next read.
func (r *Reader) ReadCgroupFile(cg, name string) ([]byte, error) {
	return r.read(0, path.Join(cg, name), maxSmallFile, r.fs.Sys("fs", "cgroup"))
}

// CgroupV1Of returns process pid's path in the cgroup v1 hierarchy of
// controller ("memory"), relative to its mount ("" for its root); ok is
// false where no v1 hierarchy has that controller.
func (r *Reader) CgroupV1Of(pid int, controller string) (cg string, ok bool, err error) {
	data, err := r.read(pid, path.Join(taskDir(pid, 0), "cgroup"), maxSmallFile)
	if err != nil {
		return "", false, err
	}
	b, ok, err := CgroupV1Path(data, controller)
	return string(b), ok, err
}

// ReadCgroupV1File reads the file name of cgroup cg (as CgroupV1Of gives)
// in the v1 hierarchy mounted at /sys/fs/cgroup/HIERARCHY as systemd and
// the distributions mount it (hierarchy is its controllers joined by
// commas: "memory", "cpu,cpuacct"), never through a symbolic link. The
// data is valid until the Reader's next read.
func (r *Reader) ReadCgroupV1File(hierarchy, cg, name string) ([]byte, error) {
	return r.read(0, path.Join(cg, name), maxSmallFile, r.fs.Sys("fs", "cgroup", hierarchy))
}

// PIDs appends the processes under the proc directory to dst[:0], sorted.
func (r *Reader) PIDs(dst []int) ([]int, error) {
	return r.ids(".", dst)
}

// Tasks appends the threads of process pid to dst[:0], sorted.
func (r *Reader) Tasks(pid int, dst []int) ([]int, error) {
	ids, err := r.ids(path.Join(taskDir(pid, 0), "task"), dst)
	if err != nil {
		return ids, r.explain(pid, err)
	}
	return ids, nil
}

// ids lists the numeric names of directory dir under proc.
func (r *Reader) ids(dir string, dst []int) ([]int, error) {
	dst = dst[:0]
	f, err := beneath.Open(r.fs.Proc(), dir, unix.O_DIRECTORY)
	if err != nil {
		return dst, err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if n == "" || n[0] < '1' || n[0] > '9' {
				continue
			}
			if id, err := strconv.Atoi(n); err == nil && id > 0 {
				dst = append(dst, id)
			}
		}
		if len(dst) > maxThreads*16 {
			break // bounded: no kernel has that many (pid_max is 4M; this is 1M)
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return dst, err
		}
	}
	slices.Sort(dst)
	return dst, nil
}
