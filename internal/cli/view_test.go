package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/web"
)

// TestViewTellsProfilesFromRecordings: view opens the profile pages for a
// profile and the time-series view for every recording format.
func TestViewTellsProfilesFromRecordings(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "r.jsonl")
	w, err := recording.Create(rec, false)
	if err != nil {
		t.Fatal(err)
	}
	h := recording.Header{Host: "h", Interval: 1, Columns: []recording.Column{{Name: "a.b", Sensor: "a", Event: "b", Kind: "gauge"}}}
	if err := w.WriteHeader(&h); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSample(time.Second, []float64{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(recording.End{Samples: 1}); err != nil {
		t.Fatal(err)
	}
	zst := filepath.Join(dir, "r.jsonl.zst")
	wz, err := recording.Create(zst, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := wz.WriteHeader(&h); err != nil {
		t.Fatal(err)
	}
	if err := wz.Close(recording.End{}); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]bool{
		filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json"): true,
		filepath.Join("..", "recording", "testdata", "legacy-numaconnect2.json"):    false,
		rec:                          false,
		zst:                          false,
		write("empty.json", ""):      false,
		write("array.json", "  [1]"): false,
		write("min.json", "\n{\"command\": [\"x\", {\"access_matrix\": 1}], \"access_matrix\": {}}"): true,
		// A header whose later keys mention access_matrix is still a recording.
		write("hdr.jsonl", `{"type":"header","access_matrix":{}}`+"\n"): false,
		write("trunc.json", `{"command": [`):                            false,
		write("exp.json", `{"analysis": {}, "runs": []}`):               false,
	}
	for path, want := range cases {
		got, err := isProfileFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		if got != want {
			t.Errorf("%s: profile %v, want %v", path, got, want)
		}
	}
	if _, err := isProfileFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file is no error")
	}
}

func TestViewSourcePathChecksDirectories(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sourceDirs([]string{a + ":" + b, a, ""})
	if err != nil || strings.Join(got, " ") != strings.Join([]string{a, b, a}, " ") {
		t.Errorf("sourceDirs: %q, %v", got, err)
	}
	if _, err := sourceDirs([]string{a + ":" + filepath.Join(dir, "nope")}); err == nil || !strings.Contains(err.Error(), "--source-path "+filepath.Join(dir, "nope")+": no such file or directory") {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := sourceDirs([]string{file}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	// A relative directory becomes absolute: the page shows where it looks.
	got, err = sourceDirs([]string{"testdata"})
	if err != nil || len(got) != 1 || !filepath.IsAbs(got[0]) {
		t.Errorf("relative: %q %v", got, err)
	}
}

// TestViewProfileErrors: a profile that does not load stops view with a
// message naming the file.
func TestViewProfileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"access_matrix": {"counts": "x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newProfileServer(webOptionsForTest(), bad, nil); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad profile: %v", err)
	}
	srv, err := newProfileServer(webOptionsForTest(), filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.SourceFiles(); len(got) != 2 || got[0] != "/data/profnuma.c" {
		t.Errorf("source files %q", got)
	}
}

func webOptionsForTest() web.Options { return web.Options{Listen: "127.0.0.1:0"} }

// TestViewCommandRefusesMissingSourcePath: the whole command stops before
// serving when --source-path names no directory.
func TestViewCommandRefusesMissingSourcePath(t *testing.T) {
	prof := filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json")
	if code := Main([]string{"view", prof, "--listen", "127.0.0.1:0", "--source-path", filepath.Join(t.TempDir(), "nope")}); code == 0 {
		t.Fatal("view with a missing --source-path directory exited 0")
	}
}

// TestViewRefusesWhatIsNotAFile: a named pipe, opened, would block view
// until someone wrote into it; a directory or a device is no document.
// Each is refused at once, by name. (The test's deadline catches a block.)
func TestViewRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "run.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "is a named pipe (FIFO)"},
		{dir, "is a directory"},
		{"/dev/null", "is a device"},
	} {
		done := make(chan error, 1)
		go func() { done <- viewableFile(c.path) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.path+" "+c.want) {
				t.Errorf("viewableFile(%s) = %v, want %q", c.path, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("viewableFile(%s) still blocked after 10 s", c.path)
		}
	}
	if err := viewableFile(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing file: %v (the loaders say so)", err)
	}
	// The command, with a good file beside the pipe: refused before serving.
	prof := filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json")
	done := make(chan int, 1)
	go func() { done <- Main([]string{"view", prof, fifo, "--listen", "127.0.0.1:0"}) }()
	select {
	case code := <-done:
		if code == 0 {
			t.Error("view of a FIFO exited 0")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("view of a FIFO still running after 10 s")
	}
}

// FuzzIsProfile: the detector never fails on any input, and only says
// "profile" for an object with an access_matrix key.
func FuzzIsProfile(f *testing.F) {
	for _, s := range []string{`{"access_matrix":{}}`, `{"type":"header"}` + "\n", `[1,2]`, "\x28\xb5\x2f\xfd", `{"a":[{"access_matrix":1}]}`, ` {"x":"\u0000","access_matrix":null}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, err := isProfile(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("isProfile(%q): %v", b, err)
		}
		if ok && !strings.Contains(string(b), "access_matrix") && !strings.Contains(string(b), `\u`) {
			t.Fatalf("isProfile(%q) = true without an access_matrix key", b)
		}
	})
}

// TestWebTokenFlags: NUMASCOPE_TOKEN gives the token when --token does not
// (a command line is visible to every local user), --token wins over it,
// --no-token is refused off loopback, and --max-clients must be positive.
func TestWebTokenFlags(t *testing.T) {
	t.Setenv(tokenEnv, "from-env")
	stderr := &lockedWriter{w: os.Stderr}
	w := webFlags{listen: "127.0.0.1:0", maxClients: 1}
	if o := w.options(stderr); o.Token != "from-env" || o.NoToken || o.MaxClients != 1 {
		t.Errorf("options with $%s: %+v", tokenEnv, o)
	}
	w.token = "from-flag"
	if o := w.options(stderr); o.Token != "from-flag" {
		t.Errorf("--token and $%s: token %q, want the flag's", tokenEnv, o.Token)
	}
	srv := web.NewView(webFlags{listen: "127.0.0.1:0", maxClients: 1}.optionsFor(t), &recording.Recording{}, "x")
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	if srv.Token() != "from-env" || !strings.Contains(srv.URL(), "?token=from-env") {
		t.Errorf("server token %q, URL %s", srv.Token(), srv.URL())
	}
	prof := filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json")
	t.Setenv(tokenEnv, "")
	if code := Main([]string{"view", prof, "--listen", "0.0.0.0:0", "--no-token"}); code == 0 {
		t.Error("view --no-token on 0.0.0.0 exited 0")
	}
	if code := Main([]string{"view", prof, "--listen", "127.0.0.1:0", "--max-clients", "0"}); code == 0 {
		t.Error("view --max-clients 0 exited 0")
	}
}

func (w webFlags) optionsFor(t *testing.T) web.Options {
	t.Helper()
	return w.options(&lockedWriter{w: os.Stderr})
}

// TestViewTellsBenchDocuments: view opens the bench page for what numascope
// bench --format json writes (either matrix alone, or a loaded section),
// and nothing else.
func TestViewTellsBenchDocuments(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]string{
		filepath.Join("..", "..", "testdata", "bench", "view", "2x3-loaded.json"):   docBench,
		filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json"): docProfile,
		write("lat.json", "{\n  \"latency_ns\": {\"initiators\": [0]}}"):            docBench,
		write("bw.json", `{"bandwidth_mbs": {}, "placement": {}}`):                  docBench,
		write("loaded.json", `{"placement": {}, "loaded": {"pairs": []}}`):          docBench,
		filepath.Join("..", "..", "testdata", "bench", "view", "c2c-6cpu.json"):     docBench,
		write("hdr.jsonl", `{"type":"header","latency_ns":{}}`+"\n"):                docRecording,
		write("nested.json", `{"conditions": {"latency_ns": 1}}`):                   docRecording,
	}
	for path, want := range cases {
		got, err := documentKindOf(path)
		if err != nil || got != want {
			t.Errorf("%s: kind %q (%v), want %q", path, got, err, want)
		}
	}
}

// endless is `{"x":"` and then 'a' for ever.
type endless struct{ started bool }

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	if !e.started {
		n = copy(p, `{"x":"`)
		e.started = true
	}
	for i := n; i < len(p); i++ {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestDocumentKindBoundedMemory: a first value that never ends is read no
// further than maxDetect: the file is then a recording (whose loader says
// what is wrong), and detection never held more than a few times the bound.
func TestDocumentKindBoundedMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	k, err := documentKind(&endless{})
	runtime.ReadMemStats(&after)
	if err != nil || k != docRecording {
		t.Fatalf("kind %q, err %v", k, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*maxDetect {
		t.Fatalf("detection allocated %d MiB", grew>>20)
	}
}

// TestViewBenchErrors: a bench document view cannot draw, or one over the
// size bound, stops view with a message naming the file and the problem.
func TestViewBenchErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"latency_ns": {"initiators": [0, 1], "targets": [0], "matrix": [[90]]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newBenchServer(webOptionsForTest(), bad); err == nil || !strings.Contains(err.Error(), bad+": not a numascope bench document: latency_ns: the matrix has 1 rows for 2 initiators") {
		t.Errorf("bad bench document: %v", err)
	}
	if code := Main([]string{"view", bad, "--listen", "127.0.0.1:0"}); code == 0 {
		t.Error("view of a malformed bench document exited 0")
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(`{"latency_ns": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, web.MaxBenchFileBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := newBenchServer(webOptionsForTest(), huge); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over the %d MiB limit for a bench document", web.MaxBenchFileBytes>>20)) {
		t.Errorf("huge bench document: %v", err)
	}
	srv, err := newBenchServer(webOptionsForTest(), filepath.Join("..", "..", "testdata", "bench", "view", "2x3-loaded.json"))
	if err != nil || srv == nil {
		t.Fatalf("fixture: %v", err)
	}
}
