package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

// TestCompressedRecordingIsReadableWithinTheFlushBound records to .zst
// while the batch tick is 10 s: the recording is flushed by the recorder's
// bound (250 ms for zstd), not by when browsers get their batches, so a
// reader following the file sees samples a few hundred ms old, not 10 s.
func TestCompressedRecordingIsReadableWithinTheFlushBound(t *testing.T) {
	const interval = 10 * time.Millisecond
	path := filepath.Join(t.TempDir(), "live.jsonl.zst")
	_, logs, stop := runLive(t, Options{Batch: 10 * time.Second}, LiveConfig{Interval: interval, Record: path})
	time.Sleep(1200 * time.Millisecond)
	readAt := time.Now()
	r, _ := recording.Load(path) // still being written: the frame is open
	if r == nil || len(r.Samples) == 0 {
		t.Fatalf("after 1.2 s of recording at %v the file shows no sample (log %v)", interval, logs.lines)
	}
	last := time.Duration(r.Samples[len(r.Samples)-1].T * float64(time.Second))
	// 250 ms bound, one interval, and slack for a loaded test machine.
	if lag, bound := readAt.Sub(r.Header.Start)-last, 250*time.Millisecond+interval+450*time.Millisecond; lag > bound {
		t.Errorf("the newest sample in the file is %v old, want at most %v", lag, bound)
	}
	stop()
	if r, err := recording.Load(path); err != nil || r.End == nil || r.End.Samples != uint64(len(r.Samples)) {
		t.Fatalf("after stop: %v, end %+v", err, r.End)
	}
}

// TestLiveRecordingSwitch switches a live recording from -o to a client's
// file: the new file's t=0 is the last sample before the switch, each end
// line counts the samples its file holds, and no sample is lost between
// the two.
func TestLiveRecordingSwitch(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.jsonl")
	l, logs, stop := runLive(t, Options{}, LiveConfig{Interval: 5 * time.Millisecond, Record: a, RecordDir: dir})
	c := dial(t, l.Server, "")
	c.next("hello", typeIs("hello"))
	time.Sleep(150 * time.Millisecond)
	c.send(`{"type":"record","id":1,"path":"b.jsonl.zst"}`)
	b := filepath.Join(dir, "b.jsonl.zst")
	if m := c.next("record reply", func(m map[string]any) bool { return m["id"] == float64(1) }); m["type"] != "ok" || m["path"] != b {
		t.Fatalf("record: %v", m)
	}
	time.Sleep(150 * time.Millisecond)
	stop()
	ra, err := recording.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := recording.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recording.Recording{ra, rb} {
		if r.End == nil || len(r.Samples) < 5 || r.End.Samples != uint64(len(r.Samples)) {
			t.Fatalf("end %+v, %d samples in the file (log %v)", r.End, len(r.Samples), logs.lines)
		}
	}
	lastA := ra.Header.Start.Add(time.Duration(ra.Samples[len(ra.Samples)-1].T * 1e9))
	if d := rb.Header.Start.Sub(lastA); d < -10*time.Microsecond || d > 10*time.Microsecond {
		t.Errorf("b starts %v after a's last sample, want at it", d)
	}
	if first := rb.Samples[0].T; first < 0.004 || first > 0.1 {
		t.Errorf("b's first sample at t=%v, want one interval (5 ms) after its t=0", first)
	}
	if s := strings.Join(logs.lines, "\n"); strings.Contains(s, "recording stopped") {
		t.Errorf("log: %s", s)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
}
