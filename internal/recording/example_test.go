package recording_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/numascope/numascope/internal/recording"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.jsonl.zst")

	w, err := recording.Create(path, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	w.WriteHeader(&recording.Header{
		Interval: 0.1,
		Columns: []recording.Column{
			{Sensor: "node", Event: "numa_miss", Sources: []string{"1"}, Unit: "pages", Kind: recording.Counter},
		},
	})
	w.WriteSample(100*time.Millisecond, []float64{1520})
	w.WriteLabel(150*time.Millisecond, "phase 2")
	w.WriteSample(200*time.Millisecond, []float64{math.NaN()}) // could not be read
	w.Flush()                                                  // a concurrent reader now sees both samples
	w.Close(recording.End{Samples: 2})

	rec, err := recording.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Columns[0].Name, rec.Samples[0].T, rec.Samples[0].V, rec.Samples[1].V, rec.Marks[0].Text, rec.End.Samples)
	// Output: node.1.numa_miss 0.1 [1520] [NaN] phase 2 2
}
