package procnuma

import (
	"bytes"
	"errors"
	"fmt"
)

// maxCPU bounds the CPU numbers of Cpus_allowed_list (the kernel's
// NR_CPUS is at most 8192).
const maxCPU = 1<<13 - 1

// Status is what a process table needs of /proc/PID/status.
type Status struct {
	// Name is the command name as the kernel prints it (escaped by the
	// kernel for a newline or backslash, otherwise raw bytes from the
	// process): shown as text only, sanitised where it is displayed.
	Name []byte
	// CPUsAllowed and MemsAllowed are Cpus_allowed_list and
	// Mems_allowed_list (the task's cpuset and CPU affinity, the nodes
	// its cpuset allows).
	CPUsAllowed, MemsAllowed []int
	// RSS is VmRSS in bytes; HasRSS is false for a kernel thread or a
	// zombie, which have no VmRSS line.
	RSS    uint64
	HasRSS bool
	// Threads is the number of threads of the process.
	Threads int
}

// StatusFields is the one parser of the structure of /proc/PID/status:
// it calls fn with each "Key:\tvalue" line's key (blanks trimmed) and its
// raw value (everything after the first ':', the kernel's tab included),
// skipping lines without a ':' or with an empty key. It stops at the first
// error fn returns, or at a line longer than MaxLine. Callers parse the
// values they need: ParseStatus for a process table, StatusField for one
// key, topology for the allowed sets of a captured tree.
func StatusFields(data []byte, fn func(no int, key, value []byte) error) error {
	return lines(data, "status", func(no int, line []byte) error {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil
		}
		if k = bytes.TrimSpace(k); len(k) == 0 {
			return nil
		}
		return fn(no, k, v)
	})
}

// errStop ends a walk over a file's lines early; it is never returned.
var errStop = errors.New("stop")

// StatusField returns the value of key in /proc/PID/status, blanks
// trimmed; ok is false when the key is absent.
func StatusField(data []byte, key string) (value string, ok bool) {
	StatusFields(data, func(_ int, k, v []byte) error {
		if string(k) != key {
			return nil
		}
		value, ok = string(bytes.TrimSpace(v)), true
		return errStop
	})
	return value, ok
}

// ParseStatus parses /proc/PID/status into s, reusing its slices.
func ParseStatus(data []byte, s *Status) error {
	name, cpus, mems := s.Name[:0], s.CPUsAllowed[:0], s.MemsAllowed[:0]
	*s = Status{}
	have := 0
	err := StatusFields(data, func(no int, k, v []byte) error {
		var err error
		switch string(k) {
		case "Name":
			// The kernel writes "Name:\t" then the name, which may
			// itself begin or end with spaces: only the tab is cut.
			name = append(name, bytes.TrimPrefix(v, []byte("\t"))...)
			have |= 1
		case "Cpus_allowed_list":
			cpus, err = parseList(cpus, v, maxCPU)
			have |= 2
		case "Mems_allowed_list":
			mems, err = parseList(mems, v, MaxNode)
			have |= 4
		case "Threads":
			n, ok := parseUint(trim(v))
			if !ok || n > 1<<31-1 {
				err = fmt.Errorf("Threads is not a count: %s", quote(v))
			}
			s.Threads = int(n)
			have |= 8
		case "VmRSS":
			kb, ok := bytes.CutSuffix(trim(v), []byte(" kB"))
			n, ok2 := parseUint(trim(kb))
			if !ok || !ok2 || n > 1<<53 {
				err = fmt.Errorf("VmRSS is not a size in kB: %s", quote(v))
			}
			s.RSS, s.HasRSS = n<<10, true
		}
		if err != nil {
			return fmt.Errorf("status line %d: %w", no, err)
		}
		return nil
	})
	s.Name, s.CPUsAllowed, s.MemsAllowed = name, cpus, mems
	if err != nil {
		return err
	}
	if have != 15 {
		return errors.New("status: Name, Threads, Cpus_allowed_list or Mems_allowed_list missing: truncated file?")
	}
	return nil
}

// Stat is what a process table needs of /proc/PID/stat or
// /proc/PID/task/TID/stat.
type Stat struct {
	// Comm is the name between the parentheses, raw (it may hold spaces,
	// parentheses and any other byte): shown as text only.
	Comm  []byte
	State byte
	// Flags are the task's PF_* flags (field 9): PF_KTHREAD marks a
	// kernel thread, which has no memory of its own to place.
	Flags uint64
	// UTime and STime are the CPU time in user and kernel mode, in clock
	// ticks (USER_HZ, 100 on every Linux architecture numascope builds for).
	UTime, STime uint64
	// Threads is num_threads (field 20), for a process's stat.
	Threads int
	// StartTime is when the task started, in clock ticks after boot
	// (field 22): with the PID it names a process across refreshes, so a
	// reused PID is not taken for the same process.
	StartTime uint64
	// RSSPages is the resident set in pages (field 24).
	RSSPages uint64
	// Processor is the CPU the task last ran on (field 39).
	Processor int
}

// PFKThread is the kernel's PF_KTHREAD flag (include/linux/sched.h) in
// Stat.Flags: the task is a kernel thread.
const PFKThread = 0x00200000

// statFields is how many fields follow the comm up to processor: fields 3
// (state) to 39.
const statFields = 39 - 2

// ParseStat parses /proc/PID/stat into s, reusing s.Comm. The comm is
// taken up to the LAST ')': a process may name itself "a) R 1 (b".
func ParseStat(data []byte, s *Stat) error {
	comm := s.Comm[:0]
	*s = Stat{}
	if len(data) > MaxLine {
		return fmt.Errorf("stat: longer than %d KiB, not a kernel's stat", MaxLine>>10)
	}
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		s.Comm = comm
		return fmt.Errorf("stat: no (comm) in %s", quote(data))
	}
	s.Comm = append(comm, data[open+1:closing]...)
	rest := data[closing+1:]
	for i := 3; i <= 39; i++ {
		var f []byte
		f, rest = nextField(rest)
		if len(f) == 0 {
			return fmt.Errorf("stat: %d fields after the comm, want at least %d: truncated file?", i-3, statFields)
		}
		var ok bool
		switch i {
		case 3:
			if len(f) != 1 {
				return fmt.Errorf("stat: state %s is not one letter", quote(f))
			}
			s.State, ok = f[0], true
		case 9:
			s.Flags, ok = parseUint(f)
		case 14:
			s.UTime, ok = parseUint(f)
		case 15:
			s.STime, ok = parseUint(f)
		case 20:
			var v uint64
			v, ok = parseUint(f)
			ok = ok && v <= 1<<31-1
			s.Threads = int(v)
		case 22:
			s.StartTime, ok = parseUint(f)
		case 24:
			s.RSSPages, ok = parseUint(f)
		case 39:
			var v uint64
			v, ok = parseUint(f)
			ok = ok && v <= maxCPU
			s.Processor = int(v)
		default:
			ok = true
		}
		if !ok {
			return fmt.Errorf("stat: field %d is not a number: %s", i, quote(f))
		}
	}
	return nil
}
