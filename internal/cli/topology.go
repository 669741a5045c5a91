package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/topology"
)

func newTopologyCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Show NUMA nodes, CPUs, memory, distances and caches",
		Long: `Show the machine as a NUMA engineer sees it: nodes with their CPUs and memory, the
distance matrix, CPU-less memory nodes (CXL, HBM), packages, cores, SMT siblings,
caches and who shares them, offline CPUs, and CPUs this process may not use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs, err := g.fs()
			if err != nil {
				return err
			}
			t, err := topology.Discover(fs)
			if err != nil {
				return err
			}
			switch format {
			case "json":
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(t)
			case "text":
				return t.WriteTextWidth(os.Stdout, term.Width(os.Stdout, topology.DefaultTextWidth))
			default:
				return fmt.Errorf("unknown --format %q: use text or json", format)
			}
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
