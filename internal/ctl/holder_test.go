package ctl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// holdFIFO starts `sh` that opens path with the shell redirection redir
// (<> to read, > to write) and then sleeps, as another process's numascope
// holding its control FIFO would; cred, when set, runs it as that user. It
// returns the process once the FIFO is open and the shell has become the
// sleep (its command line "sleep 30"): the shell says "open" before its
// exec, and a loaded machine ran a test's look at the holder in between.
func holdFIFO(t *testing.T, path, redir string, cred *syscall.Credential) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 3`+redir+`"$1"; echo open; exec sleep 30`, "sh", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 5)
	done := make(chan error, 1)
	go func() { _, err := out.Read(buf); done <- err }()
	select {
	case err := <-done:
		if err != nil || string(buf[:4]) != "open" {
			t.Fatalf("the holder of %s did not open it: %v %q", path, err, buf)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the holder of %s did not open it in 10 s", path)
	}
	cmdline := fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(cmdline); string(b) == "sleep\x0030\x00" {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder of %s did not exec sleep in 10 s", path)
		}
	}
}

// TestSteerNamesTheReader: numascope ctl learns which process took its
// command (PID, user, command line), and only readers count: another
// process that has the FIFO open for writing, as a second ctl would, is
// not named.
func TestSteerNamesTheReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl")
	mkfifo(t, path, 0o600)
	reader := holdFIFO(t, path, "<>", nil)
	writer := holdFIFO(t, path, ">", nil)
	rs, err := Steer(path, "label phase 2")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].PID != reader.Process.Pid || rs[0].UID != os.Geteuid() || rs[0].Command != "sleep 30" {
		t.Fatalf("Steer went to %+v; want only the reader, PID %d (sleep 30), not the writer PID %d", rs, reader.Process.Pid, writer.Process.Pid)
	}
	if s := rs[0].String(); !strings.HasPrefix(s, fmt.Sprintf("PID %d (", reader.Process.Pid)) || !strings.HasSuffix(s, "): sleep 30") {
		t.Errorf("the reader is named %q", s)
	}
}

// TestSteerRefusesAnotherUsersReader: a FIFO of root's that a real second
// user (nobody) has open for reading (it was left open to others, or
// handed over) gets no command: the process it would steer is not root's.
func TestSteerRefusesAnotherUsersReader(t *testing.T) {
	testutil.RequireRoot(t, "to run a process as nobody")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ctl")
	mkfifo(t, path, 0o666)
	// Our own reader, to see whether anything was written.
	own, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	other := holdFIFO(t, path, "<>", &syscall.Credential{Uid: 65534, Gid: 65534})
	_, err = Steer(path, "label secret")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("read by PID %d", other.Process.Pid)) || !strings.Contains(err.Error(), "another user") {
		t.Fatalf("Steer to a FIFO that nobody's process reads: %v", err)
	}
	buf := make([]byte, 64)
	if n, _ := own.Read(buf); n > 0 {
		t.Errorf("the command was written anyway: %q", buf[:n])
	}
}

// TestShellWord: a command line is shown as it would be typed, and no
// control character of it reaches the terminal.
func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"numascope":      "numascope",
		"-i":             "-i",
		"node.*.MemFree": "'node.*.MemFree'",
		"phase 2":        "'phase 2'",
		"it's":           `'it'\''s'`,
		"\x1b]0;pwned\a": `"\x1b]0;pwned\a"`,
		"":               "''",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
