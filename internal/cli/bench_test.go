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
		o.Threads != 2 || o.Repeat != bench.DefaultRepeat || c.format != "json" || c.out != "b.json" || o.Chain != bench.ChainRandom {
		t.Errorf("parsed %+v", c)
	}
	// The page-local chain only when named (issue 30).
	f.chain = "page-local"
	if c, err := f.parse(); err != nil || c.opt.Chain != bench.ChainPageLocal {
		t.Errorf("--chain page-local: %v, %v", c.opt.Chain, err)
	}
	bad := map[string]func(*benchFlags){
		"--kind":             func(f *benchFlags) { f.kind = "speed" },
		"loaded, c2c or all": func(f *benchFlags) { f.kind = "load" },
		"--pairs \"half\"":   func(f *benchFlags) { f.kind, f.pairs = "c2c", "half" },
		"--pairs and --line-node are for --kind c2c": func(f *benchFlags) { f.lineNode = "1" },
		"--kernel":                    func(f *benchFlags) { f.kernel = "scale" },
		"--size":                      func(f *benchFlags) { f.size = "12X" },
		"--repeat":                    func(f *benchFlags) { f.repeat = 0 },
		"--repeat 101: want 1 to 100": func(f *benchFlags) { f.repeat = bench.MaxRepeat + 1 },
		"--threads":                   func(f *benchFlags) { f.threads = -1 },
		"--format":                    func(f *benchFlags) { f.format = "csv" },
		"--mix":                       func(f *benchFlags) { f.mix = "3/1" },
		"--mix 3:1 and --kernel triad: give one of them": func(f *benchFlags) { f.mix, f.kernel, f.kernelSet = "3:1", "triad", true },
		"--isa":          func(f *benchFlags) { f.isa = "avx1024" },
		"--chain":        func(f *benchFlags) { f.chain = "stride" },
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

// TestBenchFlagsC2C: --kind c2c (alone or in a list) with --pairs and
// --line-node reach the options.
func TestBenchFlagsC2C(t *testing.T) {
	f := defaultBenchFlags()
	f.kind, f.pairs, f.lineNode = "latency,c2c", "sample 500", "1"
	c, err := f.parse()
	if err != nil || !c.opt.Kinds.C2C || !c.opt.Kinds.Latency || c.opt.Kinds.Bandwidth || c.opt.Pairs != "sample 500" || c.opt.LineNode != "1" {
		t.Errorf("options %+v, %v", c.opt, err)
	}
}

// TestBenchFlagsLoadedAndMix: --kind loaded and --mix reach the options;
// a malformed mix is one line saying what to give.
func TestBenchFlagsLoadedAndMix(t *testing.T) {
	f := defaultBenchFlags()
	f.kind, f.mix = "loaded", "6:2"
	c, err := f.parse()
	if err != nil {
		t.Fatal(err)
	}
	if c.opt.Kinds != (bench.Kinds{Loaded: true}) || c.opt.Mix == nil || *c.opt.Mix != (bench.Mix{Reads: 3, Writes: 1}) {
		t.Errorf("parsed kinds %+v mix %v", c.opt.Kinds, c.opt.Mix)
	}
	f = defaultBenchFlags()
	if c, err := f.parse(); err != nil || c.opt.Kinds != (bench.Kinds{Latency: true, Bandwidth: true, Loaded: true}) || c.opt.Mix != nil {
		t.Errorf("default: %+v, %v; want every kind and no mix", c.opt, err)
	}
	for _, bad := range []string{"3", "3:1:1", "x:1", "0:0", "99:1"} {
		f := defaultBenchFlags()
		f.mix = bad
		_, err := f.parse()
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "want reads:writes") {
			t.Errorf("--mix %s: %v, want one line saying what to give", bad, err)
		}
	}
}
