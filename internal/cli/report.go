package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/profile"
	"github.com/numascope/numascope/internal/term"
)

func newReportCmd(*globals) *cobra.Command {
	var top int
	cmd := &cobra.Command{
		Use:   "report FILE [FILE...]",
		Short: "Summarise a profile written by numascope profile, or merge the profiles of an MPI job's ranks",
		Long: `Print a terminal summary of a profile: totals, the access matrix, the top source lines by
remote accesses and by first touch, the threads, and plain-language hints that connect remote
accesses to the code and thread that placed the pages.

Given several profiles (the ranks of one job: numascope profile -o prof.%h.%r.json under mpirun
or srun), it merges them: the totals and the access matrix summed over the ranks, a line per rank
(its rank and host as the profile records them, else its file name), and the rank with the most
remote accesses against the median rank. Profiles of machines of another shape (other nodes)
still have their totals summed; the report says so.`,
		Example: "  numascope profile -o prof.json -- ./app\n  numascope report prof.json\n" +
			"  mpirun -n 4 numascope profile -o prof.%h.%r.json -- ./app\n  numascope report prof.*.json",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps := make([]*profile.Profile, len(args))
			for i, f := range args {
				p, err := profile.Load(f)
				if err != nil {
					return notAProfile(f, err) // a recording, say: what to run instead (filekind.go)
				}
				ps[i] = p
			}
			// The names in a profile (command, functions, files, host,
			// rank) come from a file that may be crafted: no escape
			// sequence or bidi control in them reaches the terminal.
			var b strings.Builder
			if len(ps) == 1 {
				if err := ps[0].WriteReport(&b, top); err != nil {
					return err
				}
			} else {
				m, err := profile.Merge(args, ps)
				if err != nil {
					return err
				}
				if err := m.WriteReport(&b); err != nil {
					return err
				}
			}
			_, err := os.Stdout.WriteString(term.CleanLines(b.String()))
			return err
		},
	}
	cmd.Flags().IntVar(&top, "top", 10, "how many lines and threads to list (one profile)")
	return cmd
}
