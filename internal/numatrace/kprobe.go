package numatrace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
)

// groupPrefix names the kprobe groups of numascope: numascope_PID, one per
// numascope process, so that two numascopes never share (or remove) each
// other's probe, and a probe left by a numascope that was killed can be
// told apart and removed by the next.
const groupPrefix = "numascope_"

// probeFunc is the kernel function probed: NUMA balancing calls it once
// per hinting fault, in the faulting task, with the node the memory is on
// (after a migration, the node it moved to), the pages and the TNF_ flags.
const probeFunc = "task_numa_fault"

// probeArgs fetch task_numa_fault(int last_cpupid, int mem_node, int
// pages, int flags)'s arguments 2-4. $argN needs a kernel with the
// function-argument API (x86_64 since 4.20); fallbackArgs name the x86_64
// registers that hold them (System V ABI: rdi, rsi, rdx, rcx).
const (
	probeArgs    = "mem_node=$arg2:s32 pages=$arg3:s32 flags=$arg4:u32"
	fallbackArgs = "mem_node=%si:s32 pages=%dx:s32 flags=%cx:u32"
)

// probeSeq tells apart the probes of Tracers open at once in one process.
var probeSeq atomic.Int32

// kprobe is a kprobe event this process made.
type kprobe struct {
	tracefs, group, name string
}

// writeTracefs appends line to file under the tracefs directory, never
// through a symbolic link.
func writeTracefs(dir, file, line string) error {
	f, err := beneath.Open(dir, file, unix.O_WRONLY|unix.O_APPEND)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, line+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s/%s: %w", line, dir, file, err)
	}
	return nil
}

func readTracefs(dir, name string) (string, error) {
	f, err := beneath.Open(dir, name, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	return string(b), err
}

// createProbe adds the kprobe on task_numa_fault in this process's group.
// It returns the probe, or a reason (without the source's name) saying what
// is missing and what to do.
func createProbe(dir string) (*kprobe, string) {
	if _, err := os.Lstat(dir + "/kprobe_events"); err != nil {
		return nil, fmt.Sprintf("this kernel has no kprobe events (no %s/kprobe_events: CONFIG_KPROBE_EVENTS is off)", dir)
	}
	k := &kprobe{tracefs: dir, group: groupPrefix + strconv.Itoa(os.Getpid()), name: probeFunc}
	if n := probeSeq.Add(1); n > 1 {
		k.name += "_" + strconv.Itoa(int(n))
	}
	def := "p:" + k.group + "/" + k.name + " " + probeFunc + " "
	err := writeTracefs(dir, "kprobe_events", def+probeArgs)
	if err != nil && runtime.GOARCH == "amd64" && errors.Is(err, unix.EINVAL) {
		// A kernel without $argN: the registers of the x86_64 ABI.
		if err2 := writeTracefs(dir, "kprobe_events", def+fallbackArgs); err2 == nil {
			err = nil
		}
	}
	if err != nil {
		return nil, probeRefused(dir, err)
	}
	return k, ""
}

// probeRefused explains why the kernel refused the probe.
func probeRefused(dir string, err error) string {
	switch {
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		if os.Geteuid() == 0 {
			why := "the kernel refused a kprobe event (" + err.Error() + ")"
			if l, _ := os.ReadFile("/sys/kernel/security/lockdown"); strings.Contains(string(l), "[integrity]") || strings.Contains(string(l), "[confidentiality]") {
				why += ": kernel lockdown (" + strings.TrimSpace(string(l)) + ") forbids kprobes"
			}
			return why
		}
		return "creating a kprobe event needs root (" + err.Error() + "): run numascope top as root"
	case errors.Is(err, unix.ENOENT):
		return "the kernel has no function " + probeFunc + " to probe (" + err.Error() + "): a kernel without CONFIG_NUMA_BALANCING"
	}
	msg := "the kernel refused the kprobe on " + probeFunc + ": " + err.Error()
	if l, _ := readTracefs(dir, "error_log"); strings.TrimSpace(l) != "" {
		lines := strings.Split(strings.TrimSpace(l), "\n")
		msg += " (error_log: " + strings.TrimSpace(lines[len(lines)-1]) + ")"
	}
	return msg
}

// remove deletes the probe. The perf events on it must be closed first;
// the kernel answers EBUSY while one is still being torn down.
func (k *kprobe) remove() error {
	var err error
	for try := 0; try < 50; try++ {
		if err = writeTracefs(k.tracefs, "kprobe_events", "-:"+k.group+"/"+k.name); !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil // already gone
	}
	return err
}

// removeStale deletes the kprobe events of groups numascope_PID whose
// process no longer exists: a numascope killed before its Close. Groups of
// live processes, this one's included, and everything not named so are
// left alone. It returns the events removed.
func removeStale(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir + "/events")
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		pidText, ok := strings.CutPrefix(e.Name(), groupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || strconv.Itoa(pid) != pidText || pid == os.Getpid() || alive(pid) {
			continue
		}
		evs, err := os.ReadDir(dir + "/events/" + e.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ev := range evs {
			if !ev.IsDir() {
				continue
			}
			k := &kprobe{tracefs: dir, group: e.Name(), name: ev.Name()}
			if err := k.remove(); err != nil {
				errs = append(errs, err)
			} else {
				removed = append(removed, k.group+"/"+k.name)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// alive says whether process pid exists (in this pid namespace). EPERM
// means it exists but belongs to someone else.
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}
