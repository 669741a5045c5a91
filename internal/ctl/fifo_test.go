package ctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/testutil"
)

const waitFor = 10 * time.Second // generous: only reached when a test fails

// errLog collects what a Server reports through onError.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) add(err error) { l.mu.Lock(); l.errs = append(l.errs, err); l.mu.Unlock() }

func (l *errLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m []string
	for _, e := range l.errs {
		m = append(m, e.Error())
	}
	return m
}

func listen(t *testing.T, path string) (*Server, *errLog) {
	t.Helper()
	log := &errLog{}
	s, err := Listen(path, log.add)
	if err != nil {
		t.Fatalf("Listen(%q): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, log
}

func recv(t *testing.T, s *Server) Command {
	t.Helper()
	select {
	case c, ok := <-s.Commands():
		if !ok {
			t.Fatal("Commands channel closed early")
		}
		return c
	case <-time.After(waitFor):
		t.Fatal("no command received")
	}
	return Command{}
}

func expect(t *testing.T, s *Server, want ...string) {
	t.Helper()
	for _, w := range want {
		wc, err := Parse(w)
		if err != nil {
			t.Fatal(err)
		}
		if got := recv(t, s); got != wc {
			t.Fatalf("received %q, want %q", got, wc)
		}
	}
}

// writer opens the FIFO the way a shell's "echo >" does.
func writer(t *testing.T, path string) *os.File {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// drained waits until the reader has taken everything out of the pipe, so
// the next write reaches it as a separate read.
func drained(t *testing.T, w *os.File) {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		var n int
		var ierr error
		if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil { // TIOCINQ is FIONREAD
			t.Fatal(err)
		}
		if ierr != nil {
			t.Fatal(ierr)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reader left %d bytes in the pipe", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func mkfifo(t *testing.T, path string, mode uint32) {
	t.Helper()
	if err := unix.Mkfifo(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, fs.FileMode(mode)); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(fi.Sys().(*syscall.Stat_t).Ino)
}

func TestSendEveryCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	tests := []struct {
		line string
		want Command
	}{
		{"record /data/run 2.nsr", Command{Op: OpRecord, Arg: "/data/run 2.nsr"}},
		{"label phase 2", Command{Op: OpLabel, Arg: "phase 2"}},
		{"label  Größe\t\x1b[1m ✓ ", Command{Op: OpLabel, Arg: "Größe [1m ✓"}},
		{"pause", Command{Op: OpPause}},
		{"resume", Command{Op: OpResume}},
		{"interval 100ms", Command{Op: OpInterval, Interval: 100 * time.Millisecond}},
		{"interval 250", Command{Op: OpInterval, Interval: 250 * time.Millisecond}},
		{"interval 1s", Command{Op: OpInterval, Interval: time.Second}},
		{"interval 250us", Command{Op: OpInterval, Interval: 250 * time.Microsecond}},
	}
	for _, tt := range tests {
		if err := Send(path, tt.line); err != nil {
			t.Fatalf("Send(%q): %v", tt.line, err)
		}
		if got := recv(t, s); got != tt.want {
			t.Errorf("Send(%q): received %#v, want %#v", tt.line, got, tt.want)
		}
	}
	if m := log.messages(); len(m) != 0 {
		t.Errorf("unexpected errors: %q", m)
	}
}

func TestSendRejectsBadCommandBeforeTouchingPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Send(path, "lable x")
	if err == nil || !strings.Contains(err.Error(), `unknown command "lable"`) {
		t.Fatalf("Send of a bad command: got %v, want the parse error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep\n" {
		t.Fatalf("file changed to %q", b)
	}
}

func TestMalformedCommandReportedAndIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	w := writer(t, path)
	if _, err := w.WriteString("lable x\n\n   \r\ninterval 5us\npause now\nlabel \x00\x01\npause\n"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "pause") // the bad lines before it were skipped
	want := []string{`unknown command "lable"`, `interval: bad interval "5us"`, "pause takes no argument", "no printable text"}
	m := log.messages()
	if len(m) != len(want) {
		t.Fatalf("got %d errors %q, want %d (blank lines are not errors)", len(m), m, len(want))
	}
	for i, w := range want {
		if !strings.Contains(m[i], w) || !strings.Contains(m[i], path) || !strings.Contains(m[i], "ignored") {
			t.Errorf("error %d = %q, want it to name %s, say ignored and contain %q", i, m[i], path, w)
		}
	}
	// Still working, also for new writers.
	if err := Send(path, "resume"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "resume")
}

func TestManyCommandsInOneWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	var b strings.Builder
	var want []string
	for i := range 200 {
		l := []string{"pause", "resume", "label step " + strings.Repeat("x", i%7), "interval " + []string{"100ms", "1s", "2"}[i%3]}[i%4]
		want = append(want, l)
		b.WriteString(l + "\n")
	}
	// More than one pipe buffer's worth, and more than one read of the server.
	w := writer(t, path)
	go w.WriteString(b.String()) // blocks until the server has read most of it
	expect(t, s, want...)
	if m := log.messages(); len(m) != 0 {
		t.Errorf("unexpected errors: %q", m)
	}
}

// TestHostileLabelCleaned writes labels with a screen-clearing escape
// sequence, BEL, bidi controls (U+202E, U+200F, U+061C), an invalid UTF-8
// byte and a run of white space straight into the FIFO, as any script may,
// and through Send, as "numascope ctl label" does: both arrive cleaned as
// recording.CleanLabel cleans every label.
func TestHostileLabelCleaned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	const hostile = "a\x1b[2Jb\x07c\u202Ed\xffe\u200ff \u061c \t g\u200e"
	const want = "a[2Jbcd\uFFFDef g"
	w := writer(t, path)
	if _, err := w.WriteString("label " + hostile + "\n"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, s); got != (Command{Op: OpLabel, Arg: want}) {
		t.Errorf("raw FIFO write: received %#v, want the label %q", got, want)
	}
	if err := Send(path, "label "+hostile); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, s); got != (Command{Op: OpLabel, Arg: want}) {
		t.Errorf("Send: received %#v, want the label %q", got, want)
	}
	if m := log.messages(); len(m) != 0 {
		t.Errorf("unexpected errors: %q", m)
	}
}

func TestCommandSplitAcrossWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	w := writer(t, path)
	// Byte by byte, so the multi-byte runes are split too, and with the
	// second command starting in the same write that ends the first.
	msg := "label héllo wörld ✓\nresume\nint"
	for i := 0; i < len(msg); i++ {
		if _, err := w.Write([]byte{msg[i]}); err != nil {
			t.Fatal(err)
		}
		drained(t, w)
	}
	expect(t, s, "label héllo wörld ✓", "resume")
	for _, part := range []string{"erval 10", "0ms\nla", "bel a\r", "\n"} {
		if _, err := w.WriteString(part); err != nil {
			t.Fatal(err)
		}
		drained(t, w)
	}
	expect(t, s, "interval 100ms", "label a")
	if m := log.messages(); len(m) != 0 {
		t.Errorf("unexpected errors: %q", m)
	}
}

func TestOversizedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, log := listen(t, path)
	w := writer(t, path)

	// Exactly MaxLine bytes is still a line; one more is not.
	fits := "label fits" + strings.Repeat(" ", MaxLine-len("label fits"))
	if _, err := w.WriteString(fits + "\n" + fits + " \npause\n"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "label fits", "pause")
	if m := log.messages(); len(m) != 1 || !strings.Contains(m[0], "longer than 4096 bytes") || !strings.Contains(m[0], `"label fits`) {
		t.Fatalf("errors %q, want one about the 4097-byte line", m)
	}

	// A 1 MiB line arriving in pieces: one error, and the reader picks up
	// again at the command after its newline, even in the same write.
	big := strings.Repeat("label "+strings.Repeat("z", 1000), 1024)
	for i := 0; i < len(big); i += 3000 {
		if _, err := w.WriteString(big[i:min(i+3000, len(big))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.WriteString("tail\nresume\n"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "resume")
	if m := log.messages(); len(m) != 2 || !strings.Contains(m[1], "longer than 4096 bytes") {
		t.Fatalf("errors %q, want a second one about the 1 MiB line", m)
	}
}

func TestStaleFIFOReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	mkfifo(t, path, 0o644) // left behind by a crash, with a looser mode
	// A second link keeps the old inode alive, so that its number cannot
	// be handed to the new FIFO.
	keep := filepath.Join(filepath.Dir(path), "old")
	if err := os.Link(path, keep); err != nil {
		t.Fatal(err)
	}
	s, _ := listen(t, path)
	if inode(t, path) == inode(t, keep) {
		t.Error("stale FIFO was reused instead of replaced")
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeNamedPipe || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want a FIFO with 0600", fi.Mode())
	}
	if err := Send(path, "pause"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "pause")
}

func TestLiveFIFORefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, _ := listen(t, path)
	s2, err := Listen(path, func(error) {})
	if err == nil {
		s2.Close()
		t.Fatal("second Listen on a live FIFO succeeded")
	}
	for _, w := range []string{"another numascope is already listening on " + path, "--ctl"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	// The first server is unharmed, its FIFO still in place.
	if err := Send(path, "label still here"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "label still here")
}

func TestNonFIFORefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	mkfifo(t, target, 0o600)
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linkToFIFO := filepath.Join(dir, "link-fifo")
	linkDangling := filepath.Join(dir, "link-dangling")
	subdir := filepath.Join(dir, "subdir")
	for _, err := range []error{os.Symlink(target, linkToFIFO), os.Symlink(filepath.Join(dir, "nowhere"), linkDangling), os.Mkdir(subdir, 0o700)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ path, kind string }{
		{regular, "a regular file"},
		{linkToFIFO, "a symbolic link"},
		{linkDangling, "a symbolic link"},
		{subdir, "a directory"},
	}
	for _, tt := range tests {
		before, _ := os.Lstat(tt.path)
		s, err := Listen(tt.path, func(error) {})
		if err == nil {
			s.Close()
			t.Errorf("Listen(%s) succeeded on %s", tt.path, tt.kind)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tt.path) || !strings.Contains(msg, tt.kind) || !strings.Contains(msg, "refusing") {
			t.Errorf("Listen(%s): error %q should name the path, say %s and refuse", tt.path, msg, tt.kind)
		}
		err = Send(tt.path, "pause")
		if err == nil || !strings.Contains(err.Error(), "not a FIFO") {
			t.Errorf("Send(%s): got %v, want a not-a-FIFO error", tt.path, err)
		}
		after, err := os.Lstat(tt.path)
		if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s was changed: %v", tt.path, err)
		}
	}
	if b, _ := os.ReadFile(regular); string(b) != "precious\n" {
		t.Errorf("regular file now holds %q", b)
	}
}

func TestOtherUsersFIFORefused(t *testing.T) {
	testutil.RequireRoot(t, "to give a FIFO to another user")
	path := filepath.Join(t.TempDir(), "ctl")
	mkfifo(t, path, 0o666)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(path, func(error) {})
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("Listen on another user's FIFO: got %v", err)
	}
	// Hold it open for reading, as that user's numascope would.
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = Send(path, "label secret")
	if err == nil || !strings.Contains(err.Error(), "another user's numascope") {
		t.Fatalf("Send to another user's FIFO: got %v", err)
	}
}

func TestModeIs0600WhateverTheUmask(t *testing.T) {
	for _, mask := range []int{0, 0o777} {
		old := syscall.Umask(mask)
		path := filepath.Join(t.TempDir(), "ctl")
		s, err := Listen(path, func(error) {})
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %04o: %v", mask, err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != fs.ModeNamedPipe|0o600 {
			t.Errorf("umask %04o: mode %v, want %v", mask, fi.Mode(), fs.ModeNamedPipe|0o600)
		}
		s.Close()
	}
}

func TestSendWithoutListener(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	mkfifo(t, stale, 0o600)
	for _, path := range []string{stale, filepath.Join(dir, "absent")} {
		done := make(chan error, 1)
		go func() { done <- Send(path, "label x") }()
		select {
		case err := <-done:
			want := "no numascope is listening on " + path + ": start numascope stat/record first, or pass --ctl PATH"
			if err == nil || err.Error() != want {
				t.Errorf("Send(%s) = %v, want %q", path, err, want)
			}
		case <-time.After(waitFor):
			t.Fatalf("Send(%s) blocked with nobody listening", path)
		}
	}
}

func TestSendToStuckReaderTimesOut(t *testing.T) {
	defer func(d time.Duration) { sendTimeout = d }(sendTimeout)
	sendTimeout = 100 * time.Millisecond
	path := filepath.Join(t.TempDir(), "ctl")
	mkfifo(t, path, 0o600)
	// A reader that never reads, and a pipe filled to the brim.
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	chunk := make([]byte, 4096)
	for {
		if _, err := unix.Write(fd, chunk); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	err = Send(path, "pause")
	if err == nil || !strings.Contains(err.Error(), "is not reading commands") {
		t.Fatalf("Send to a full FIFO: got %v", err)
	}
}

func TestCloseRemovesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, err := Listen(path, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	// Commands nobody reads must not keep Close from returning.
	w := writer(t, path)
	for range 100 {
		w.WriteString("pause\n")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FIFO still there after Close: %v", err)
	}
	// The reading goroutine has finished: the channel drains and closes.
	deadline := time.After(waitFor)
	for open := true; open; {
		select {
		case _, open = <-s.Commands():
		case <-deadline:
			t.Fatal("Commands not closed after Close")
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The path is free for the next numascope.
	s2, _ := listen(t, path)
	if err := Send(path, "resume"); err != nil {
		t.Fatal(err)
	}
	expect(t, s2, "resume")
}

func TestCloseLeavesReplacedPathAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	s, err := Listen(path, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("someone else's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "someone else's\n" {
		t.Errorf("Close touched a file it did not create: %q, %v", b, err)
	}
}

func TestDefaultPath(t *testing.T) {
	tmp := t.TempDir()
	xdg := t.TempDir()
	// The fallback directory must belong to the uid asked about. Not being
	// root, that is us; as root, make it belong to an ordinary user.
	uid := os.Geteuid()
	fallback := filepath.Join(tmp, fmt.Sprintf("numascope-%d", uid))
	if uid == 0 {
		uid = 1000
		fallback = filepath.Join(tmp, "numascope-1000")
		if err := os.Mkdir(fallback, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(fallback, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		euid      int
		xdg, want string
	}{
		{0, xdg, "/run/numascope-ctl"},
		{0, "", "/run/numascope-ctl"},
		{uid, xdg, filepath.Join(xdg, "numascope-ctl")},
		{uid, "relative/dir", filepath.Join(fallback, "numascope-ctl")},
		{uid, "", filepath.Join(fallback, "numascope-ctl")},
	}
	for _, tt := range tests {
		got, err := defaultPath(tt.euid, tt.xdg, tmp)
		if err != nil || got != tt.want {
			t.Errorf("defaultPath(%d, %q) = %q, %v; want %q", tt.euid, tt.xdg, got, err, tt.want)
		}
	}
	if fi, err := os.Lstat(fallback); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Errorf("fallback directory %s: %v, %v; want a 0700 directory", fallback, fi.Mode(), err)
	}
	// And the real thing, with this process's euid and environment.
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	want := filepath.Join(xdg, "numascope-ctl")
	if os.Geteuid() == 0 {
		want = "/run/numascope-ctl"
	}
	if got, err := DefaultPath(); err != nil || got != want {
		t.Errorf("DefaultPath() = %q, %v; want %q", got, err, want)
	}
}

func TestPrivateDir(t *testing.T) {
	uid := os.Geteuid()
	base := t.TempDir()

	old := syscall.Umask(0)
	dir, err := privateDir(filepath.Join(base, "fresh"), uid)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Fatalf("created %s: %v, %v; want a 0700 directory", dir, fi.Mode(), err)
	}
	if _, err := privateDir(dir, uid); err != nil {
		t.Errorf("existing private directory refused: %v", err)
	}
	// The FIFO works inside it.
	path := filepath.Join(dir, "numascope-ctl")
	s, _ := listen(t, path)
	if err := Send(path, "pause"); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "pause")

	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		uid  int
		want string
	}{
		{open, uid, "has mode 0777, open to other users"},
		{link, uid, "is a symbolic link, not a directory"},
		{file, uid, "is a regular file, not a directory"},
		{dir, uid + 1, "not by you"}, // a directory someone else made in /tmp
	}
	for _, tt := range tests {
		_, err := privateDir(tt.dir, tt.uid)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
			t.Errorf("privateDir(%s, %d) = %v, want an error containing %q and suggesting XDG_RUNTIME_DIR", tt.dir, tt.uid, err, tt.want)
		}
	}
}
