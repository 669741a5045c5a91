package main

// End-to-end tests of issue 31's command-line items on the real binary:
// --version of both builds, make build without Go, ctl naming and refusing,
// the default FIFO's silence, report on a recording, and the README's
// Quickstart run top to bottom (quickstart_test.go).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

const nobody = 65534

// repoRoot is the repository root, where the Makefile and README are.
func repoRoot(t *testing.T) string { return testutil.RepoRoot(t) }

// TestVersionOfBothBuilds: `numascope --version` says the version, commit,
// build date and Go version: `make build` stamps the version (git
// describe), the commit and the date; a plain `go build` still says its Go
// version and "unknown" for what it does not know.
func TestVersionOfBothBuilds(t *testing.T) {
	out, errs, code := run(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "numascope ") || !strings.Contains(out, "\ngo:         "+runtime.Version()+" ") ||
		!strings.Contains(out, "\nbuilt:      unknown") || errs != "" {
		t.Errorf("--version of go build: exit %d\n%s%s", code, out, errs)
	}
	if v, _, _ := run(t, "version"); v != out {
		t.Errorf("numascope version printed %q, --version %q", v, out)
	}

	root := repoRoot(t)
	git := func(args ...string) string {
		b, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v (scripts/setup installs git)", args, err)
		}
		return strings.TrimSpace(string(b))
	}
	bin := filepath.Join(t.TempDir(), "numascope")
	mk := exec.Command("make", "-s", "-C", root, "build", "BIN="+bin)
	if b, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, b)
	}
	describe, head := git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "HEAD")
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	var built time.Time
	for _, l := range strings.Split(got, "\n") {
		if v, ok := strings.CutPrefix(l, "built:"); ok {
			built, _ = time.Parse(time.RFC3339, strings.TrimSpace(v))
		}
	}
	if !strings.HasPrefix(got, "numascope "+describe+"\n") || !strings.Contains(got, "\ncommit:     "+head) ||
		time.Since(built) > time.Hour || time.Since(built) < -time.Minute || !strings.Contains(got, "\ngo:         go1.") {
		t.Errorf("--version of make build:\n%s\nwant version %s, commit %s and a build date of now", got, describe, head)
	}
}

// TestMakeBuildWithoutGo: make build without Go, or with one older than
// go.mod asks for, says to install Go 1.26 or run scripts/setup, in one
// line, instead of "go: not found".
func TestMakeBuildWithoutGo(t *testing.T) {
	root := repoRoot(t)
	old := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho go1.19.8\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, gobin := range []string{filepath.Join(t.TempDir(), "no-such-go"), old} {
		cmd := exec.Command("make", "-s", "-C", root, "build", "GO="+gobin, "BIN="+filepath.Join(t.TempDir(), "numascope"))
		out, err := cmd.CombinedOutput()
		first := strings.SplitN(string(out), "\n", 2)[0]
		if err == nil || !strings.Contains(first, "Go 1.26") || !strings.Contains(first, "scripts/setup") || strings.Contains(string(out), "not found") {
			t.Errorf("make build GO=%s: %v\n%s\nwant a line naming Go 1.26 and scripts/setup", gobin, err, out)
		}
	}
}

// nobodyBinary is a copy of numascope that nobody can run, in a directory
// nobody can reach, and a directory in it that belongs to nobody.
func nobodyBinary(t *testing.T) (bin, home string) {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(tmp, "numascope")
	src, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(tmp, "nobody")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return bin, home
}

// startStat starts a sampling numascope stat (as cred, when set) and
// waits until it has printed its first line; the returned function reads
// what it printed so far.
func startStat(t *testing.T, bin string, env []string, cred *syscall.Credential, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"stat", "-i", "100ms", "-n", "300", "-e", "numa_hit"}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	outPath := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = f, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	printed := func() string { b, _ := os.ReadFile(outPath); return string(b) }
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(printed(), "\n"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v printed nothing in 20 s", cmd.Args)
		}
	}
	return cmd, printed
}

// TestCtlNamesTheInstance: numascope ctl says which numascope took the
// command: its PID and command line.
func TestCtlNamesTheInstance(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ctl")
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	stat, _ := startStat(t, binary, env, nil, "--ctl", fifo)
	out, errs, code := run(t, "ctl", "--ctl", fifo, "label", "phase 2")
	want := fmt.Sprintf("sent \"label phase 2\" to PID %d (", stat.Process.Pid)
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, binary+" stat -i 100ms -n 300 -e numa_hit --ctl "+fifo+", on "+fifo+"\n") {
		t.Errorf("ctl: exit %d, stdout %q, stderr %q; want %s... naming the stat's command line", code, out, errs, want)
	}
}

// TestCtlRefusesAnotherUsersNumascope: a numascope run by a real second
// user (nobody) gets no command from root's numascope ctl, however it is
// pointed at its FIFO: ctl refuses the FIFO, and nobody's stat shows no
// label.
func TestCtlRefusesAnotherUsersNumascope(t *testing.T) {
	testutil.RequireRoot(t, "to run numascope as nobody")
	bin, home := nobodyBinary(t)
	fifo := filepath.Join(home, "ctl")
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+home, "HOME="+home)
	_, printed := startStat(t, bin, env, &syscall.Credential{Uid: nobody, Gid: nobody}, "--ctl", fifo)
	out, errs, code := run(t, "ctl", "--ctl", fifo, "label", "injected")
	if code == 0 || !strings.Contains(errs, "owned by uid 65534, not by you") || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(out, "sent") {
		t.Errorf("root's ctl to nobody's numascope: exit %d, stdout %q, stderr %q; want a one-line refusal", code, out, errs)
	}
	time.Sleep(500 * time.Millisecond) // a label would be printed at the next sample
	if got := printed(); strings.Contains(got, "injected") {
		t.Errorf("nobody's stat received the label:\n%s", got)
	}
}

// TestFIFONoticeOnlyWhenAsked: with another numascope holding the default
// control FIFO, stat and record without --ctl say nothing about it; with
// --ctl naming that FIFO, the user asked for it and is told. The user is
// nobody (as root), with a private XDG_RUNTIME_DIR, so that the default
// FIFO is this test's alone.
func TestFIFONoticeOnlyWhenAsked(t *testing.T) {
	bin, home := binary, t.TempDir()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		bin, home = nobodyBinary(t)
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	env := append(os.Environ(), "XDG_RUNTIME_DIR="+home, "HOME="+home)
	startStat(t, bin, env, cred)
	fifo := filepath.Join(home, "numascope-ctl")
	if fi, err := os.Stat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the first stat holds no default FIFO at %s: %v", fifo, err)
	}
	as := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, home
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return testutil.Run(t, cmd)
	}
	for _, args := range [][]string{
		{"stat", "-i", "50ms", "-n", "2", "-e", "numa_hit"},
		{"record", "-i", "50ms", "-n", "2", "-e", "numa_hit", "-o", filepath.Join(home, "r.jsonl")},
	} {
		if _, errs, code := as(args...); code != 0 || strings.Contains(errs, "control FIFO") || strings.Contains(errs, "--ctl") {
			t.Errorf("%v beside another numascope: exit %d, stderr %q; want nothing about the control FIFO", args, code, errs)
		}
	}
	_, errs, code := as("stat", "-i", "50ms", "-n", "2", "-e", "numa_hit", "--ctl", fifo)
	if code == 0 || !strings.Contains(errs, "--ctl: another numascope is already listening on "+fifo) {
		t.Errorf("stat --ctl on a FIFO in use: exit %d, stderr %q; want it said", code, errs)
	}
}

// TestReportOnARecording: report given a recording, as the Quickstart's
// reader might, says what the file is and what to run instead.
func TestReportOnARecording(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "run.jsonl.zst")
	if _, errs, code := run(t, "record", "-i", "50ms", "-n", "2", "-e", "numa_hit", "-o", rec); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	_, errs, code := run(t, "report", rec)
	want := "numascope: " + rec + " is a recording, not a profile: use numascope view " + rec + " or numascope convert " + rec + "\n"
	if code == 0 || errs != want {
		t.Errorf("report on a recording: exit %d, stderr %q; want %q", code, errs, want)
	}
}

// TestStatHeadingUnits: on a terminal, stat's headings have a second line
// with each column's unit (a counter's rate per second, a gauge's level, %
// for CPU time); piped and in CSV the first line stays the column names
// that scripts read.
func TestStatHeadingUnits(t *testing.T) {
	tm := testutil.StartTmux(t, 80, 24, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, binary, "stat", "-i", "100ms", "-n", "100", "-e", "vmstat.numa_hit,node.MemFree,cpu.idle")
	sample := regexp.MustCompile(`(?m)^ +0\.[0-9]{3} `)
	screen := tm.WaitFor("two samples", func(s string) bool { return len(sample.FindAllString(s, -1)) >= 2 })
	lines := strings.Split(screen, "\n")
	ok := false
	for i := 0; i+1 < len(lines); i++ {
		if strings.Join(strings.Fields(lines[i]), " ") == "time numa_hit MemFree idle" {
			ok = strings.Join(strings.Fields(lines[i+1]), " ") == "s pages/s bytes %"
			break
		}
	}
	if !ok {
		t.Errorf("no units line under the headings:\n%s", screen)
	}
	out, errs, code := run(t, "stat", "--csv", "-i", "100ms", "-n", "1", "-e", "vmstat.numa_hit,node.MemFree,cpu.idle")
	if first := strings.SplitN(out, "\n", 2)[0]; code != 0 || first != "time_s,vmstat.numa_hit,node.MemFree,cpu.idle" {
		t.Errorf("stat --csv: exit %d, first line %q: %s", code, first, errs)
	}
}
