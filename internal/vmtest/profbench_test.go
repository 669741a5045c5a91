package vmtest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

// profbench (testdata/workloads/profbench.c) is the workload of the profile
// slowdown benchmark (scripts/bench-profile). A benchmark of a workload that
// computes the wrong thing measures nothing, so its checksum is checked here,
// on the build machine (no VM), against the same arithmetic done in Go, and
// for several thread counts: the answer must not depend on how the work is
// split or scheduled.

// The constants of profbench's --compute update.
const (
	pbLCGMul  = 6364136223846793005
	pbLCGAdd  = 1442695040888963407
	pbInitMul = 0x9E3779B97F4A7C15
)

// pbCompute is profbench --compute's checksum over mb MiB: every word
// x[i] = i*pbInitMul gets iters*sweeps updates, then contributes
// x[i]*(2i+1) (mod 2^64).
func pbCompute(mb, iters, sweeps int) uint64 {
	var sum uint64
	n := uint64(mb) << 20 / 8
	for i := uint64(0); i < n; i++ {
		x := i * pbInitMul
		for k := 0; k < iters*sweeps; k++ {
			v := x*pbLCGMul + pbLCGAdd
			x = v ^ v>>29
		}
		sum += x * (2*i + 1)
	}
	return sum
}

// pbFaults is profbench --faults's checksum: in round r, page g of the mb
// MiB holds g*rounds + r + 1, and every page is read back once per round.
func pbFaults(mb, rounds int) uint64 {
	var sum uint64
	pages := uint64(mb) << 20 / uint64(pageSize)
	for g := uint64(0); g < pages; g++ {
		for r := uint64(0); r < uint64(rounds); r++ {
			sum += g*uint64(rounds) + r + 1
		}
	}
	return sum
}

func TestProfBenchChecksum(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		// scripts/install-test-deps installs gcc with the VM's dependencies,
		// so the switch that makes the VM required makes this required too.
		testutil.SkipUnless(t, testutil.VMRequired, "gcc not found: profbench.c cannot be built (scripts/install-test-deps installs it)")
	}
	bin := filepath.Join(t.TempDir(), "profbench")
	src := filepath.Join("..", "..", "testdata", "workloads", "profbench.c")
	// The flags of scripts/bench-profile.
	if out, err := exec.Command(gcc, "-static", "-O2", "-g", "-Wall", "-Werror", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v: %s", src, err, out)
	}
	run := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		args = append(args, "--lead", "0", "--linger", "0")
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("profbench %s: %v: %s", strings.Join(args, " "), err, out)
		}
		line, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "@wl ")
		if !ok {
			t.Fatalf("profbench %s printed %q, want one @wl line", strings.Join(args, " "), out)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatalf("profbench %s: result %q is not JSON: %v", strings.Join(args, " "), line, err)
		}
		if s, _ := res["seconds"].(float64); s <= 0 {
			t.Errorf("profbench %s: seconds %v, want > 0", strings.Join(args, " "), res["seconds"])
		}
		return res
	}
	checksum := func(t *testing.T, res map[string]any) uint64 {
		t.Helper()
		s, _ := res["checksum"].(string)
		v, err := strconv.ParseUint(s, 16, 64)
		if err != nil || len(s) != 16 {
			t.Fatalf("checksum %q is not 16 hex digits", s)
		}
		return v
	}

	// 1 MiB is four 256 KiB blocks; split three ways, each thread's part
	// ends in a partial block.
	const mb, iters, sweeps, rounds = 1, 2, 3, 3
	wantCompute, wantFaults := pbCompute(mb, iters, sweeps), pbFaults(mb, rounds)
	for _, threads := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("compute/%d", threads), func(t *testing.T) {
			res := run(t, "--compute", "--threads", fmt.Sprint(threads), "--mb", fmt.Sprint(mb),
				"--iters", fmt.Sprint(iters), "--sweeps", fmt.Sprint(sweeps))
			if got := checksum(t, res); got != wantCompute {
				t.Errorf("checksum %016x, want %016x", got, wantCompute)
			}
			if res["threads"] != float64(threads) || res["pages"] != float64(mb<<20/pageSize) {
				t.Errorf("threads %v pages %v, want %d and %d", res["threads"], res["pages"], threads, mb<<20/pageSize)
			}
		})
		t.Run(fmt.Sprintf("faults/%d", threads), func(t *testing.T) {
			res := run(t, "--faults", "--threads", fmt.Sprint(threads), "--mb", fmt.Sprint(mb), "--rounds", fmt.Sprint(rounds))
			if got := checksum(t, res); got != wantFaults {
				t.Errorf("checksum %016x, want %016x", got, wantFaults)
			}
			if want := rounds * mb << 20 / pageSize; res["faults"] != float64(want) {
				t.Errorf("faults %v, want %d", res["faults"], want)
			}
		})
	}
	// The work must matter: other sizes give other answers.
	if pbCompute(mb, iters, sweeps+1) == wantCompute || pbFaults(mb, rounds+1) == wantFaults {
		t.Fatal("the checksums do not depend on the work done")
	}

	// --now is the clock scripts/bench-profile uses where the shell has none.
	out, err := exec.Command(bin, "--now").Output()
	if err != nil {
		t.Fatalf("profbench --now: %v", err)
	}
	if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err != nil || v <= 0 {
		t.Errorf("profbench --now printed %q, want CLOCK_MONOTONIC seconds", out)
	}
}
