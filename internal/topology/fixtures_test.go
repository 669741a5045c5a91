package topology

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// This file gives the tests access to the shared hwloc fixture trees: it finds
// ../shared next to the repository, and extracts every tarball once per test
// binary (extracting 42 trees per subtest would dominate the run time).

// TestMain removes the extracted fixture trees after all tests ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if extractRoot != "" {
		os.RemoveAll(extractRoot)
	}
	os.Exit(code)
}

// hwlocFixtureDir returns the directory of the hwloc fixtures. Without them
// (a plain checkout lacks ../shared) it skips the test, or fails it when
// NUMASCOPE_HWLOC_REQUIRED is set, as scripts/test does.
func hwlocFixtureDir(t testing.TB) string {
	t.Helper()
	dir, _ := testutil.HwlocFixtures(t)
	return dir
}

var (
	extractOnce  sync.Once
	extractRoot  string
	extractTrees map[string]string // tarball base name -> root holding sys/ and proc/
	extractErrs  map[string]error
)

// fixtureTrees extracts every *.tar.bz2 of dir once, in parallel, and returns
// the root of each tree by tarball base name (without .tar.bz2).
func fixtureTrees(t testing.TB, dir string) (map[string]string, map[string]error) {
	t.Helper()
	extractOnce.Do(func() {
		extractTrees, extractErrs = map[string]string{}, map[string]error{}
		removeStale(scratchDir())
		root, err := os.MkdirTemp(scratchDir(), "numascope-hwloc-")
		if err != nil {
			extractErrs["*"] = err
			return
		}
		extractRoot = root
		balls, _ := filepath.Glob(filepath.Join(dir, "*.tar.bz2"))
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for _, b := range balls {
			name := strings.TrimSuffix(filepath.Base(b), ".tar.bz2")
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				dest := filepath.Join(root, name)
				tree, err := extractTarBz2(b, dest)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					extractErrs[name] = err
					return
				}
				extractTrees[name] = tree
			}()
		}
		wg.Wait()
	})
	if err := extractErrs["*"]; err != nil {
		t.Fatalf("extracting fixtures: %v", err)
	}
	return extractTrees, extractErrs
}

// scratchDir picks where to extract the fixtures. The trees are 60,000 tiny
// files; on a disk-backed /tmp creating and removing them can take a minute on
// a busy machine, on tmpfs a few seconds. So /dev/shm is used when it is a
// directory with room to spare (containers often give it only 64 MiB), unless
// the user chose a TMPDIR.
func scratchDir() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err == nil && uint64(st.Bavail)*uint64(st.Bsize) > 2<<30 {
		if f, err := os.MkdirTemp("/dev/shm", "probe-"); err == nil {
			os.Remove(f)
			return "/dev/shm"
		}
	}
	return ""
}

// removeStale deletes extraction directories that a crashed test binary
// (a panic skips TestMain's cleanup) left behind more than a day ago: on
// tmpfs they hold memory.
func removeStale(dir string) {
	if dir == "" {
		dir = os.TempDir()
	}
	old, _ := filepath.Glob(filepath.Join(dir, "numascope-hwloc-*"))
	for _, p := range old {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(p)
		}
	}
}

// extractTarBz2 extracts a hwloc-gather-topology tarball into dest and
// returns the directory that holds sys/ (hwloc's HWLOC_FSROOT): the tarballs
// hold the tree under one top-level directory whose name is not always the
// tarball's (20s390-2g6s4c.tar.bz2 holds 20s390-2g2g2s4co/).
//
// Symbolic links are what sysfs is made of (nodeN/cpuM, cpuN/nodeM, device
// links), so they are kept. Relative targets are kept as they are when they
// stay inside the tree; absolute targets are rewritten relative to the link
// so that "/sys/devices/..." means <tree>/sys/devices rather than the host's
// /sys. Links that would leave the tree are dropped: a fixture must never
// make a test read the host.
func extractTarBz2(tarball, dest string) (string, error) {
	r, wait, err := openBzip2(tarball)
	if err != nil {
		return "", err
	}
	top, err := extractTar(tar.NewReader(r), tarball, dest)
	if werr := wait(); err == nil && werr != nil {
		err = fmt.Errorf("%s: %w", tarball, werr)
	}
	return top, err
}

// openBzip2 returns the decompressed stream of a .bz2 file. It uses the
// system's bzip2 when there is one: compress/bzip2 is correct but, under the
// race detector (which instruments the standard library too), about thirty
// times slower, which alone would take the suite past a minute. Without a
// bzip2 binary it falls back to compress/bzip2. wait reports the
// decompressor's failure once the stream was read.
func openBzip2(path string) (r io.Reader, wait func() error, err error) {
	if bin, lerr := exec.LookPath("bzip2"); lerr == nil {
		cmd := exec.Command(bin, "-dc", path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err == nil {
			if err = cmd.Start(); err == nil {
				return out, func() error {
					// Drain what tar did not read so bzip2 is not killed by SIGPIPE.
					io.Copy(io.Discard, out)
					if err := cmd.Wait(); err != nil {
						return fmt.Errorf("bzip2: %v: %s", err, strings.TrimSpace(stderr.String()))
					}
					return nil
				}, nil
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return bzip2.NewReader(f), f.Close, nil
}

func extractTar(tr *tar.Reader, tarball, dest string) (string, error) {
	made := map[string]bool{}
	mkdir := func(dir string) error {
		if made[dir] {
			return nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		made[dir] = true
		return nil
	}
	type link struct{ path, target string }
	var links []link
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", tarball, err)
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") || skipEntry(name) {
			continue
		}
		p := filepath.Join(dest, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := mkdir(p); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := mkdir(filepath.Dir(p)); err != nil {
				return "", err
			}
			w, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			_, err = io.Copy(w, tr)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", err
			}
		case tar.TypeSymlink:
			links = append(links, link{p, h.Linkname})
		case tar.TypeLink:
			links = append(links, link{p, "\x00" + filepath.Join(dest, filepath.Clean(h.Linkname))})
		}
	}
	top := dest
	if _, err := os.Stat(filepath.Join(dest, "sys")); err != nil {
		ents, _ := os.ReadDir(dest)
		if len(ents) == 1 && ents[0].IsDir() {
			top = filepath.Join(dest, ents[0].Name())
		}
	}
	// Links are made last so that hard links find their targets.
	for _, l := range links {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
			return "", err
		}
		if strings.HasPrefix(l.target, "\x00") {
			if err := os.Link(l.target[1:], l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			continue
		}
		target := l.target
		if filepath.IsAbs(target) {
			rel, err := filepath.Rel(filepath.Dir(l.path), filepath.Join(top, target))
			if err != nil {
				continue
			}
			target = rel
		}
		resolved := filepath.Join(filepath.Dir(l.path), target)
		if resolved != top && !strings.HasPrefix(resolved, top+string(filepath.Separator)) {
			continue
		}
		if err := os.Symlink(target, l.path); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return top, nil
}

// skipPatterns name the parts of the captured trees that topology discovery
// never reads: PCI and ACPI devices, memory blocks, the device tree, the
// virtual devices but the memory tiers, and in
// CPU directories everything but topology, caches and online state. They are
// most of the 90,000 entries of the fixtures; not creating them keeps the
// suite fast. Each pattern is matched against the entry's path below the
// tarball's top directory, one path element per pattern element.
var skipPatterns = [][]string{
	{"sys", "bus"}, {"sys", "class"}, {"sys", "block"}, {"sys", "firmware"},
	{"sys", "kernel"}, {"sys", "module"}, {"sys", "devices", "pci*"},
	{"sys", "devices", "LNXSYSTM*"}, {"sys", "devices", "platform"},
	{"sys", "devices", "system", "memory"},
	// memoryN block links, not memory_side_cache, which discovery reads.
	{"sys", "devices", "system", "node", "node*", "memory[0-9]*"},
	{"sys", "devices", "system", "node", "node*", "hugepages"},
	{"proc", "device-tree"},
}

// cpuKeep and cacheKeep list what discovery reads in cpuN and cpuN/cache/indexM.
var (
	cpuKeep   = map[string]bool{"topology": true, "cache": true, "online": true}
	cacheKeep = map[string]bool{"level": true, "type": true, "size": true, "coherency_line_size": true,
		"ways_of_associativity": true, "number_of_sets": true, "physical_line_partition": true, "shared_cpu_list": true, "shared_cpu_map": true}
)

func skipEntry(name string) bool {
	parts := strings.Split(filepath.ToSlash(name), "/")
	if len(parts) > 0 && parts[0] != "sys" && parts[0] != "proc" {
		parts = parts[1:] // the tarball's top directory
	}
	for _, p := range skipPatterns {
		if len(parts) < len(p) {
			continue
		}
		match := true
		for i, pat := range p {
			if ok, _ := filepath.Match(pat, parts[i]); !ok {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	// Of devices/virtual only the memory tiers are read.
	if len(parts) >= 4 && parts[0] == "sys" && parts[1] == "devices" && parts[2] == "virtual" && parts[3] != "memory_tiering" {
		return true
	}
	if len(parts) >= 6 && parts[0] == "sys" && parts[1] == "devices" && parts[2] == "system" && parts[3] == "cpu" {
		if _, ok := numbered(parts[4], "cpu"); ok {
			if !cpuKeep[parts[5]] && !strings.HasPrefix(parts[5], "node") {
				return true
			}
			if parts[5] == "cache" && len(parts) >= 8 && !cacheKeep[parts[7]] {
				return true
			}
		}
	}
	return false
}

// hwlocTest is one .test file of hwloc's test-topology.sh harness.
type hwlocTest struct {
	name    string
	source  string // tarball base name
	target  string // expected output file name
	options []string
	env     map[string]string
}

func parseHwlocTest(path string) (hwlocTest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return hwlocTest{}, err
	}
	ht := hwlocTest{name: strings.TrimSuffix(filepath.Base(path), ".test"), env: map[string]string{}}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "source":
			ht.source = strings.TrimSuffix(v, ".tar.bz2")
		case "target":
			ht.target = v
		case "options":
			ht.options = strings.Fields(v)
		case "env":
			if ek, ev, ok := strings.Cut(v, "="); ok && !strings.HasPrefix(v, "export ") {
				ht.env[ek] = strings.Trim(ev, `"`)
			}
		}
	}
	if ht.source == "" || ht.target == "" {
		return ht, fmt.Errorf("%s: no source or target line", path)
	}
	return ht, nil
}

func (ht hwlocTest) hasOption(o string) bool { return slices.Contains(ht.options, o) }

// TestExtractTarLinks checks the link handling of the fixture extraction on
// a tarball built here: relative links kept, absolute links rebased under the
// tree, links leaving the tree dropped, hard links made.
func TestExtractTarLinks(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink || h.Typeflag == tar.TypeDir {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(body))
		}
	}
	add(&tar.Header{Name: "m/", Typeflag: tar.TypeDir, Mode: 0o555}, "")
	add(&tar.Header{Name: "m/sys/devices/system/cpu/cpu0/online", Typeflag: tar.TypeReg}, "1\n")
	add(&tar.Header{Name: "m/sys/devices/system/node/node0/cpu0", Typeflag: tar.TypeSymlink, Linkname: "../../cpu/cpu0"}, "")
	add(&tar.Header{Name: "m/sys/devices/system/node/node0/abs", Typeflag: tar.TypeSymlink, Linkname: "/sys/devices/system/cpu/cpu0"}, "")
	add(&tar.Header{Name: "m/sys/devices/system/node/node0/escape", Typeflag: tar.TypeSymlink, Linkname: "../../../../../../etc"}, "")
	add(&tar.Header{Name: "m/proc/hard", Typeflag: tar.TypeLink, Linkname: "m/sys/devices/system/cpu/cpu0/online"}, "")
	add(&tar.Header{Name: "../outside", Typeflag: tar.TypeReg}, "x")
	add(&tar.Header{Name: "m/sys/bus/pci/devices/x", Typeflag: tar.TypeReg}, "skipped")
	tw.Close()

	dest := t.TempDir()
	top, err := extractTar(tar.NewReader(&buf), "test.tar", dest)
	if err != nil {
		t.Fatal(err)
	}
	if top != filepath.Join(dest, "m") {
		t.Errorf("top = %q", top)
	}
	node := filepath.Join(top, "sys/devices/system/node/node0")
	for _, l := range []string{"cpu0", "abs"} {
		b, err := os.ReadFile(filepath.Join(node, l, "online"))
		if err != nil || string(b) != "1\n" {
			t.Errorf("link %s: %q, %v", l, b, err)
		}
	}
	if target, _ := os.Readlink(filepath.Join(node, "abs")); filepath.IsAbs(target) {
		t.Errorf("absolute link kept as %q", target)
	}
	for _, p := range []string{filepath.Join(node, "escape"), filepath.Join(dest, "..", "outside"), filepath.Join(top, "sys/bus")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(top, "proc/hard")); err != nil || string(b) != "1\n" {
		t.Errorf("hard link: %q, %v", b, err)
	}
}
