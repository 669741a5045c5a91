package sampler

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinProcess pins every thread of the process to cpus. Threads the runtime
// creates later inherit the mask from the thread that creates them, which is
// one of these. The whole process is pinned, not one locked thread: the
// sampling goroutine parks in the runtime's poller and runs on whichever
// thread wakes from it, and the consumers that write what it sampled belong
// off the workload's CPUs as much as the sampler does.
func pinProcess(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	// A thread started while the list is read escapes it, so go again
	// until a pass finds no thread it had not pinned yet.
	pinned := map[int]bool{}
	for {
		d, err := os.Open("/proc/self/task")
		if err != nil {
			return err
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return err
		}
		fresh := 0
		for _, n := range names {
			tid, err := strconv.Atoi(n)
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			pinned[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}
