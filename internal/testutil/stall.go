package testutil

import (
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
)

// StallReaders opens n connections to addr, each sending request 1000
// times in a row (pipelined) and reading nothing: a local user's clients
// that hold a server's answer slots by never reading. Each socket gets a
// 4 KiB receive window, set before connecting, so that the answers fill it
// soon. The connections are closed at the end of the test.
func StallReaders(t testing.TB, addr, request string, n int) {
	t.Helper()
	all := strings.Repeat(request, 1000)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() { _, _ = io.WriteString(c, all) }() // and never read
	}
}
