package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/rawio"
	"github.com/numascope/numascope/internal/term"
)

// newTerminal is stat's terminal on f, without a sink or a session: enough
// for take, which uses neither.
func newTerminal(f *os.File) *terminal {
	file := rawio.NewFileWriter(f)
	out := bufio.NewWriterSize(file, 64<<10)
	return &terminal{p: term.NewPrinter(out, []term.Column{{Heading: "hits"}}, term.Options{}), out: out, file: file}
}

// TestTerminalTakesOnlyWhatItCanWriteAtOnce: stat's terminal takes a sample
// on the sampling goroutine into a local file, written raw, and declines it
// into a pipe (which may block), while its own goroutine prints, and after a
// write error, which its goroutine reports.
func TestTerminalTakesOnlyWhatItCanWriteAtOnce(t *testing.T) {
	if !rawio.RawFiles() {
		t.Fatal("raw file writes are off with no sampler running")
	}
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tm := newTerminal(f)
	if !tm.take(time.Second, []float64{42}) {
		t.Fatal("declined a sample into a local file")
	}
	if b, _ := os.ReadFile(path); string(b) != "     time hits\n    1.000   42\n" {
		t.Fatalf("the file holds %q; want the heading and the sample at once", b)
	}
	tm.mu.Lock()
	if tm.take(2*time.Second, []float64{1}) {
		t.Error("took a sample while the terminal's goroutine printed")
	}
	tm.mu.Unlock()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if newTerminal(w).take(time.Second, []float64{1}) {
		t.Error("took a sample into a pipe, whose write may block")
	}

	// A file closed under it: the write fails; take declines and leaves
	// the error for the goroutine.
	f.Close()
	if tm.take(3*time.Second, []float64{1}) || tm.derr == nil {
		t.Errorf("after a failed write: took it, or kept no error (%v)", tm.derr)
	}
	if tm.take(4*time.Second, []float64{1}) {
		t.Error("took a sample with a write error waiting to be reported")
	}
}
