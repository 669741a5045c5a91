package recorder

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/numascope/numascope/internal/recording"
)

// TestFailedSwitchRemovesOnlyItsOwnFile: a switch that fails after
// creating its file (a full disk while writing the header) removes the
// file again. It removed it by path (os.Remove), so a user who owns a
// directory on the way (`record -o /tmp/theirs/r.jsonl`, or the browser's
// record with a path) could swap that directory for a link to /etc in the
// meantime and have root remove /etc/r.jsonl (issue 28, finding 4). The
// removal now happens in the directory the file was created in, held open,
// and only if the name there is still that file.
func TestFailedSwitchRemovesOnlyItsOwnFile(t *testing.T) {
	root := t.TempDir()
	theirs, etc := filepath.Join(root, "theirs"), filepath.Join(root, "etc")
	for _, d := range []string{theirs, etc} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(etc, "r.jsonl")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, path, done, err := Dest{Path: filepath.Join(theirs, "r.jsonl")}.create()
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close(recording.End{})
	// The owner of theirs swaps it for a link to etc.
	if err := os.Rename(theirs, theirs+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(etc, theirs); err != nil {
		t.Fatal(err)
	}
	done(true)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Fatalf("undoing the switch to %s removed or changed %s through the swapped-in link: %q (%v)", path, victim, b, err)
	}
	if _, err := os.Lstat(filepath.Join(theirs+".old", "r.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the file created was not removed from the directory it was created in: %v", err)
	}

	// A name that no longer is the file created is left alone too.
	again := filepath.Join(root, "again")
	if err := os.Mkdir(again, 0o755); err != nil {
		t.Fatal(err)
	}
	w, _, done, err = Dest{Path: filepath.Join(again, "r.jsonl")}.create()
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close(recording.End{})
	if err := os.Rename(filepath.Join(again, "r.jsonl"), filepath.Join(again, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(again, "r.jsonl"), []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done(true)
	if b, err := os.ReadFile(filepath.Join(again, "r.jsonl")); err != nil || string(b) != "someone else's\n" {
		t.Errorf("undoing the switch removed a file it did not create: %q (%v)", b, err)
	}
}
