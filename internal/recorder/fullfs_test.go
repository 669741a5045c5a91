package recorder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/testutil"
)

// countLines counts the sample lines of a plain recording as bytes, not
// through the reader, and whether it ends with an end line. A last line cut
// just before its newline is whole: "]" ends only a sample line.
func countLines(t *testing.T, path string) (samples int, end bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(l, "[") && (strings.HasSuffix(l, "]\n") || strings.HasSuffix(l, "]")) {
			samples++
		}
		end = end || strings.HasPrefix(l, `{"type":"end"`)
	}
	return samples, end
}

// TestRotationOntoAFullDiskKeepsTheCurrentFile switches files with ctl record
// onto a full filesystem: the new file cannot take its header, so it is
// removed, the switch is reported, and the current file keeps every sample.
func TestRotationOntoAFullDiskKeepsTheCurrentFile(t *testing.T) {
	full := testutil.SmallFS(t, 0)
	a := filepath.Join(t.TempDir(), "a.jsonl")
	b := filepath.Join(full, "b.jsonl")
	smp, rec, msgs := setup(t, 40)
	if err := rec.Create(a); err != nil {
		t.Fatal(err)
	}
	runRotating(t, smp, rec, 100*time.Millisecond, b)
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file that could not be written is still there: %v", err)
	}
	r, err := recording.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := countLines(t, a)
	if r.End == nil || len(r.Samples) != 40 || r.End.Samples != 40 || lines != 40 {
		t.Errorf("%s: %d samples (%d lines), end %+v; want all 40 in the file and counted", a, len(r.Samples), lines, r.End)
	}
	if rec.Written() != 40 {
		t.Errorf("Written() = %d, want 40", rec.Written())
	}
	if fs := rec.Files(); len(fs) != 1 || fs[0] != a {
		t.Errorf("Files() = %v", fs)
	}
	joined := strings.Join(*msgs, "\n")
	if len(*msgs) != 1 || !strings.Contains(joined, b) || !strings.Contains(joined, "still recording to "+a) ||
		!strings.Contains(joined, "no space left") {
		t.Errorf("want one line naming %s, the cause and the file still recorded to; got:\n%s", b, joined)
	}
}

// TestFullDiskCountsWhatIsInTheFile records onto a filesystem that fills up
// part way: the count the recorder reports is the number of samples the file
// really holds, not the number taken.
func TestFullDiskCountsWhatIsInTheFile(t *testing.T) {
	for _, name := range []string{"run.jsonl", "run.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			dir := testutil.SmallFS(t, 6000)
			path := filepath.Join(dir, name)
			smp, rec, _ := setup(t, 0)
			if err := rec.Create(path); err != nil {
				t.Fatal(err)
			}
			done := make(chan error)
			go func() { done <- rec.Run() }()
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				// Sample until the file has stopped growing for a while: the
				// disk is full, and more samples are taken than it holds.
				var last int64 = -1
				for still := 0; still < 4; {
					time.Sleep(200 * time.Millisecond)
					if fi, err := os.Stat(path); err == nil && fi.Size() == last {
						still++
					} else if err == nil {
						last, still = fi.Size(), 0
					}
				}
				cancel()
			}()
			if err := smp.Run(ctx); err != nil {
				t.Fatal(err)
			}
			err := <-done
			if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "free space on its file system") ||
				strings.Count(err.Error(), path) != 1 {
				t.Fatalf("Run returned %v, want the disk-full error naming %s once, and what to do", err, path)
			}
			r, _ := recording.Load(path) // cut off: reports, still reads what is there
			taken := smp.Stats().Samples
			if r == nil {
				t.Fatal("the recording cannot be read at all")
			}
			if uint64(len(r.Samples)) != rec.Written() || rec.Written() == 0 || rec.Written() >= taken {
				t.Errorf("file holds %d samples, Written() = %d, taken %d", len(r.Samples), rec.Written(), taken)
			}
			if !strings.HasSuffix(name, ".zst") {
				if lines, end := countLines(t, path); uint64(lines) != rec.Written() || end {
					t.Errorf("file has %d whole sample lines (end line: %v), Written() = %d", lines, end, rec.Written())
				}
			}
		})
	}
}
