package memtrim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentOfExe returns the KiB of the test binary resident in its
// read-only mappings and in its writable ones, from /proc/self/smaps.
func residentOfExe(t *testing.T) (readOnly, writable int) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mine, ro bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			mine = len(fs) >= 6 && strings.Join(fs[5:], " ") == exe
			ro = len(fs[1]) == 4 && fs[1][1] == '-'
			continue
		}
		if mine && len(fs) >= 2 && fs[0] == "Rss:" {
			n, _ := strconv.Atoi(fs[1])
			if ro {
				readOnly += n
			} else {
				writable += n
			}
		}
	}
	return readOnly, writable
}

// written lives in the binary's writable data: dropping must keep it.
var written = []int{1, 2, 3}

// TestDropExecutableUnmapsCodeAndKeepsData drops the test binary's own
// code and read-only data, as a session does after start-up: their
// resident size must fall, the program must go on running (the pages come
// back from the file), and what it wrote to its data must still be there.
func TestDropExecutableUnmapsCodeAndKeepsData(t *testing.T) {
	written[1] = 42
	before, _ := residentOfExe(t)
	n, err := dropExecutable()
	if err != nil {
		t.Fatalf("dropExecutable: %v", err)
	}
	after, _ := residentOfExe(t)
	t.Logf("read-only mappings resident: %d KiB before, %d KiB after dropping %d KiB", before, after, n>>10)
	// Without the drop nothing leaves (pages are only added, and reclaim
	// does not run in these milliseconds); with it, the code that reads
	// smaps and the runtime's background work fault some back, in 64 KiB
	// windows, but not everything: a small test binary is mostly hot, so
	// the bound is one window, not a share.
	if n == 0 || after > before-64 {
		t.Fatalf("read-only mappings resident: %d KiB before, %d KiB after: want fewer", before, after)
	}
	if written[0] != 1 || written[1] != 42 || written[2] != 3 {
		t.Fatalf("data written before the drop is lost: %v", written)
	}
	// Code runs again from the file: a fresh parse exercises it.
	if got := readOnlyMappings([]byte("00400000-00d2e000 r-xp 00000000 08:01 12 /x/ns\n"), "/x/ns"); len(got) != 1 {
		t.Fatalf("after the drop: %v", got)
	}
}

// TestReadOnlyMappings: the private read-only mappings of that file only
// are candidates (whether they hold written pages is the page table's
// business: TestDropFileLeavesWrittenPages).
func TestReadOnlyMappings(t *testing.T) {
	maps := `00400000-00d2e000 r-xp 00000000 08:01 12 /usr/bin/numa scope
00d2e000-0166b000 r--p 0092e000 08:01 12 /usr/bin/numa scope
01760000-01770000 rw-p 01360000 08:01 12 /usr/bin/numa scope
01770000-039c6000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 08:01 13 /usr/bin/numa scope2
7f0000002000-7f0000003000 r--s 00000000 08:01 12 /usr/bin/numa scope
7f0000004000-7f0000005000 ---p 00000000 08:01 12 /usr/bin/numa scope
7ffc0a58d000-7ffc0a5ae000 rw-p 00000000 00:00 0                          [stack]
not a mapping
`
	got := readOnlyMappings([]byte(maps), "/usr/bin/numa scope")
	want := []mapping{{0x400000, 0xd2e000}, {0xd2e000, 0x166b000}}
	if !slices.Equal(got, want) {
		t.Fatalf("readOnlyMappings = %#v, want %#v (code and read-only data, private, of that file only)", got, want)
	}
}

// TestOwnPage: pagemap entries as the kernel writes them.
func TestOwnPage(t *testing.T) {
	const present, swapped, file = 1 << 63, 1 << 62, 1 << 61
	for _, c := range []struct {
		e    uint64
		want bool
		what string
	}{
		{0, false, "not present"},
		{present | file | 0x1234, false, "the file's page (PFN shown to root)"},
		{present | file, false, "the file's page (PFN hidden)"},
		{present | 0x1234, true, "a private copy"},
		{present | 1<<56, true, "a private copy mapped once"},
		{swapped | 0x7, true, "a private copy swapped out"},
	} {
		if got := ownPage(c.e); got != c.want {
			t.Errorf("ownPage(%#x) (%s) = %v, want %v", c.e, c.what, got, c.want)
		}
	}
}

// TestDropFileLeavesWrittenPages maps a file twice, privately and read-only
// as a program's code and RELRO data are: once only read, once written
// before it was made read-only (as the dynamic loader does RELRO). The drop
// must take the first, whose pages leave the page table, and leave the
// second, whose written byte must still be there: dropped, it would read
// the file's byte again.
func TestDropFileLeavesWrittenPages(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "lib")
	if err := os.WriteFile(path, bytes.Repeat([]byte{'f'}, 4*page), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Offsets 0 and 3 pages: not contiguous, so the kernel cannot merge the
	// two mappings into one.
	read, err := unix.Mmap(int(f.Fd()), 0, 2*page, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(read)
	relro, err := unix.Mmap(int(f.Fd()), int64(3*page), page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(relro)
	sum := read[0] + read[page]
	relro[0] = 'w'
	if err := unix.Mprotect(relro, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer pagemap.Close()
	present := func(b []byte) int {
		var n int
		e := make([]byte, 8)
		for off := 0; off < len(b); off += page {
			addr := uintptr(unsafe.Pointer(&b[off]))
			if _, err := pagemap.ReadAt(e, int64(addr/uintptr(page)*8)); err != nil {
				t.Fatal(err)
			}
			n += int(binary.LittleEndian.Uint64(e) >> 63)
		}
		return n
	}
	if got := present(read); got != 2 {
		t.Fatalf("before the drop %d of 2 read pages present", got)
	}
	n, err := dropFile(path)
	if err != nil {
		t.Fatalf("dropFile: %v", err)
	}
	if n != int64(2*page) {
		t.Errorf("dropped %d bytes, want %d: the read mapping only", n, 2*page)
	}
	if got := present(read); got != 0 {
		t.Errorf("after the drop %d of 2 read pages still present", got)
	}
	if relro[0] != 'w' {
		t.Fatalf("the written page was dropped: it reads %q, the file's byte", relro[0])
	}
	if read[0]+read[page] != sum {
		t.Fatal("the dropped pages read back otherwise than the file")
	}
}

// TestDropInPIEBuild runs the drop in a -buildmode=pie build of this
// package's tests (go build -buildmode=pie, as distributions package Go
// programs): there the dynamic loader has written the RELRO pages of a
// read-only mapping, and dropping them puts the unrelocated bytes back
// under the runtime, which crashes at its next collection. The child drops
// the executable, then collects twice.
func TestDropInPIEBuild(t *testing.T) {
	if os.Getenv("MEMTRIM_PIE_CHILD") != "" {
		t.Skip("in the PIE child")
	}
	bin := filepath.Join(t.TempDir(), "memtrim-pie.test")
	if out, err := exec.Command("go", "test", "-c", "-buildmode=pie", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building a PIE test binary: %v\n%s", err, out)
	}
	if out, err := exec.Command("file", bin).Output(); err == nil {
		t.Logf("%s", bytes.TrimSpace(out))
	}
	cmd := exec.Command(bin, "-test.run", "^(TestDropExecutableUnmapsCodeAndKeepsData|TestAfterEachGC)$", "-test.v")
	cmd.Env = append(os.Environ(), "MEMTRIM_PIE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestAfterEachGC")) {
		t.Fatalf("the drop in a PIE build: %v\n%s", err, out)
	}
}

// TestAfterEachGC: the hook runs after a garbage collection, and again
// after the next one (it re-arms itself).
func TestAfterEachGC(t *testing.T) {
	var n atomic.Int32
	afterEachGC(func() { n.Add(1) })
	for want := int32(1); want <= 2; want++ {
		deadline := time.Now().Add(10 * time.Second)
		for n.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("after %d collections the hook ran %d times", want, n.Load())
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestThrottle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	th := &throttle{every: time.Minute, last: t0}
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{{time.Second, false}, {59 * time.Second, false}, {60 * time.Second, true}, {61 * time.Second, false}, {121 * time.Second, true}} {
		if got := th.due(t0.Add(c.after)); got != c.want {
			t.Errorf("due at +%v = %v, want %v", c.after, got, c.want)
		}
	}
}

// BenchmarkDropExecutable is what a drop costs (after the first, with
// nothing left to drop: as after each forced collection). Its baseline,
// BenchmarkReadSmaps, is only the kernel's part of the way drops were made
// until 2026-11-28, reading /proc/self/smaps (docs/performance.md, "On 16
// CPUs").
func BenchmarkDropExecutable(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := dropExecutable(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadSmaps(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := os.ReadFile("/proc/self/smaps"); err != nil {
			b.Fatal(err)
		}
	}
}
