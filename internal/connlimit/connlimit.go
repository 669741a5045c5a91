// Package connlimit bounds the connections an http.Server holds before
// anyone is authenticated. Without a bound, a local user (no token, no
// password needed) who opens connections and sends nothing, or sends half
// a request, holds a descriptor and a goroutine on the server each: 20 000
// of them ran `numascope live` out of descriptors, and a fixed cap that
// refuses newcomers (the exporter's old 256) locked every scraper out as
// long as they were held (issue 28, finding 3).
//
// A Limiter caps the connections and, when the cap is reached, closes the
// connection that has been idle longest, not the newcomer: an attacker's
// connections, which never send a whole request, are idle, so a scraper or
// a token holder, whose request follows its connection at once, always gets
// in, and each newcomer costs the attacker one of the connections it holds.
// A connection is idle from its accept until its first request's headers
// are read, and again between kept-alive requests (http.ConnState's New
// and Idle); one serving a request is not idle and is never evicted (it is
// bounded by the server's write timeout), and a hijacked one (an
// authenticated websocket) leaves the count, bounded by --max-clients.
package connlimit

import (
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// DefaultMax is the cap unless the descriptor limit is lower: each idle
// connection costs net/http about 20 KB (a goroutine and its buffers), so
// some 20 MB at the cap, and legitimate clients are a few scrapers and
// browsers.
const DefaultMax = 1024

// Max is the cap a server should use: DefaultMax, or half the descriptors
// this process has left under RLIMIT_NOFILE when that is less (the other
// half stays free for the sensors' files and the websockets), at least 16.
func Max() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return DefaultMax
	}
	open := 0
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(ents)
	}
	left := int64(rl.Cur) - int64(open)
	return int(max(16, min(DefaultMax, left/2)))
}

// Limiter tracks an http.Server's connections through its ConnState hook
// (Install) and enforces the cap there: the hook runs in the server's
// accept loop for a new connection, before the connection is served.
type Limiter struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]*entry
	idle  entry // sentinel of the list of idle connections, longest idle first

	evicted, refused atomic.Int64
}

// entry is a tracked connection; it is in the idle list when idle.
type entry struct {
	c          net.Conn
	prev, next *entry
}

// New returns a Limiter that lets at most max connections be open.
func New(max int) *Limiter {
	l := &Limiter{max: max, conns: make(map[net.Conn]*entry)}
	l.idle.prev, l.idle.next = &l.idle, &l.idle
	return l
}

// Install makes l track srv's connections, keeping any ConnState hook srv
// already has.
func (l *Limiter) Install(srv *http.Server) {
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.ConnState(c, s)
		if prev != nil {
			prev(c, s)
		}
	}
}

// Cap is the most connections l lets be open.
func (l *Limiter) Cap() int { return l.max }

// Open is how many connections are open (hijacked ones excepted).
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Idle is how many of the open connections are idle.
func (l *Limiter) Idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for e := l.idle.next; e != &l.idle; e = e.next {
		n++
	}
	return n
}

// Evicted is how many idle connections were closed to make room.
func (l *Limiter) Evicted() int64 { return l.evicted.Load() }

// Refused is how many new connections were closed because every open one
// was serving a request.
func (l *Limiter) Refused() int64 { return l.refused.Load() }

// ConnState is the http.Server hook (see Install).
func (l *Limiter) ConnState(c net.Conn, s http.ConnState) {
	var victim net.Conn
	l.mu.Lock()
	switch s {
	case http.StateNew:
		if len(l.conns) >= l.max {
			oldest := l.idle.next
			if oldest == &l.idle {
				// Every connection is serving a request: none can be
				// taken, and the newcomer is closed; a write timeout ends
				// each of those requests soon.
				l.mu.Unlock()
				l.refused.Add(1)
				closeNow(c)
				return
			}
			oldest.unlink()
			delete(l.conns, oldest.c)
			victim = oldest.c
			l.evicted.Add(1)
		}
		e := &entry{c: c}
		l.conns[c] = e
		l.pushIdle(e)
	case http.StateActive:
		if e := l.conns[c]; e != nil {
			e.unlink()
		}
	case http.StateIdle:
		if e := l.conns[c]; e != nil {
			e.unlink()
			l.pushIdle(e)
		}
	case http.StateHijacked, http.StateClosed:
		if e := l.conns[c]; e != nil {
			e.unlink()
			delete(l.conns, c)
		}
	}
	l.mu.Unlock()
	if victim != nil {
		closeNow(victim)
	}
}

func (l *Limiter) pushIdle(e *entry) {
	e.prev, e.next = l.idle.prev, &l.idle
	l.idle.prev.next = e
	l.idle.prev = e
}

func (e *entry) unlink() {
	if e.next == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// closeNow closes c without a TLS close_notify, which is a write that
// could wait on a client that does not read (and the accept loop with it):
// the socket is closed, and the goroutine serving c sees its read fail.
func closeNow(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	_ = c.Close()
}
