package cli

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// fifoTree copies the two-node tree of the sensor tests and puts a real
// FIFO in the place of each of files (relative to the tree), as a user who
// can write a tree given with --root would: issue 28, finding 6.
func fifoTree(t *testing.T, files ...string) string {
	t.Helper()
	root := testutil.CopyTree(t, filepath.Join("..", "sensor", "testdata", "twonode"))
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// hangLimit is how long a command may take to print or to end: the FIFO
// made the old code wait forever in open(2), deaf to signals.
const hangLimit = 10 * time.Second

// runUntil starts numascope args, waits until its stdout has a line
// holding ready, sends sig and waits for it to end, each within hangLimit;
// a hang fails the test (the process group is killed at its end). It
// returns stdout and stderr.
func runUntil(t *testing.T, args []string, ready string, sig syscall.Signal) (string, string) {
	t.Helper()
	cmd := numascopeCmd(args)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var (
		mu    sync.Mutex
		lines strings.Builder
	)
	seen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			mu.Lock()
			lines.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !once && strings.Contains(sc.Text(), ready) {
				once = true
				close(seen)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	stdout := func() string {
		mu.Lock()
		defer mu.Unlock()
		return lines.String()
	}
	select {
	case <-seen:
	case <-time.After(hangLimit):
		t.Errorf("%q printed no %q in %v (hung on a FIFO?); stdout %q, stderr %q", args, ready, hangLimit, stdout(), errb.String())
		return stdout(), errb.String()
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(hangLimit):
		t.Fatalf("%q did not end within %v of %v; stderr %q", args, hangLimit, sig, errb.String())
	}
	return stdout(), errb.String()
}

// TestStatAndTopOnATreeWithAFIFO: `numascope stat --root R` and `top
// --root R -b` with a FIFO where a kernel file should be (node1/vmstat as
// in the issue, and /proc's stat and vmstat) print their samples and
// frames, end on SIGINT and SIGTERM, and say which file is a FIFO: top in
// its "missing:" lines, stat when the node events are asked for (the node
// sensor is then absent with that reason).
func TestStatAndTopOnATreeWithAFIFO(t *testing.T) {
	nodeVmstat := filepath.Join("sys", "devices", "system", "node", "node1", "vmstat")
	for _, fifo := range []string{nodeVmstat, "proc/stat", "proc/vmstat", "sys/devices/system/node/node1/cpulist"} {
		t.Run(strings.ReplaceAll(fifo, "/", "_"), func(t *testing.T) {
			// A process whose files are FIFOs too, for top's process table.
			root := fifoTree(t, fifo, "proc/4242/stat", "proc/4242/status", "proc/4242/task/4242/stat")
			said := filepath.Join(root, fifo) + " is a FIFO, not a kernel file"
			_, stderr := runUntil(t, []string{"stat", "--root", root, "-i", "100ms"}, "  0.", syscall.SIGINT)
			if strings.Contains(stderr, "panic") {
				t.Errorf("stat: %s", stderr)
			}
			stdout, stderr := runUntil(t, []string{"top", "--root", root, "-b", "-d", "100ms"}, "NODE", syscall.SIGTERM)
			if strings.Contains(stderr, "panic") {
				t.Errorf("top: %s", stderr)
			}
			if fifo != "sys/devices/system/node/node1/cpulist" && !strings.Contains(stdout, "missing: "+said) {
				t.Errorf("top -b does not say %q:\n%s", said, stdout)
			}
		})
	}
	// Asked for, the node events fail at once with one line naming the FIFO.
	root := fifoTree(t, nodeVmstat)
	cmd := numascopeCmd([]string{"stat", "--root", root, "-i", "100ms", "-n", "1", "-e", "node.numa_hit"})
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		said := filepath.Join(root, nodeVmstat) + " is a FIFO, not a kernel file"
		if msg := strings.TrimSpace(errb.String()); err == nil || !strings.Contains(msg, said) || strings.Contains(msg, "\n") {
			t.Errorf("stat -e node.numa_hit: %v, stderr %q; want one line saying %q", err, msg, said)
		}
	case <-time.After(hangLimit):
		t.Fatalf("stat -e node.numa_hit did not end within %v (hung on the FIFO?)", hangLimit)
	}
}
