package recording

import (
	"os"
	"strings"
)

// FromFile returns a Writer that writes a recording to f, a new empty file
// the caller opened (e.g. created beneath a directory without following
// symlinks, as `numascope live` does for recordings a browser asks for),
// named path in messages; zstd-compressed when path ends in ".zst". Close
// closes f.
func FromFile(f *os.File, path string) *Writer {
	w := newWriter(f, strings.HasSuffix(path, ".zst"))
	w.file = f
	w.path = path
	return w
}
