package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/sampler"
)

func newEventsCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "events [PATTERN...]",
		Short: "List sensors, whether they are present, and their events",
		Long: `List every sensor, present or absent with the reason, and its events with kind, unit and
description. PATTERNs select events as -e does (EVENT, SENSOR.EVENT or SENSOR.SOURCE.EVENT,
globs allowed); without them every event is listed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cat, err := g.open()
			if err != nil {
				return err
			}
			defer cat.Close()
			var only map[string]bool
			if len(args) > 0 {
				pats, err := cat.ExpandPresets(splitPatterns(args))
				if err != nil {
					return err
				}
				cols, err := cat.Select(pats, false)
				if err != nil {
					return err
				}
				only = map[string]bool{}
				for _, c := range cols {
					only[c.Sensor+"."+c.Event.Name] = true
				}
			}
			switch format {
			case "text":
				return writeEventsText(os.Stdout, cat, only)
			case "json":
				return writeEventsJSON(os.Stdout, cat, only)
			}
			return fmt.Errorf("unknown --format %q: use text or json", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func writeEventsText(w io.Writer, cat *sampler.Catalog, only map[string]bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range cat.Entries {
		if !e.Present() {
			if only == nil {
				fmt.Fprintf(tw, "%s\tabsent: %v\n\n", e.Name, e.Err)
			}
			continue
		}
		fmt.Fprintf(tw, "%s\tpresent, %s\n", e.Name, describeSources(e.Sources))
		for _, ev := range e.Events {
			if only != nil && !only[e.Name+"."+ev.Name] {
				continue
			}
			kind := ev.Kind.String()
			if ev.Unavailable != "" {
				kind = "unavailable"
			}
			fmt.Fprintf(tw, "  %s.%s\t%s\t%s\t%s\n", e.Name, ev.Name, kind, ev.Unit, ev.Desc)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func describeSources(src []string) string {
	switch {
	case len(src) == 1 && src[0] == "":
		return "1 source"
	case len(src) == 1:
		return "1 source (" + src[0] + ")"
	case len(src) <= 16:
		return fmt.Sprintf("%d sources (%s)", len(src), strings.Join(src, " "))
	}
	return fmt.Sprintf("%d sources (%s ... %s)", len(src), src[0], src[len(src)-1])
}

// writeEventsJSON prints the catalog as sampler.Catalog.Describe gives it
// (the same description the live protocol's hello and recording headers
// use), keeping only the events in only when it is set.
func writeEventsJSON(w io.Writer, cat *sampler.Catalog, only map[string]bool) error {
	out := []sampler.SensorDesc{}
	for _, s := range cat.Describe() {
		if only != nil {
			evs := s.Events[:0]
			for _, ev := range s.Events {
				if only[s.Name+"."+ev.Name] {
					evs = append(evs, ev)
				}
			}
			if len(evs) == 0 {
				continue
			}
			s.Events = evs
		}
		out = append(out, s)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// splitPatterns splits comma-separated -e values.
func splitPatterns(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
