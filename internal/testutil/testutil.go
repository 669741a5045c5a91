// Package testutil holds the few helpers that several packages' tests share:
// running a child process and capturing what it wrote, finding the source
// line a workload marks, locating the shared fixtures next to the
// repository, and skipping a test in a way that CI can turn into a failure.
//
// It is imported by _test.go files only. Keeping one copy of each helper
// means a fix (for example to how an exit status is told from a failure to
// start) reaches every test at once.
package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Required is the environment switch that makes each optional test
// dependency mandatory. scripts/test sets all of them, so that CI fails
// rather than skips when a dependency is missing; docs/testing.md lists what
// each one covers.
const (
	HwlocRequired = "NUMASCOPE_HWLOC_REQUIRED" // the shared hwloc captures
	VMRequired    = "NUMASCOPE_VM_REQUIRED"    // QEMU and the Debian kernel
	PfmRequired   = "NUMASCOPE_PFM_REQUIRED"   // gcc and libpfm4
	StatsRequired = "NUMASCOPE_STATS_REQUIRED" // python3 with statsmodels
	// LstopoRequired: Debian's hwloc tools (lstopo), which read back the
	// XML of topology --format hwloc-xml.
	LstopoRequired = "NUMASCOPE_LSTOPO_REQUIRED"
	// MPIRequired: Debian's openmpi-bin (mpirun), which runs numascope
	// profile as the ranks of a real MPI job.
	MPIRequired = "NUMASCOPE_MPI_REQUIRED"
	// PrometheusRequired: Debian's prometheus, which scrapes numascope
	// exporter and runs the Grafana dashboard's queries, its promtool, which
	// lints the names, and prometheus-node-exporter, whose values the
	// exporter's must equal.
	PrometheusRequired = "NUMASCOPE_PROMETHEUS_REQUIRED"
)

// IsRequired reports whether the switch env is set.
func IsRequired(env string) bool { return os.Getenv(env) != "" }

// SkipUnless skips t with the reason, or fails it when the switch env is set:
// a test whose dependency is missing then cannot pass silently in CI.
func SkipUnless(t testing.TB, env, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if IsRequired(env) {
		t.Fatalf("%s is set but %s", env, msg)
	}
	t.Skipf("%s (set %s=1 to fail instead)", msg, env)
}

// RepoRoot is the directory holding go.mod, above the test's working
// directory (go test runs each package's tests in the package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if dir == filepath.Dir(dir) {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
}

// HwlocFixtures is the directory of hwloc's Linux captures
// (../shared/fixtures/hwloc-linux next to the repository) and its
// *.tar.bz2 tarballs. Without them the test skips, or fails when
// NUMASCOPE_HWLOC_REQUIRED is set: a plain checkout lacks ../shared, and the
// cross-checks against hwloc must not then pass having checked nothing.
func HwlocFixtures(t testing.TB) (dir string, tarballs []string) {
	t.Helper()
	dir = filepath.Join(filepath.Dir(RepoRoot(t)), "shared", "fixtures", "hwloc-linux")
	tarballs, _ = filepath.Glob(filepath.Join(dir, "*.tar.bz2"))
	if len(tarballs) == 0 {
		SkipUnless(t, HwlocRequired, "no hwloc captures (*.tar.bz2) in %s; they live in ../shared next to the repository", dir)
	}
	return dir, tarballs
}

// Lstopo is the path of hwloc's lstopo: lstopo-no-graphics, which both
// Debian's hwloc and hwloc-nox install, else lstopo. Without either the test
// skips, or fails when NUMASCOPE_LSTOPO_REQUIRED is set, as scripts/test
// does: the hwloc round trip must not pass in CI having checked nothing.
func Lstopo(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"lstopo-no-graphics", "lstopo"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	SkipUnless(t, LstopoRequired, "hwloc's lstopo is not installed (sudo scripts/install-test-deps installs Debian's hwloc)")
	return ""
}

// Mpirun is the path of Open MPI's mpirun. Without it the test skips, or
// fails when NUMASCOPE_MPI_REQUIRED is set, as scripts/test does: the
// multi-rank profile must not pass in CI having checked nothing.
func Mpirun(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		SkipUnless(t, MPIRequired, "Open MPI's mpirun is not installed (sudo scripts/install-test-deps installs Debian's openmpi-bin)")
	}
	return p
}

// Prometheus is the path of the Prometheus server (Debian's prometheus
// package). Without it the test skips, or fails when
// NUMASCOPE_PROMETHEUS_REQUIRED is set, as scripts/test does: the exporter
// must not pass in CI without having been scraped by the real server.
func Prometheus(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		SkipUnless(t, PrometheusRequired, "prometheus is not installed (sudo scripts/install-test-deps installs Debian's prometheus)")
	}
	return p
}

// Promtool is the path of Prometheus's promtool (Debian's prometheus
// package ships it beside the server). Without it the test skips, or fails
// when NUMASCOPE_PROMETHEUS_REQUIRED is set, as scripts/test does: the
// exporter's names must not pass in CI without the real linter's check.
func Promtool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		SkipUnless(t, PrometheusRequired, "promtool is not installed (sudo scripts/install-test-deps installs Debian's prometheus, which ships it)")
	}
	return p
}

// NodeExporter is the path of Debian's node_exporter
// (prometheus-node-exporter), the independent reference the exporter's
// values are compared with. Without it the test skips, or fails when
// NUMASCOPE_PROMETHEUS_REQUIRED is set, as scripts/test does.
func NodeExporter(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		SkipUnless(t, PrometheusRequired, "prometheus-node-exporter is not installed (sudo scripts/install-test-deps installs it)")
	}
	return p
}

// TouchPages maps n fresh anonymous pages, without transparent huge pages,
// and writes to each: a workload that allocates exactly n pages (numa_hit
// and the page-fault counters grow by at least n). Helper processes of
// several packages' tests call it.
func TouchPages(t testing.TB, n int) {
	t.Helper()
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, n*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE) // one fault, one allocation per page
	for i := 0; i < n; i++ {
		mem[i*page] = 1
	}
}

// Get does req and returns the status and body; a request that fails
// fails t.
func Get(t testing.TB, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, string(b)
}

// Run runs cmd and returns its stdout, its stderr and its exit status (-1
// when a signal ended it). A command that could not be started fails t.
func Run(t testing.TB, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v\nstderr: %s", strings.Join(cmd.Args, " "), err, errb.String())
	}
	return out.String(), errb.String(), code
}

// MarkedLine is the 1-based number of the first of lines that holds the
// comment /* @mark */, the way the workloads in testdata/workloads tag the
// lines the profile tests look for. A missing mark fails t.
func MarkedLine(t testing.TB, lines []string, mark string) int {
	t.Helper()
	for i, l := range lines {
		if strings.Contains(l, "/* @"+mark+" */") {
			return i + 1
		}
	}
	t.Fatalf("no line marked @%s", mark)
	return 0
}

// MarkedLineIn is MarkedLine over the file at path.
func MarkedLineIn(t testing.TB, path, mark string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return MarkedLine(t, lines, mark)
}

// NoRoot lets a developer without root run the other tests. Without it a test
// that needs root fails rather than skip silently: CI runs as root.
const NoRoot = "NUMASCOPE_TEST_NO_ROOT"

// RequireRoot fails t unless the process is root, or skips it when
// NUMASCOPE_TEST_NO_ROOT is set. why says what root is needed for.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if IsRequired(NoRoot) {
		t.Skipf("needs root %s (%s is set)", why, NoRoot)
	}
	t.Fatalf("needs root %s; run as root, or set %s=1 to skip", why, NoRoot)
}

// NotPermitted is for a test whose subject the kernel keeps from this
// process (perf events counted per CPU, tracepoints, tracefs); the message
// says what and why. As root, where CI runs, the subject must be there, so
// the test fails. Otherwise RequireRoot's rule applies: the test fails
// unless NUMASCOPE_TEST_NO_ROOT is set, which skips it on a developer
// machine.
func NotPermitted(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Geteuid() == 0 {
		t.Fatalf("as root: %s", msg)
	}
	if IsRequired(NoRoot) {
		t.Skipf("not root: %s (%s is set)", msg, NoRoot)
	}
	t.Fatalf("not root: %s; run as root, or set %s=1 to skip", msg, NoRoot)
}

// SmallFS mounts a 64 KiB tmpfs in a temporary directory, unmounted at the
// end of the test, and fills it with a file so that only about free bytes
// are left (0: full): a real full disk, for the tests of what a writer does
// on ENOSPC. It needs root (RequireRoot).
func SmallFS(t testing.TB, free int64) string {
	t.Helper()
	RequireRoot(t, "to mount a small tmpfs (a real full disk)")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if free > 0 {
		if err := f.Truncate(size - free); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, unix.ENOSPC) {
		t.Fatal(err)
	}
	return dir
}

// CopyTree copies a captured tree (regular files and directories) into a
// new temporary directory, so that a test may change its files.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "root")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}
