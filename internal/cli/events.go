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
	"github.com/numascope/numascope/internal/sensor"
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
		// The events that can be counted first; then those that cannot,
		// grouped by their reason, which is printed once per group: the
		// reason and its fix (no PMU in a VM, say) are the same long text
		// for every event that needs the missing hardware.
		var reasons []string
		byReason := map[string][]sensor.Event{}
		for _, ev := range e.Events {
			if only != nil && !only[e.Name+"."+ev.Name] {
				continue
			}
			if ev.Unavailable != "" {
				if byReason[ev.Unavailable] == nil {
					reasons = append(reasons, ev.Unavailable)
				}
				byReason[ev.Unavailable] = append(byReason[ev.Unavailable], ev)
				continue
			}
			fmt.Fprintf(tw, "  %s.%s\t%s\t%s\t%s\n", e.Name, ev.Name, ev.Kind, ev.Unit, ev.Desc)
		}
		for _, r := range reasons {
			evs := byReason[r]
			n := fmt.Sprintf("%d events", len(evs))
			if len(evs) == 1 {
				n = "1 event"
			}
			fmt.Fprintf(tw, "  %s unavailable: %s\n", n, r)
			for _, ev := range evs {
				fmt.Fprintf(tw, "  %s.%s\tunavailable\t%s\t%s\n", e.Name, ev.Name, ev.Unit, availableDesc(ev))
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// availableDesc is an unavailable event's own description, without the
// reason the sensor put in front of it (UNAVAILABLE: REASON (DESC)), which
// writeEventsText prints once for the group.
func availableDesc(ev sensor.Event) string {
	d, ok := strings.CutPrefix(ev.Desc, "UNAVAILABLE: "+ev.Unavailable)
	if !ok {
		return ev.Desc
	}
	d = strings.TrimSpace(d)
	if strings.HasPrefix(d, "(") && strings.HasSuffix(d, ")") {
		d = d[1 : len(d)-1]
	}
	return d
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
