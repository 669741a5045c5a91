package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/testutil"
)

// fixtureProfile is the real 4-node capture of testdata/profiles (README
// there): serial init of profnuma, built in the VM as /data/profnuma.c.
var fixtureProfile = filepath.Join("..", "..", "testdata", "profiles", "serial-init-4node.json")

// workloads holds the sources the fixture was built from (testdata/workloads
// at the time of the capture).
var workloads = filepath.Join("..", "..", "testdata", "profiles", "src")

func startProfile(t *testing.T, file string, search []string) *Profile {
	t.Helper()
	p, err := profile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := NewProfile(Options{Listen: "127.0.0.1:0"}, file, body, p, search)
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, pr)
	return pr
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestProfileHelloCarriesProfileAndHints(t *testing.T) {
	dir := abs(t, workloads)
	pr := startProfile(t, fixtureProfile, []string{dir})
	want, err := profile.Load(fixtureProfile)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, pr.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if h["mode"] != "profile" || h["file"] != fixtureProfile || h["protocol"].(float64) != ProtocolVersion {
		t.Fatalf("hello: mode %v file %v protocol %v", h["mode"], h["file"], h["protocol"])
	}
	// The document as in the file: every top-level key, totals and matrix equal.
	var raw map[string]any
	b, _ := os.ReadFile(fixtureProfile)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h["profile"], raw) {
		t.Errorf("hello's profile differs from the file's")
	}
	doc := h["profile"].(map[string]any)
	tot := doc["totals"].(map[string]any)
	if tot["remote"].(float64) != float64(want.Totals.Remote) || want.Totals.Remote == 0 {
		t.Errorf("totals.remote %v, want %d (> 0)", tot["remote"], want.Totals.Remote)
	}
	// The same hints as numascope report.
	var hints []string
	for _, x := range h["hints"].([]any) {
		hints = append(hints, x.(string))
	}
	if !reflect.DeepEqual(hints, want.Hints()) || !strings.Contains(strings.Join(hints, "\n"), "went to pages on node 0") {
		t.Errorf("hints %q, want %q", hints, want.Hints())
	}
	if sp := h["source_path"].([]any); len(sp) != 1 || sp[0] != dir {
		t.Errorf("source_path %v, want [%s]", sp, dir)
	}
	if got := pr.SourceFiles(); !reflect.DeepEqual(got, []string{"/data/profnuma.c", "/data/workload.h"}) {
		t.Errorf("source files %q", got)
	}
}

// TestProfileKeepsUnknownFields: fields this version does not decode (an
// allocations table, say) reach the client, and their files are served.
func TestProfileKeepsUnknownFields(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "alloc.c")
	if err := os.WriteFile(src, []byte("int *p;\nvoid f(void) { p = malloc(64); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.json")
	doc := `{"command":["x"],"samples":1,"totals":{},"access_matrix":{"thread_nodes":[-1,0],"page_nodes":[0],"counts":[[0],[1]]},
"locations":[],"allocations":[{"function":"f","file":"/build/alloc.c","line":2,"kind":"malloc","calls":3,"bytes":192,"metrics":{"first_touch":1}}],
"future_field":{"x":1}}`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	pr := startProfile(t, file, []string{dir})
	c := dial(t, pr.Server, "")
	h := c.Next("hello", typeIs("hello"))
	p := h["profile"].(map[string]any)
	if p["future_field"] == nil || len(p["allocations"].([]any)) != 1 {
		t.Fatalf("profile in hello lost fields: %v", p)
	}
	c.Send(`{"type":"source","id":1,"file":"/build/alloc.c"}`)
	m := c.Next("source", func(m map[string]any) bool { return m["id"] == 1.0 })
	if m["type"] != "source" || m["path"] != src || len(m["lines"].([]any)) != 2 {
		t.Fatalf("allocation site's file: %v", m)
	}
}

func TestProfileServesSourceFromSearchPath(t *testing.T) {
	dir := abs(t, workloads)
	pr := startProfile(t, fixtureProfile, []string{t.TempDir(), dir})
	c := dial(t, pr.Server, "")
	c.Next("hello", typeIs("hello"))
	c.Send(`{"type":"source","id":"s1","file":"/data/profnuma.c"}`)
	m := c.Next("source reply", func(m map[string]any) bool { return m["id"] == "s1" })
	if m["type"] != "source" {
		t.Fatalf("reply %v", m)
	}
	if m["file"] != "/data/profnuma.c" || m["path"] != filepath.Join(dir, "profnuma.c") {
		t.Errorf("file %v path %v", m["file"], m["path"])
	}
	b, err := os.ReadFile(filepath.Join(dir, "profnuma.c"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var got []string
	for _, l := range m["lines"].([]any) {
		got = append(got, l.(string))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lines differ from the file: %d vs %d", len(got), len(want))
	}
	// The profile's compute line is the line marked @compute in what was served.
	p, _ := profile.Load(fixtureProfile)
	top := p.Locations[0]
	if top.Function != "compute" || top.Line != testutil.MarkedLine(t, got, "compute") {
		t.Errorf("the profile's top line %s:%d (%s) is not the served file's @compute line %d",
			top.File, top.Line, top.Function, testutil.MarkedLine(t, got, "compute"))
	}
}

func TestProfileSourceNotFoundSaysWhatWasTried(t *testing.T) {
	empty := t.TempDir()
	pr := startProfile(t, fixtureProfile, []string{empty})
	c := dial(t, pr.Server, "")
	c.Next("hello", typeIs("hello"))
	c.Send(`{"type":"source","id":2,"file":"/data/profnuma.c"}`)
	e := c.Next("error", typeIs("error"))
	msg := e["error"].(string)
	for _, want := range []string{
		"/data/profnuma.c not found", "tried " + filepath.Join(empty, "data", "profnuma.c") + " (no such file)",
		filepath.Join(empty, "profnuma.c"),
		"restart view with --source-path",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if e["id"].(float64) != 2 {
		t.Errorf("error id %v", e["id"])
	}
	// Without a search path, the advice names the flag.
	pr2 := startProfile(t, fixtureProfile, nil)
	c2 := dial(t, pr2.Server, "")
	h := c2.Next("hello", typeIs("hello"))
	if _, ok := h["source_path"]; ok {
		t.Errorf("hello has source_path %v without --source-path", h["source_path"])
	}
	c2.Send(`{"type":"source","file":"/data/profnuma.c"}`)
	if msg := c2.Next("error", typeIs("error"))["error"].(string); !strings.Contains(msg, "restart view with --source-path DIR") {
		t.Errorf("error %q", msg)
	}
}

// TestProfileRefusesFilesItDoesNotName: only the files of the profile's
// locations are served, whatever the path says.
func TestProfileRefusesFilesItDoesNotName(t *testing.T) {
	dir := abs(t, workloads)
	pr := startProfile(t, fixtureProfile, []string{dir})
	c := dial(t, pr.Server, "")
	c.Next("hello", typeIs("hello"))
	for i, f := range []string{
		"/etc/passwd", "../../../../etc/passwd", "/data/../etc/passwd", "profnuma.c",
		"/data/profnuma.c/", "/data//profnuma.c", filepath.Join(dir, "profnuma.c"), "firsttouch.c",
	} {
		b, _ := json.Marshal(map[string]any{"type": "source", "id": i, "file": f})
		c.Send(string(b))
		e := c.Next("reply", func(m map[string]any) bool { return m["id"] == float64(i) })
		if e["type"] != "error" || !strings.Contains(e["error"].(string), "is not a source file of this profile") {
			t.Errorf("source %q: %v, want refused", f, e)
		}
	}
	c.Send(`{"type":"source","id":"x"}`)
	if e := c.Next("error", typeIs("error")); !strings.Contains(e["error"].(string), `give the "file"`) {
		t.Errorf("source without file: %v", e)
	}
	// A recording's requests do not apply; unknown fields are refused as ever.
	c.Send(`{"type":"range","id":9}`)
	if e := c.Next("error", typeIs("error")); !strings.Contains(e["error"].(string), "this is a profile") {
		t.Errorf("range: %v", e)
	}
	c.Send(`{"type":"source","file":"/data/profnuma.c","path":"/etc/passwd","bogus":1}`)
	if e := c.Next("error", typeIs("error")); !strings.Contains(e["error"].(string), "malformed message") {
		t.Errorf("unknown field: %v", e)
	}
}

func TestSourceCandidatesStayUnderTheSearchDirs(t *testing.T) {
	paths := func(cs []Candidate) []string {
		var out []string
		for _, c := range cs {
			if strings.Contains(c.Name, "..") || filepath.IsAbs(c.Name) {
				t.Errorf("candidate %+v leaves its directory", c)
			}
			out = append(out, c.Path())
		}
		return out
	}
	got := paths(SourceCandidates("/build/src/a/b.c", []string{"/s1", "/s2"}))
	want := []string{
		"/s1/build/src/a/b.c", "/s1/src/a/b.c", "/s1/a/b.c", "/s1/b.c",
		"/s2/build/src/a/b.c", "/s2/src/a/b.c", "/s2/a/b.c", "/s2/b.c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates\n%q\nwant\n%q", got, want)
	}
	// A recorded path climbing out with "..": no candidate leaves /s, and
	// the recorded path itself is never one.
	if got := paths(SourceCandidates("../../etc/x/../passwd", []string{"/s"})); !reflect.DeepEqual(got, []string{"/s/etc/passwd", "/s/passwd"}) {
		t.Errorf("candidates %q", got)
	}
	// Relative paths (DWARF without a compilation directory) too.
	if got := paths(SourceCandidates("src/m.c", []string{"/s"})); !reflect.DeepEqual(got, []string{"/s/src/m.c", "/s/m.c"}) {
		t.Errorf("candidates %q", got)
	}
	if got := SourceCandidates("/etc/shadow", nil); len(got) != 0 {
		t.Errorf("candidates without directories: %q", paths(got))
	}
}

// writeProfile writes a minimal profile whose locations name files, with
// comp_dirs when given, and returns its path.
func writeProfile(t *testing.T, dir string, files []string, compDirs map[string][]string) string {
	t.Helper()
	var locs []string
	for _, f := range files {
		locs = append(locs, fmt.Sprintf(`{"function":"f","file":%q,"line":1,"metrics":{}}`, f))
	}
	doc := `{"command":["x"],"samples":1,"totals":{},"access_matrix":{"thread_nodes":[-1],"page_nodes":[0],"counts":[[0]]},"locations":[` + strings.Join(locs, ",") + `]`
	if compDirs != nil {
		b, _ := json.Marshal(compDirs)
		doc += `,"comp_dirs":` + string(b)
	}
	file := filepath.Join(dir, "p.json")
	if err := os.WriteFile(file, []byte(doc+"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func askSource(t *testing.T, c *wsClient, id int, file string) map[string]any {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"type": "source", "id": id, "file": file})
	c.Send(string(b))
	return c.Next("source reply", func(m map[string]any) bool { return m["id"] == float64(id) })
}

// TestProfileNeverServesFilesOutsideItsDirectories: a profile naming a
// secret file by its absolute path (as `#line 1 "/etc/shadow"` makes one)
// gets nothing, with or without a compilation directory, and so does a
// symlink to it planted under --source-path or the compilation directory;
// regular files beneath those directories are served.
func TestProfileNeverServesFilesOutsideItsDirectories(t *testing.T) {
	root := t.TempDir()
	secretDir, build, search := filepath.Join(root, "secret"), filepath.Join(root, "build"), filepath.Join(root, "search")
	for _, d := range []string{secretDir, build, search, filepath.Join(build, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(secretDir, "shadow")
	const secretText = "root:$6$secret:19000:0:99999:7:::"
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, secretText+"\n")
	write(filepath.Join(build, "main.c"), "int main(void) { return 0; }\n")
	write(filepath.Join(search, "ok.c"), "int ok;\n")
	for _, l := range []string{filepath.Join(search, "evil.c"), filepath.Join(build, "evil.c")} {
		if err := os.Symlink(secret, l); err != nil {
			t.Fatal(err)
		}
	}
	// A symlinked directory: build/sub/link -> secretDir.
	if err := os.Symlink(secretDir, filepath.Join(build, "sub", "link")); err != nil {
		t.Fatal(err)
	}
	files := []string{secret, "/src/evil.c", "/src/ok.c", filepath.Join(build, "main.c"), filepath.Join(build, "evil.c"), "sub/link/shadow", "/x/rooted.c"}
	compDirs := map[string][]string{secret: {build}, "/src/evil.c": {build}, filepath.Join(build, "main.c"): {build},
		filepath.Join(build, "evil.c"): {build}, "sub/link/shadow": {build}, "/x/rooted.c": {"/"}}
	file := writeProfile(t, root, files, compDirs)

	noSecret := func(what string, m map[string]any) {
		t.Helper()
		b, _ := json.Marshal(m)
		if strings.Contains(string(b), "$6$secret") {
			t.Errorf("%s: the secret file was served: %s", what, b)
		}
		if m["type"] != "error" {
			t.Errorf("%s: %v, want an error", what, m)
		}
	}
	// With --source-path: only beneath it, symlinks refused.
	pr := startProfile(t, file, []string{search})
	c := dial(t, pr.Server, "")
	c.Next("hello", typeIs("hello"))
	noSecret("secret by absolute path, --source-path", askSource(t, c, 1, secret))
	m := askSource(t, c, 2, "/src/evil.c")
	noSecret("evil.c -> secret under --source-path", m)
	if msg, _ := m["error"].(string); !strings.Contains(msg, "symbolic link") {
		t.Errorf("evil.c: %v, want it to say a symbolic link was refused", m["error"])
	}
	if m := askSource(t, c, 3, "/src/ok.c"); m["type"] != "source" || m["path"] != filepath.Join(search, "ok.c") {
		t.Errorf("ok.c under --source-path: %v", m)
	}

	// Without --source-path: nothing, not even the file beneath the
	// compilation directory the profile claims.
	pr2 := startProfile(t, file, nil)
	c2 := dial(t, pr2.Server, "")
	c2.Next("hello", typeIs("hello"))
	noSecret("secret by absolute path, no --source-path", askSource(t, c2, 1, secret))
	noSecret("build/evil.c -> secret", askSource(t, c2, 2, filepath.Join(build, "evil.c")))
	noSecret("symlinked directory in the comp dir", askSource(t, c2, 3, "sub/link/shadow"))
	if m := askSource(t, c2, 5, filepath.Join(build, "main.c")); m["type"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), NoSourcePath) {
		t.Errorf("main.c beneath its claimed compilation directory, no --source-path: %v, want %q", m, NoSourcePath)
	}
}

// TestProfileIgnoresCompDirs is the attack of issue 28, finding 2: a
// profile naming /etc/shadow and /root/.bash_history with comp_dirs /etc
// and /root (and /tmp/../etc) got both files in full from a root server
// started without --source-path. Real system files are asked for; /etc/passwd
// (which exists on every system, readable) stands in for what must not be
// served when /etc/shadow is absent. None is served, the error says how to
// ask for source, and with --source-path the file beneath it is served while
// the same comp_dirs still give nothing.
func TestProfileIgnoresCompDirs(t *testing.T) {
	dir := t.TempDir()
	files := []string{"/etc/shadow", "/root/.bash_history", "/etc/passwd", "/etc/hostname", "/src/ok.c"}
	compDirs := map[string][]string{
		"/etc/shadow": {"/etc"}, "/root/.bash_history": {"/root"}, "/etc/passwd": {"/tmp/../etc"},
		"/etc/hostname": {"/etc/"}, "/src/ok.c": {"/etc"},
	}
	file := writeProfile(t, dir, files, compDirs)
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatalf("this test asks for /etc/passwd, which must exist: %v", err)
	}
	refused := func(what string, m map[string]any, want string) {
		t.Helper()
		if m["type"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), want) {
			t.Errorf("%s: %v, want an error saying %q", what, m, want)
		}
		if _, ok := m["lines"]; ok {
			t.Errorf("%s: served %v", what, m["lines"])
		}
	}
	pr := startProfile(t, file, nil)
	c := dial(t, pr.Server, "")
	if h := c.Next("hello", typeIs("hello")); h["source_path"] != nil {
		t.Errorf("hello without --source-path has source_path %v", h["source_path"])
	}
	for i, f := range files {
		refused(f+" without --source-path", askSource(t, c, i, f), "restart view with --source-path DIR")
	}

	search := filepath.Join(dir, "src")
	if err := os.Mkdir(search, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(search, "ok.c"), []byte("int ok;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr2 := startProfile(t, file, []string{search})
	c2 := dial(t, pr2.Server, "")
	c2.Next("hello", typeIs("hello"))
	for i, f := range files[:4] {
		refused(f+" with --source-path", askSource(t, c2, i, f), "not found")
	}
	m := askSource(t, c2, 9, "/src/ok.c")
	if lines, _ := m["lines"].([]any); m["type"] != "source" || m["path"] != filepath.Join(search, "ok.c") || !reflect.DeepEqual(lines, []any{"int ok;"}) {
		t.Errorf("/src/ok.c beneath --source-path: %v", m)
	}
}

// TestProfileSourceRefusesWhatIsNotSource: a FIFO (without hanging), a
// directory, a file over the size limit and a binary file are refused,
// each saying why, and a file named "../x" in the profile is not looked
// for outside the search directory.
func TestProfileSourceRefusesWhatIsNotSource(t *testing.T) {
	dir := t.TempDir()
	search := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(search, "adir.c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(search, "fifo.c"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, MaxSourceBytes+1)
	for i := range big {
		big[i] = 'x'
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(search, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.c", big)
	write("bin.c", []byte("\x7fELF\x00\x00"))
	write("crlf.c", []byte("a\r\nb\r\n\xff\n"))
	// Outside the search directory, reachable only by "..".
	if err := os.WriteFile(filepath.Join(dir, "secret.c"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var locs []string
	names := []string{"/b/fifo.c", "/b/adir.c", "/b/big.c", "/b/bin.c", "/b/crlf.c", "../secret.c"}
	for _, f := range names {
		locs = append(locs, fmt.Sprintf(`{"function":"f","file":%q,"line":1,"metrics":{}}`, f))
	}
	file := filepath.Join(dir, "p.json")
	doc := `{"command":["x"],"samples":1,"totals":{},"access_matrix":{"thread_nodes":[-1],"page_nodes":[0],"counts":[[0]]},"locations":[` + strings.Join(locs, ",") + `]}`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server runs elsewhere, so that "../secret.c" as recorded is not dir/secret.c.
	pr := startProfile(t, file, []string{search})
	c := dial(t, pr.Server, "")
	c.Next("hello", typeIs("hello"))
	want := map[string]string{
		"/b/fifo.c": "not a regular file", "/b/adir.c": "a directory", "/b/big.c": "over the 4 MiB limit",
		"/b/bin.c": "a binary file", "../secret.c": "not found",
	}
	for i, f := range names {
		b, _ := json.Marshal(map[string]any{"type": "source", "id": i, "file": f})
		c.Send(string(b))
		m := c.Next("reply", func(m map[string]any) bool { return m["id"] == float64(i) })
		if f == "/b/crlf.c" {
			lines, _ := m["lines"].([]any)
			if m["type"] != "source" || !reflect.DeepEqual(lines, []any{"a", "b", "\uFFFD"}) {
				t.Errorf("crlf.c: %v", m)
			}
			continue
		}
		msg, _ := m["error"].(string)
		if m["type"] != "error" || !strings.Contains(msg, want[f]) {
			t.Errorf("%s: %v, want an error saying %q", f, m, want[f])
		}
		if strings.Contains(msg, filepath.Join(dir, "secret.c")+" (") {
			t.Errorf("%s: looked outside the search directory: %s", f, msg)
		}
	}
}

func TestNewProfileRefusesBadJSON(t *testing.T) {
	if _, err := NewProfile(Options{}, "x.json", []byte(`{"access_matrix":`), &profile.Profile{}, nil); err == nil {
		t.Fatal("truncated JSON accepted")
	}
	if _, err := NewProfile(Options{}, "x.json", []byte(`{"locations":{"a":1}}`), &profile.Profile{}, nil); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Fatalf("locations not a list: %v", err)
	}
}

// FuzzSplitLines: the lines joined again are the file (line ends
// normalised, a final newline dropped), always valid UTF-8.
func FuzzSplitLines(f *testing.F) {
	for _, s := range []string{"", "\n", "a\nb", "a\r\nb\r\n", "\xff\xfe\n", "x\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := splitLines(b)
		for _, l := range lines {
			if !utf8.ValidString(l) || strings.Contains(l, "\n") {
				t.Fatalf("bad line %q from %q", l, b)
			}
		}
		if !utf8.Valid(b) || bytes.Contains(b, []byte("\r")) {
			return
		}
		want := strings.TrimSuffix(string(b), "\n")
		if got := strings.Join(lines, "\n"); got != want {
			t.Fatalf("splitLines(%q) joined = %q", b, got)
		}
	})
}

// TestProfileNamesReachThePageCleaned is the leftover of issue 28, finding
// 7, for profiles: function, file and thread names come from debug info
// and /proc that a local user forges (a file named with ESC and a bidi
// override, U+202E, to spoof what the page shows). None of them reaches
// the page with ESC, BEL, NUL or U+202E; yet the source file whose recorded
// name holds them is still found, by the name the page shows, because the
// lookup runs on the raw name.
func TestProfileNamesReachThePageCleaned(t *testing.T) {
	dir := t.TempDir()
	raw := "/build/ev\u202eil\x1b]2;PWNED\x07.c"
	// The raw name's last component, as it is on disk beneath --source-path.
	onDisk := filepath.Join(dir, filepath.Base(raw))
	if err := os.WriteFile(onDisk, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"command": []string{"./app\u202e"}, "samples": 1, "totals": map[string]any{},
		"access_matrix": map[string]any{"thread_nodes": []int{-1, 0}, "page_nodes": []int{0}, "counts": [][]int{{0}, {1}}},
		"locations":     []map[string]any{{"function": "comp\u202eute\x1b[2J", "file": raw, "line": 1, "metrics": map[string]any{"first_touch": 1}}},
		"threads":       []map[string]any{{"tid": 1, "name": "worker\x07\u202e\x1b[2J", "samples": 1}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pr := startProfile(t, file, []string{dir})
	c := dial(t, pr.Server, "")
	h := c.Next("hello", typeIs("hello"))
	if s, bad := hostileIn(h); bad {
		t.Fatalf("the hello carries %q uncleaned", s)
	}
	locs := h["profile"].(map[string]any)["locations"].([]any)
	shown := locs[0].(map[string]any)["file"].(string)
	if shown != "/build/evil]2;PWNED.c" {
		t.Fatalf("location file shown as %q", shown)
	}
	if th := h["profile"].(map[string]any)["threads"].([]any)[0].(map[string]any)["name"]; th != "worker[2J" {
		t.Errorf("thread name shown as %q", th)
	}
	q, _ := json.Marshal(map[string]any{"type": "source", "id": 1, "file": shown})
	c.Send(string(q))
	m := c.Next("source", func(m map[string]any) bool { return m["id"] == 1.0 })
	if m["type"] != "source" || len(m["lines"].([]any)) != 1 {
		t.Fatalf("the source of the cleaned name was not found by its raw name: %v", m)
	}
	if s, bad := hostileIn(m); bad {
		t.Fatalf("the source reply carries %q uncleaned", s)
	}
	// Asking by the raw name is refused, cleaned in the error.
	q, _ = json.Marshal(map[string]any{"type": "source", "id": 2, "file": raw})
	c.Send(string(q))
	m = c.Next("error", func(m map[string]any) bool { return m["id"] == 2.0 })
	if m["type"] != "error" {
		t.Fatalf("a request by the raw name: %v", m)
	}
	if s, bad := hostileIn(m); bad {
		t.Fatalf("the error carries %q uncleaned", s)
	}
}
