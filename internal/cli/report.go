package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/recording"
)

func newReportCmd(*globals) *cobra.Command {
	var top int
	cmd := &cobra.Command{
		Use:   "report FILE",
		Short: "Summarise a profile written by numascope profile",
		Long: `Print a terminal summary of a profile: totals, the access matrix, the top source lines by
remote accesses and by first touch, the threads, and plain-language hints that connect remote
accesses to the code and thread that placed the pages.`,
		Example: "  numascope profile -o prof.json -- ./app\n  numascope report prof.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := profile.Load(args[0])
			if err != nil {
				return err
			}
			// The names in a profile (command, functions, files) come
			// from a file that may be crafted: no escape sequence or bidi
			// control in them reaches the terminal.
			var b strings.Builder
			if err := p.WriteReport(&b, top); err != nil {
				return err
			}
			_, err = os.Stdout.WriteString(recording.SanitizeTerminal(b.String()))
			return err
		},
	}
	cmd.Flags().IntVar(&top, "top", 10, "how many lines and threads to list")
	return cmd
}
