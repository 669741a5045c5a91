package recorder

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/testutil"
)

// TestResolveDirRefusesAnotherUsersSymlink: `live --record-dir /tmp/x`,
// with /tmp/x -> /etc planted by another user, is refused as -o is (issue
// 28, finding 4); a link of the caller's own is followed.
func TestResolveDirRefusesAnotherUsersSymlink(t *testing.T) {
	testutil.RequireRoot(t, "to give the planted symbolic link another owner (lchown to nobody)")
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	theirs, mine := filepath.Join(root, "theirs"), filepath.Join(root, "mine")
	for _, l := range []string{theirs, mine} {
		if err := os.Symlink(etc, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	var se *beneath.SymlinkError
	if got, err := ResolveDir(theirs); !errors.As(err, &se) || se.Path != theirs {
		t.Errorf("ResolveDir(another user's link) = %q, %v; want a SymlinkError naming %s", got, err, theirs)
	}
	if got, err := ResolveDir(mine); err != nil || got != etc {
		t.Errorf("ResolveDir(the caller's link) = %q, %v; want %s", got, err, etc)
	}
}
