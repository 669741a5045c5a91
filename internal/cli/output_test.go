package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/testutil"
)

// TestOutputRefusesAnotherUsersSymlink is the attack of issue 28, finding
// 4: another user's link x -> DIR (DIR standing for /etc) made root's
// `record --force -o x/victim.conf` truncate DIR/victim.conf, and `record
// -o x/new.jsonl` and `profile -o x/p.json` create files in DIR. The link
// is owned by nobody, in a directory that is neither sticky nor
// world-writable, so fs.protected_symlinks would not stop it: the refusal
// is numascope's own. Each is refused before anything runs, with one line
// naming the link and its owner, with and without --force, also when the
// other user's link is reached through one of the caller's; a link of the
// caller's own is followed.
func TestOutputRefusesAnotherUsersSymlink(t *testing.T) {
	testutil.RequireRoot(t, "to give the planted symbolic link another owner (lchown to nobody)")
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(etc, "victim.conf")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x, mine := filepath.Join(root, "x"), filepath.Join(root, "mine")
	for link, target := range map[string]string{x: etc, mine: "x"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(x, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(root, "ran")
	want := x + ` is a symbolic link (to "` + etc + `") owned by `
	for _, c := range []struct {
		args    []string
		created string // must not appear in etc
	}{
		{append(recordArgs(root, filepath.Join(x, "victim.conf"), "1s"), "--force", "--", "touch", ran), ""},
		{append(recordArgs(root, filepath.Join(x, "new.jsonl"), "1s"), "--", "touch", ran), "new.jsonl"},
		{append(recordArgs(root, filepath.Join(mine, "new.jsonl"), "1s"), "--", "touch", ran), "new.jsonl"},
		{[]string{"profile", "-o", filepath.Join(x, "p.json"), "--", "touch", ran}, "p.json"},
		{[]string{"profile", "--force", "-o", filepath.Join(x, "p.json"), "--", "touch", ran}, "p.json"},
		{[]string{"profile", "--force", "-o", filepath.Join(x, "victim.conf"), "--", "touch", ran}, ""},
	} {
		stderr, code := numascope(t, c.args)
		if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "uid 65534") || !strings.Contains(stderr, "name the real directory instead, or remove the link") {
			t.Errorf("%q: exit %d, stderr %q; want it refused with %q", c.args, code, stderr, want)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
			t.Errorf("%q: %d lines on stderr, want one: %q", c.args, n+1, stderr)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
			t.Fatalf("%q wrote through the link: victim.conf is %q (%v)", c.args, b, err)
		}
		if c.created != "" {
			if _, err := os.Lstat(filepath.Join(etc, c.created)); err == nil {
				t.Fatalf("%q created %s through the link", c.args, filepath.Join(etc, c.created))
			}
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%q ran the command before refusing the output", c.args)
		}
	}

	// The caller's own link (root's here) is followed: mine2 -> etc.
	mine2 := filepath.Join(root, "mine2")
	if err := os.Symlink(etc, mine2); err != nil {
		t.Fatal(err)
	}
	if stderr, code := numascope(t, append(recordArgs(root, filepath.Join(mine2, "ok.jsonl"), "1s"), "--", "true")); code != 0 {
		t.Errorf("record -o through the caller's own link: exit %d: %s", code, stderr)
	} else if _, err := os.Stat(filepath.Join(etc, "ok.jsonl")); err != nil {
		t.Errorf("record -o through the caller's own link: %v", err)
	}
}
