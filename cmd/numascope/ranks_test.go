package main

// Studies across many hosts (issue 17): -o's %-sequences, and the profiles
// of a real MPI job's ranks merged by numascope report.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/outname"
	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/testutil"
)

// touchPagesEnv makes the test binary a workload: it touches
// (rank+1) × $NUMASCOPE_TEST_TOUCH_PAGES pages, its rank from the MPI
// environment, so that each rank's profile has a known lower bound of first
// touches of its own.
const touchPagesEnv = "NUMASCOPE_TEST_TOUCH_PAGES"

func rankTouchHelper() {
	n, _ := strconv.Atoi(os.Getenv(touchPagesEnv))
	if n <= 0 {
		return
	}
	r, _ := outname.Rank(os.Getenv)
	rank, _ := strconv.Atoi(r)
	n *= rank + 1
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, n*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mmap:", err)
		os.Exit(1)
	}
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE) // one first touch per base page
	for i := 0; i < n; i++ {
		mem[i*page] = 1
	}
	os.Exit(0)
}

// runEnv is run with extra environment, the rank variables cleared first.
func runEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if k != "OMPI_COMM_WORLD_RANK" && k != "PMI_RANK" && k != "SLURM_PROCID" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(append(cmd.Env, "XDG_RUNTIME_DIR="+t.TempDir()), env...)
	return testutil.Run(t, cmd)
}

// TestMPIProfileRanks runs numascope profile as the three ranks of a real
// Open MPI job on this machine, each profiling a workload that touches
// (rank+1) × 256 pages: the three files are named by host and rank, each
// records its rank and host, and numascope report merges them into totals
// that are the sums of the files, with a line per rank.
func TestMPIProfileRanks(t *testing.T) {
	mpirun := testutil.Mpirun(t)
	testutil.RequireRoot(t, "for perf sampling of the ranks (numascope profile)")
	dir := t.TempDir()
	const pages = 256
	cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "3",
		"-x", touchPagesEnv+"="+strconv.Itoa(pages),
		binary, "profile", "-o", filepath.Join(dir, "prof.%h.%r.json"), "--", os.Args[0])
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	if out, errs, code := testutil.Run(t, cmd); code != 0 {
		t.Fatalf("mpirun: exit %d\n%s\n%s", code, out, errs)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host = outname.Sanitize(host)
	files, _ := filepath.Glob(filepath.Join(dir, "prof.*.json"))
	var want []string
	for r := 0; r < 3; r++ {
		want = append(want, filepath.Join(dir, fmt.Sprintf("prof.%s.%d.json", host, r)))
	}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	var sumFirst, sumSamples uint64
	for r, f := range files {
		p, err := profile.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rank != strconv.Itoa(r) || outname.Sanitize(p.Host) != host {
			t.Errorf("%s records rank %q on %q", f, p.Rank, p.Host)
		}
		if p.Totals.FirstTouch < uint64(pages*(r+1)) {
			t.Errorf("%s: %d first touches, the workload touched %d pages", f, p.Totals.FirstTouch, pages*(r+1))
		}
		sumFirst += p.Totals.FirstTouch
		sumSamples += p.Samples
	}

	out, errs, code := run(t, append([]string{"report"}, files...)...)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "Profiles of 3 ranks") || !strings.Contains(out, fmt.Sprintf("%d page faults sampled", sumSamples)) {
		t.Errorf("report heading:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^first touch \(base pages\)\s+` + strconv.FormatUint(sumFirst, 10) + `\s`).MatchString(out) {
		t.Errorf("report's first-touch total is not the files' sum %d:\n%s", sumFirst, out)
	}
	for r, f := range files {
		p, _ := profile.Load(f)
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+%s\s+0\s+\S+\s+%d\s+%d\s+%d\s`, r, regexp.QuoteMeta(p.Host), p.Samples, p.Lost, p.Totals.FirstTouch))
		if !line.MatchString(out) {
			t.Errorf("report has no line for rank %d (%d samples, %d first touches):\n%s", r, p.Samples, p.Totals.FirstTouch, out)
		}
	}

	// A rank file cut off mid-write: a one-line error naming it.
	b, _ := os.ReadFile(files[1])
	cut := filepath.Join(dir, "prof.cut.json")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run(t, "report", files[0], cut, files[2])
	if code == 0 || !strings.Contains(errs, cut) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("report of a cut-off file: exit %d, %q", code, errs)
	}
}

// TestOutputPatterns checks -o's sequences end to end: %r without a rank is
// a one-line error naming the variables, an unknown sequence too, a hostile
// rank stays in the directory named, and the expanded name gets the usual
// output checks (no overwrite without --force, never through a planted
// symbolic link).
func TestOutputPatterns(t *testing.T) {
	dir := t.TempDir()
	_, errs, code := runEnv(t, nil, "record", "-o", filepath.Join(dir, "r.%r.jsonl"), "-n", "1")
	if code == 0 || !strings.Contains(errs, "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("%%r without a rank: exit %d, %q", code, errs)
	}
	_, errs, code = runEnv(t, nil, "profile", "-o", filepath.Join(dir, "p.%y.json"), "--", "true")
	if code == 0 || !strings.Contains(errs, `unknown sequence "%y"`) {
		t.Errorf("unknown sequence: exit %d, %q", code, errs)
	}
	_, errs, code = runEnv(t, []string{"PMI_RANK=../../escaped"}, "record", "-o", filepath.Join(dir, "r.%r.%p.jsonl"), "-n", "1", "-i", "10ms")
	if code != 0 {
		t.Fatalf("record with a hostile rank: exit %d: %s", code, errs)
	}
	got, _ := filepath.Glob(filepath.Join(dir, "r.*.jsonl"))
	if len(got) != 1 || !regexp.MustCompile(`^r\.\.\._\.\._escaped\.[0-9]+\.jsonl$`).MatchString(filepath.Base(got[0])) {
		t.Errorf("recordings in %s: %v", dir, got)
	}
	_, errs, code = runEnv(t, []string{"SLURM_PROCID=.."}, "record", "-o", filepath.Join(dir, "%r"), "-n", "1")
	if code == 0 || !strings.Contains(errs, `".."`) {
		t.Errorf("a rank of ..: exit %d, %q", code, errs)
	}

	// A symbolic link planted at the name %r expands to.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "p.5.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, errs, code = runEnv(t, []string{"SLURM_PROCID=5"}, "profile", "-o", filepath.Join(dir, "p.%r.json"), "--", "true")
	if code == 0 || !strings.Contains(errs, "already exists") {
		t.Errorf("profile onto a planted link: exit %d, %q", code, errs)
	}
	_, errs, code = runEnv(t, []string{"SLURM_PROCID=5"}, "record", "-o", filepath.Join(dir, "p.%r.json"), "-n", "1", "--force")
	if code == 0 || !strings.Contains(errs, "symbolic link") {
		t.Errorf("record --force through a planted link: exit %d, %q", code, errs)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	if testutil.IsRequired(testutil.NoRoot) && os.Geteuid() != 0 {
		return // profile needs perf sampling
	}
	_, errs, code = runEnv(t, []string{"SLURM_PROCID=5"}, "profile", "-o", filepath.Join(dir, "p.%r.json"), "--force", "--", "true")
	if code != 0 {
		t.Fatalf("profile --force: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	var p profile.Profile
	b, _ := os.ReadFile(link)
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() || json.Unmarshal(b, &p) != nil || p.Rank != "5" {
		t.Errorf("%s after --force: %v, rank %q", link, err, p.Rank)
	}
}
