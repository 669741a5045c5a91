package bench

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/numascope/numascope/internal/testutil"
)

// TestChainMatchesC: testdata/bench/chase.c, the C baseline of the latency
// (scripts/bench-numa), builds the very chain BuildChain does, so that the
// two are compared over the same loads. It needs gcc, which the profiler's
// tests need too (NUMASCOPE_VM_REQUIRED makes its absence a failure).
func TestChainMatchesC(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipUnless(t, testutil.VMRequired, "no gcc to build testdata/bench/chase.c")
	}
	bin := filepath.Join(t.TempDir(), "chase")
	src := filepath.Join(testutil.RepoRoot(t), "testdata", "bench", "chase.c")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc chase.c: %v\n%s", err, out)
	}
	const size, line = 40 * ChainPage, 64
	lines := size / line
	out, err := exec.Command(bin, "--size", strconv.Itoa(size), "--order", strconv.Itoa(lines)).Output()
	if err != nil {
		t.Fatalf("chase --order: %v", err)
	}
	cOffs := strings.Fields(string(out))
	buf := mapped(t, size)
	start, n := BuildPageLocalChain(buf, line, ChainSeed)
	if n != lines || len(cOffs) != lines {
		t.Fatalf("Go %d lines, C printed %d offsets, want %d", n, len(cOffs), lines)
	}
	base := uintptr(unsafe.Pointer(&buf[0]))
	p := start
	for i, s := range cOffs {
		if got := strconv.Itoa(int(uintptr(p) - base)); got != s {
			t.Fatalf("line %d of the chain: Go at offset %s, C at %s", i, got, s)
		}
		p = *(*unsafe.Pointer)(p)
	}
}
