package live

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/ctl"
	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/web"
	"github.com/numascope/numascope/internal/web/webtest"
)

// TestClientRecordingStaysInRecordDir: a recording a client asks for is
// created beneath --record-dir only: a symlinked directory or file another
// user planted there is refused and nothing is written through it, ".."
// and absolute paths are refused, an existing file is never overwritten,
// and the ok reply names the file's absolute path.
func TestClientRecordingStaysInRecordDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target.jsonl"), filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.jsonl"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ := startLive(t, web.Options{RecordDir: dir}, sampling.Config{})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	reply := func(id int, path string) map[string]any {
		b, _ := json.Marshal(map[string]any{"type": "record", "id": id, "path": path})
		c.Send(string(b))
		return c.Next("record reply", func(m map[string]any) bool {
			return (m["type"] == "ok" || m["type"] == "error") && m["id"] == float64(id)
		})
	}
	for i, tc := range []struct{ path, want string }{
		{"d/x.jsonl", "symbolic link"},
		{"d/sub/x.jsonl", "symbolic link"},
		{"link.jsonl", "already exists"},
		{"old.jsonl", "already exists"},
		{"../x.jsonl", "no absolute paths, no .."},
		{"sub/../../x.jsonl", "no absolute paths, no .."},
		{filepath.Join(outside, "abs.jsonl"), "no absolute paths, no .."},
		{"nodir/x.jsonl", "does not exist"},
	} {
		m := reply(i, tc.path)
		if m["type"] != "error" || !strings.Contains(m["error"].(string), tc.want) {
			t.Errorf("record %q: %v, want an error saying %q", tc.path, m, tc.want)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the record directory: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "old.jsonl")); string(b) != "keep\n" {
		t.Errorf("old.jsonl was overwritten: %q", b)
	}
	m := reply(100, "sub/ok.jsonl")
	want := filepath.Join(dir, "sub", "ok.jsonl")
	if m["type"] != "ok" || m["path"] != want {
		t.Fatalf("record sub/ok.jsonl: %v, want ok with path %s", m, want)
	}
	if st, err := os.Lstat(want); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: %v %v", want, st, err)
	}
	// The header is on disk as soon as the recording started.
	rec, err := recording.Load(want)
	if err != nil || rec.Header.Host != "fixture" {
		t.Fatalf("the new recording's header: %v %+v", err, rec)
	}
}

// TestRecordDirMustExist: --record-dir is checked at start.
func TestRecordDirMustExist(t *testing.T) {
	_, err := NewLive(web.Options{RecordDir: filepath.Join(t.TempDir(), "nope")}, sampling.Config{})
	if err == nil || !strings.Contains(err.Error(), "--record-dir") {
		t.Fatalf("missing --record-dir: %v", err)
	}
}

// TestHelloAlwaysFirst: on the live server, as on every other kind, a
// client that sends something at once (before reading) still gets the
// hello first, never the reply to its message.
func TestHelloAlwaysFirst(t *testing.T) {
	l, _ := startLive(t, web.Options{}, sampling.Config{})
	webtest.HelloFirst(t, "live", l.Addr().String(), l.Token())
}

// TestUnknownTypeNeverListsItself: the error for a message type the live
// server does not answer lists the types it does, never that same type.
func TestUnknownTypeNeverListsItself(t *testing.T) {
	l, _ := startLive(t, web.Options{RecordDir: t.TempDir()}, sampling.Config{})
	types := append(strings.Split(web.RequestTypes, ", "), "fifo_record", "bogus", "hello", "batch")
	webtest.UnknownTypesNotListed(t, "live", dial(t, l.Server, ""), types)
}

// stalledConn opens a websocket by hand and never reads from it; it
// returns the handshake's status and body (for a refusal).
func stalledConn(t *testing.T, addr, token string) (net.Conn, int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(conn, "GET /ws?token=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", token, addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := ""
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		body = string(b)
	}
	return conn, resp.StatusCode, body
}

// TestStalledClientsCostNoSample: many clients that never read, arriving
// while the server records at a short interval with a long history, cost
// the recording no sample (its end line says 0 dropped); the clients over
// --max-clients are refused with a message; the history replay is encoded
// once for clients that connect together, not once each; the server's
// heap stays bounded.
func TestStalledClientsCostNoSample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	file := filepath.Join(t.TempDir(), "rec.jsonl")
	l, logs, stop := runLive(t, web.Options{MaxClients: 16, QueueBytes: 256 << 10, Batch: 50 * time.Millisecond},
		sampling.Config{Interval: 2 * time.Millisecond, Events: []string{"node.*", "vmstat.*"}, Discrete: true, Record: file})
	// A long history first, as a server that has run a while has.
	time.Sleep(3 * time.Second)
	var refused int
	var body string
	deadline := time.Now().Add(4 * time.Second)
	opened := 0
	for time.Now().Before(deadline) {
		_, code, b := stalledConn(t, l.Addr().String(), l.Token())
		opened++
		switch code {
		case http.StatusSwitchingProtocols:
		case http.StatusServiceUnavailable:
			refused++
			body = b
			time.Sleep(20 * time.Millisecond)
		default:
			t.Fatalf("handshake: %d %s", code, b)
		}
	}
	if refused == 0 || !strings.Contains(body, "--max-clients") {
		t.Errorf("%d connections, %d refused (body %q): want some refused over --max-clients", opened, refused, body)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	stop()
	if ms.HeapAlloc > 64<<20 {
		t.Errorf("heap %d MiB with %d stalled clients", ms.HeapAlloc>>20, opened-refused)
	}
	if l.replayEncodes > opened/4+2 {
		t.Errorf("the history was encoded %d times for %d clients", l.replayEncodes, opened-refused)
	}
	rec, err := recording.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if rec.End == nil || rec.End.Dropped != 0 {
		t.Fatalf("recording end %+v: samples were dropped while clients stalled (log: %v)", rec.End, logs.lines)
	}
	t.Logf("%d connections, %d refused, %d samples of %d columns recorded, %d history encodings, heap %d MiB",
		opened, refused, len(rec.Samples), len(rec.Columns), l.replayEncodes, ms.HeapAlloc>>20)
}

// TestClientOverByteBoundIsDropped: a client that does not read and has
// more bytes queued than QueueBytes is disconnected, with a message in the
// log, while the others go on.
func TestClientOverByteBoundIsDropped(t *testing.T) {
	l, logs := startLive(t, web.Options{QueueBytes: 256 << 10, Queue: 1 << 12, Batch: 20 * time.Millisecond, SendBuffer: 4096},
		sampling.Config{Interval: time.Millisecond, Events: []string{"node.*", "vmstat.*"}, Discrete: true})
	fast := dial(t, l.Server, "")
	fast.Next("hello", typeIs("hello"))
	stalledConn(t, l.Addr().String(), l.Token())
	deadline := time.Now().Add(20 * time.Second)
	for !logs.has("too much data queued") && !logs.has("MiB queued") {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled client was not dropped; log: %v", logs.lines)
		}
		fast.Next("batch", typeIs("batch"))
	}
}

var _ = profile.Load // the profile fixture helpers live in profile_test.go

// TestFillingDiskStopsOnlyTheRecording records onto a disk that fills up:
// the recording stops (every client is told, and the state says so), the
// line on stderr counts the samples the file really holds, and sampling
// goes on.
func TestFillingDiskStopsOnlyTheRecording(t *testing.T) {
	path := filepath.Join(testutil.SmallFS(t, 6000), "r.jsonl")
	l, logs, stop := runLive(t, web.Options{Batch: 20 * time.Millisecond}, sampling.Config{Interval: 2 * time.Millisecond, Record: path})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	c.Next("recording stopped", func(m map[string]any) bool {
		return m["type"] == "error" && strings.Contains(fmt.Sprint(m["error"]), "no space left")
	})
	c.Next("state", func(m map[string]any) bool {
		return m["type"] == "state" && m["state"].(map[string]any)["recording"] == ""
	})
	c.Next("a batch after the recording stopped", typeIs("batch"))
	stop()
	var said string
	for _, line := range logs.lines {
		if strings.HasPrefix(line, "recording stopped") {
			said = line
		}
	}
	r, _ := recording.Load(path) // cut off: reports, still reads what is there
	if r == nil || r.End != nil {
		t.Fatalf("the recording: %+v", r)
	}
	if want := fmt.Sprintf("recording stopped (%s holds %d samples)", path, len(r.Samples)); !strings.HasPrefix(said, want) || len(r.Samples) == 0 {
		t.Errorf("said %q; the file holds %d samples", said, len(r.Samples))
	}
}

// TestRecordingSwitchOntoFullDiskKeepsTheCurrentFile: a new recording (from
// a client or the FIFO) on a full filesystem fails at once, because its
// header is written and flushed before the switch; the current recording
// goes on, and the empty new file is removed.
func TestRecordingSwitchOntoFullDiskKeepsTheCurrentFile(t *testing.T) {
	full := testutil.SmallFS(t, 0)
	cur := filepath.Join(t.TempDir(), "cur.jsonl")
	l, logs, stop := runLive(t, web.Options{RecordDir: full}, sampling.Config{Record: cur})
	fifo, _ := controlFIFO(t, l)
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	c.Send(`{"type":"record","id":1,"path":"new.jsonl"}`)
	m := c.Next("record reply", func(m map[string]any) bool { return m["id"] == float64(1) })
	if m["type"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), "no space left") {
		t.Errorf("record onto a full disk: %v, want an error saying so", m)
	}
	if err := ctl.Send(fifo, "record "+filepath.Join(full, "fifo.jsonl")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !logs.has("ctl record") {
		if time.Now().After(deadline) {
			t.Fatalf("ctl record onto a full disk: no error; log %v", logs.lines)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, name := range []string{"new.jsonl", "fifo.jsonl"} {
		if _, err := os.Lstat(filepath.Join(full, name)); err == nil {
			t.Errorf("%s was left on the full disk", name)
		}
	}
	c.Send(`{"type":"label","text":"after","id":2}`)
	c.Next("label", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "label" })
	time.Sleep(200 * time.Millisecond)
	stop()
	if logs.has("recording stopped") {
		t.Errorf("the current recording stopped: %v", logs.lines)
	}
	rec, err := recording.Load(cur)
	if err != nil {
		t.Fatal(err)
	}
	labelled := false
	for _, mk := range rec.Marks {
		labelled = labelled || mk.Text == "after"
	}
	if rec.End == nil || !labelled || len(rec.Samples) < 5 {
		t.Errorf("the current recording did not go on: end %+v, label after the failed switch %v, %d samples", rec.End, labelled, len(rec.Samples))
	}
}

// TestDefaultRecordingNameUnpredictable (issue 28, finding 9): the name a
// recording gets when the client names none was the time to the second, so
// another user who can write --record-dir planted the coming minutes' names
// (files or symlinks) and every Record click failed with "already exists".
// With those names planted, a recording without a name still starts, twice
// in the same second, each in a new regular file beneath the directory.
func TestDefaultRecordingNameUnpredictable(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	now := time.Now()
	for s := -5; s <= 300; s++ {
		name := "numascope-" + now.Add(time.Duration(s)*time.Second).Format("20060102-150405")
		for _, ext := range []string{".jsonl.zst", ".jsonl"} {
			if err := os.WriteFile(filepath.Join(dir, name+ext), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(filepath.Join(outside, name), filepath.Join(dir, name+"-0.jsonl.zst")); err != nil {
			t.Fatal(err)
		}
	}
	planted, _ := os.ReadDir(dir)
	l, _ := startLive(t, web.Options{RecordDir: dir}, sampling.Config{})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))
	seen := map[string]bool{}
	for id := range 2 {
		c.Send(fmt.Sprintf(`{"type":"record","id":%d}`, id))
		m := c.Next("record reply", func(m map[string]any) bool {
			return (m["type"] == "ok" || m["type"] == "error") && m["id"] == float64(id)
		})
		path, _ := m["path"].(string)
		if m["type"] != "ok" || filepath.Dir(path) != dir || seen[path] {
			t.Fatalf("record without a name, %d planted names: %v; want ok with a new file in %s", len(planted), m, dir)
		}
		seen[path] = true
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			t.Fatalf("%s: %v %v; want the recording, a regular file with its header", path, st, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written through a planted symlink: %v", entries)
	}
}
