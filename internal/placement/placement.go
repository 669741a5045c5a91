// Package placement puts a command's memory and threads where a NUMA
// experiment wants them, as numactl does: it sets the memory policy
// (set_mempolicy) and the CPU affinity (sched_setaffinity) of the calling
// thread, then execs the command, which inherits both.
//
// Both settings are per thread in Linux, and execve keeps those of the
// thread that calls it: Exec therefore locks its goroutine to its OS thread,
// applies the plan to that thread and execs from it. Nothing is linked
// against libnuma: the system calls are made directly.
//
// Plans are validated against the discovered topology before anything is
// applied, so that a typo in a node list is an error naming the valid range
// rather than a policy the kernel silently narrows.
package placement

import (
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
)

// Mode is a memory policy.
type Mode int

// The memory policies, with the kernel's values (linux/mempolicy.h).
const (
	// FirstTouch is the kernel's default: a page lands on the node of the
	// CPU that first touches it.
	FirstTouch Mode = 0
	// Preferred allocates on one node, falling back to others when full.
	Preferred Mode = 1
	// Bind allocates only on the given nodes.
	Bind Mode = 2
	// Interleave spreads pages round-robin over the given nodes.
	Interleave Mode = 3
	// Local allocates on the node of the CPU that allocates (MPOL_LOCAL,
	// Linux 3.8): unlike FirstTouch, it overrides a policy set elsewhere.
	Local Mode = 4
)

func (m Mode) String() string {
	switch m {
	case FirstTouch:
		return "first-touch"
	case Preferred:
		return "preferred"
	case Bind:
		return "bind"
	case Interleave:
		return "interleave"
	case Local:
		return "local"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Policy is a memory policy and its nodes.
type Policy struct {
	Mode  Mode
	Nodes []int
}

// String gives the policy in --policy syntax.
func (p Policy) String() string {
	if len(p.Nodes) == 0 {
		return p.Mode.String()
	}
	return p.Mode.String() + ":" + sysfs.FormatCPUList(p.Nodes)
}

// Plan is what Exec applies: a memory policy and, when CPUs is non-empty,
// the CPUs the command may run on.
type Plan struct {
	Policy Policy
	CPUs   []int
}

// PolicySyntax is the --policy grammar, for help and error messages.
const PolicySyntax = "first-touch | interleave[:NODES] | bind:NODES | preferred:NODE | local"

// ParsePolicy parses a --policy value and checks its nodes against topo:
// they must exist, have memory and be allowed to this process. interleave
// without nodes means every allowed node with memory.
func ParsePolicy(s string, topo *topology.Topology) (Policy, error) {
	name, list, hasList := strings.Cut(strings.TrimSpace(s), ":")
	var p Policy
	switch name {
	case "first-touch", "default":
		p.Mode = FirstTouch
	case "local":
		p.Mode = Local
	case "interleave":
		p.Mode = Interleave
	case "bind", "membind":
		p.Mode = Bind
	case "preferred":
		p.Mode = Preferred
	default:
		return p, fmt.Errorf("--policy %q: unknown policy; want %s", s, PolicySyntax)
	}
	switch p.Mode {
	case FirstTouch, Local:
		if hasList {
			return p, fmt.Errorf("--policy %q: %s takes no nodes", s, name)
		}
		return p, nil
	}
	if !hasList || strings.TrimSpace(list) == "" {
		if p.Mode != Interleave {
			return p, fmt.Errorf("--policy %q: %s needs nodes, e.g. %s:0", s, name, name)
		}
		p.Nodes = memoryNodes(topo)
		if len(p.Nodes) == 0 {
			return p, fmt.Errorf("--policy %q: no allowed node has memory", s)
		}
		return p, nil
	}
	nodes, err := sysfs.ParseCPUList(list)
	if err != nil {
		return p, fmt.Errorf("--policy %q: %q is not a node list like 0-1,3", s, list)
	}
	if len(nodes) == 0 {
		return p, fmt.Errorf("--policy %q: empty node list", s)
	}
	if p.Mode == Preferred && len(nodes) != 1 {
		return p, fmt.Errorf("--policy %q: preferred takes exactly one node", s)
	}
	if err := CheckMemoryNodes(nodes, topo); err != nil {
		return p, fmt.Errorf("--policy %q: %w", s, err)
	}
	p.Nodes = nodes
	return p, nil
}

// memoryNodes are the allowed nodes that have memory.
func memoryNodes(topo *topology.Topology) []int {
	var out []int
	for _, n := range topo.Nodes {
		if n.Allowed && n.MemoryTotal > 0 {
			out = append(out, n.ID)
		}
	}
	return out
}

func allNodeIDs(topo *topology.Topology) []int {
	var out []int
	for _, n := range topo.Nodes {
		out = append(out, n.ID)
	}
	return out
}

// CheckMemoryNodes checks that every node of nodes exists, has memory and
// is allowed to this process, with an error naming the valid nodes.
func CheckMemoryNodes(nodes []int, topo *topology.Topology) error {
	valid := sysfs.FormatCPUList(memoryNodes(topo))
	for _, id := range nodes {
		n := topo.Node(id)
		switch {
		case n == nil:
			return fmt.Errorf("node %d does not exist; the nodes are %s, with memory and allowed: %s", id, sysfs.FormatCPUList(allNodeIDs(topo)), valid)
		case !n.Allowed:
			return fmt.Errorf("node %d is outside this process's cpuset; allowed nodes with memory: %s", id, valid)
		case n.MemoryTotal == 0:
			return fmt.Errorf("node %d has no memory; nodes with memory: %s", id, valid)
		}
	}
	return nil
}

// usableCPUs are the online, allowed CPUs of the topology (all online ones
// when the allowed set is unknown).
func usableCPUs(topo *topology.Topology) map[int]topology.CPU {
	m := map[int]topology.CPU{}
	for _, c := range topo.CPUs {
		if c.Online && (c.Allowed || topo.AllowedCPUs == nil) {
			m[c.ID] = c
		}
	}
	return m
}

// ResolveCPUs turns --cpus, --nodes and --threads-per-node into a CPU list,
// checked against topo. cpus and nodes are lists in the kernel's format;
// at most one may be given. threadsPerNode > 0 keeps that many CPUs of each
// node (of the --nodes, or of every node with CPUs), one per core first so
// that threads do not share a core while a core is idle. Nil means no
// affinity change.
func ResolveCPUs(cpus, nodes string, threadsPerNode int, topo *topology.Topology) ([]int, error) {
	usable := usableCPUs(topo)
	valid := sysfs.FormatCPUList(slices.Sorted(maps.Keys(usable)))
	if cpus != "" && nodes != "" {
		return nil, errors.New("--cpus and --nodes are exclusive: give one")
	}
	if threadsPerNode < 0 {
		return nil, fmt.Errorf("--threads-per-node %d: want a positive count", threadsPerNode)
	}
	if cpus != "" {
		if threadsPerNode > 0 {
			return nil, errors.New("--threads-per-node goes with --nodes (or alone), not with --cpus")
		}
		list, err := sysfs.ParseCPUList(cpus)
		if err != nil || len(list) == 0 {
			return nil, fmt.Errorf("--cpus %q is not a CPU list like 0-3,8; usable CPUs: %s", cpus, valid)
		}
		for _, c := range list {
			if _, ok := usable[c]; !ok {
				why := "does not exist"
				for _, tc := range topo.CPUs {
					if tc.ID == c {
						why = "is outside this process's cpuset"
						if !tc.Online {
							why = "is offline"
						}
					}
				}
				return nil, fmt.Errorf("--cpus %q: CPU %d %s; usable CPUs: %s", cpus, c, why, valid)
			}
		}
		return list, nil
	}
	if nodes == "" && threadsPerNode == 0 {
		return nil, nil
	}
	var ids []int
	withCPUs := map[int]bool{}
	for _, c := range usable {
		withCPUs[c.Node] = true
	}
	var validNodes []int
	for id := range withCPUs {
		validNodes = append(validNodes, id)
	}
	sort.Ints(validNodes)
	if nodes != "" {
		var err error
		ids, err = sysfs.ParseCPUList(nodes)
		if err != nil || len(ids) == 0 {
			return nil, fmt.Errorf("--nodes %q is not a node list like 0-1,3; nodes with usable CPUs: %s", nodes, sysfs.FormatCPUList(validNodes))
		}
		for _, id := range ids {
			if !withCPUs[id] {
				return nil, fmt.Errorf("--nodes %q: node %d has no online, allowed CPUs; nodes with usable CPUs: %s", nodes, id, sysfs.FormatCPUList(validNodes))
			}
		}
	} else {
		ids = validNodes
	}
	var out []int
	for _, id := range ids {
		var node []topology.CPU
		for _, c := range slices.Sorted(maps.Keys(usable)) {
			if usable[c].Node == id {
				node = append(node, usable[c])
			}
		}
		if threadsPerNode > 0 {
			if threadsPerNode > len(node) {
				return nil, fmt.Errorf("--threads-per-node %d: node %d has only %d usable CPUs", threadsPerNode, id, len(node))
			}
			node = spreadOverCores(node)[:threadsPerNode]
		}
		for _, c := range node {
			out = append(out, c.ID)
		}
	}
	sort.Ints(out)
	return out, nil
}

// spreadOverCores orders CPUs so that each core's first thread comes before
// any core's second thread.
func spreadOverCores(cpus []topology.CPU) []topology.CPU {
	rank := map[int]int{}
	seen := map[string]int{}
	for _, c := range cpus {
		key := fmt.Sprint(c.Package, c.Die, c.Core, c.Siblings)
		if len(c.Siblings) == 0 {
			key = "cpu" + strconv.Itoa(c.ID)
		}
		rank[c.ID] = seen[key]
		seen[key]++
	}
	out := append([]topology.CPU(nil), cpus...)
	sort.SliceStable(out, func(a, b int) bool { return rank[out[a].ID] < rank[out[b].ID] })
	return out
}

// nodeMask builds the bitmask set_mempolicy takes and its maxnode argument.
func nodeMask(nodes []int) ([]uint64, uintptr) {
	if len(nodes) == 0 {
		return nil, 0
	}
	maxID := 0
	for _, n := range nodes {
		maxID = max(maxID, n)
	}
	mask := make([]uint64, maxID/64+1)
	for _, n := range nodes {
		mask[n/64] |= 1 << (uint(n) % 64)
	}
	// The kernel reads maxnode-1 bits.
	return mask, uintptr(len(mask)*64 + 1)
}

// SetMemPolicy sets the calling thread's memory policy. The caller must
// have locked its goroutine to the thread (runtime.LockOSThread).
func SetMemPolicy(p Policy) error {
	mask, maxnode := nodeMask(p.Nodes)
	var ptr unsafe.Pointer
	if len(mask) > 0 {
		ptr = unsafe.Pointer(&mask[0])
	}
	_, _, e := unix.Syscall(unix.SYS_SET_MEMPOLICY, uintptr(p.Mode), uintptr(ptr), maxnode)
	runtime.KeepAlive(mask)
	if e != 0 {
		if e == unix.ENOSYS {
			return fmt.Errorf("set_mempolicy %s: the kernel has no NUMA support (CONFIG_NUMA)", p)
		}
		return fmt.Errorf("set_mempolicy %s: %w", p, e)
	}
	return nil
}

// GetMemPolicy returns the calling thread's memory policy.
func GetMemPolicy() (Policy, error) {
	var mode int32
	mask := make([]uint64, 16) // 1024 nodes
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)), uintptr(unsafe.Pointer(&mask[0])),
		uintptr(len(mask)*64), 0, 0, 0)
	if e != 0 {
		return Policy{}, fmt.Errorf("get_mempolicy: %w", e)
	}
	p := Policy{Mode: Mode(mode &^ (3 << 14))} // drop MPOL_F_STATIC_NODES/RELATIVE_NODES
	for i, w := range mask {
		for b := 0; b < 64; b++ {
			if w&(1<<uint(b)) != 0 {
				p.Nodes = append(p.Nodes, i*64+b)
			}
		}
	}
	return p, nil
}

// Apply applies the plan to the calling thread, which must be locked to
// its goroutine. The first-touch policy is set too, so that a policy
// inherited from a parent (numactl, another numascope run) does not leak
// into the experiment.
func (p Plan) Apply() error {
	if err := SetMemPolicy(p.Policy); err != nil {
		if p.Policy.Mode != FirstTouch || !strings.Contains(err.Error(), "no NUMA support") {
			return err
		}
	}
	if len(p.CPUs) > 0 {
		return SetAffinity(p.CPUs)
	}
	return nil
}

// SetAffinity pins the calling thread, which must be locked to its
// goroutine, to cpus.
func SetAffinity(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return fmt.Errorf("CPU %d is beyond the %d CPUs sched_setaffinity supports here", c, len(set)*64)
		}
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_setaffinity %s: %w", sysfs.FormatCPUList(cpus), err)
	}
	return nil
}

// mpolMFStrict is MPOL_MF_STRICT (linux/mempolicy.h): mbind fails if a
// page of the range is already somewhere the policy does not allow.
const mpolMFStrict = 1 << 0

// Mbind sets the memory policy of the range [addr, addr+length) of the
// calling process, strictly: pages already in the range that break the
// policy make it fail rather than stay where they are. addr must be page
// aligned. Unlike SetMemPolicy it binds memory, not a thread, so every
// thread that later touches the range gets its pages where p says.
func Mbind(addr unsafe.Pointer, length uintptr, p Policy) error {
	mask, maxnode := nodeMask(p.Nodes)
	var ptr unsafe.Pointer
	if len(mask) > 0 {
		ptr = unsafe.Pointer(&mask[0])
	}
	_, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(addr), length, uintptr(p.Mode), uintptr(ptr), maxnode, mpolMFStrict)
	runtime.KeepAlive(mask)
	if e != 0 {
		switch e {
		case unix.ENOSYS:
			return fmt.Errorf("mbind %s: the kernel has no NUMA support (CONFIG_NUMA)", p)
		case unix.EINVAL:
			return fmt.Errorf("mbind %s: %w (a node outside this process's cpuset, or without memory?)", p, e)
		case unix.EPERM:
			return fmt.Errorf("mbind %s: %w (the node is not allowed to this process)", p, e)
		}
		return fmt.Errorf("mbind %s: %w", p, e)
	}
	return nil
}

// movePagesBatch bounds one move_pages call.
const movePagesBatch = 4096

// move_pages reads an array of user pointers: the pages' addresses are
// passed as they are, which needs 64-bit pointers (a 32-bit build fails
// here).
const _ = uint64(unsafe.Sizeof(uintptr(0))) - 8

// PageNodes sets status[i] to the node holding page pages[i] of process
// pid (0: this process), or to a negative errno for a page that is not
// present: move_pages(2) without target nodes, which only asks.
func PageNodes(pid int, pages []uint64, status []int32) error {
	for off := 0; off < len(pages); off += movePagesBatch {
		end := min(off+movePagesBatch, len(pages))
		_, _, e := unix.Syscall6(unix.SYS_MOVE_PAGES, uintptr(pid), uintptr(end-off),
			uintptr(unsafe.Pointer(&pages[off])), 0, uintptr(unsafe.Pointer(&status[off])), 0)
		if e != 0 {
			return fmt.Errorf("move_pages: %w", e)
		}
	}
	return nil
}

// Exec applies the plan and replaces the process with argv[0] (looked up
// in PATH) with the environment env. It returns only on error.
func (p Plan) Exec(argv []string, env []string) error {
	if len(argv) == 0 {
		return errors.New("no command to run: give one after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	// The goroutine stays locked: if exec fails, this thread carries the
	// plan and must not go back to the pool for other goroutines.
	runtime.LockOSThread()
	if err := p.Apply(); err != nil {
		return err
	}
	err = syscall.Exec(path, argv, env)
	return fmt.Errorf("cannot run %s: %w", path, err)
}
