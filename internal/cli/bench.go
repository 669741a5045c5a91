package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/numascope/numascope/internal/bench"
	"github.com/numascope/numascope/internal/term"
)

// benchConfig is bench's command line, parsed.
type benchConfig struct {
	opt    bench.Options
	format string
	out    string
	force  bool
}

// benchFlags are bench's flags as given.
type benchFlags struct {
	kind, from, to, size, kernel, format, out string
	isa, chain                                string
	// pairs and lineNode are c2c's --pairs and --line-node.
	pairs, lineNode string
	pairBudget      time.Duration
	threads, repeat int
	noHuge, force   bool
	// mix is --mix; kernelSet says --kernel was given (they exclude
	// each other).
	mix       string
	kernelSet bool
}

// parse turns the flags into a configuration, checking everything that does
// not need the topology.
func (f benchFlags) parse() (benchConfig, error) {
	var c benchConfig
	var err error
	if c.opt.Kinds, err = bench.ParseKinds(f.kind); err != nil {
		return c, err
	}
	if c.opt.Kernel, err = bench.ParseKernel(f.kernel); err != nil {
		return c, err
	}
	if c.opt.Chain, err = bench.ParseChain(f.chain); err != nil {
		return c, err
	}
	if c.opt.ISA, err = bench.ParseISA(f.isa); err != nil {
		return c, err
	}
	isa, err := bench.ResolveISA(c.opt.ISA)
	if err != nil {
		return c, err
	}
	if f.mix != "" {
		if f.kernelSet {
			return c, fmt.Errorf("--mix %s and --kernel %s: give one of them (a mix is the kernel)", f.mix, f.kernel)
		}
		m, err := bench.ParseMix(f.mix)
		if err != nil {
			return c, err
		}
		c.opt.Mix = &m
	} else if c.opt.Kinds.Bandwidth || c.opt.Kinds.Loaded {
		if err := bench.CheckKernel(c.opt.Kernel, isa); err != nil {
			return c, err
		}
	}
	if f.size != "" {
		if c.opt.Size, err = bench.ParseSize(f.size); err != nil {
			return c, fmt.Errorf("--size: %w", err)
		}
	}
	if f.repeat < 1 || f.repeat > bench.MaxRepeat {
		return c, fmt.Errorf("--repeat %d: want 1 to %d (more repeats add nothing a median needs, and make a document too big to view)", f.repeat, bench.MaxRepeat)
	}
	if f.threads < 0 {
		return c, fmt.Errorf("--threads %d: want a positive count (0: every CPU of the node)", f.threads)
	}
	if _, err := bench.ParseC2CPairs(f.pairs); err != nil {
		return c, err
	}
	if (f.pairs != "all" && f.pairs != "" || f.lineNode != "") && !c.opt.Kinds.C2C {
		return c, fmt.Errorf("--pairs and --line-node are for --kind c2c; --kind %s does not measure core-to-core latency", f.kind)
	}
	if f.pairBudget < 0 {
		return c, fmt.Errorf("--pair-budget %s: want a positive duration, e.g. 250ms or 5s", f.pairBudget)
	}
	c.opt.Pairs, c.opt.LineNode, c.opt.C2CPairBudget = f.pairs, f.lineNode, f.pairBudget
	if f.format != "text" && f.format != "json" {
		return c, fmt.Errorf("unknown --format %q: use text or json", f.format)
	}
	c.opt.From, c.opt.To, c.opt.Threads, c.opt.Repeat, c.opt.NoHugePages = f.from, f.to, f.threads, f.repeat, f.noHuge
	c.format, c.out, c.force = f.format, f.out, f.force
	return c, nil
}

func newBenchCmd(g *globals) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [--kind latency|bandwidth|loaded|c2c|all] [--from NODES] [--to NODES] [--size SIZE] [--chain random|page-local] [--kernel KERNEL | --mix R:W] [--isa ISA] [--format text|json] [-o FILE]",
		Short: "Measure memory latency, bandwidth and loaded latency from every node with CPUs to every node with memory",
		Long: `Measure what memory costs on this machine, node to node: the idle latency of a dependent load,
the bandwidth of a streaming kernel, the latency under load and the peak injection bandwidth,
from every node with CPUs (initiators, rows) to every node with memory (targets, columns),
CPU-less CXL, HBM and GPU-memory nodes included.

Threads are pinned to the initiator's CPUs; each buffer is bound to its target (mbind, strict)
before it is touched, and where its pages landed is checked with move_pages afterwards: below
99% on the target is flagged. As root, NUMA balancing is turned off for the run and restored
after, even if numascope is killed. The conditions that explain a surprising figure (THP,
frequency governor, CPU model, virtualisation) are reported with the figures.

Latency follows a chain through every cache line of the buffer in one uniformly random cycle
(Sattolo's), so no prefetcher helps and no DRAM row stays open: the DRAM latency, as Intel MLC and
lmbench's lat_mem_rd measure it; the median of --repeat runs. --chain page-local visits each page's
lines together instead: open rows and prefetchers help, so it measures less than the DRAM latency. Bandwidth runs a kernel on all the
initiator's CPUs (--threads fewer), counting bytes by STREAM's rules: best of --repeat after one
uncounted run; nt-store, copy-nt and triad-nt write with non-temporal stores, and the kernels are
assembly, AVX2 where the CPU has it (--isa avx512 or sse2 picks another); --mix R:W streams a
read:write mix instead (3:1: of every 4 blocks, 3 read and 1 written). Loaded latency follows
the chain on one CPU of the initiator while its other CPUs inject the kernel's bandwidth at
stepped rates, from idle to full; peak injection bandwidth is all of them at full rate. --size
is the memory per measurement (default: 4x the last-level cache, at least 64M per array); below
4x the last-level cache it is flagged, as are a busy host (other runnable tasks, steal time, next
to the spread of the repeats), a loaded-latency curve that is not monotonic and a peak injection
far from the bandwidth.

--kind c2c measures core-to-core latency: two threads pinned to a pair of CPUs take turns to
compare-and-swap one cache line, and half the round trip is the figure, per pair the median of
--repeat windows, as Intel MLC's --c2c_latency and the core-to-core-latency tools measure it.
Every pair of CPUs is measured, or --pairs "sample N" of them spread over the classes (SMT
siblings, same last-level cache, same node, cross node) and node pairs; the text gives each
class, the node x node matrix and the CPU x CPU matrix. --line-node N binds the line's page to
node N (default: the node of each pair's first CPU). Give a comma list to measure several kinds,
e.g. --kind latency,c2c. See docs/bench.md.`,
		Example: `  numascope bench
  numascope bench --kind latency --to 2 --size 256M
  numascope bench --kind bandwidth --kernel triad --format json -o bench.json
  numascope bench --kind loaded --mix 3:1 --from 0
  numascope bench --kind c2c --pairs "sample 2000" --line-node 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.kernelSet = cmd.Flags().Changed("kernel")
			c, err := f.parse()
			if err != nil {
				return err
			}
			if g.root != "" {
				return errors.New("bench measures this machine: --root (a captured tree) cannot be benchmarked")
			}
			var output *outputFile
			if c.out != "" {
				if output, err = openOutput("bench result", c.out, c.force); err != nil {
					return err
				}
				defer output.Close()
			}
			_, topo, err := g.discover()
			if err != nil {
				return err
			}
			c.opt.Topology = topo
			if term.IsTerminal(os.Stderr) {
				c.opt.Progress = func(done, total int, what string) {
					fmt.Fprintf(os.Stderr, "\r\033[Knumascope bench: %d/%d %s", done+1, total, what)
				}
			}
			res, err := bench.Run(c.opt)
			if c.opt.Progress != nil {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			// The text output ends with the notes; JSON keeps them in
			// "notes", where a reader of the terminal would miss them.
			if c.format != "text" || c.out != "" {
				for _, n := range res.Notes {
					fmt.Fprintf(os.Stderr, "numascope bench: %s\n", n)
				}
			}
			if c.out == "" {
				return writeBench(os.Stdout, res, c.format)
			}
			return writeBenchFile(res, c, output)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "kind", "all", "what to measure: latency, bandwidth, loaded (loaded latency and peak injection bandwidth), c2c (core-to-core latency) or all (the memory kinds); or a comma list, e.g. latency,c2c")
	fl.StringVar(&f.pairs, "pairs", "all", `c2c: the CPU pairs to measure: all, or "sample N" (N pairs spread over the classes and node pairs)`)
	fl.DurationVar(&f.pairBudget, "pair-budget", 0, "c2c: the most one pair may take; a pair past it keeps the windows it finished, or is skipped (default 250ms; more in an emulator or on a busy host)")
	fl.StringVar(&f.lineNode, "line-node", "", "c2c: the node the contended line's memory is bound to (default: each pair's first CPU's node)")
	fl.StringVar(&f.from, "from", "", "initiator nodes, with CPUs (list like 0-1; default: all)")
	fl.StringVar(&f.to, "to", "", "target nodes, with memory (list like 0-3; default: all, CPU-less ones included)")
	fl.StringVar(&f.size, "size", "", "memory per measurement, e.g. 256M or 1G (default: 4x the last-level cache, at least 64M per array)")
	fl.IntVar(&f.threads, "threads", 0, "bandwidth threads per initiator, one per core first (default: every CPU of the node)")
	fl.StringVar(&f.kernel, "kernel", "copy", "bandwidth kernel: "+strings.Join(bench.KernelNames, ", ")+" (-nt and nt-: non-temporal stores)")
	fl.StringVar(&f.isa, "isa", "auto", "instruction set of the bandwidth kernels: "+strings.Join(bench.ISANames, ", ")+" (auto: avx2 where the CPU has it, else sse2; go elsewhere)")
	fl.StringVar(&f.mix, "mix", "", "read:write mix instead of a kernel, as Intel MLC has them: 1:0 (all reads), 3:1, 2:1, 1:1, 0:1 (all writes)")
	fl.IntVar(&f.repeat, "repeat", bench.DefaultRepeat, fmt.Sprintf("measurements per pair (1 to %d)", bench.MaxRepeat))
	fl.StringVar(&f.chain, "chain", "random", "latency chain: random (every line in one uniformly random cycle: the DRAM latency) or page-local (each page's lines together: open rows and prefetchers help, less than the DRAM latency)")
	fl.BoolVar(&f.noHuge, "no-huge-pages", false, "use base pages only (default: transparent huge pages where the kernel gives them)")
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.StringVarP(&f.out, "output", "o", "", "write to FILE instead of stdout")
	fl.BoolVar(&f.force, "force", false, "overwrite FILE if it exists")
	return cmd
}

func writeBench(w io.Writer, res *bench.Result, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(res)
	}
	return res.WriteText(w)
}

// writeBenchFile writes the result next to -o and then moves it there, so
// that a half-written file never carries the name.
func writeBenchFile(res *bench.Result, c benchConfig, output *outputFile) error {
	tmp, removeTmp, err := output.createTemp()
	if err != nil {
		return err
	}
	defer removeTmp()
	defer tmp.Close()
	if err := writeBench(tmp, res, c.format); err != nil {
		return fmt.Errorf("writing the bench result %s: %w", c.out, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing the bench result %s: %w", c.out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the bench result %s: %w", c.out, err)
	}
	return output.place(tmp)
}
