package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/ctl"
)

func newCtlCmd(*globals) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "ctl [--ctl PATH] COMMAND [ARGS...]",
		Short: "Send a command to a running numascope through its control FIFO",
		Long: `Send one command to the control FIFO of a running numascope stat, record or live:

  record FILE     close the current recording and continue in FILE
  label TEXT      put a label at this instant (recording and terminal)
  pause           stop writing samples (sampling goes on)
  resume          write samples again
  interval 100ms  change the sampling interval`,
		Example: `  numascope ctl label phase 2
  numascope ctl interval 10ms
  numascope ctl record second-half.jsonl.zst`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				var err error
				if path, err = ctl.DefaultPath(); err != nil {
					return err
				}
			}
			// A relative file means relative to where the user is, not to
			// where the running numascope happens to be.
			if strings.EqualFold(args[0], "record") && len(args) > 1 {
				abs, err := filepath.Abs(strings.Join(args[1:], " "))
				if err != nil {
					return err
				}
				args = []string{args[0], abs}
			}
			line := strings.Join(args, " ")
			rs, err := ctl.Steer(path, line)
			if err != nil {
				return err
			}
			// Say which numascope took the command: the default FIFO is
			// one per user (one for all of root), so it may not be the
			// one the user had in mind.
			to := "the numascope listening on " + path + " (its process is not visible here)"
			if len(rs) > 0 {
				var names []string
				for _, r := range rs {
					names = append(names, r.String())
				}
				to = strings.Join(names, "; ") + ", on " + path
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sent %q to %s\n", line, to)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "ctl", "", "control FIFO path (default: where numascope stat/record/live put it)")
	cmd.Flags().SetInterspersed(false)
	return cmd
}
