// Command benchgen writes a synthetic recording for the web client's
// benchmark (scripts/web-bench): by default 10 minutes of 50 columns at
// 1 kHz, i.e. 600,000 samples, with per-node imbalance, bursts and labels.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

func main() {
	out := flag.String("o", "bench.jsonl.zst", "output file")
	cols := flag.Int("columns", 50, "number of columns")
	rate := flag.Float64("hz", 1000, "samples per second")
	dur := flag.Duration("d", 10*time.Minute, "duration")
	flag.Parse()
	if err := run(*out, *cols, *rate, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func run(out string, ncols int, hz float64, dur time.Duration) error {
	w, err := recording.Create(out, true)
	if err != nil {
		return err
	}
	const nodes = 2
	events := []string{"numa_hit", "numa_miss", "numa_foreign", "local_node", "other_node"}
	h := recording.Header{Host: "benchgen", Interval: 1 / hz, Start: time.Now().UTC(),
		Sensors: []recording.SensorInfo{{Name: "node", Present: true, Sources: []string{"0", "1"}}}}
	for i := 0; i < ncols; i++ {
		ev := fmt.Sprintf("%s_%d", events[i%len(events)], i/(len(events)*nodes))
		src := fmt.Sprint((i / len(events)) % nodes)
		h.Columns = append(h.Columns, recording.Column{
			Name: "node." + src + "." + ev, Sensor: "node", Event: ev, Sources: []string{src},
			Unit: "pages", Kind: "counter", Desc: "synthetic " + ev, Max: 2e6,
		})
	}
	if err := w.WriteHeader(&h); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := int(dur.Seconds() * hz)
	v := make([]float64, ncols)
	for k := 0; k < n; k++ {
		t := float64(k) / hz
		for i := range v {
			base := 1e5 * float64(1+i%7)
			if (i/len(events))%nodes == 0 {
				base *= 4 // node 0 carries most of the traffic
			}
			v[i] = math.Round(base*(1+0.5*math.Sin(t/(5+float64(i)))) + rng.NormFloat64()*base*0.05)
			if rng.IntN(20000) == 0 {
				v[i] *= 5 // a rare burst
			}
		}
		if err := w.WriteSample(time.Duration(t*1e9), v); err != nil {
			return err
		}
		if k > 0 && k%(60*int(hz)) == 0 {
			if err := w.WriteLabel(time.Duration(t*1e9), fmt.Sprintf("minute %d", k/(60*int(hz)))); err != nil {
				return err
			}
		}
	}
	return w.Close(recording.End{Samples: uint64(n)})
}
