package sigfwd

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// TestExitStatus: an exit status, a signal as 128+N, and a failure to wait.
func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{{"exit 0", 0, 0}, {"exit 3", 3, 0}, {"kill -TERM $$", 128 + 15, syscall.SIGTERM}, {"kill -KILL $$", 128 + 9, syscall.SIGKILL}} {
		code, sig, err := ExitStatus(exec.Command("sh", "-c", c.script).Run())
		if code != c.code || sig != c.sig || err != nil {
			t.Errorf("%q: %d, %v, %v; want %d, %v, no error", c.script, code, sig, err, c.code, c.sig)
		}
	}
	werr := errors.New("wait: no child processes")
	if code, sig, err := ExitStatus(werr); code != 0 || sig != 0 || err != werr {
		t.Errorf("a failed wait: %d, %v, %v; want the error", code, sig, err)
	}
}
