package ctl

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fifoName is the file name of the control FIFO in its directory.
const fifoName = "numascope-ctl"

// rootPath is the control FIFO of a numascope run as root. /run is writable
// by root only, so nobody else can plant a file there.
const rootPath = "/run/numascope-ctl"

// pipeBuf is PIPE_BUF on Linux: writes up to this size are atomic.
const pipeBuf = 4096

// sendTimeout bounds how long Send waits for room in a full FIFO, which
// happens only when numascope is alive but not reading. A variable for tests.
var sendTimeout = 5 * time.Second

// DefaultPath returns where the control FIFO lives when --ctl is not given:
//
//   - /run/numascope-ctl when running as root (effective uid 0);
//   - $XDG_RUNTIME_DIR/numascope-ctl otherwise; that directory is private
//     to the user by the XDG specification;
//   - without XDG_RUNTIME_DIR (or with a relative one, which the
//     specification says to ignore), numascope-ctl in the private directory
//     os.TempDir()/numascope-<uid>. DefaultPath creates that directory with
//     mode 0700 if needed and refuses it unless it is a real directory (not
//     a symbolic link) owned by the user and closed to others, so that
//     another user cannot pre-create it in the shared /tmp to read or inject
//     commands.
//
// Both "numascope stat/record" and "numascope ctl" call it, so they agree.
func DefaultPath() (string, error) {
	return defaultPath(os.Geteuid(), os.Getenv("XDG_RUNTIME_DIR"), os.TempDir())
}

func defaultPath(euid int, xdgRuntimeDir, tmpDir string) (string, error) {
	if euid == 0 {
		return rootPath, nil
	}
	if xdgRuntimeDir != "" && filepath.IsAbs(xdgRuntimeDir) {
		return filepath.Join(xdgRuntimeDir, fifoName), nil
	}
	dir, err := privateDir(filepath.Join(tmpDir, fmt.Sprintf("numascope-%d", euid)), euid)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, fifoName), nil
}

// privateDir makes sure dir is a directory owned by uid and accessible to
// it alone, creating it if it does not exist.
func privateDir(dir string, uid int) (string, error) {
	hint := "remove it, set XDG_RUNTIME_DIR, or pass --ctl PATH"
	if err := os.Mkdir(dir, 0o700); err == nil {
		// Mkdir's mode went through the umask; set it exactly.
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("control FIFO directory %s: %w", dir, err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot create the control FIFO directory: %w; set XDG_RUNTIME_DIR or pass --ctl PATH", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("control FIFO directory: %w; set XDG_RUNTIME_DIR or pass --ctl PATH", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("control FIFO directory %s is %s, not a directory: refusing to use it; %s", dir, describe(fi.Mode()), hint)
	}
	if owner := ownerOf(fi); owner != uid {
		return "", fmt.Errorf("control FIFO directory %s is owned by uid %d, not by you (uid %d): refusing to use it; %s", dir, owner, uid, hint)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("control FIFO directory %s has mode %04o, open to other users: refusing to use it; chmod 700 it or %s", dir, perm, hint)
	}
	return dir, nil
}

// Server reads commands from a control FIFO. It owns the FIFO: Listen
// creates it and Close removes it.
type Server struct {
	path     string
	f        *os.File
	dev, ino uint64 // identity of our FIFO, so Close removes nothing else
	onError  func(error)
	cmds     chan Command
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	closeErr error
}

// Listen creates the control FIFO at path with mode 0600 and starts reading
// commands from it; read them from Commands. Each malformed or oversized
// command is reported to onError (from the reading goroutine) and ignored;
// a nil onError prints to standard error.
//
// An existing path is handled as follows. A FIFO owned by the user with
// nobody reading it is what a crashed numascope leaves behind: it is
// replaced. A FIFO being read means another numascope is running: Listen
// fails and names the path. Anything else (a regular file, a symbolic link,
// a directory, a FIFO of another user) is refused and left alone.
func Listen(path string, onError func(error)) (*Server, error) {
	if path == "" {
		return nil, errors.New("empty control FIFO path: pass --ctl PATH")
	}
	if onError == nil {
		onError = func(err error) { fmt.Fprintln(os.Stderr, "numascope:", err) }
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	if err := unix.Mkfifo(path, 0o600); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("control FIFO %s was created by someone else while numascope was starting: is another numascope starting? Pass --ctl PATH to use another one", path)
		}
		return nil, fmt.Errorf("cannot create control FIFO %s: %w; pass --ctl PATH to put it elsewhere", path, err)
	}
	// O_RDWR, not O_RDONLY: as long as we hold a write end ourselves the
	// reader never sees end-of-file when a writer such as echo closes, and
	// writers never get ENXIO while we listen. O_NONBLOCK makes the os
	// package use the poller, so Close can interrupt a pending Read.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		removeOwnFIFO(path)
		return nil, fmt.Errorf("cannot open control FIFO %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("control FIFO %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeNamedPipe || ownerOf(fi) != os.Geteuid() {
		// Someone swapped the path between mkfifo and open; it is not ours.
		f.Close()
		return nil, fmt.Errorf("control FIFO %s was replaced by another file while numascope was starting: refusing to use it; pass --ctl PATH", path)
	}
	st := fi.Sys().(*syscall.Stat_t)
	s := &Server{
		path:    path,
		f:       f,
		dev:     uint64(st.Dev),
		ino:     uint64(st.Ino),
		onError: onError,
		cmds:    make(chan Command, 16),
		done:    make(chan struct{}),
	}
	// mkfifo's mode went through the umask, which can only have removed
	// bits; set exactly owner read/write on the file we opened.
	if err := f.Chmod(0o600); err != nil {
		s.removeIfOurs()
		f.Close()
		return nil, fmt.Errorf("cannot set the mode of control FIFO %s: %w", path, err)
	}
	s.wg.Add(1)
	go s.read()
	return s, nil
}

// clearStale checks what is at path before Listen creates its FIFO, and
// removes it only if it is a stale FIFO of ours.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control FIFO %s: %w; pass --ctl PATH to put it elsewhere", path, err)
	}
	if fi.Mode().Type() != fs.ModeNamedPipe {
		return fmt.Errorf("%s exists and is %s, not a FIFO: refusing to replace it; remove it or pass --ctl PATH", path, describe(fi.Mode()))
	}
	if owner := ownerOf(fi); owner != os.Geteuid() {
		return fmt.Errorf("%s is a FIFO owned by uid %d, not by you (uid %d): refusing to use it; remove it or pass --ctl PATH", path, owner, os.Geteuid())
	}
	live, err := hasReader(path)
	if err != nil {
		return fmt.Errorf("cannot check whether control FIFO %s is in use: %w; remove it or pass --ctl PATH", path, err)
	}
	if live {
		return fmt.Errorf("another numascope is already listening on %s: stop it, or pass --ctl PATH to use another control FIFO", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove stale control FIFO: %w", err)
	}
	return nil
}

// removeOwnFIFO cleans up after a failed Listen: it removes path only if it
// is a FIFO of ours.
func removeOwnFIFO(path string) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeNamedPipe && ownerOf(fi) == os.Geteuid() {
		os.Remove(path)
	}
}

// hasReader reports whether some process has the FIFO at path open for
// reading: a non-blocking open for writing fails with ENXIO exactly when
// nobody does. Nothing is written.
func hasReader(path string) (bool, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENXIO {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	unix.Close(fd)
	return true, nil
}

// Commands returns the channel of well-formed commands, in the order they
// were written. It is closed when the server stops.
func (s *Server) Commands() <-chan Command { return s.cmds }

// Path returns the path of the control FIFO.
func (s *Server) Path() string { return s.path }

// Close stops reading, closes the Commands channel and removes the FIFO if
// the path still names the FIFO Listen created. It may be called more than
// once.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.done)
		// Remove before closing: while we hold the FIFO open a starting
		// numascope sees it as live, never as a stale one to take over.
		rmErr := s.removeIfOurs()
		clErr := s.f.Close() // wakes the reading goroutine
		s.wg.Wait()
		if rmErr != nil {
			s.closeErr = rmErr
		} else if clErr != nil {
			s.closeErr = fmt.Errorf("close control FIFO %s: %w", s.path, clErr)
		}
	})
	return s.closeErr
}

func (s *Server) removeIfOurs() error {
	fi, err := os.Lstat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control FIFO %s: %w", s.path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || uint64(st.Dev) != s.dev || uint64(st.Ino) != s.ino {
		return nil // replaced by someone else's file: not ours to remove
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove control FIFO: %w", err)
	}
	return nil
}

// read splits what arrives on the FIFO into lines, however the writers cut
// it up, and turns each line into a command or an error report.
func (s *Server) read() {
	defer s.wg.Done()
	defer close(s.cmds)
	buf := make([]byte, 8192)
	line := make([]byte, 0, MaxLine)
	discarding := false // inside an oversized line, until its newline
	for {
		n, err := s.f.Read(buf)
		data := buf[:n]
		for len(data) > 0 {
			seg, rest, complete := bytes.Cut(data, []byte{'\n'})
			data = rest
			if discarding {
				discarding = !complete
				continue
			}
			if len(line)+len(seg) > MaxLine {
				s.onError(fmt.Errorf("control FIFO %s: ignored a line longer than %d bytes (it starts %s); send one command per line", s.path, MaxLine, quote(head(line, seg))))
				line = line[:0]
				discarding = !complete
				continue
			}
			line = append(line, seg...)
			if complete {
				if !s.handle(line) {
					return
				}
				line = line[:0]
			}
		}
		if err != nil {
			select {
			case <-s.done:
			default:
				s.onError(fmt.Errorf("control FIFO %s: reading failed: %v; no more commands will be accepted", s.path, err))
			}
			return
		}
	}
}

// handle parses one line and delivers the command. It reports false when
// the server is closing.
func (s *Server) handle(line []byte) bool {
	if len(bytes.TrimSpace(line)) == 0 {
		return true // blank lines are harmless: "echo" with nothing, or CRLF
	}
	text := string(line)
	c, err := Parse(text)
	if err != nil {
		s.onError(fmt.Errorf("control FIFO %s: ignored %s: %w", s.path, quote(text), err))
		return true
	}
	select {
	case s.cmds <- c:
		return true
	case <-s.done:
		return false
	}
}

// head returns the first bytes of a+b, enough for quote to show.
func head(a, b []byte) string {
	const n = 80
	if len(a) >= n {
		return string(a[:n])
	}
	return string(a) + string(b[:min(len(b), n-len(a))])
}

// Send validates line with Parse and writes its canonical form, one line,
// to the control FIFO at path. It never blocks waiting for a reader: with
// nobody listening it fails at once, and a numascope that stopped reading
// makes it fail after a few seconds. It refuses a path that is not a FIFO,
// or a FIFO of another user, so a mistyped --ctl cannot append to a file.
func Send(path, line string) error {
	_, err := Steer(path, line)
	return err
}

// Steer is Send that also returns the processes the command went to (the
// numascope reading the FIFO; more than one only if something else reads
// it too), found in /proc while the FIFO is open, before writing. It
// refuses, sending nothing, when one of them belongs to another user: that
// user's numascope is not this user's to steer, whoever owns the FIFO.
func Steer(path, line string) ([]Reader, error) {
	c, err := Parse(line)
	if err != nil {
		return nil, err
	}
	return send(path, c)
}

func send(path string, c Command) ([]Reader, error) {
	msg := c.String() + "\n"
	if len(msg) > pipeBuf { // cannot happen within MaxFileName and MaxLabel
		return nil, fmt.Errorf("command of %d bytes is too long to send atomically", len(msg))
	}
	notListening := fmt.Errorf("no numascope is listening on %s: start numascope stat/record first, or pass --ctl PATH", path)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notListening
	}
	if err != nil {
		return nil, fmt.Errorf("control FIFO %s: %w", path, err)
	}
	if err := checkSendTarget(path, fi); err != nil {
		return nil, err
	}
	// O_NONBLOCK: fail with ENXIO instead of waiting for a reader. It also
	// puts the file in the poller, which makes the write deadline work.
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, unix.ENXIO), errors.Is(err, fs.ErrNotExist):
		return nil, notListening
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("cannot write to control FIFO %s: permission denied: it is owner-only, so run numascope ctl as the user running numascope", path)
	case err != nil:
		return nil, fmt.Errorf("cannot open control FIFO: %w", err)
	}
	defer f.Close()
	// Check again what we actually opened, in case the path changed.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("control FIFO %s: %w", path, err)
	}
	if err := checkSendTarget(path, fi); err != nil {
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	rs := readers(uint64(st.Dev), uint64(st.Ino))
	for _, r := range rs {
		if r.UID != os.Geteuid() {
			return nil, fmt.Errorf("control FIFO %s is read by %s, a process of another user: refusing to send it commands", path, r)
		}
	}
	if err := f.SetWriteDeadline(time.Now().Add(sendTimeout)); err != nil {
		return nil, fmt.Errorf("control FIFO %s: %w", path, err)
	}
	if _, err := f.WriteString(msg); err != nil {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, fmt.Errorf("numascope on %s is not reading commands (its control FIFO stayed full for %v): %q not sent", path, sendTimeout, c.String())
		case errors.Is(err, syscall.EPIPE):
			return nil, notListening // it went away between open and write
		}
		return nil, fmt.Errorf("cannot write to control FIFO: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("cannot close control FIFO: %w", err)
	}
	return rs, nil
}

func checkSendTarget(path string, fi fs.FileInfo) error {
	if fi.Mode().Type() != fs.ModeNamedPipe {
		return fmt.Errorf("%s is %s, not a FIFO: refusing to write to it; pass --ctl with the path of numascope's control FIFO", path, describe(fi.Mode()))
	}
	if owner := ownerOf(fi); owner != os.Geteuid() {
		return fmt.Errorf("control FIFO %s is owned by uid %d, not by you (uid %d): refusing to send commands to another user's numascope", path, owner, os.Geteuid())
	}
	return nil
}

// ownerOf returns the uid owning fi, or -1 if unknown.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// describe names a file type for error messages.
func describe(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "a regular file"
	case fs.ModeDir:
		return "a directory"
	case fs.ModeSymlink:
		return "a symbolic link"
	case fs.ModeNamedPipe:
		return "a FIFO"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeDevice:
		return "a block device"
	case fs.ModeDevice | fs.ModeCharDevice:
		return "a character device"
	}
	return "a special file"
}
