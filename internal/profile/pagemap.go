package profile

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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

// pagemapNode returns the node of a page from its frame number, or -1.
func (a *analyzer) pagemapNode(pid int32, page uint64) int {
	if a.pfn == nil {
		return -1
	}
	pfn, ok := a.pagemapPFN(pid, page)
	if !ok {
		return -1
	}
	if n, ok := a.pfn.node[pfn/a.pfn.blockPages]; ok {
		return int(n)
	}
	return -1
}

// pagemapPFN returns the frame number of a present page of pid, from
// /proc/PID/pagemap (frame numbers are shown to root only).
func (a *analyzer) pagemapPFN(pid int32, page uint64) (uint64, bool) {
	f, ok := a.pagemaps[pid]
	if !ok {
		f, _ = os.Open(a.procRoot + "/" + strconv.Itoa(int(pid)) + "/pagemap")
		a.pagemaps[pid] = f // nil when it cannot be opened: not retried
	}
	if f == nil {
		return 0, false
	}
	var e [8]byte
	if _, err := f.ReadAt(e[:], int64(page/a.pageSize*8)); err != nil {
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

// closePagemaps closes the pagemap files.
func (a *analyzer) closePagemaps() {
	for pid, f := range a.pagemaps {
		if f != nil {
			f.Close()
		}
		delete(a.pagemaps, pid)
	}
}
