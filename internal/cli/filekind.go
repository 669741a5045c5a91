package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/numascope/numascope/internal/experiment"
)

// The kinds of file numascope writes, told apart by content (not by
// name) so that a command given the wrong one can say what the file is and
// what to run instead, rather than a JSON decoder's "invalid character
// '('" (the first byte of zstd's magic number).
type fileKind int

const (
	kindUnknown   fileKind = iota
	kindRecording          // record, live --record: JSON Lines with a header, zstd or not, or a legacy JSON array
	kindProfile            // profile: one JSON object with an access_matrix
	kindBench              // bench --format json
	kindResults            // experiment's results file: JSON Lines starting with {"type":"experiment"}
	kindSpec               // an experiment spec (TOML)
	kindCSV                // convert's or stat --csv's table, starting "time_s,"
)

// sniffLimit bounds what sniffing reads of a (decompressed) file: the
// first line of JSON Lines, or a profile's or bench document's first keys
// (documentKind).
const sniffLimit = 1 << 20

// sniffFileKind reads the start of path and says what it is; kindUnknown
// when it is none of numascope's kinds or cannot be read.
func sniffFileKind(path string) fileKind {
	f, err := os.Open(path)
	if err != nil {
		return kindUnknown
	}
	defer f.Close()
	var r io.Reader = f
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(4); bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		dec, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(1<<27))
		if err != nil {
			return kindUnknown
		}
		defer dec.Close()
		r = dec
	} else {
		r = br
	}
	head, _ := io.ReadAll(io.LimitReader(r, sniffLimit))
	head = bytes.TrimPrefix(head, []byte{0xef, 0xbb, 0xbf})
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return kindUnknown
	case trimmed[0] == '[':
		return kindRecording // the legacy NUMAscope recording is one JSON array
	case trimmed[0] == '{':
		line, _, _ := bytes.Cut(trimmed, []byte{'\n'})
		var first struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &first) == nil {
			switch first.Type {
			case "header":
				return kindRecording
			case "experiment", "run":
				return kindResults
			}
		}
		switch k, _ := documentKind(bytes.NewReader(trimmed)); k {
		case docProfile:
			return kindProfile
		case docBench:
			return kindBench
		}
		return kindUnknown
	case bytes.HasPrefix(trimmed, []byte("time_s,")):
		return kindCSV
	}
	if _, err := experiment.Load(path); err == nil {
		return kindSpec
	}
	return kindUnknown
}

// notAProfile turns the error of loading path as a profile into one that
// says what path is and what to run instead, when it is another of
// numascope's files; otherwise it returns err as it is.
func notAProfile(path string, err error) error {
	q := shellQuote(path)
	switch sniffFileKind(path) {
	case kindRecording:
		return fmt.Errorf("%s is a recording, not a profile: use numascope view %s or numascope convert %s", path, q, q)
	case kindBench:
		return fmt.Errorf("%s is a bench result, not a profile: use numascope view %s", path, q)
	case kindResults:
		return fmt.Errorf("%s is an experiment's results file, not a profile: use numascope experiment SPEC.toml --analyze with the spec that wrote it", path)
	case kindSpec:
		return fmt.Errorf("%s is an experiment spec, not a profile: use numascope experiment %s", path, q)
	case kindCSV:
		return fmt.Errorf("%s is a CSV table of samples, not a profile: use numascope stats anova --input %s, or numascope view the recording it came from", path, q)
	}
	return err
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./%+,:@=-]+$`)

// shellQuote quotes path for a command line the user can paste.
func shellQuote(path string) string {
	if shellSafe.MatchString(path) {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}
