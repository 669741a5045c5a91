package memtrim

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	if got := readOnlyMappings([]byte("00400000-00d2e000 r-xp 00000000 08:01 12 /x/ns\nAnonymous: 0 kB\n"), "/x/ns"); len(got) != 1 {
		t.Fatalf("after the drop: %v", got)
	}
}

// TestReadOnlyMappings: only the file's own pages are dropped, so the
// private read-only mappings whose Anonymous is 0 are taken, of that file
// only; a read-only mapping with written pages (RELRO: the .data.rel.ro
// that the dynamic loader relocates in a -buildmode=pie build, which faults
// the runtime when it is dropped) is left, as is one smaps says nothing of.
func TestReadOnlyMappings(t *testing.T) {
	smaps := `00400000-00d2e000 r-xp 00000000 08:01 12 /usr/bin/numa scope
Size:               9400 kB
Rss:                3000 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00d2e000-0166b000 r--p 0092e000 08:01 12 /usr/bin/numa scope
Rss:                2000 kB
Anonymous:             0 kB
0166b000-01753000 r--p 0126b000 08:01 12 /usr/bin/numa scope
Rss:                 244 kB
Anonymous:           244 kB
01753000-01760000 r--p 01353000 08:01 12 /usr/bin/numa scope
Rss:                   4 kB
01760000-01770000 rw-p 01360000 08:01 12 /usr/bin/numa scope
Anonymous:             0 kB
01770000-039c6000 rw-p 00000000 00:00 0
Anonymous:          1000 kB
7f0000000000-7f0000001000 r--p 00000000 08:01 13 /usr/bin/numa scope2
Anonymous:             0 kB
7f0000002000-7f0000003000 r--s 00000000 08:01 12 /usr/bin/numa scope
Anonymous:             0 kB
7ffc0a58d000-7ffc0a5ae000 rw-p 00000000 00:00 0 [stack]
Anonymous:           132 kB
`
	got := readOnlyMappings([]byte(smaps), "/usr/bin/numa scope")
	want := []mapping{{0x400000, 0xd2e000}, {0xd2e000, 0x166b000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("readOnlyMappings = %#v, want %#v (code and read-only data, private, holding only the file's pages, of that file only)", got, want)
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
