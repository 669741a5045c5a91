package connlimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve starts an http.Server with a Limiter of cap max: /slow answers
// once release is closed, /hijack takes the connection and holds it; each
// says on started when it has begun.
func serve(t *testing.T, max int) (*Limiter, string, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	started = make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "slow")
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			started <- struct{}{}
			<-release
			c.Close()
		}
	})
	srv := &http.Server{Handler: mux}
	l := New(max)
	l.Install(srv)
	if testing.Verbose() {
		prev := srv.ConnState
		srv.ConnState = func(c net.Conn, s http.ConnState) { prev(c, s); t.Logf("%v %v open %d", c.RemoteAddr(), s, l.Open()) }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		srv.Close()
	})
	return l, ln.Addr().String(), release
}

var started chan struct{}

// waitStarted waits until a /slow or /hijack request has begun.
func waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("a request did not begin in 5 s")
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// request sends GET path on c without waiting for the answer.
func request(t *testing.T, c net.Conn, path string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
}

// answer reads the answer to a request on c.
func answer(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// closed says whether the server closed c within a few seconds.
func closed(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := c.Read(make([]byte, 1))
	ne, ok := err.(net.Error)
	return err != nil && !(ok && ne.Timeout())
}

// waitOpen waits until l counts n connections open, idle of them.
func waitOpen(t *testing.T, l *Limiter, n, idle int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); l.Open() != n || l.Idle() != idle; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, %d idle, want %d and %d", l.Open(), l.Idle(), n, idle)
		}
	}
}

// TestOldestIdleEvicted: at the cap, a newcomer is served and the
// connection idle longest is closed; a kept-alive connection that has just
// been used is idle since then, so it goes after those idle before it.
func TestOldestIdleEvicted(t *testing.T) {
	l, addr, _ := serve(t, 3)
	keep := dial(t, addr)
	request(t, keep, "/")
	answer(t, keep, "first request")
	a, b := dial(t, addr), dial(t, addr)
	waitOpen(t, l, 3, 3)
	request(t, keep, "/") // keep is now the most recently idle
	answer(t, keep, "second request")
	waitOpen(t, l, 3, 3)
	n := dial(t, addr)
	request(t, n, "/")
	if got := answer(t, n, "the newcomer"); got != "ok" {
		t.Errorf("the newcomer got %q", got)
	}
	if !closed(a) {
		t.Error("the connection idle longest is still open")
	}
	if l.Evicted() != 1 {
		t.Errorf("%d evicted, want 1", l.Evicted())
	}
	for name, c := range map[string]net.Conn{"b": b, "keep": keep} {
		request(t, c, "/")
		if got := answer(t, c, name); got != "ok" {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// TestBusyNotEvicted: a connection serving a request is never evicted; a
// hijacked one (an authenticated websocket) is not counted; when every
// connection is busy, the newcomer is closed.
func TestBusyNotEvicted(t *testing.T) {
	l, addr, release := serve(t, 2)
	busy := dial(t, addr)
	request(t, busy, "/slow")
	waitStarted(t)
	for i := 0; i < 3; i++ {
		h := dial(t, addr)
		request(t, h, "/hijack")
		waitStarted(t)
	}
	idle := dial(t, addr)
	waitOpen(t, l, 2, 1) // busy and idle: the hijacked ones left the count
	n := dial(t, addr)
	request(t, n, "/")
	if got := answer(t, n, "the newcomer"); got != "ok" {
		t.Errorf("the newcomer got %q", got)
	}
	waitOpen(t, l, 2, 1)
	if !closed(idle) {
		t.Error("the idle connection was not the one evicted")
	}
	// n is idle now: a second newcomer takes its place, not busy's.
	n2 := dial(t, addr)
	request(t, n2, "/slow")
	waitStarted(t)
	if !closed(n) {
		t.Error("the idle newcomer was not evicted for the next one")
	}
	waitOpen(t, l, 2, 0)
	// Both busy: a third newcomer is closed.
	n3 := dial(t, addr)
	if !closed(n3) {
		t.Error("a newcomer with every connection busy was not closed")
	}
	if l.Refused() != 1 {
		t.Errorf("%d refused, want 1", l.Refused())
	}
	close(release)
	for name, c := range map[string]net.Conn{"busy": busy, "n2": n2} {
		if got := answer(t, c, name); !strings.Contains(got, "slow") {
			t.Errorf("%s: %q", name, got)
		}
	}
}
