package profile

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/numascope/numascope/internal/placement"
	"github.com/numascope/numascope/internal/procnuma"
)

// kernel is what the analyzer asks the kernel about the profiled processes,
// besides the records it reads: where their pages are, where their threads
// may run and what they have mapped. procKernel asks the live system; tests
// use a fake one, so that what they check does not depend on where this
// machine happens to put a page.
type kernel interface {
	// PageNodes sets status[i] to the node of page pages[i] of pid, or a
	// negative errno for a page that is not present (move_pages(2) with
	// no target nodes). It reports false when the process is gone.
	PageNodes(pid int32, pages []uint64, status []int32) bool
	// PageFrame returns the physical frame of a present page of pid
	// (/proc/PID/pagemap: shown to root only).
	PageFrame(pid int32, page uint64) (uint64, bool)
	// PagemapNode returns the node of a present page of pid by its
	// physical frame (PageFrame, then the node holding the frame), or -1:
	// the fallback of PageNodes for the pages it does not report (see
	// pfnNodes).
	PagemapNode(pid int32, page uint64) int
	// FrameTHP says whether a frame is part of a transparent huge page
	// (/proc/kpageflags); known is false when that cannot be read.
	FrameTHP(pfn uint64) (huge, known bool)
	// ExactTHP says whether FrameTHP can answer (root): otherwise huge
	// pages are found by probing with PageNodes.
	ExactTHP() bool
	// Affinity returns a thread's Cpus_allowed_list.
	Affinity(pid, tid int32) (string, bool)
	// Maps returns a process's /proc/PID/maps.
	Maps(pid int32) ([]byte, bool)
	// Comm returns a process's name.
	Comm(pid int32) (string, bool)
	// Close releases what the kernel interface keeps open.
	Close()
}

// procKernel is the live kernel, through system calls, /proc under
// procRoot and /sys.
type procKernel struct {
	procRoot string
	pageSize uint64
	pfn      *pfnNodes          // nil: frames cannot be mapped to nodes
	pagemaps map[int32]*os.File // open /proc/PID/pagemap files (nil: cannot be opened)
	kpf      *os.File           // /proc/kpageflags, nil without root
}

func newProcKernel(procRoot, sysRoot string, pageSize uint64) *procKernel {
	k := &procKernel{procRoot: procRoot, pageSize: pageSize, pagemaps: map[int32]*os.File{}}
	k.pfn = loadPFNNodes(sysRoot, pageSize)
	if f, err := os.Open(procRoot + "/kpageflags"); err == nil {
		k.kpf = f
	}
	return k
}

func (k *procKernel) PageNodes(pid int32, pages []uint64, status []int32) bool {
	return placement.PageNodes(int(pid), pages, status) == nil
}

func (k *procKernel) PageFrame(pid int32, page uint64) (uint64, bool) {
	f, ok := k.pagemaps[pid]
	if !ok {
		f, _ = os.Open(k.procRoot + "/" + strconv.Itoa(int(pid)) + "/pagemap")
		k.pagemaps[pid] = f // nil when it cannot be opened: not retried
	}
	if f == nil {
		return 0, false
	}
	var e [8]byte
	if _, err := f.ReadAt(e[:], int64(page/k.pageSize*8)); err != nil {
		return 0, false
	}
	v := binary.LittleEndian.Uint64(e[:])
	const present, pfnMask = 1 << 63, 1<<55 - 1
	pfn := v & pfnMask
	if v&present == 0 || pfn == 0 { // not present, or frames hidden (not root)
		return 0, false
	}
	return pfn, true
}

func (k *procKernel) PagemapNode(pid int32, page uint64) int {
	pfn, ok := k.PageFrame(pid, page)
	if !ok || k.pfn == nil {
		return -1
	}
	if n, ok := k.pfn.node[pfn/k.pfn.blockPages]; ok {
		return int(n)
	}
	return -1
}

// kpfTHP is KPF_THP of /proc/kpageflags (include/uapi/linux/kernel-page-flags.h).
const kpfTHP = 22

func (k *procKernel) FrameTHP(pfn uint64) (huge, known bool) {
	if k.kpf == nil {
		return false, false
	}
	var e [8]byte
	if _, err := k.kpf.ReadAt(e[:], int64(pfn*8)); err != nil {
		return false, false
	}
	return binary.LittleEndian.Uint64(e[:])&(1<<kpfTHP) != 0, true
}

func (k *procKernel) ExactTHP() bool { return k.kpf != nil }

func (k *procKernel) Affinity(pid, tid int32) (string, bool) {
	b, err := os.ReadFile(k.procRoot + "/" + strconv.Itoa(int(pid)) + "/task/" + strconv.Itoa(int(tid)) + "/status")
	if err != nil {
		return "", false
	}
	return procnuma.StatusField(b, "Cpus_allowed_list")
}

func (k *procKernel) Maps(pid int32) ([]byte, bool) {
	b, err := os.ReadFile(k.procRoot + "/" + strconv.Itoa(int(pid)) + "/maps")
	return b, err == nil
}

func (k *procKernel) Comm(pid int32) (string, bool) {
	b, err := os.ReadFile(k.procRoot + "/" + strconv.Itoa(int(pid)) + "/comm")
	return string(bytes.TrimSpace(b)), err == nil
}

func (k *procKernel) Close() {
	for pid, f := range k.pagemaps {
		if f != nil {
			f.Close()
		}
		delete(k.pagemaps, pid)
	}
	if k.kpf != nil {
		k.kpf.Close()
		k.kpf = nil
	}
}

// pfnNodes maps physical frame numbers to nodes through the memory blocks
// each node holds (/sys/devices/system/node/nodeN/memoryM).
//
// It is the fallback of move_pages(2), which does not report a page that
// NUMA balancing has just made PROT_NONE (the kernel's follow_page skips
// such PTEs): that is exactly the state of a page between a scan and the
// hinting fault that samples it, so a query that comes late (the profiler
// starved of CPU) would otherwise leave a migrated page's node stale.
// /proc/PID/pagemap still gives the frame of a PROT_NONE page (to root).
type pfnNodes struct {
	blockPages uint64
	node       map[uint64]int16 // memory block -> node
}

func loadPFNNodes(sysRoot string, pageSize uint64) *pfnNodes {
	b, err := os.ReadFile(filepath.Join(sysRoot, "devices/system/memory/block_size_bytes"))
	if err != nil {
		return nil
	}
	size, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 64)
	if err != nil || size < pageSize {
		return nil
	}
	p := &pfnNodes{blockPages: size / pageSize, node: map[uint64]int16{}}
	nodes, _ := filepath.Glob(filepath.Join(sysRoot, "devices/system/node/node[0-9]*"))
	for _, nd := range nodes {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(nd), "node"))
		if err != nil {
			continue
		}
		ents, _ := os.ReadDir(nd)
		for _, e := range ents {
			if m, ok := strings.CutPrefix(e.Name(), "memory"); ok {
				if blk, err := strconv.ParseUint(m, 10, 64); err == nil {
					p.node[blk] = int16(n)
				}
			}
		}
	}
	if len(p.node) == 0 {
		return nil
	}
	return p
}
