// Package memtrim hands back to the system, once start-up is over, the
// memory that a long-running command touched to start and does not need to
// keep sampling.
//
// Most of numascope's resident memory after start-up is not its own data
// but pages of its binary: start-up runs every package's initialisation,
// parses flags, discovers the topology and opens the sensors, touching code
// and read-only data all over a 20 MB executable, and the kernel maps 64 KiB
// around every page it faults in (fault-around). Those pages stay mapped,
// and counted in the process's RSS, until memory pressure reclaims them,
// though the sampling loop needs a small part of them: measured, 13 MiB of
// the binary resident after start-up, under 2 MiB of it touched again in
// the steady state (docs/performance.md, "Resident memory").
//
// Dropping the mappings (MADV_DONTNEED) costs nothing the steady state
// pays for: the pages stay in the page cache, and the few the loop touches
// come back with a minor fault each, once. It is safe for code and
// read-only data because they are never written: their contents are the
// file's, which is what a refault reads. (An executable overwritten in
// place while it runs would break it, but the kernel's own reclaim already
// refaults the same pages under memory pressure.) A read-only mapping can
// still hold written pages: in a position-independent or dynamically linked
// build (go build -buildmode=pie, as distributions package Go programs) the
// dynamic loader relocates .data.rel.ro, the type descriptors and itabs,
// then makes it read-only (RELRO). Those pages are private copies, not the
// file's, and dropping them would put the unrelocated bytes back under the
// runtime, which faults on its next allocation; a mapping with any such
// page (a present page that /proc/self/pagemap says is not the file's) is
// left alone.
package memtrim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/procnuma"
)

// Settle is when the executable's pages are dropped a second time after
// AfterStartup: the first samples run code that start-up did not (the
// recording's header, the first row's layout, the first write's buffers),
// 2 MiB of it for record, and never again.
const Settle = 3 * time.Second

// AfterGCEvery is the least time between two drops that follow a garbage
// collection. The runtime forces a collection every two minutes even in a
// process that allocates nothing, and its stack scan reads the binary's
// tables of every function on a stack: measured, 2 MiB of read-only data
// and 1 MiB more in all that sampling does not touch in between. Dropped
// after each, they come back at the next one (some hundred minor faults
// every two minutes). A process that collects often is held to one drop a
// minute, so that it does not fault its hot code back in after every cycle.
const AfterGCEvery = time.Minute

var gcDrops sync.Once

// AfterStartup returns start-up's garbage (debug.FreeOSMemory) and drops
// the mappings of the executable's code and read-only data that start-up
// left resident: now, once more after Settle, and after later garbage
// collections (AfterGCEvery). It returns the bytes of the executable it
// unmapped now. An error means only that the pages stay resident; the
// caller goes on.
func AfterStartup() (int64, error) {
	debug.FreeOSMemory()
	n, err := dropExecutable()
	if err != nil {
		return n, err
	}
	time.AfterFunc(Settle, func() { _, _ = dropExecutable() })
	gcDrops.Do(func() {
		t := &throttle{every: AfterGCEvery, last: time.Now()}
		afterEachGC(func() {
			if t.due(time.Now()) {
				_, _ = dropExecutable()
			}
		})
	})
	return n, err
}

// throttle lets an action through at most once every every.
type throttle struct {
	mu    sync.Mutex
	every time.Duration
	last  time.Time
}

func (t *throttle) due(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.last) < t.every {
		return false
	}
	t.last = now
	return true
}

// gcSentinel is big enough (16 bytes) to get an allocation of its own:
// the tiny allocator batches smaller pointer-free objects, which would
// delay the finalizer until the whole batch is garbage.
type gcSentinel struct{ _ [2]uintptr }

// afterEachGC calls f in the finalizer goroutine after each garbage
// collection: an unreachable object's finalizer runs after the cycle that
// finds it, and arms the next one. It costs no wake-up of its own.
func afterEachGC(f func()) {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		f()
		afterEachGC(f)
	})
}

// dropExecutable drops the read-only private mappings of the running
// executable that hold only the file's pages. The read-write ones (its
// data) are never touched: dropping them would lose what the program
// wrote; nor is a read-only one with written pages (RELRO, see the package
// comment).
func dropExecutable() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	return dropFile(exe)
}

// dropFile drops this process's private read-only mappings of path that
// hold none of the process's own pages.
//
// The mappings come from /proc/self/maps and their pages' kind from
// /proc/self/pagemap, read for those mappings only. Until 2026-11-28 both
// came from /proc/self/smaps, whose text the kernel builds by walking the
// page tables of every mapping of the process (the Go heap's included):
// 1.3-2.0 ms a drop on the build machine, paid again at every garbage
// collection the runtime forces (every two minutes) and 3 s after start-up,
// where this way costs a sixth of that, 0.2-0.3 ms (docs/performance.md, "On
// 16 CPUs").
func dropFile(path string) (int64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("reading the mappings: %w", err)
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, fmt.Errorf("reading the page table: %w", err)
	}
	defer pagemap.Close()
	buf := make([]byte, 8*512)
	var dropped int64
	for _, m := range readOnlyMappings(maps, path) {
		own, err := holdsOwnPages(pagemap, m, buf)
		if err != nil {
			return dropped, fmt.Errorf("reading the page table of %#x-%#x of %s: %w", m.start, m.end, path, err)
		}
		if own {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); e != 0 {
			return dropped, fmt.Errorf("dropping %#x-%#x of %s: %w", m.start, m.end, path, e)
		}
		dropped += int64(m.end - m.start)
	}
	return dropped, nil
}

type mapping struct{ start, end uintptr }

// readOnlyMappings returns the private mappings of path in a
// /proc/PID/maps text that are readable and not writable: code and
// read-only data.
func readOnlyMappings(maps []byte, path string) []mapping {
	var out []mapping
	for len(maps) > 0 {
		line, rest, _ := bytes.Cut(maps, []byte{'\n'})
		maps = rest
		m, ok := procnuma.ParseMapsLine(string(line))
		if ok && m.Path == path && len(m.Perms) == 4 && m.Perms[0] == 'r' && m.Perms[1] == '-' && m.Perms[3] == 'p' {
			out = append(out, mapping{uintptr(m.Start), uintptr(m.End)})
		}
	}
	return out
}

// holdsOwnPages reports whether any page of m is the process's own rather
// than the file's: a private copy made by a write (the RELRO pages, a
// debugger's breakpoint), present or swapped out. It reads m's entries of
// /proc/self/pagemap (one 64-bit word per page) through buf.
func holdsOwnPages(pagemap *os.File, m mapping, buf []byte) (bool, error) {
	page := uintptr(os.Getpagesize())
	per := uintptr(len(buf) / 8)
	for addr := m.start; addr < m.end; {
		n := min(per, (m.end-addr)/page)
		if n == 0 {
			break
		}
		b := buf[:n*8]
		if _, err := pagemap.ReadAt(b, int64(addr/page*8)); err != nil {
			return false, err
		}
		for i := 0; i < len(b); i += 8 {
			if ownPage(binary.LittleEndian.Uint64(b[i:])) {
				return true, nil
			}
		}
		addr += n * page
	}
	return false, nil
}

// ownPage reads one pagemap entry (the kernel's
// Documentation/admin-guide/mm/pagemap.rst): bit 63 present, bit 62
// swapped, bit 61 a file page or shared anonymous memory. In a private file
// mapping, a page present and not the file's, or swapped (file pages are
// not swapped, only dropped), is a private copy.
func ownPage(e uint64) bool {
	present, swapped, file := e>>63&1 == 1, e>>62&1 == 1, e>>61&1 == 1
	return swapped || present && !file
}
