package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/bench"
	"github.com/numascope/numascope/internal/term"
	"github.com/numascope/numascope/internal/topology"
)

// topologyConfig is topology's command line, parsed.
type topologyConfig struct {
	format string // text, json or hwloc-xml
	bench  string // a bench JSON to add as hwloc memory attributes
}

// parse checks the flags that do not need the topology.
func (c topologyConfig) parse() (topologyConfig, error) {
	switch c.format {
	case "text", "json", "hwloc-xml":
	default:
		return c, fmt.Errorf("unknown --format %q: use text, json or hwloc-xml", c.format)
	}
	if c.bench != "" && c.format != "hwloc-xml" {
		return c, errors.New("--bench adds measured values to hwloc's XML: give --format hwloc-xml with it")
	}
	return c, nil
}

func newTopologyCmd(g *globals) *cobra.Command {
	var flags topologyConfig
	cmd := &cobra.Command{
		Use:   "topology [--format text|json|hwloc-xml] [--bench FILE]",
		Short: "Show NUMA nodes, CPUs, memory, distances, tiers and caches",
		Long: `Show the machine as a NUMA engineer sees it: nodes with their CPUs and memory, the
distance matrix, CPU-less memory nodes (CXL, HBM), the kernel's memory tiers, the
firmware's rated latencies and bandwidths (HMAT) and memory-side caches where the
kernel reports them, packages, cores, SMT siblings, caches and who shares them,
offline CPUs, and CPUs this process may not use.

--format hwloc-xml writes hwloc's XML (lstopo --input FILE reads it); with
--bench FILE (the JSON of numascope bench) the measured latency and bandwidth
become hwloc memory attributes (lstopo --memattrs shows them).`,
		Example: `  numascope topology
  numascope topology --format json
  numascope bench --format json -o bench.json
  numascope topology --format hwloc-xml --bench bench.json > machine.xml
  lstopo --memattrs --input machine.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := flags.parse()
			if err != nil {
				return err
			}
			fs, err := g.fs()
			if err != nil {
				return err
			}
			t, err := topology.Discover(fs)
			if err != nil {
				return err
			}
			switch c.format {
			case "json":
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(t)
			case "hwloc-xml":
				var attrs []topology.MemAttr
				if c.bench != "" {
					res, err := bench.LoadResult(c.bench)
					if err != nil {
						return err
					}
					if attrs, err = res.MemAttrs(); err != nil {
						return fmt.Errorf("bench result %s: %w", c.bench, err)
					}
				}
				// Buffered, so that a bench result of another machine
				// leaves no half-written XML behind.
				var buf bytes.Buffer
				notes, err := t.WriteHwlocXML(&buf, attrs)
				if err != nil {
					return err
				}
				for _, n := range notes {
					fmt.Fprintf(os.Stderr, "numascope topology: %s\n", n)
				}
				_, err = os.Stdout.Write(buf.Bytes())
				return err
			default:
				return t.WriteTextWidth(os.Stdout, term.Width(os.Stdout, topology.DefaultTextWidth))
			}
		},
	}
	cmd.Flags().StringVar(&flags.format, "format", "text", "output format: text, json or hwloc-xml")
	cmd.Flags().StringVar(&flags.bench, "bench", "", "with --format hwloc-xml: add the measured values of this bench JSON as hwloc memory attributes")
	return cmd
}
