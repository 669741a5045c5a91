package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/perfevent"
)

// newPerfCmd is `numascope perf`: what the perf and uncore sensors can see on
// this machine (PMUs, presets) and how a specification encodes, for
// checking an event before sampling it.
func newPerfCmd(g *globals) *cobra.Command {
	var presetFiles []string
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Inspect perf events: PMUs, presets and encodings",
		Long: `Inspect what the perf and uncore sensors can count here: the PMUs the kernel lists, the
presets for this CPU, and how a perf event specification encodes (docs/perf.md).

Sampling perf events is done with stat/record: the perf sensor offers software events, NUMA
tracepoints, generic hardware events and the presets of this CPU; more are added with
NUMASCOPE_PERF_EVENTS='SPEC,...' (and --perf-events where the command has it).`,
	}
	cmd.PersistentFlags().StringArrayVar(&presetFiles, "presets", nil, "user preset FILE, searched before the built-in presets (repeatable)")

	pmus := &cobra.Command{
		Use:   "pmus",
		Short: "List the PMUs of the kernel with type, cpumask and format fields",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs, err := g.fs()
			if err != nil {
				return err
			}
			names, err := perfevent.ListPMUs(fs)
			if err != nil {
				return fmt.Errorf("listing PMUs: %w (is sysfs mounted?)", err)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PMU\tTYPE\tKIND\tFORMAT\tEVENTS")
			for _, n := range names {
				p, err := perfevent.LoadPMU(fs, n)
				if err != nil {
					fmt.Fprintf(tw, "%s\t-\t-\t%v\t\n", n, err)
					continue
				}
				kind := "per CPU"
				if p.Uncore() {
					kind = "uncore (cpumask " + fmtCPUs(p.CPUMask) + ")"
				}
				var fields []string
				for k, f := range p.Formats {
					fields = append(fields, fmt.Sprintf("%s(%d)", k, f.Width()))
				}
				sortStrings(fields)
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", n, p.Type, kind, strings.Join(fields, " "), len(p.Aliases()))
			}
			if perfevent.CorePMU(fs) == nil {
				fmt.Fprintf(tw, "\nno core PMU: %s\n", perfevent.NoCorePMU(fs, "hardware events").Error())
			}
			return tw.Flush()
		},
	}

	encode := &cobra.Command{
		Use:   "encode SPEC...",
		Short: "Show how perf event specifications encode on this machine",
		Example: `  numascope perf encode cycles sched:sched_move_numa
  numascope perf encode 'cpu/event=0xd3,umask=0x01,name=local_dram/'
  numascope --root capture perf encode 'uncore_imc/cas_count_read/'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fs, err := g.fs()
			if err != nil {
				return err
			}
			var errs []error
			for _, a := range args {
				for _, text := range perfevent.SplitSpecs(a) {
					sp, err := perfevent.Parse(text)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					ev, err := perfevent.Resolve(fs, sp)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					fmt.Printf("%s\n  name %s  kind %s  type %d  config 0x%x", text, ev.Name, sp.Kind, ev.Attr.Type, ev.Attr.Config[0])
					for i, c := range ev.Attr.Config[1:] {
						if c != 0 {
							fmt.Printf("  config%d 0x%x", i+1, c)
						}
					}
					if m := sp.Mods.String(); m != "" {
						fmt.Printf("  modifiers %s", m)
					}
					fmt.Println()
					for _, in := range ev.Instances {
						if in.CPUMask != nil {
							fmt.Printf("  instance %s (type %d) on CPUs %s\n", in.PMU, in.Type, fmtCPUs(in.CPUMask))
						}
					}
					if ev.Scale != 0 {
						fmt.Printf("  scale %g %s\n", ev.Scale, ev.Unit)
					}
					if ev.Desc != "" {
						fmt.Printf("  %s\n", ev.Desc)
					}
				}
			}
			return errors.Join(errs...)
		},
	}

	presets := &cobra.Command{
		Use:   "presets",
		Short: "List the preset models, the one this CPU selects, and its events with sources",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs, err := g.fs()
			if err != nil {
				return err
			}
			ps, err := perfevent.LoadPresets(presetFiles...)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tVENDOR\tFAMILY\tMODELS\tPRESETS\tNAME")
			for _, m := range ps.Models {
				fmt.Fprintf(tw, "%s\t%s\t0x%x\t%s\t%s\t%s\n", m.ID, m.Vendor, m.Family, strings.Join(m.Models, ","), strings.Join(m.PresetList(), ","), m.Name)
			}
			tw.Flush()
			id, err := perfevent.ReadCPUID(fs)
			if err != nil {
				fmt.Printf("\nthis CPU: %v\n", err)
				return nil
			}
			m := ps.Select(id)
			if m == nil {
				fmt.Printf("\nthis CPU (%s) has no preset model: add one with --presets FILE (docs/perf.md)\n", id)
				return nil
			}
			fmt.Printf("\nthis CPU (%s) selects %s (%s):\n", id, m.ID, m.File)
			for _, e := range m.Events {
				fmt.Printf("  @%s  %s = %s\n      %s\n      source: %s\n", strings.Join(e.Presets, ",@"), e.Name, e.Spec, e.Desc, e.Source)
			}
			return nil
		},
	}
	cmd.AddCommand(pmus, encode, presets)
	return cmd
}

func fmtCPUs(c []int) string {
	if len(c) == 0 {
		return "none"
	}
	s := make([]string, len(c))
	for i, x := range c {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
