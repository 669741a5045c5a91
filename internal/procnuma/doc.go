// Package procnuma reads what the kernel tells about one process's NUMA
// behaviour without a PMU: the NUMA part of /proc/PID/sched (per task), the
// pages per node of /proc/PID/numa_maps, the few fields of /proc/PID/status
// and /proc/PID/stat that a process table needs, and a cgroup v2's
// memory.numa_stat. It is the foundation of `numascope top` (issue 18).
//
// The parsers take the file's bytes and fill a caller's value, reusing its
// slices, so that a caller refreshing many processes every second allocates
// nothing per read once its values have grown to size. Every parser bounds
// what it accepts (line length, node numbers, list sizes) and says in one
// line what was wrong with a malformed or truncated file; each is fuzzed.
//
// Snapshot reads the files of one process and its threads under a
// sysfs.FS root, so that tests and --root read captured trees exactly as the
// live /proc, without ever following a symbolic link planted in the tree
// (internal/beneath). A process that exits while it is read gives a
// GoneError, which callers treat as "no longer there", not as a failure.
//
// docs/top.md ("Sources") says what each source means (the per-node NUMA
// faults are decayed averages, not counters), what kernel configuration it
// needs, and what of issue 18 is still to be built on top of this package.
package procnuma
