package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/placement"
)

// hugePage is the size of a transparent huge page on x86-64 and arm64 with
// 4 KiB base pages; buffers are aligned to it so that THP can back them.
const hugePage = 2 << 20

// buffer is memory bound to one node, outside the Go heap (it holds the
// chain's raw addresses, and the garbage collector never scans it).
type buffer struct {
	mapping []byte // what mmap returned, for munmap
	b       []byte // the aligned, bound part
	node    int
	thp     bool // MADV_HUGEPAGE was asked
}

// newBuffer maps size bytes (a multiple of the huge page size), aligned to
// a huge page, asks for transparent huge pages when thp is true, and binds
// them strictly to node before anything touches them: every page the
// kernel then allocates in it comes from node, or the allocation fails.
func newBuffer(size, node int, thp bool) (*buffer, error) {
	m, err := unix.Mmap(-1, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mapping %s for node %d: %w", FormatSize(uint64(size)), node, err)
	}
	base := uintptr(unsafe.Pointer(&m[0]))
	skip := int((hugePage - base%hugePage) % hugePage)
	buf := &buffer{mapping: m, b: m[skip : skip+size], node: node}
	if thp {
		// Ask, not require: with THP off or no huge page free, the kernel
		// uses base pages, and HugeFraction says so.
		buf.thp = unix.Madvise(buf.b, unix.MADV_HUGEPAGE) == nil
	} else {
		_ = unix.Madvise(buf.b, unix.MADV_NOHUGEPAGE)
	}
	if err := placement.Mbind(unsafe.Pointer(&buf.b[0]), uintptr(size), placement.Policy{Mode: placement.Bind, Nodes: []int{node}}); err != nil {
		buf.free()
		return nil, fmt.Errorf("binding %s to node %d: %w", FormatSize(uint64(size)), node, err)
	}
	return buf, nil
}

// free unmaps the buffer.
func (b *buffer) free() {
	if b.mapping != nil {
		_ = unix.Munmap(b.mapping)
		b.mapping, b.b = nil, nil
	}
}

// floats views part of the buffer as float64s.
func (b *buffer) floats(off, n int) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(&b.b[off])), n)
}

// maxChecked bounds the pages whose node placement asks of the kernel for
// one buffer: evenly spread, they estimate the fraction well and keep a
// gigabyte's check to a few milliseconds.
const maxChecked = 1 << 14

// placed returns the fraction of the buffer's (touched) pages that are on
// its node, from move_pages(2), and how many pages were asked.
func (b *buffer) placed() (float64, int, error) {
	n := len(b.b) / os.Getpagesize()
	step := max(1, n/maxChecked)
	var pages []uint64
	for i := 0; i < n; i += step {
		pages = append(pages, uint64(uintptr(unsafe.Pointer(&b.b[i*os.Getpagesize()]))))
	}
	status := make([]int32, len(pages))
	if err := placement.PageNodes(0, pages, status); err != nil {
		return 0, 0, fmt.Errorf("verifying the placement on node %d: %w", b.node, err)
	}
	on := 0
	for _, s := range status {
		if int(s) == b.node {
			on++
		}
	}
	return float64(on) / float64(len(pages)), len(pages), nil
}

// hugeFraction returns the fraction of the buffer's mapping backed by
// transparent huge pages (AnonHugePages over Size in /proc/self/smaps),
// or -1 when smaps cannot tell. The kernel may merge the mapping with an
// adjacent one bound to the same node (another array of the same
// kernel); the fraction is then theirs together, which is what was used.
func (b *buffer) hugeFraction() float64 {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return -1
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&b.b[0])))
	sc := bufio.NewScanner(f)
	in := false
	var size uint64
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := vmaRange(line); ok {
			if in {
				break // the next mapping: ours had no AnonHugePages line
			}
			in = lo <= addr && addr < hi
			continue
		}
		if !in {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "Size":
			size = kb
		case "AnonHugePages":
			if size == 0 {
				return -1
			}
			return float64(kb) / float64(size)
		}
	}
	return -1
}

// vmaRange parses the range at the start of a smaps mapping line
// ("7f12a0000000-7f12a4000000 rw-p ...").
func vmaRange(line string) (lo, hi uint64, ok bool) {
	r, _, found := strings.Cut(line, " ")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(r, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseUint(a, 16, 64)
	hi, err2 := strconv.ParseUint(b, 16, 64)
	return lo, hi, err1 == nil && err2 == nil
}

// placedAll verifies the placement of one measurement's buffers: the
// worst fraction on target, the pages checked together, and the least
// share of huge pages (-1 when one cannot tell).
func placedAll(bufs []*buffer, kind string, initiator, target int) (Pair, float64, error) {
	pair := Pair{Kind: kind, Initiator: initiator, Target: target, FractionOnTarget: 1}
	huge := 1.0
	for _, b := range bufs {
		frac, n, err := b.placed()
		if err != nil {
			return pair, -1, err
		}
		pair.FractionOnTarget = min(pair.FractionOnTarget, frac)
		pair.PagesChecked += n
		if h := b.hugeFraction(); h < 0 || huge < 0 {
			huge = -1
		} else {
			huge = min(huge, h)
		}
	}
	return pair, huge, nil
}
