package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/memtrim"
)

// residentReadOnly returns the KiB of path's code and read-only data
// resident in process pid, from its smaps.
func residentReadOnly(t *testing.T, pid int, path string) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kib, mine := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			mine = len(fs) >= 6 && strings.Join(fs[5:], " ") == path && (fs[1] == "r-xp" || fs[1] == "r--p")
			continue
		}
		if mine && len(fs) >= 2 && fs[0] == "Rss:" {
			n, _ := strconv.Atoi(fs[1])
			kib += n
		}
	}
	return kib
}

// TestStatHandsBackStartupPages runs `stat -i 1s` past the second drop of
// the binary's pages (memtrim.Settle) and checks how much of the binary's
// code and read-only data is still resident. Start-up touches most of it
// (12.9 MiB before the drops, with the kernel's 64 KiB fault-around); the
// sampling loop needs about 2.2 MiB. The bound, 6 MiB, is not a timing: it
// leaves room for another kernel's fault-around or a larger loop, and
// fails when a session stops dropping the pages.
func TestStatHandsBackStartupPages(t *testing.T) {
	exe, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "stat", "-i", "1s")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	time.Sleep(memtrim.Settle + 2*time.Second)
	kib := residentReadOnly(t, cmd.Process.Pid, exe)
	t.Logf("the binary's code and read-only data resident after %v: %d KiB", memtrim.Settle+2*time.Second, kib)
	if kib == 0 {
		t.Fatalf("no mapping of %s found in the process's smaps", exe)
	}
	if kib > 6<<10 {
		t.Errorf("%d KiB of the binary's code and read-only data still resident: want at most 6 MiB (start-up's pages are not handed back)", kib)
	}
}
