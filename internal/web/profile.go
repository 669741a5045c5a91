package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/term"
)

// MaxSourceBytes bounds a source file the profile pages show: a source
// file is a few hundred KiB at most; anything bigger is not worth a
// browser's time and is more likely a mistake (a data file of that name).
const MaxSourceBytes = 4 << 20

// Profile serves a profile (`numascope view PROFILE.json`): the hello
// carries the whole document and its hints, and "source" requests fetch
// the source files it names, for the annotated source page.
//
// The server may run as root and the profile's file names come from debug
// info anyone can forge (`#line 1 "/etc/shadow"`), so a source file is
// served only when the profile names it (in locations, or allocations when
// present), and only as a regular file beneath a directory the operator
// named with --source-path. Nothing in the profile chooses a directory: its
// comp_dirs are as forgeable as its file names (`{"/etc/shadow":
// ["/etc"]}`), so without --source-path no source is served at all and the
// reply says how to ask for it (issue 28, finding 2). The recorded path
// itself is never opened; it is looked up beneath those directories by its
// suffixes, since the program was usually built elsewhere (another machine,
// a container, a VM), and resolved without following any symlink
// (internal/beneath).
//
// Function, file and thread names come from the same forgeable debug info
// and /proc, so the page gets a display copy of the document with every
// string cleaned (term.CleanJSON: no ESC, BEL or bidi override to spoof
// what it shows; issue 28). Source requests then name a file as the page
// shows it; it is mapped back to the name as recorded, and the lookup runs
// on that raw name, so cleaning never breaks finding a file.
type Profile struct {
	*Server
	file   string
	body   json.RawMessage // the display copy, cleaned
	hints  []string
	search []string
	// sources maps each source file the profile names, as the page shows
	// it (cleaned), to the name as recorded.
	sources map[string]string
}

// NewProfile prepares serving the profile at file. body is the file's
// JSON, sent as it is so that fields this version does not know (the
// format may gain some) reach the client; p is the same file decoded
// (profile.Load), for the hints. search lists the directories where
// source files are looked up (absolute); when empty, no source is served.
func NewProfile(opt Options, file string, body []byte, p *profile.Profile, search []string) (*Profile, error) {
	if !json.Valid(body) {
		return nil, fmt.Errorf("%s: not valid JSON", file)
	}
	srcs, err := sourceFiles(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	shown, err := term.CleanJSON(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	hints := []string{}
	for _, h := range p.Hints() {
		hints = append(hints, term.CleanLines(h))
	}
	pr := &Profile{file: file, body: shown, hints: hints, search: search, sources: srcs}
	pr.Server = NewServer(opt, pr)
	return pr, nil
}

// sourceFiles are the source files a profile names (the files of its
// locations and of its allocation sites, if it has any), by their cleaned
// name (what the page shows and asks for) to the name as recorded. Its
// comp_dirs are not read: they come from the same untrusted file. Of two
// recorded names that clean to one, the one that sorts first is served.
func sourceFiles(body []byte) (map[string]string, error) {
	var doc struct {
		Locations   []struct{ File string } `json:"locations"`
		Allocations []struct{ File string } `json:"allocations"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("reading its locations: %v", err)
	}
	out := map[string]string{}
	add := func(f string) {
		if f == "" {
			return
		}
		k := term.Clean(f)
		if old, ok := out[k]; !ok || f < old {
			out[k] = f
		}
	}
	for _, l := range doc.Locations {
		add(l.File)
	}
	for _, a := range doc.Allocations {
		add(a.File)
	}
	return out, nil
}

// Attach, Detach and Request make a profile a Backend.
func (pr *Profile) Attach(c *Client) {
	c.Reply(Hello{
		Type: "hello", Protocol: ProtocolVersion, Mode: "profile",
		File: pr.file, State: State{Events: []string{}}, Columns: []recording.Column{},
		Profile: pr.body, Hints: pr.hints, SourcePath: pr.search,
	})
}

func (pr *Profile) Detach(*Client) {}

func (pr *Profile) Request(c *Client, q *Request) {
	switch q.Type {
	case "source":
		msg, err := pr.source(q.File)
		if err != nil {
			c.Fail(q.ID, err)
			return
		}
		msg.ID = q.ID
		c.Reply(msg)
	case "range", "totals", "interval", "pause", "resume", "label", "events", "enable", "disable", "discrete", "record", "record_stop":
		c.Fail(q.ID, fmt.Errorf("%s: this is a profile (numascope view PROFILE); only source requests apply", q.Type))
	default:
		c.Fail(q.ID, UnknownType(q.Type, "numascope view on a profile", profileTypes))
	}
}

// sourceMsg is the reply to a source request.
type sourceMsg struct {
	Type string `json:"type"` // "source"
	ID   any    `json:"id,omitempty"`
	// File is the file as the page names it (the request's), Path where
	// it was found (cleaned: it ends in the profile's name).
	File  string   `json:"file"`
	Path  string   `json:"path"`
	Lines []string `json:"lines"`
}

// NoSourcePath is the error of every source request when view was started
// without --source-path: the page shows it where the code would be.
const NoSourcePath = "no source served: restart view with --source-path DIR, DIR being the directory that holds the program's source (or a parent of its recorded path)"

// source reads one source file the profile names.
func (pr *Profile) source(file string) (*sourceMsg, error) {
	if file == "" {
		return nil, errors.New("source: give the \"file\" to read, as the profile names it")
	}
	// file is a key of sources, so already clean (what the page shows);
	// the lookup below runs on the name as recorded.
	raw, ok := pr.sources[file]
	if !ok {
		return nil, fmt.Errorf("source: %q is not a source file of this profile (only files its locations name are served)", clip(term.Clean(file)))
	}
	if len(pr.search) == 0 {
		return nil, fmt.Errorf("source: %s: %s", clip(file), NoSourcePath)
	}
	var tried []string
	for _, cand := range SourceCandidates(raw, pr.search) {
		b, err := readSource(cand)
		if err == nil {
			return &sourceMsg{Type: "source", File: file, Path: term.Clean(cand.Path()), Lines: splitLines(b)}, nil
		}
		tried = append(tried, term.Clean(fmt.Sprintf("%s (%v)", cand.Path(), err)))
	}
	how := "restart view with --source-path naming the directory that holds it (now: " + strings.Join(pr.search, ":") + ")"
	if len(tried) == 0 {
		return nil, fmt.Errorf("source: %s not found: its recorded path gives nothing to look up; %s", clip(file), how)
	}
	return nil, fmt.Errorf("source: %s not found: tried %s; %s", clip(file), strings.Join(tried, ", "), how)
}

// Candidate is a place a source file is looked up: Name beneath Dir.
type Candidate struct{ Dir, Name string }

// Path is the candidate's path, for messages and replies.
func (c Candidate) Path() string { return filepath.Join(c.Dir, c.Name) }

// SourceCandidates are the places where file (as a profile names it) is
// looked up, in order: under each directory the recorded path's suffixes,
// longest first (for /src/a/b/c.c: DIR/src/a/b/c.c, DIR/a/b/c.c, DIR/b/c.c,
// DIR/c.c). Suffixes with ".." are left out, so that a lookup stays
// beneath its directory; the recorded path itself is never a candidate.
func SourceCandidates(file string, dirs []string) []Candidate {
	var parts []string
	for _, p := range strings.Split(filepath.ToSlash(filepath.Clean(file)), "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	var out []Candidate
	seen := map[Candidate]bool{}
	for _, dir := range dirs {
		for i := range parts {
			suffix := parts[i:]
			if slices.Contains(suffix, "..") {
				continue
			}
			c := Candidate{Dir: dir, Name: filepath.Join(suffix...)}
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// readSource reads a regular text file of at most MaxSourceBytes beneath
// its directory, through no symlink. The open does not block (a FIFO of
// that name would otherwise hang the request); what is not a regular file
// is refused before any read.
func readSource(c Candidate) ([]byte, error) {
	f, err := beneath.Open(c.Dir, c.Name, unix.O_NONBLOCK)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, errors.New("no such file")
		case errors.Is(err, beneath.ErrSymlink):
			return nil, errors.New("refused: a symbolic link is on the way; numascope serves only regular files beneath the directory")
		case errors.Is(err, beneath.ErrOutside):
			return nil, errors.New("refused: outside the directory")
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, errors.New("a directory")
		}
		return nil, fmt.Errorf("not a regular file (%v)", st.Mode().Type())
	}
	if st.Size() > MaxSourceBytes {
		return nil, fmt.Errorf("%d bytes, over the %d MiB limit for a source file", st.Size(), MaxSourceBytes>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	if len(b) > MaxSourceBytes {
		return nil, fmt.Errorf("over the %d MiB limit for a source file", MaxSourceBytes>>20)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, errors.New("a binary file, not source")
	}
	return b, nil
}

// splitLines splits a file into lines without their "\n" or "\r\n";
// invalid UTF-8 becomes U+FFFD (as JSON must).
func splitLines(b []byte) []string {
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{}
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// SourceFiles lists the source files a profile served by pr may read,
// sorted: for messages and tests.
func (pr *Profile) SourceFiles() []string {
	out := make([]string, 0, len(pr.sources))
	for _, f := range pr.sources {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
