package cli

import (
	"os"
	"runtime"
	"testing"
)

// TestSamplingCommandsStartOnOneP: stat, record, live and experiment run on
// one P from their start, not only from the sampler's Run on, whatever the machine's CPU count
// (issue 34: start-up's garbage collection started a mark worker, on a thread
// of its own, on every P, one per CPU). A bigger machine is simulated with
// GOMAXPROCS 8: after the command the sampler hands back the Ps the process
// had when sampling began, which is 1 only if the command set it at its start.
// Other commands keep the runtime's default, and GOMAXPROCS in the
// environment is the user's.
func TestSamplingCommandsStartOnOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	out := t.TempDir() + "/r.jsonl"
	for _, c := range []struct {
		name  string
		env   string // GOMAXPROCS in the environment; "" unset
		args  []string
		fails bool // the command is refused after start-up's choice (live and experiment run until stopped)
		want  int
	}{
		{"stat", "", []string{"stat", "-i", "1ms", "-n", "2", "-e", "vmstat.pgfault"}, false, 1},
		{"record", "", []string{"record", "-o", out, "--force", "-i", "1ms", "-n", "2", "-e", "vmstat.pgfault"}, false, 1},
		{"stat after a global flag", "", []string{"--root", "/", "stat", "-i", "1ms", "-n", "2", "-e", "vmstat.pgfault"}, false, 1},
		{"stat, GOMAXPROCS set", "8", []string{"stat", "-i", "1ms", "-n", "2", "-e", "vmstat.pgfault"}, false, 8},
		{"live (refused flag)", "", []string{"live", "--batch", "1ms"}, true, 1},
		{"experiment (missing spec)", "", []string{"experiment", "/nonexistent/spec.toml"}, true, 1},
		{"topology", "", []string{"topology"}, false, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", c.env)
			if c.env == "" {
				os.Unsetenv("GOMAXPROCS")
			}
			runtime.GOMAXPROCS(8)
			if _, errs, code := runMain(t, c.args...); (code != 0) != c.fails {
				t.Fatalf("numascope %v: exit %d: %s", c.args, code, errs)
			}
			if got := runtime.GOMAXPROCS(0); got != c.want {
				t.Errorf("numascope %v left GOMAXPROCS %d, want %d", c.args, got, c.want)
			}
		})
	}
}
