package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// quickstartSkipped are the Quickstart lines this test does not run, and
// why: each needs what CI machines lack. Keep it short: every other line
// runs as the README writes it.
var quickstartSkipped = map[string]string{
	"bin/numascope stat -e @numa-traffic": "needs a CPU whose PMU a preset covers (CI runs in VMs without one); " +
		"the preset tests in internal/perfevent cover it",
	"mpirun -n 4 bin/numascope profile -o prof.%h.%r.json -- ./app": "needs MPI (and, as root, --allow-run-as-root); " +
		"TestMPIProfileRanks runs profile under mpirun",
}

// How the test sees a line that runs until stopped working, before it
// stops it (SIGINT, or q in a terminal interface).
type untilStopped int

const (
	servesURL    untilStopped = iota // prints "open URL"; the URL answers 200
	servesMetric                     // the exporter: its /metrics answers with numascope's metrics
	printsLines                      // stat: prints its heading and a first sample
	terminalUI                       // top: draws a screen in an 80×24 terminal, ends on q
)

// quickstartUntilStopped are the lines that run until stopped. Every other
// line must end by itself, successfully.
var quickstartUntilStopped = map[string]untilStopped{
	"bin/numascope live":         servesURL,
	"bin/numascope exporter":     servesMetric,
	"bin/numascope top":          terminalUI,
	"bin/numascope top --cgroup": terminalUI,
	"bin/numascope stat":         printsLines,
	"bin/numascope stat -i 100ms --discrete -e 'numa_*,node.*.MemFree'":                                 printsLines,
	"bin/numascope stat -e 'perf.page-faults,perf.sched:sched_move_numa,perf.migrate:mm_migrate_pages'": printsLines,
	"bin/numascope view run.jsonl.zst":                                                                  servesURL,
	"bin/numascope view run.jsonl.zst idle.jsonl.zst":                                                   servesURL,
	"bin/numascope view prof.json --source-path .":                                                      servesURL,
	"bin/numascope view bench.json":                                                                     servesURL,
}

// quickstartBeside: a line that needs another command running beside it
// (ctl steers a running stat).
var quickstartBeside = map[string]string{
	`bin/numascope ctl label "phase 2"`: "bin/numascope stat",
}

// quickstartOwnFiles are the reader's own program and files, which the
// Quickstart names (./app, regimes.toml, ...): the test puts small ones
// there. Everything else a line reads, an earlier line made.
func quickstartOwnFiles(t *testing.T, dir string) {
	t.Helper()
	program := "#!/bin/sh\n# a program of the reader's: touches 64 MiB\nhead -c 64M /dev/zero | od -An -c | tail -1\n"
	legacy, err := os.ReadFile(filepath.Join(repoRoot(t), "internal/recording/testdata/legacy-numaconnect2.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"app":      program,
		"my_app":   program,
		"old.json": string(legacy),
		"regimes.toml": `name = "regimes"
command = "./app {mb}"
replications = 2
interval = "100ms"
responses = ["wall_time"]

[[factor]]
name = "mb"
levels = [16, 32]

[[regime]]
name = "first-touch"
policy = "first-touch"

[[regime]]
name = "interleave"
policy = "interleave"
`,
		"runs.csv": "regime,threads,time_s\nfirst-touch,1,10.2\nfirst-touch,1,10.4\nfirst-touch,2,6.1\nfirst-touch,2,6.3\n" +
			"interleave,1,9.1\ninterleave,1,9.0\ninterleave,2,4.9\ninterleave,2,5.2\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// quickstartLines extracts the commands of the README's Quickstart block:
// comments cut (outside quotes), comment-only lines left out.
func quickstartLines(t *testing.T, readme string) []string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## Quickstart\n")
	if !ok {
		t.Fatal("README.md has no Quickstart section")
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	block, _, ok2 := strings.Cut(after, "\n```")
	if !ok || !ok2 {
		t.Fatal("the Quickstart has no ```sh block")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(testutil.StripComment(l)); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestQuickstart runs the README's Quickstart top to bottom, as written,
// in an empty directory (make build, the one line that needs the
// repository, runs there with BIN pointing into it): each line that ends
// by itself must succeed; each that runs until stopped must work
// (quickstartUntilStopped) and is then stopped; the few that cannot run in
// CI are named, with why, in quickstartSkipped. A line that needs a file a
// later line makes fails here.
//
// It needs root, as the Quickstart's perf tracepoint line does, make, git
// and tmux, and ports 8080 and 9864 free (live, view and exporter listen
// there by default).
func TestQuickstart(t *testing.T) {
	testutil.RequireRoot(t, "for the Quickstart's perf tracepoint line (stat -e perf.sched:...)")
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := quickstartLines(t, string(readme))
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
	}
	for _, m := range []map[string]string{quickstartSkipped, quickstartBeside} {
		for l := range m {
			if !have[l] {
				t.Errorf("%q is listed by the test but is not in the Quickstart: update the list", l)
			}
		}
	}
	for l := range quickstartUntilStopped {
		if !have[l] {
			t.Errorf("%q is listed by the test but is not in the Quickstart: update the list", l)
		}
	}
	dir := t.TempDir()
	quickstartOwnFiles(t, dir)
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	for i, line := range lines {
		if why, ok := quickstartSkipped[line]; ok {
			t.Logf("line %d skipped: %s: %s", i+1, line, why)
			continue
		}
		if t.Failed() {
			t.Fatalf("stopping before line %d (%s): the lines after a failed one need what it makes", i+1, line)
		}
		cmd := exec.Command("sh", "-c", "exec "+line)
		cmd.Dir, cmd.Env = dir, env
		if line == "make build" {
			cmd = exec.Command("make", "build", "BIN="+filepath.Join(dir, "bin/numascope"))
			cmd.Dir, cmd.Env = root, env
		}
		if beside, ok := quickstartBeside[line]; ok {
			b := exec.Command("sh", "-c", "exec "+beside)
			b.Dir, b.Env = dir, env
			quickstartStart(t, b, printsLines, beside)
			// The ctl line steers whichever numascope holds the default
			// FIFO: wait until that is the one started here, not another
			// test's, and see that ctl names it.
			fifo := quickstartHoldsDefaultFIFO(t, b.Process.Pid, env, os.Geteuid() == 0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			c := exec.CommandContext(ctx, "sh", "-c", "exec "+line)
			c.Dir, c.Env = dir, env
			out, err := c.CombinedOutput()
			cancel()
			if want := fmt.Sprintf("to PID %d (", b.Process.Pid); err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), ", on "+fifo+"\n") {
				t.Errorf("%s: %v: %s\nwant it to name the stat beside it (%s...)", line, err, out, want)
			} else {
				t.Logf("%s: ok: %s", line, strings.TrimSpace(string(out)))
			}
			continue
		}
		how, until := quickstartUntilStopped[line]
		switch {
		case until && how == terminalUI:
			quickstartTerminal(t, dir, env, line)
		case until:
			stop := quickstartStart(t, cmd, how, line)
			stop()
		default:
			quickstartRun(t, cmd, line)
		}
	}
}

// quickstartRun runs a line that ends by itself and fails t unless it
// succeeds within 5 minutes (bench and experiment take the longest); it
// returns what the line printed.
func quickstartRun(t *testing.T, cmd *exec.Cmd, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Args[0], cmd.Args[1:]...)
	c.Dir, c.Env, c.SysProcAttr = cmd.Dir, cmd.Env, cmd.SysProcAttr
	start := time.Now()
	out, err := c.CombinedOutput()
	if ctx.Err() != nil {
		t.Errorf("%s: did not end in 5 minutes; if it runs until stopped, add it to quickstartUntilStopped\n%s", line, tail(out))
	} else if err != nil {
		t.Errorf("%s: %v\n%s", line, err, tail(out))
	} else {
		t.Logf("%s: ok (%.1f s)", line, time.Since(start).Seconds())
	}
	return string(out)
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

var urlRE = regexp.MustCompile(`http://[^ ]+`)

// quickstartStart starts a line that runs until stopped, waits until it
// works as how says, and returns what stops it (also run at the end of the
// test). It fails t if the line does not work within 60 s.
func quickstartStart(t *testing.T, cmd *exec.Cmd, how untilStopped, line string) (stop func()) {
	t.Helper()
	stop, _ = startUntilStopped(t, cmd, how, line)
	return stop
}

// startUntilStopped is quickstartStart, and also returns the line that
// showed it working (the URL line, the first sample).
func startUntilStopped(t *testing.T, cmd *exec.Cmd, how untilStopped, line string) (stop func(), shown string) {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); exited <- err }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("%s: did not stop within 15 s of SIGINT", line)
		}
	}
	t.Cleanup(stop)
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	deadline := time.After(60 * time.Second)
	var seen []string
	if how == servesMetric {
		for {
			code, body := quickstartGet("http://127.0.0.1:9864/metrics")
			if code == http.StatusOK && strings.Contains(body, "\nnumascope_") {
				select {
				case err := <-exited: // something else answers on the port
					exited <- err
					t.Errorf("%s: ended (%v), yet something answers on 127.0.0.1:9864", line, err)
				default:
					t.Logf("%s: ok: http://127.0.0.1:9864/metrics answers", line)
				}
				return stop, ""
			}
			select {
			case err := <-exited:
				exited <- err
				t.Errorf("%s: ended (%v) before its metrics were served", line, err)
				return stop, ""
			case <-deadline:
				t.Errorf("%s: /metrics did not answer in 60 s (last: %d)", line, code)
				return stop, ""
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	samples := 0
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Errorf("%s: ended before it worked:\n%s", line, strings.Join(seen, "\n"))
				return stop, ""
			}
			seen = append(seen, l)
			switch how {
			case servesURL:
				if u := urlRE.FindString(l); u != "" {
					if code, body := quickstartGet(u); code != http.StatusOK {
						t.Errorf("%s: %s answers %d: %.200s", line, u, code, body)
					} else {
						t.Logf("%s: ok: %s answers", line, u)
					}
					return stop, l
				}
			case printsLines:
				if f := strings.Fields(l); len(f) > 1 && f[0] != "time" && !strings.HasPrefix(l, "numascope:") {
					if samples++; samples >= 1 {
						t.Logf("%s: ok: %q", line, l)
						return stop, l
					}
				}
			}
		case <-deadline:
			t.Errorf("%s: did not work within 60 s:\n%s", line, strings.Join(seen, "\n"))
			return stop, ""
		}
	}
}

// quickstartHoldsDefaultFIFO waits until process pid holds the default
// control FIFO (another numascope, of a test running beside this one, may
// hold it for a while) and returns its path. root: the process runs as
// root, whose default FIFO is not in XDG_RUNTIME_DIR.
func quickstartHoldsDefaultFIFO(t *testing.T, pid int, env []string, root bool) string {
	t.Helper()
	fifo := "/run/numascope-ctl"
	if !root {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok {
				fifo = filepath.Join(v, "numascope-ctl")
			}
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l == fifo {
				return fifo
			}
		}
	}
	t.Fatalf("the stat started for the ctl line (PID %d) did not get the default FIFO %s in 30 s: another numascope holds it", pid, fifo)
	return ""
}

func quickstartGet(u string) (int, string) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// quickstartTerminal runs a terminal interface in an 80×24 tmux, waits for
// a screen with a few lines on it, and quits it with q.
func quickstartTerminal(t *testing.T, dir string, env []string, line string) {
	t.Helper()
	extra := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
	for _, kv := range env { // the PATH the line's numascope is found on
		if strings.HasPrefix(kv, "PATH=") {
			extra = append(extra, kv)
		}
	}
	tm := testutil.StartTmux(t, 80, 24, extra, "sh", "-c", fmt.Sprintf("cd %q && exec %s", dir, line))
	tm.WaitFor(line+" drawing its screen", func(s string) bool {
		n := 0
		for _, l := range strings.Split(s, "\n") {
			if strings.TrimSpace(l) != "" {
				n++
			}
		}
		return n >= 3
	})
	tm.SendKeys("q")
	if code := tm.WaitExit(); code != 0 {
		t.Errorf("%s: exit %d after q:\n%s", line, code, tm.Screen())
	} else {
		t.Logf("%s: ok", line)
	}
}
