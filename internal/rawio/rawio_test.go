package rawio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestFileWriterWritesRawToALocalFile(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewFileWriter(f)
	if w.Raw() != localFS(int64(st.Type)) {
		t.Errorf("Raw() = %v on a file system of type %#x", w.Raw(), st.Type)
	}
	want := bytes.Repeat([]byte("0123456789abcdef\n"), 100_000) // 1.7 MB
	for p := want; len(p) > 0; {
		n := min(len(p), 65536)
		if m, err := w.Write(p[:n]); err != nil || m != n {
			t.Fatalf("Write = %d, %v; want %d", m, err, n)
		}
		p = p[n:]
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes, not the %d written", len(got), len(want))
	}
}

func TestFileWriterOnTmpfsIsRaw(t *testing.T) {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) != nil || st.Type != unix.TMPFS_MAGIC {
		t.Fatal("no tmpfs at /dev/shm (Linux distributions and container runtimes mount one)")
	}
	f, err := os.CreateTemp("/dev/shm", "rawio-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if !NewFileWriter(f).Raw() {
		t.Error("a regular file on tmpfs is not written raw")
	}
}

// TestFileWriterLeavesOtherFilesToOs: a pipe, a terminal or a device may
// block for good, so it is written the ordinary way.
func TestFileWriterLeavesOtherFilesToOs(t *testing.T) {
	r, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer wp.Close()
	w := NewFileWriter(wp)
	if w.Raw() {
		t.Error("a pipe is written raw")
	}
	go func() { w.Write([]byte("through the pipe")); wp.Close() }()
	if b, _ := io.ReadAll(r); string(b) != "through the pipe" {
		t.Errorf("read %q", b)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if NewFileWriter(null).Raw() {
		t.Error("a character device is written raw")
	}
}

func TestLocalFS(t *testing.T) {
	for _, c := range []struct {
		magic int64
		local bool
	}{
		{unix.EXT4_SUPER_MAGIC, true}, {unix.XFS_SUPER_MAGIC, true}, {unix.TMPFS_MAGIC, true},
		{unix.OVERLAYFS_SUPER_MAGIC, true},
		{unix.NFS_SUPER_MAGIC, false}, {unix.FUSE_SUPER_MAGIC, false}, {unix.CIFS_SUPER_MAGIC, false},
		{unix.V9FS_MAGIC, false}, {unix.PROC_SUPER_MAGIC, false},
	} {
		if got := localFS(c.magic); got != c.local {
			t.Errorf("localFS(%#x) = %v, want %v", c.magic, got, c.local)
		}
	}
}

// localDir is a temporary directory on a local file system, where files
// are written raw: the test's own, or one in /dev/shm (tmpfs) when that is
// not local (TMPDIR on NFS, say), so that a test of raw writes always runs.
func localDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && localFS(int64(st.Type)) {
		return dir
	}
	dir, err := os.MkdirTemp("/dev/shm", "rawio-test-")
	if err != nil {
		t.Fatalf("the temporary directory is not on a local file system, and /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// rawWriter returns a FileWriter on f, the file os.Open or os.Create gave
// with err (in localDir), closed when the test ends; it must write raw.
func rawWriter(t *testing.T, f *os.File, err error) *FileWriter {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w := NewFileWriter(f)
	if !w.Raw() {
		t.Fatalf("%s, on a local file system, is not written raw", f.Name())
	}
	return w
}

// TestFileWriterErrorsLikeOs: a failed raw write reports what os.File's
// Write would: a *fs.PathError naming the file, with the errno inside.
func TestFileWriterErrorsLikeOs(t *testing.T) {
	path := filepath.Join(localDir(t), "ro")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path) // read-only: write(2) fails with EBADF
	w := rawWriter(t, f, err)
	_, err = w.Write([]byte("x"))
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, syscall.EBADF) {
		t.Errorf("Write to a read-only file: %v; want a PathError for %s with EBADF", err, path)
	}
}

// TestSlowWritePausesRawWrites: a raw write that takes longer than
// SlowWrite (here a large one; in use, a disk under writeback pressure)
// turns raw writes off for RawPause, so that a file system that holds
// writes delays the process's one P once, not at every sample; the writes
// made the ordinary way in the meantime all land.
func TestSlowWritePausesRawWrites(t *testing.T) {
	f, err := os.Create(filepath.Join(localDir(t), "big"))
	w := rawWriter(t, f, err)
	total := writeDoubling(t, w, 256<<10, func(size int, took time.Duration) bool {
		if w.until.IsZero() && took > 10*SlowWrite {
			t.Fatalf("a raw write of %d bytes took %v and did not pause raw writes", size, took)
		}
		return !w.until.IsZero()
	})
	if left := time.Until(w.until); left < RawPause-time.Second || left > RawPause {
		t.Errorf("raw writes paused for %v, want %v", left, RawPause)
	}
	for range 3 {
		if n, err := w.Write([]byte("tail\n")); err != nil || n != 5 {
			t.Fatalf("Write while paused = %d, %v", n, err)
		}
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != int64(total+15) {
		t.Fatalf("the file holds %d bytes, want %d", st.Size(), total+15)
	}
}

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestConnWaitsForASlowReader: more than the socket buffers hold goes
// through whole and in order; the writer parks while the reader lags.
func TestConnWaitsForASlowReader(t *testing.T) {
	client, server := tcpPair(t)
	w := WrapConn(server)
	if _, ok := w.(*Conn); !ok {
		t.Fatalf("a TCP connection was not wrapped: %T", w)
	}
	want := make([]byte, 16<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := w.Write(want)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // the buffers fill; the writer waits
	got, err := io.ReadAll(io.LimitReader(client, int64(len(want))))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read are not those written")
	}
}

// TestConnHonoursDeadlines: a write that cannot complete before the write
// deadline fails with os.ErrDeadlineExceeded, as an ordinary one does, and
// says how much it wrote. The deadline is set once the write has begun
// (bytes wait in the peer's receive queue): set 100 ms ahead before the
// Write, it had passed before the Write began on a loaded machine, which
// then wrote nothing (issue 29).
func TestConnHonoursDeadlines(t *testing.T) {
	client, server := tcpPair(t)
	w := WrapConn(server)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := w.Write(make([]byte, 64<<20)) // nobody reads
		done <- result{n, err}
	}()
	rc, err := client.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		queued := 0
		rc.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		if queued > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write sent nothing in 10 s")
		}
	}
	t0 := time.Now()
	w.SetWriteDeadline(t0)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the write went on 10 s past its deadline")
	}
	if !errors.Is(r.err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past the deadline: %d, %v", r.n, r.err)
	}
	if r.n == 0 || r.n >= 64<<20 {
		t.Errorf("wrote %d bytes before the deadline", r.n)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the deadline took %v to act", d)
	}
}

// TestConnReportsAClosedPeer: writing to a connection the peer closed fails
// with a *net.OpError carrying the errno.
func TestConnReportsAClosedPeer(t *testing.T) {
	client, server := tcpPair(t)
	w := WrapConn(server)
	client.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = w.Write(make([]byte, 64<<10))
		time.Sleep(time.Millisecond)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || !(errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("writing to a closed peer: %v; want a net.OpError with EPIPE or ECONNRESET", err)
	}
}

// TestSetRawFilesOff: with raw file writes turned off (the sampler does it
// at short intervals), a FileWriter on a local file writes the ordinary way:
// a write slow enough to pause raw writes, were it raw, does not, and every
// byte lands.
func TestSetRawFilesOff(t *testing.T) {
	f, err := os.Create(filepath.Join(localDir(t), "big"))
	w := rawWriter(t, f, err)
	SetRawFiles(false)
	t.Cleanup(func() { SetRawFiles(true) })
	if RawFiles() {
		t.Fatal("RawFiles() still true")
	}
	total := writeDoubling(t, w, 1<<20, func(size int, took time.Duration) bool {
		if !w.until.IsZero() {
			t.Fatalf("a write of %d bytes paused raw writes: it was made raw", size)
		}
		return took > 2*SlowWrite // a raw write this slow would have paused raw writes
	})
	if st, err := f.Stat(); err != nil || st.Size() != int64(total) {
		t.Fatalf("the file holds %v bytes (%v), want %d", st.Size(), err, total)
	}
}

// writeDoubling writes zeros to w, from size bytes doubling up to 512 MiB,
// until done says so after a write (given its size and how long it took),
// and returns the bytes written. It fails the test when no write of up to
// 512 MiB was slower than SlowWrite.
func writeDoubling(t *testing.T, w *FileWriter, size int, done func(size int, took time.Duration) bool) int {
	t.Helper()
	total := 0
	for ; size <= 512<<20; size *= 2 {
		t0 := time.Now()
		n, err := w.Write(make([]byte, size))
		took := time.Since(t0)
		if err != nil || n != size {
			t.Fatalf("Write(%d bytes) = %d, %v", size, n, err)
		}
		total += n
		if done(size, took) {
			return total
		}
	}
	t.Fatalf("no write of up to 512 MiB took longer than %v", SlowWrite)
	return total
}

// TestPread reads at offsets without moving the file's position, reads
// nothing into an empty buffer, and gives the errno of a bad descriptor.
func TestPread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	for _, c := range []struct {
		off  int64
		want string
	}{{6, "6789"}, {0, "0123"}, {8, "89"}, {10, ""}} {
		n, err := Pread(int(f.Fd()), b, c.off)
		if err != nil || string(b[:n]) != c.want {
			t.Errorf("Pread at %d: %q, %v; want %q", c.off, b[:n], err, c.want)
		}
	}
	if n, err := Pread(int(f.Fd()), nil, 0); n != 0 || err != nil {
		t.Errorf("Pread into nothing: %d, %v", n, err)
	}
	if _, err := Pread(-1, b, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("Pread of fd -1: %v, want EBADF", err)
	}
}
