package recording

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/rawio"
)

// Writer writes a recording. Its methods may be called from several
// goroutines (the sampler writes samples, the control channel writes labels);
// each line is written whole.
//
// Output is buffered: call Flush to make everything written so far visible
// to a reader of the file (it also ends a zstd block), and Close at the end.
// After the first error every method returns that error.
type Writer struct {
	mu     sync.Mutex
	path   string
	file   *os.File          // non-nil when the Writer owns a file
	raw    *rawio.FileWriter // under the output, when Create made it
	buf    *bufio.Writer     // buffers plain output (nil for zstd)
	enc    *zstd.Encoder     // non-nil for compressed output
	out    io.Writer         // where lines go: buf or enc
	line   []byte            // reused line buffer
	ncols  int               // values per sample in the current column set
	header bool
	closed bool
	last   time.Duration // latest t written, for the end line
	err    error

	// Counting what reached the file: samples counts the sample lines
	// handed to out; written those known to be in the file. For plain
	// output dst counts the bytes the file accepted, emitted the bytes
	// handed to out, and ends[head:] holds the stream offsets where the
	// sample lines not yet known to be in the file end. For zstd output a
	// sample is known to be in the file once a flush succeeded.
	dst     *countWriter
	emitted int64
	ends    []int64
	head    int
	samples uint64
	written uint64
}

// countWriter counts the bytes its writer accepted, even when a write fails
// part way (a full disk).
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// zstdOptions trade a little ratio for predictable latency: no goroutines
// (concurrency 1 encodes in the caller, which also keeps WriteSample free of
// allocations) and a 1 MiB window, plenty for repetitive sample lines.
func zstdOptions() []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithWindowSize(1 << 20),
	}
}

// Create creates a recording file. A ".zst" suffix selects zstd compression.
// An existing file is refused unless force is set; the file is created with
// mode 0644 (before umask). numascope often runs as root, and a link
// planted by another user would otherwise have it write where that user
// chose, so a symbolic link in path's place is refused even with force
// (O_NOFOLLOW), and one on the way to it is followed only when root or the
// caller owns it (beneath.OpenOutputDir). With force, an existing file is
// overwritten only when it is a regular file with no other hard link.
func Create(path string, force bool) (*Writer, error) {
	dir, base := filepath.Split(path)
	d, err := beneath.OpenOutputDir(dir)
	if err != nil {
		return nil, createError(path, err)
	}
	defer d.Close()
	f, err := d.Create(base, force, 0o644)
	if err != nil {
		return nil, createError(path, err)
	}
	// Written raw where that is safe: a write entering the scheduler would
	// wake the runtime's monitor thread at every sample (see rawio). Kept
	// for the figure in docs/performance.md ("How the sampling loop keeps
	// its cost down"): ordinary writes cost record 13-20% more CPU per
	// sample at 1 s (225 against 198 µs), past the 0.2 ms/s goal.
	fw := rawio.NewFileWriter(f)
	w := newWriter(fw, strings.HasSuffix(path, ".zst"))
	w.file, w.raw = f, fw
	w.path = path
	return w, nil
}

// createError turns an OpenFile error into a one-line message that names the
// file and says what to do.
func createError(path string, err error) error {
	var pe *fs.PathError
	cause := err
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	isDir := errors.Is(err, syscall.EISDIR)
	if errors.Is(err, fs.ErrExist) {
		// O_EXCL reports a directory as existing, like a file.
		fi, serr := os.Stat(path)
		isDir = serr == nil && fi.IsDir()
	}
	var se *beneath.SymlinkError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("cannot create recording %s: %v", path, se)
	case errors.Is(err, beneath.ErrHardLink):
		return fmt.Errorf("cannot overwrite recording %s: it has other hard links, and writing it would change them too; remove it or name another file", path)
	case errors.Is(err, beneath.ErrNotRegular):
		return fmt.Errorf("cannot create recording %s: it exists and is not a regular file (a FIFO, socket or device); remove it or name another file", path)
	case isDir:
		return fmt.Errorf("cannot create recording %s: it is a directory; give a file name", path)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("cannot create recording %s: it is a symbolic link, which numascope never writes through; remove it or name another file", path)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("recording %s already exists; use --force to overwrite it: %w", path, fs.ErrExist)
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return fmt.Errorf("cannot create recording %s: %v; choose a writable directory: %w", path, cause, err)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot create recording %s: %v; check that its directory exists: %w", path, cause, err)
	}
	return fmt.Errorf("cannot create recording %s: %v: %w", path, cause, err)
}

// NewWriter returns a Writer that writes a recording to w, zstd-compressed
// if compress is set. Close flushes but does not close w.
func NewWriter(w io.Writer, compress bool) *Writer {
	return newWriter(w, compress)
}

func newWriter(w io.Writer, compress bool) *Writer {
	wr := &Writer{line: make([]byte, 0, 4096)}
	if compress {
		enc, err := zstd.NewWriter(w, zstdOptions()...)
		if err != nil {
			// Only invalid options fail, and ours are constant.
			panic("recording: zstd options: " + err.Error())
		}
		wr.enc = enc
		wr.out = enc
	} else {
		wr.dst = &countWriter{w: w}
		wr.buf = bufio.NewWriterSize(wr.dst, 64<<10)
		wr.out = wr.buf
	}
	return wr
}

// Written returns the number of samples known to be in the output: for a
// plain file every sample line the file accepted (whole, or all but its
// newline: a reader still uses it), for a compressed
// file those up to the last successful Flush (or Close). After a write error
// (a full disk) it stays at what got through, so that a summary can say what
// the file really holds rather than what was sampled.
func (w *Writer) Written() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// settle moves the sample lines that the file has accepted into written:
// whole, or all but the newline, since a reader uses a complete last line
// without its newline. It does not allocate: ends is reused once drained.
func (w *Writer) settle() {
	if w.dst == nil {
		return
	}
	for w.head < len(w.ends) && w.ends[w.head]-1 <= w.dst.n {
		w.head++
		w.written++
	}
	switch {
	case w.head == len(w.ends):
		w.ends, w.head = w.ends[:0], 0
	case w.head >= 1024 && 2*w.head >= len(w.ends):
		n := copy(w.ends, w.ends[w.head:])
		w.ends, w.head = w.ends[:n], 0
	}
}

// RawNow says whether what is written and flushed now reaches the file
// without waiting on anything but the kernel's page cache: a file Create
// made, written raw at this moment (rawio.FileWriter.RawNow). A caller that
// must not wait (the sampling goroutine, internal/recorder) writes only
// then.
func (w *Writer) RawNow() bool { return w.raw != nil && w.raw.RawNow() }

// Path returns the file name given to Create, or "" for NewWriter.
func (w *Writer) Path() string { return w.path }

// check reports whether a line may be written now.
func (w *Writer) check(what string, needHeader bool) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("recording: %s after Close", what)
	}
	if needHeader && !w.header {
		return fmt.Errorf("recording: %s before WriteHeader", what)
	}
	return nil
}

// emit writes w.line plus a newline to the output.
func (w *Writer) emit() error {
	w.line = append(w.line, '\n')
	if _, err := w.out.Write(w.line); err != nil {
		w.err = w.wrapErr(err)
		w.settle()
		return w.err
	}
	w.emitted += int64(len(w.line))
	return nil
}

// wrapErr says which recording a write failed on, and what to do about
// the failures a user can act on.
func (w *Writer) wrapErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == w.path {
		err = pe.Err // "write PATH: ..." would name the file twice
	}
	if w.path != "" {
		return fmt.Errorf("writing recording %s: %w%s", w.path, err, writeAdvice(err))
	}
	return fmt.Errorf("writing recording: %w%s", err, writeAdvice(err))
}

// writeAdvice is what to do after a failed write, for the failures that
// have a remedy, with a leading space; "" for the others.
func writeAdvice(err error) string {
	const kept = "; the samples written so far stay readable"
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return " (free space on its file system, or record elsewhere" + kept + ")"
	case errors.Is(err, syscall.EDQUOT):
		return " (the disk quota is used up: free space, or record elsewhere" + kept + ")"
	case errors.Is(err, syscall.EFBIG):
		return " (the file reached the size limit of its file system or of ulimit -f: split the recording with numascope ctl record FILE" + kept + ")"
	case errors.Is(err, syscall.EIO):
		return " (the device reported an I/O error: check it (dmesg)" + kept + ")"
	}
	return ""
}

// prepareColumns returns a copy of cols with empty names derived from
// sensor, sources and event, and an error for duplicate or empty names.
func prepareColumns(cols []Column) ([]Column, error) {
	out := make([]Column, len(cols))
	seen := make(map[string]bool, len(cols))
	for i, c := range cols {
		c.Name = c.qualified()
		if c.Name == "." || c.Name == "" {
			return nil, fmt.Errorf("recording: column %d has no name (set Name, or Sensor and Event)", i)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("recording: column %q appears twice", c.Name)
		}
		seen[c.Name] = true
		if c.Sources == nil {
			c.Sources = []string{}
		}
		out[i] = c
	}
	return out, nil
}

// WriteHeader writes the header line. It must be called once, first.
// Format and Version are filled in; columns without a Name get their
// qualified name.
func (w *Writer) WriteHeader(h *Header) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("WriteHeader", false); err != nil {
		return err
	}
	if w.header {
		return errors.New("recording: WriteHeader called twice")
	}
	cols, err := prepareColumns(h.Columns)
	if err != nil {
		return err
	}
	hc := *h
	hc.Format = FormatName
	hc.Version = Version
	hc.Columns = cols
	if hc.Sensors == nil {
		hc.Sensors = []SensorInfo{}
	}
	b, err := json.Marshal(struct {
		Type string `json:"type"`
		*Header
	}{"header", &hc})
	if err != nil {
		return fmt.Errorf("recording: encoding header: %w", err)
	}
	w.line = append(w.line[:0], b...)
	if err := w.emit(); err != nil {
		return err
	}
	w.header = true
	w.ncols = len(cols)
	return nil
}

// WriteSample writes one sample: t is the time since Start, v holds one value
// per column of the current column set (NaN for a value that could not be
// read). It does not allocate.
func (w *Writer) WriteSample(t time.Duration, v []float64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("WriteSample", true); err != nil {
		return err
	}
	if len(v) != w.ncols {
		return fmt.Errorf("recording: sample has %d values for %d columns", len(v), w.ncols)
	}
	b := append(w.line[:0], '[')
	b = appendSeconds(b, t)
	for _, x := range v {
		b = append(b, ',')
		b = appendValue(b, x)
	}
	w.line = append(b, ']')
	w.advance(t)
	if err := w.emit(); err != nil {
		return err
	}
	w.samples++
	if w.dst != nil {
		w.ends = append(w.ends, w.emitted)
		w.settle()
	}
	return nil
}

func (w *Writer) advance(t time.Duration) {
	if t > w.last {
		w.last = t
	}
}

// startMark begins a mark line {"type":typ,"t":t.
func (w *Writer) startMark(typ string, t time.Duration) {
	b := append(w.line[:0], `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","t":`...)
	w.line = appendSeconds(b, t)
	w.advance(t)
}

// WriteLabel writes a label mark: text annotates the recording at t.
func (w *Writer) WriteLabel(t time.Duration, text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("WriteLabel", true); err != nil {
		return err
	}
	q, err := json.Marshal(text)
	if err != nil {
		return fmt.Errorf("recording: encoding label: %w", err)
	}
	w.startMark(MarkLabel, t)
	w.line = append(w.line, `,"text":`...)
	w.line = append(w.line, q...)
	w.line = append(w.line, '}')
	return w.emit()
}

// WriteInterval records that the sampling interval changed at t.
func (w *Writer) WriteInterval(t, interval time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("WriteInterval", true); err != nil {
		return err
	}
	w.startMark(MarkInterval, t)
	w.line = append(w.line, `,"interval_s":`...)
	w.line = appendValue(w.line, interval.Seconds())
	w.line = append(w.line, '}')
	return w.emit()
}

// WritePause records that sampling paused at t.
func (w *Writer) WritePause(t time.Duration) error { return w.simpleMark(MarkPause, t) }

// WriteResume records that sampling resumed at t.
func (w *Writer) WriteResume(t time.Duration) error { return w.simpleMark(MarkResume, t) }

func (w *Writer) simpleMark(typ string, t time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("Write"+strings.ToUpper(typ[:1])+typ[1:], true); err != nil {
		return err
	}
	w.startMark(typ, t)
	w.line = append(w.line, '}')
	return w.emit()
}

// WriteColumns records that the column set changed at t: later samples hold
// one value per entry of cols. Columns keep their identity by name.
func (w *Writer) WriteColumns(t time.Duration, cols []Column) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.check("WriteColumns", true); err != nil {
		return err
	}
	pc, err := prepareColumns(cols)
	if err != nil {
		return err
	}
	b, err := json.Marshal(pc)
	if err != nil {
		return fmt.Errorf("recording: encoding columns: %w", err)
	}
	w.startMark(MarkColumns, t)
	w.line = append(w.line, `,"columns":`...)
	w.line = append(w.line, b...)
	w.line = append(w.line, '}')
	if err := w.emit(); err != nil {
		return err
	}
	w.ncols = len(pc)
	return nil
}

// Flush writes out everything buffered. Afterwards a concurrent reader of
// the file sees every line written so far; for zstd output it ends the
// current block (the frame stays open until Close).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return nil
	}
	return w.flush()
}

func (w *Writer) flush() error {
	var err error
	if w.enc != nil {
		err = w.enc.Flush()
	} else {
		err = w.buf.Flush()
	}
	if err != nil {
		w.err = w.wrapErr(err)
	} else if w.enc != nil {
		w.written = w.samples
	}
	w.settle()
	return w.err
}

// Close writes the end line (at the latest time written) with the summary
// end, flushes, ends the zstd frame and closes the file if Create opened it.
// The end line's samples is the number of sample lines before it, whatever
// end.Samples says: the end line only reaches the file if they all did.
// Without a header nothing is written. Closing twice is a no-op.
func (w *Writer) Close(end End) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.err
	if err == nil && w.header {
		w.startMark("end", w.last)
		b := appendUintField(w.line, "samples", w.samples)
		b = appendUintField(b, "missed_deadlines", end.MissedDeadlines)
		b = appendUintField(b, "dropped", end.Dropped)
		w.line = append(b, '}')
		err = w.emit()
	}
	if err == nil {
		err = w.flush()
	}
	if w.enc != nil {
		if cerr := w.enc.Close(); cerr != nil && err == nil {
			err = w.wrapErr(cerr)
		} else if cerr == nil && err == nil {
			w.written = w.samples
		}
	}
	if w.file != nil {
		if err == nil {
			if serr := w.file.Sync(); serr != nil && !errors.Is(serr, syscall.EINVAL) {
				err = w.wrapErr(serr)
			}
		}
		if cerr := w.file.Close(); cerr != nil && err == nil {
			err = w.wrapErr(cerr)
		}
	}
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

func appendUintField(b []byte, name string, v uint64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendUint(b, v, 10)
}
