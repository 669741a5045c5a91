package cli

import (
	"bufio"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/recording"
)

func newConvertCmd() *cobra.Command {
	var out string
	var force, labels bool
	cmd := &cobra.Command{
		Use:   "convert FILE",
		Short: "Convert a recording to CSV",
		Long: `Convert a recording (JSON Lines, plain or .zst, or the original NUMAscope JSON-array format)
to CSV: the first column is time_s, seconds since the recording began, then one column per
event and source. A recording cut off by a crash loads up to the cut; what was skipped is
reported on stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rec, err := recording.Load(args[0])
			if err != nil {
				return err
			}
			for _, s := range rec.Skipped {
				fmt.Fprintf(os.Stderr, "numascope: %s: %s\n", args[0], s)
			}
			w := os.Stdout
			if out != "" && out != "-" {
				flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
				if force {
					flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
				}
				f, err := os.OpenFile(out, flags, 0o644)
				if os.IsExist(err) {
					return fmt.Errorf("%s already exists: use --force to overwrite it", out)
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
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "CSV file to write (default stdout)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the output file if it exists")
	cmd.Flags().BoolVar(&labels, "labels", false, "add a last column with the labels")
	return cmd
}
