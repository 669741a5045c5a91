package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/beneath"
	"github.com/numascope/numascope/internal/outname"
	"github.com/numascope/numascope/internal/profile"
)

func newProfileCmd(g *globals) *cobra.Command {
	var out, format, capture string
	var scanRate time.Duration
	var stackCopy, consumers, ringKB int
	var force bool
	cmd := &cobra.Command{
		Use:   "profile [-o FILE] [--format json] -- CMD [ARGS...]",
		Short: "Profile a command: who first-touched each page, which accesses were remote, per source line",
		Long: `Run CMD under the NUMA profiler and write its profile to FILE (default numascope-profile.json).
An existing FILE is never overwritten unless --force is given; FILE is checked before CMD runs.
FILE may hold ` + outname.Help + `,
so that each rank of an MPI job writes its own profile (mpirun -n 4 numascope profile -o
prof.%h.%r.json -- ./app; numascope report prof.*.json merges them). Expanded values are reduced
to [A-Za-z0-9._-], so the file stays in the directory named. The profile records the host and
the rank (from OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID) when known.

Every user-space page fault of CMD, its threads and its children is sampled with a perf software
event: the first fault on a page is its first touch (the code and thread that placed it); with
automatic NUMA balancing on, later faults are NUMA hinting faults, a sample of the program's
accesses (one per page per balancing scan), classified local or remote. Instruction addresses
are resolved to function, file and line from the binaries' ELF symbols and DWARF line tables
(build with -g). As root, syscall tracepoints also give each range of memory its allocation
site (the application line whose malloc/mmap asked the kernel for it) and follow each thread's
sched_setaffinity calls as they happen (the pinning log). See docs/profile.md for the format and
exactly what is counted; numascope report FILE summarises a profile in the terminal, numascope
view FILE in the browser.

numascope returns CMD's exit status (128+N if a signal killed it); the profile is written even
then. Needs root or kernel.perf_event_paranoid <= 1 (without root: no allocation sites, and
affinities are polled).

A fault inside a routine without line information (libc's memset, memcpy) is credited to the
application line that called it, found in a copy of the user stack taken with each fault
(--stack-copy bytes).

--scan-rate makes the kernel's balancing scanner start and rescan sooner, so that a short run
gets more sampled accesses; the scanner's settings are put back when numascope ends, however
it ends.`,
		Example: `  numascope profile -o init.json -- ./solver --threads 8
  numascope report init.json
  numascope view init.json --source-path ~/src/solver`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if len(args) == 0 {
				return fmt.Errorf("no command to profile: numascope profile [-o FILE] -- CMD [ARGS...]")
			}
			if cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unexpected argument %q: put the command to profile after --", args[0])
			}
			if format != "json" {
				return fmt.Errorf("unknown --format %q: the only format is json", format)
			}
			if err := profile.CheckStackCopy(stackCopy); err != nil {
				return fmt.Errorf("--stack-copy %w", err)
			}
			if ringKB < 0 || ringKB > profile.MaxRingBytes>>10 {
				return fmt.Errorf("--ring-kb %d: give 0 (the default) to %d", ringKB, profile.MaxRingBytes>>10)
			}
			if consumers < 0 || consumers > profile.MaxConsumers {
				return fmt.Errorf("--consumers %d: give 1 (one goroutine reads and handles the rings) to %d, or 0 to choose by the CPU count", consumers, profile.MaxConsumers)
			}
			vars := outname.Current(time.Now())
			if out, err = outname.Expand(out, vars); err != nil {
				return err
			}
			// The output is checked before the run, as record does: a
			// profile that cannot be written is found out before the
			// program runs, not after.
			output, err := openOutput("profile", out, force)
			if err != nil {
				return err
			}
			defer output.Close()
			_, topo, err := g.discover()
			if err != nil {
				return err
			}
			// Create the file first: a profile that cannot be written is
			// better found out before the run than after it.
			tmp, removeTmp, err := output.createTemp()
			if err != nil {
				return err
			}
			defer removeTmp()
			defer tmp.Close()
			closer, _ := os.Executable() // closes the tracepoint events in the background (profile.CloserArg)
			copyOpt := stackCopy
			if copyOpt == 0 {
				copyOpt = -1 // none
			}
			opt := profile.Options{Topology: topo, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
				ScanRate: scanRate, Closer: closer, StackCopy: copyOpt, Consumers: consumers, RingBytes: ringKB << 10,
				Host: vars.Host, Rank: vars.Rank}
			if capture != "" {
				// A new file, readable by its owner only, reached as
				// every output is: through no other user's symbolic link.
				f, err := beneath.CreateOutput(capture, false, 0o600)
				if err != nil {
					return fmt.Errorf("--capture: %w", beneath.OutputError("the capture", capture, err))
				}
				defer f.Close()
				opt.Capture = f
			}
			p, err := profile.Run(args, opt)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(tmp)
			enc.SetIndent("", " ")
			if err := enc.Encode(p); err != nil {
				return fmt.Errorf("writing the profile %s: %w", out, err)
			}
			if err := tmp.Chmod(0o644); err != nil {
				return fmt.Errorf("writing the profile %s: %w", out, err)
			}
			if err := tmp.Close(); err != nil {
				return fmt.Errorf("writing the profile %s: %w", out, err)
			}
			if err := output.place(tmp); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "numascope profile: %s\n", p.Summary(out))
			for _, n := range p.Notes {
				fmt.Fprintf(os.Stderr, "numascope profile: %s\n", n)
			}
			if p.ExitStatus != 0 {
				return exitError{p.ExitStatus}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "numascope-profile.json", "profile file to write; "+outname.Help)
	cmd.Flags().StringVar(&capture, "capture", "", "also write every perf record read to FILE, for replaying the consumer in its tests and benchmarks (docs/profile.md)")
	_ = cmd.Flags().MarkHidden("capture") // a developer's tool
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	cmd.Flags().StringVar(&format, "format", "json", "output format (json)")
	cmd.Flags().IntVar(&stackCopy, "stack-copy", profile.DefaultStackCopy, "bytes of user stack each page fault copies, where the application's call into libc (memset, memcpy) is found; "+
		"0 turns it off; more reaches through libc's own frames (256: calloc's) but fills the ring buffers sooner")
	cmd.Flags().IntVar(&consumers, "consumers", 0, "goroutines that consume the perf ring buffers: 1 reads and handles them on one; N > 1 adds N-1 that drain and decode them while the first handles the round before "+
		"(0: 1 below 16 CPUs, from 16 one more per 64 CPUs; see docs/profile.md)")
	cmd.Flags().IntVar(&ringKB, "ring-kb", 0, "each CPU's perf ring buffer in KiB, rounded down to a power of two pages (0: 128 MiB shared by the CPUs, 512 KiB to 32 MiB each), for measuring how deep a ring a fault rate needs")
	_ = cmd.Flags().MarkHidden("ring-kb") // a developer's tool
	cmd.Flags().DurationVar(&scanRate, "scan-rate", 0, "as root, run the NUMA balancing scanner every DURATION (e.g. 100ms) during the run; the previous settings are restored after, even if numascope is killed")
	return cmd
}

// outputFile is a result written whole at the end of a run (profile,
// bench): checked before the run, written to a temporary file beside it and
// moved into place, so that a half-written file never carries the name. Its
// directory is resolved once (beneath.OpenOutputDir: no other user's
// symlink is followed on the way) and held open, so the file lands in the
// directory that was checked.
type outputFile struct {
	what, path, base string
	force            bool
	dir              *beneath.OutDir
}

// openOutput refuses, before anything runs, an output that is a directory,
// an existing file without force, or one whose path goes through another
// user's symbolic link. what names the output ("profile", "bench result")
// in the messages. Close releases it.
func openOutput(what, out string, force bool) (*outputFile, error) {
	isDir := fmt.Errorf("cannot write the %s to %s: it is a directory; give a file name, e.g. -o %s", what, out, filepath.Join(out, strings.ReplaceAll(what, " ", "-")+".json"))
	dir, base := filepath.Split(out)
	if base == "" || base == "." || base == ".." {
		return nil, isDir
	}
	d, err := beneath.OpenOutputDir(dir)
	if err != nil {
		var se *beneath.SymlinkError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("cannot write the %s to %s: %v", what, out, se)
		}
		return nil, fmt.Errorf("cannot write the %s to %s: %w", what, out, err)
	}
	st, exists, err := d.Lstat(base)
	switch {
	case err != nil:
	case exists && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		err = isDir
	case exists && !force:
		err = fmt.Errorf("%s %s already exists; use --force to overwrite it", what, out)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return &outputFile{what: what, path: out, base: base, force: force, dir: d}, nil
}

// Close releases the output's directory.
func (o *outputFile) Close() error { return o.dir.Close() }

// createTemp creates the temporary file beside the output; remove removes
// it unless place has moved it.
func (o *outputFile) createTemp() (f *os.File, remove func(), err error) {
	f, name, err := o.dir.CreateTemp("." + o.base + ".")
	if err != nil {
		return nil, nil, fmt.Errorf("cannot write the %s next to %s: %w", o.what, o.path, err)
	}
	return f, func() { _ = o.dir.Remove(name) }, nil
}

// place moves the finished output from tmp (a file createTemp made) to its
// name. Without force it links rather than renames, so that a file that
// appeared there during the run is not replaced either; the output then
// stays in tmp's place, named. A symbolic link planted at the name is
// replaced with force, never followed.
func (o *outputFile) place(tmp *os.File) error {
	name := filepath.Base(tmp.Name())
	if o.force {
		if err := o.dir.Rename(name, o.base); err != nil {
			return fmt.Errorf("writing the %s %s: %w", o.what, o.path, err)
		}
		return nil
	}
	if err := o.dir.Link(name, o.base); err != nil {
		kept := o.base + ".new"
		if lerr := o.dir.Link(name, kept); lerr == nil { // never replaces a file either
			return fmt.Errorf("cannot write the %s to %s (%v); it is in %s instead", o.what, o.path, err, filepath.Join(filepath.Dir(o.path), kept))
		}
		return fmt.Errorf("writing the %s %s: %w", o.what, o.path, err)
	}
	return o.dir.Remove(name)
}
