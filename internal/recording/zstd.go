package recording

import (
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
)

// decompressError marks an error of the zstd layer, as opposed to an error
// reading the file: the data decoded before it is good, the rest is lost.
type decompressError struct{ err error }

func (e *decompressError) Error() string {
	if errors.Is(e.err, io.ErrUnexpectedEOF) {
		return "the compressed data ends mid-block (the recording was probably interrupted, or is still being written and not flushed)"
	}
	return "the compressed data is corrupt (" + e.err.Error() + ")"
}

func (e *decompressError) Unwrap() error { return e.err }

// zstdReader decompresses a stream and tags its errors.
type zstdReader struct {
	dec *zstd.Decoder
}

func newZstdReader(r io.Reader) (*zstdReader, error) {
	// Concurrency 1 decodes synchronously, block by block, so every block
	// that is complete in the file is delivered before an error about the
	// incomplete one after it.
	dec, err := zstd.NewReader(r,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		// Our writer uses 1 MiB windows; allow what zstd --long writes, but
		// not what a corrupt header could claim.
		zstd.WithDecoderMaxWindow(1<<27))
	if err != nil {
		return nil, &decompressError{err}
	}
	return &zstdReader{dec: dec}, nil
}

func (z *zstdReader) Read(p []byte) (int, error) {
	n, err := z.dec.Read(p)
	if err != nil && err != io.EOF {
		err = &decompressError{err}
	}
	return n, err
}

func (z *zstdReader) Close() { z.dec.Close() }
