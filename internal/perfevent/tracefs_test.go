package perfevent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
)

// tracefsHelperEnv makes the test binary, run as another user by
// TestTracefsClosedToThisUser, print what Tracefs says of the tree it names.
const tracefsHelperEnv = "NUMASCOPE_TRACEFS_HELPER"

func TestMain(m *testing.M) {
	if root := os.Getenv(tracefsHelperEnv); root != "" {
		dir, err := Tracefs(sysfs.New(root))
		fmt.Printf("dir=%s denied=%v err=%v fix=%s\n", dir, errors.Is(err, ErrTracefsDenied), err, TracefsFix(err))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTracefsClosedToThisUser: a tracefs that is mounted but closed to the
// user (Debian mounts it 0700) is said to be so, with "run as root", not
// "not mounted" with advice to mount it. Root reads any directory, so the
// check runs in a copy of this test binary as nobody, on a tree whose
// kernel/tracing is root's and 0700, then 0755.
func TestTracefsClosedToThisUser(t *testing.T) {
	testutil.RequireRoot(t, "to run the check as another user")
	const nobody = 65534
	tmp := t.TempDir()
	for _, d := range []string{filepath.Dir(tmp), tmp} { // nobody must reach the binary
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "perfevent.test")
	copyFile(t, self, bin)
	root := filepath.Join(tmp, "root")
	tracing := filepath.Join(root, "sys/kernel/tracing")
	if err := os.MkdirAll(filepath.Join(tracing, "events"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		want string
	}{
		{0o700, "dir= denied=true err=tracefs at " + tracing + " is closed to this user: permission denied fix=run as root"},
		{0o755, "dir=" + tracing + " denied=false err=<nil>"},
	} {
		if err := os.Chmod(tracing, tc.mode); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), tracefsHelperEnv+"="+root)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the check as nobody: %v: %s", err, out)
		}
		if !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("tracing dir %o, as nobody:\n got %s\nwant %s...", tc.mode, out, tc.want)
		}
	}
	// Not mounted at all: the advice is to mount it.
	_, err = Tracefs(sysfs.New(t.TempDir()))
	if err == nil || errors.Is(err, ErrTracefsDenied) || !strings.Contains(err.Error(), "not mounted") || !strings.HasPrefix(TracefsFix(err), "mount it") {
		t.Errorf("no tracefs: %v; fix %q", err, TracefsFix(err))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
