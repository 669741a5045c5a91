package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/recording"
)

// convertFormat is what convert writes, chosen by the output's suffix.
type convertFormat int

const (
	convertCSV   convertFormat = iota // .csv, or stdout
	convertJSONL                      // .jsonl or .jsonl.zst: the current recording format
)

// outputFormat picks the format of convert's -o file from its suffix. Any
// other suffix is refused rather than guessed, so that "-o run.json" does
// not silently become CSV.
func outputFormat(out string) (convertFormat, error) {
	switch {
	case out == "" || out == "-":
		return convertCSV, nil
	case strings.HasSuffix(out, ".csv"):
		return convertCSV, nil
	case strings.HasSuffix(out, ".jsonl"), strings.HasSuffix(out, ".jsonl.zst"):
		return convertJSONL, nil
	}
	return 0, fmt.Errorf("-o %s: unknown output suffix: name a .csv file for CSV, or .jsonl or .jsonl.zst for the current recording format (without -o, CSV goes to stdout)", out)
}

func newConvertCmd(*globals) *cobra.Command {
	var out string
	var force, labels bool
	cmd := &cobra.Command{
		Use:   "convert FILE [-o OUT.csv|OUT.jsonl|OUT.jsonl.zst]",
		Short: "Convert a recording to CSV, or upgrade it to the current format",
		Long: `Read a recording (JSON Lines, plain or .zst, or the original NUMAscope JSON-array format)
and write it as CSV or as a current JSON Lines recording; the output's suffix chooses:

  (no -o, or -o -)   CSV on stdout
  -o OUT.csv         CSV
  -o OUT.jsonl       the current recording format (docs/recording-format.md)
  -o OUT.jsonl.zst   the same, zstd-compressed

CSV has a first column time_s, seconds since the recording began, then one column per event
and source. JSON Lines keeps everything: header, samples, labels, pauses and interval changes,
and an end line counting the samples written; this is how a legacy file is upgraded. Labels and
names from the file are cleaned of control and bidi characters. A recording cut off by a crash
converts up to the cut; what was skipped is reported on stderr.`,
		Example: `  numascope convert run.jsonl.zst > run.csv
  numascope convert --labels run.jsonl.zst -o run.csv
  numascope convert old-numascope.json -o upgraded.jsonl.zst`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(out)
			if err != nil {
				return err
			}
			if format == convertJSONL && labels {
				return fmt.Errorf("--labels is for CSV output: a .jsonl recording always keeps its labels")
			}
			rec, err := recording.Load(args[0])
			if err != nil {
				return err
			}
			for _, s := range rec.Skipped {
				fmt.Fprintf(os.Stderr, "numascope: %s: %s\n", args[0], s)
			}
			if format == convertJSONL {
				return writeJSONL(rec, out, force)
			}
			return writeCSV(rec, out, force, labels)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write: .csv, .jsonl or .jsonl.zst (default: CSV on stdout)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the output file if it exists")
	cmd.Flags().BoolVar(&labels, "labels", false, "CSV: add a last column with the labels")
	return cmd
}

// writeJSONL writes rec to path in the current format. The end line counts
// the samples in the new file; the missed deadlines and dropped samples of
// the original run are kept when the original had an end line.
func writeJSONL(rec *recording.Recording, path string, force bool) error {
	w, err := recording.Create(path, force)
	if err != nil {
		return err
	}
	end := recording.End{Samples: uint64(len(rec.Samples))}
	if rec.End != nil {
		end.MissedDeadlines, end.Dropped = rec.End.MissedDeadlines, rec.End.Dropped
	}
	if err := rec.Encode(w); err != nil {
		w.Close(end)
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := w.Close(end); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeCSV writes rec as CSV to path, or to stdout when path is "" or "-".
func writeCSV(rec *recording.Recording, path string, force, labels bool) error {
	w := os.Stdout
	if path != "" && path != "-" {
		// As recording.Create: no other user's symlink on the way, none
		// in the file's place.
		dir, base := filepath.Split(path)
		d, err := beneath.OpenOutputDir(dir)
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
		f, err := d.Create(base, force, 0o644)
		d.Close()
		if os.IsExist(err) {
			return fmt.Errorf("%s already exists: use --force to overwrite it", path)
		}
		if err != nil {
			return fmt.Errorf("cannot write %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := rec.WriteCSVOptions(bw, recording.CSVOptions{Labels: labels}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	if w != os.Stdout {
		return w.Close()
	}
	return nil
}
