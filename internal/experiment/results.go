package experiment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
)

// Header is the first line of a results file.
type Header struct {
	Type     string    `json:"type"` // "experiment"
	Name     string    `json:"name"`
	SpecHash string    `json:"spec_hash"`
	Seed     uint64    `json:"seed"`
	Runs     int       `json:"runs"`
	Created  time.Time `json:"created"`
}

// Result is one line of the results file: one finished run.
type Result struct {
	Type       string            `json:"type"` // "run"
	Run        int               `json:"run"`
	Warmup     bool              `json:"warmup,omitempty"`
	Rep        int               `json:"rep"`
	Levels     map[string]string `json:"levels"`
	Command    []string          `json:"command"`
	Recording  string            `json:"recording"`
	Output     string            `json:"output"`
	Start      time.Time         `json:"start"`
	WallTime   float64           `json:"wall_time_s"`
	ExitStatus int               `json:"exit_status"`
	// Events summarises every recorded event over the run.
	Events map[string]EventSummary `json:"events"`
	// Responses holds the spec's responses; null where one could not be
	// computed (an event the machine does not have).
	Responses map[string]*float64 `json:"responses"`
}

// ResultsFile is an open results file.
type ResultsFile struct {
	f      *os.File
	Header Header
	// Done holds the results already in the file, by run ID.
	Done map[int]Result
	// Repaired says that a cut-off last line (a crash while writing) was
	// dropped; that run is run again.
	Repaired bool
}

// OpenResults opens path for the experiment, creating it with a header or
// resuming it: the results already there are read back, and must come from
// the same spec. The experiment often runs as root and the path is the
// spec's, so it is opened as every output is (beneath.OpenOutput): through
// no other user's symbolic link, at any component, and never onto a link,
// FIFO or hard-linked file (issue 28, finding 4).
func OpenResults(path string, spec *Spec, runs int) (*ResultsFile, error) {
	f, err := beneath.OpenOutput(path, 0o644)
	if err != nil {
		return nil, beneath.OutputError("the results file", path, err)
	}
	// One experiment per results file at a time: two appending to it would
	// run every run twice.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another numascope experiment: wait for it, or stop it first", path)
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	rf := &ResultsFile{f: f, Done: map[int]Result{}}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		rf.Header = Header{Type: "experiment", Name: spec.Name, SpecHash: spec.Hash, Seed: spec.Seed, Runs: runs, Created: time.Now().UTC()}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		if err := rf.writeLine(rf.Header); err != nil {
			f.Close()
			return nil, err
		}
		return rf, nil
	}
	hdr, done, good, err := ParseResults(data)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if hdr.SpecHash != spec.Hash {
		f.Close()
		return nil, fmt.Errorf("%s was started by a different version of the spec (hash %s, now %s): resuming would mix two experiments; "+
			"give a new results file (results = ... in the spec) or move the old one away", path, hdr.SpecHash, spec.Hash)
	}
	for id := range done {
		if id < 0 || id >= runs {
			f.Close()
			return nil, fmt.Errorf("%s: run %d is outside the plan of %d runs", path, id, runs)
		}
	}
	rf.Header, rf.Done = hdr, done
	if good < len(data) {
		// A line cut off by a crash: drop it, that run is done again.
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: cannot drop its cut-off last line: %w", path, err)
		}
		rf.Repaired = true
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return rf, nil
}

// ParseResults reads a results file's content: its header, its results by
// run ID, and the length of the part made of complete lines. Only the last
// line may be incomplete (cut off by a crash); anything else malformed is an
// error naming the line.
func ParseResults(data []byte) (Header, map[int]Result, int, error) {
	var hdr Header
	done := map[int]Result{}
	good := 0
	line := 0
	for off := 0; off < len(data); {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			// No newline: a cut-off line, unless it parses completely.
			break
		}
		text := bytes.TrimSpace(data[off : off+end])
		next := off + end + 1
		if len(text) == 0 {
			off, good = next, next
			continue
		}
		if line == 1 {
			if err := json.Unmarshal(text, &hdr); err != nil || hdr.Type != "experiment" {
				return hdr, nil, 0, errors.New("line 1 is not an experiment header: not a numascope results file")
			}
		} else {
			var r Result
			if err := json.Unmarshal(text, &r); err != nil || r.Type != "run" {
				if next >= len(data) {
					break // the last line: treat as cut off
				}
				return hdr, nil, 0, fmt.Errorf("line %d is not a run result: %v", line, err)
			}
			if _, dup := done[r.Run]; dup {
				return hdr, nil, 0, fmt.Errorf("line %d: run %d appears twice", line, r.Run)
			}
			done[r.Run] = r
		}
		off, good = next, next
	}
	if line == 0 || hdr.Type != "experiment" {
		return hdr, nil, 0, errors.New("no experiment header: not a numascope results file")
	}
	return hdr, done, good, nil
}

// LoadResults reads a results file for analysis.
func LoadResults(path string) (Header, []Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Header{}, nil, fmt.Errorf("cannot read the results: %w", err)
	}
	hdr, done, _, err := ParseResults(data)
	if err != nil {
		return hdr, nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]Result, 0, len(done))
	for _, r := range done {
		out = append(out, r)
	}
	sortResults(out)
	return hdr, out, nil
}

func sortResults(rs []Result) {
	sort.Slice(rs, func(a, b int) bool { return rs[a].Run < rs[b].Run })
}

// Append writes one result and syncs it to disk before returning, so that
// a run reported done survives a crash.
func (rf *ResultsFile) Append(r Result) error {
	r.Type = "run"
	if err := rf.writeLine(r); err != nil {
		return err
	}
	rf.Done[r.Run] = r
	return nil
}

func (rf *ResultsFile) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(rf.f)
	w.Write(b)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	if err := rf.f.Sync(); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}

// Close closes the file.
func (rf *ResultsFile) Close() error { return rf.f.Close() }
