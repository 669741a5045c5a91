package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OnlineReader reads the online CPUs (devices/system/cpu/online) again and
// again, as samplers do to follow CPU hotplug, which turns a CPU's perf
// events off: the file stays open and is read at offset 0 (the kernel
// writes it afresh), and the list is parsed in place into a bitmap, so
// that a look once a second costs one system call and no allocation, on a
// machine where some CPUs stay offline (SMT turned off, nosmt) too.
type OnlineReader struct {
	path string
	f    *os.File
	buf  []byte
}

// NewOnlineReader returns a reader of fs's online CPUs; it opens the file
// at its first Read.
func NewOnlineReader(fs FS) *OnlineReader {
	return &OnlineReader{path: fs.Sys("devices/system/cpu/online")}
}

// onlineMax bounds the file: "0,2,4,...", every other CPU of 8 192.
const onlineMax = 64 << 10

// Read stores the online CPUs into online, reusing its storage, and
// returns it: online[c] says whether CPU c is online.
func (r *OnlineReader) Read(online []bool) ([]bool, error) {
	path := r.path
	if r.f == nil {
		f, err := Open(path)
		if err != nil {
			return online, err
		}
		r.f, r.buf = f, make([]byte, 4096)
	}
	var n int
	for {
		var err error
		for n, err = unix.Pread(int(r.f.Fd()), r.buf, 0); err == unix.EINTR; {
			n, err = unix.Pread(int(r.f.Fd()), r.buf, 0)
		}
		if err != nil {
			return online, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n < len(r.buf) {
			break
		}
		if len(r.buf) >= onlineMax {
			return online, fmt.Errorf("%s: longer than %d bytes", path, onlineMax)
		}
		r.buf = make([]byte, 2*len(r.buf))
	}
	online, err := parseCPUListInto(bytes.TrimSpace(r.buf[:n]), online)
	if err != nil {
		return online, fmt.Errorf("%s: %w", path, err)
	}
	return online, nil
}

// Close closes the file.
func (r *OnlineReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

var errCPUList = errors.New("not a CPU list")

// maxCPU bounds a CPU number in a list, far above any kernel's NR_CPUS
// (8 192), so that a corrupt file cannot make the bitmap huge.
const maxCPU = 1 << 16

// parseCPUListInto parses the kernel's list format ("0-3,8", without the
// newline) into a bitmap, clearing it first and growing it only for a CPU
// beyond it.
func parseCPUListInto(b []byte, set []bool) ([]bool, error) {
	clear(set)
	num := func(i int) (int, int, bool) {
		v, start := 0, i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && v < maxCPU {
			v = v*10 + int(b[i]-'0')
			i++
		}
		return v, i, i > start && v < maxCPU && (i == len(b) || b[i] < '0' || b[i] > '9')
	}
	for i := 0; i < len(b); {
		lo, j, ok := num(i)
		if !ok {
			return set, errCPUList
		}
		hi := lo
		if j < len(b) && b[j] == '-' {
			if hi, j, ok = num(j + 1); !ok || hi < lo {
				return set, errCPUList
			}
		}
		if hi >= len(set) {
			set = append(set, make([]bool, hi+1-len(set))...)
		}
		for c := lo; c <= hi; c++ {
			set[c] = true
		}
		switch {
		case j == len(b):
			i = j
		case b[j] == ',' && j+1 < len(b):
			i = j + 1
		default:
			return set, errCPUList
		}
	}
	return set, nil
}
