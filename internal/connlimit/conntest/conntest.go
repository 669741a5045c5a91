// Package conntest holds idle connections against a server from another
// process, the way a local user without a token would, for the tests of
// every numascope server (issue 28, finding 3).
package conntest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdEnv tells the helper process where to connect and how often:
// "ADDR N".
const holdEnv = "NUMASCOPE_TEST_HOLD_IDLE"

// Helper is the helper process's body. A test package that uses HoldIdle
// declares
//
//	func TestHoldIdleHelper(t *testing.T) { conntest.Helper(t) }
//
// which skips unless HoldIdle started it. It opens N connections to ADDR,
// one after the other, sends nothing on them, prints how many it opened
// and holds them until its standard input closes. It stops dialing at the
// first connection that fails or takes 5 s (a server that stopped
// accepting).
func Helper(t *testing.T) {
	spec := os.Getenv(holdEnv)
	if spec == "" {
		t.Skip("helper process for the idle-connection tests (conntest.HoldIdle)")
	}
	addr, ns, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(ns)
	if err != nil {
		fmt.Printf("conntest: bad %s %q\n", holdEnv, spec)
		os.Exit(2)
	}
	if err := raiseNoFile(uint64(n) + 64); err != nil {
		fmt.Printf("conntest: %v\n", err)
		os.Exit(2)
	}
	conns := make([]net.Conn, 0, n)
	d := net.Dialer{Timeout: 5 * time.Second}
	var stop error
	for len(conns) < n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			stop = err
			break
		}
		conns = append(conns, c)
	}
	if stop != nil {
		fmt.Printf("conntest: held %d stopped by %v\n", len(conns), stop)
	} else {
		fmt.Printf("conntest: held %d\n", len(conns))
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// raiseNoFile makes sure this process may open n descriptors, raising the
// hard limit too when needed (root may).
func raiseNoFile(n uint64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	if rl.Cur >= n {
		return nil
	}
	rl.Cur = n
	rl.Max = max(rl.Max, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("raising RLIMIT_NOFILE to %d for the idle connections: %v (run the test as root, or raise the hard limit: ulimit -Hn %d)", n, err, n)
	}
	return nil
}

// Held is what a helper process holds.
type Held struct {
	// N is how many connections it opened.
	N int
	// Stopped is why it opened fewer than asked, "" when it did not.
	Stopped string
}

// HoldIdle has a helper process (this test binary running the test named
// helper, which calls Helper) open n connections to addr that send
// nothing, and hold them until the test ends. It returns once they are
// open, or once dialing stopped.
func HoldIdle(t testing.TB, helper, addr string, n int) Held {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), holdEnv+"="+addr+" "+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the idle-connection helper: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var out []string
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "conntest: ") {
				line <- strings.TrimPrefix(l, "conntest: ")
				_, _ = io.Copy(io.Discard, stdout)
				return
			} else {
				out = append(out, l)
			}
		}
		line <- "exited: " + strings.Join(out, "\n")
	}()
	select {
	case l := <-line:
		var h Held
		if _, err := fmt.Sscanf(l, "held %d", &h.N); err != nil {
			t.Fatalf("the idle-connection helper: %s", l)
		}
		if _, why, ok := strings.Cut(l, " stopped by "); ok {
			h.Stopped = why
		}
		return h
	case <-time.After(3 * time.Minute):
		t.Fatalf("the idle-connection helper has not opened %d connections to %s in 3 minutes", n, addr)
	}
	return Held{}
}

// LimitNoFile sets this process's soft RLIMIT_NOFILE to n until the test
// ends: a server whose descriptors are fewer than the connections an
// attacker holds, so that only a cap on what the server holds keeps it
// serving.
func LimitNoFile(t testing.TB, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = n
	if lim.Max < n {
		lim.Max = n
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("setting RLIMIT_NOFILE to %d: %v", n, err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring RLIMIT_NOFILE: %v", err)
		}
	})
}
