package rawio

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a net.Conn whose writes are raw system calls on its non-blocking
// socket; a full socket buffer parks the writer in the runtime's poller
// (deadlines apply as usual). Reads, deadlines and Close are the wrapped
// connection's.
type Conn struct {
	net.Conn
	rc   syscall.RawConn
	p    []byte        // the rest of the current Write, for send
	n    int           // bytes of it written so far
	err  syscall.Errno // the last send's error
	send func(fd uintptr) bool
}

// WrapConn returns c with raw writes when it is a TCP or Unix socket, c
// itself otherwise. The result's Write is not safe for concurrent use.
func WrapConn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	w := &Conn{Conn: c, rc: rc}
	w.send = func(fd uintptr) bool {
		for w.n < len(w.p) {
			m, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.p[w.n])), uintptr(len(w.p)-w.n))
			switch e {
			case 0:
				w.n += int(m)
			case unix.EINTR:
			case unix.EAGAIN:
				return false // full: wait in the poller until writable
			default:
				w.err = e
				return true
			}
		}
		return true
	}
	return w
}

// Write writes p whole or returns why it could not.
func (w *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.p, w.n, w.err = p, 0, 0
	err := w.rc.Write(w.send)
	n := w.n
	w.p = nil
	if err == nil && w.err != 0 {
		err = os.NewSyscallError("write", w.err)
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: w.LocalAddr().Network(), Source: w.LocalAddr(), Addr: w.RemoteAddr(), Err: err}
	}
	return n, nil
}

// hijacker is an http.ResponseWriter whose Hijack hands out a Conn.
type hijacker struct {
	http.ResponseWriter
	hj http.Hijacker
}

// Hijackable returns w with a Hijack that wraps the connection with WrapConn,
// for a websocket library to take over: every frame it sends then avoids the
// scheduler. w itself is returned when it cannot be hijacked.
func Hijackable(w http.ResponseWriter) http.ResponseWriter {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return w
	}
	return &hijacker{ResponseWriter: w, hj: hj}
}

func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := h.hj.Hijack()
	if err != nil {
		return c, brw, err
	}
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	rc := WrapConn(c)
	return rc, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(rc, brw.Writer.Size())), nil
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (h *hijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }
