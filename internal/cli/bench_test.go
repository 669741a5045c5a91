package cli

import (
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/bench"
)

func defaultBenchFlags() benchFlags {
	return benchFlags{kind: "all", kernel: "copy", isa: "auto", format: "text", repeat: bench.DefaultRepeat}
}

func TestBenchFlagsParse(t *testing.T) {
	f := defaultBenchFlags()
	f.kind, f.kernel, f.size, f.from, f.to, f.threads, f.format, f.out = "latency", "triad", "256M", "0", "1-3", 2, "json", "b.json"
	c, err := f.parse()
	if err != nil {
		t.Fatal(err)
	}
	o := c.opt
	if !o.Kinds.Latency || o.Kinds.Bandwidth || o.Kernel != bench.Triad || o.Size != 256<<20 || o.From != "0" || o.To != "1-3" ||
		o.Threads != 2 || o.Repeat != bench.DefaultRepeat || c.format != "json" || c.out != "b.json" {
		t.Errorf("parsed %+v", c)
	}
	bad := map[string]func(*benchFlags){
		"--kind":         func(f *benchFlags) { f.kind = "speed" },
		"loaded":         func(f *benchFlags) { f.kind = "loaded" },
		"--kernel":       func(f *benchFlags) { f.kernel = "scale" },
		"--size":         func(f *benchFlags) { f.size = "12X" },
		"--repeat":       func(f *benchFlags) { f.repeat = 0 },
		"--threads":      func(f *benchFlags) { f.threads = -1 },
		"--format":       func(f *benchFlags) { f.format = "csv" },
		"--isa":          func(f *benchFlags) { f.isa = "avx1024" },
		"--kernel triad": func(f *benchFlags) { f.kind, f.kernel, f.isa = "bandwidth", "triad-nt", "go" },
	}
	for want, mod := range bad {
		f := defaultBenchFlags()
		mod(&f)
		if _, err := f.parse(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %s", want, err, want)
		}
	}
}
