package experiment

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// execRunner runs each command for real (its exit status and wall time are
// real) and writes a recording with recording.Writer in place of a sampling
// session, which the command line supplies (and the end-to-end test runs).
// cancelAt cancels the experiment when that many runs have been asked for.
type execRunner struct {
	t        *testing.T
	calls    []int
	cancelAt int
	cancel   context.CancelFunc
}

func (r *execRunner) Run(ctx context.Context, req RunRequest) (Outcome, error) {
	r.calls = append(r.calls, req.ID)
	if r.cancelAt > 0 && len(r.calls) == r.cancelAt {
		r.cancel()
		return Outcome{}, ctx.Err()
	}
	out := Outcome{Start: time.Now()}
	c := exec.Command(req.Argv[0], req.Argv[1:]...)
	err := c.Run()
	out.Wall = time.Since(out.Start)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		out.ExitStatus = ee.ExitCode()
	} else if err != nil {
		return out, err
	}
	writeRecording(r.t, req.Recording, float64(req.ID+1))
	return out, nil
}

func testSpec(t *testing.T, dir, extra string) *Spec {
	t.Helper()
	text := "command = \"test {x} -gt 0 && exit {code}\"\nreplications = 2\nwarmup = 1\nseed = 3\n" + extra +
		"responses = [\"wall_time\", \"total:node.numa_hit\", \"total:node.2.numa_hit\", \"rate:vmstat.numa_hint_faults\"]\n" +
		"[[factor]]\nname = \"x\"\nlevels = [1, 2]\n[[factor]]\nname = \"code\"\nlevels = [\"0\", \"00\"]\n"
	path := filepath.Join(dir, "exp.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInterruptAndResume interrupts an experiment during its fourth run,
// resumes it, and checks that every run of the plan is in the results
// exactly once, with the interrupted run done again.
func TestInterruptAndResume(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec(t, dir, "")
	plan := allRuns(spec.Plan())
	if len(plan) != 9 {
		t.Fatalf("%d runs planned", len(plan))
	}
	rf, err := OpenResults(spec.Results, spec, len(plan))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r1 := &execRunner{t: t, cancelAt: 4, cancel: cancel}
	var progress bytes.Buffer
	err = Execute(ctx, spec, rf, r1, Options{Self: "/bin/false", Progress: &progress})
	rf.Close()
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Execute: %v, want ErrInterrupted", err)
	}
	if !strings.Contains(progress.String(), "[3/9] run 2 ") || !strings.Contains(progress.String(), "6 left, ETA ") {
		t.Errorf("progress:\n%s", progress.String())
	}
	_, results, err := LoadResults(spec.Results)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results after the interruption, want 3", len(results))
	}

	// A crash while writing a line leaves half a line: it is dropped and
	// that run happens again.
	f, err := os.OpenFile(spec.Results, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"run","run":3,"rep":1,"lev`)
	f.Close()

	rf, err = OpenResults(spec.Results, spec, len(plan))
	if err != nil {
		t.Fatal(err)
	}
	if !rf.Repaired || len(rf.Done) != 3 {
		t.Fatalf("repaired %v, %d done", rf.Repaired, len(rf.Done))
	}
	progress.Reset()
	r2 := &execRunner{t: t}
	if err := Execute(context.Background(), spec, rf, r2, Options{Self: "/bin/false", Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	rf.Close()
	if !strings.Contains(progress.String(), "resuming: 3 of 9 runs already done, 6 left") {
		t.Errorf("progress:\n%s", progress.String())
	}
	if got := strconv.Itoa(len(r2.calls)); got != "6" || r2.calls[0] != 3 {
		t.Errorf("the resumed experiment ran %v, want runs 3 to 8", r2.calls)
	}
	hdr, results, err := LoadResults(spec.Results)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Runs != 9 || hdr.SpecHash != spec.Hash || len(results) != 9 {
		t.Fatalf("header %+v, %d results", hdr, len(results))
	}
	for i, r := range results {
		p := plan[i]
		if r.Run != i || r.Warmup != p.Warmup || r.Rep != p.Rep || r.Levels["x"] != p.Levels["x"] || r.ExitStatus != 0 {
			t.Errorf("result %d: %+v, plan %+v", i, r, p)
		}
		// The runner scales the recording's rates by run ID + 1.
		want := 2400 * float64(i+1)
		if v := r.Responses["total:node.numa_hit"]; v == nil || *v != want {
			t.Errorf("run %d: total:node.numa_hit = %v, want %v", i, v, want)
		}
		if v := r.Responses["total:node.2.numa_hit"]; v == nil || *v != 2000*float64(i+1) {
			t.Errorf("run %d: total:node.2.numa_hit = %v", i, v)
		}
		if r.Events["node.numa_hit"].Distribution.MaxNode != "2" {
			t.Errorf("run %d: max node %+v", i, r.Events["node.numa_hit"].Distribution)
		}
	}

	// Once complete, another start runs nothing.
	rf, err = OpenResults(spec.Results, spec, len(plan))
	if err != nil {
		t.Fatal(err)
	}
	r3 := &execRunner{t: t}
	if err := Execute(context.Background(), spec, rf, r3, Options{}); err != nil || len(r3.calls) != 0 {
		t.Errorf("a complete experiment ran %v (%v)", r3.calls, err)
	}
	rf.Close()

	// The analysis: 2x2 factorial with 2 replications of each response.
	a := Analyze(spec, results)
	if a.Measured != 8 || a.Warmups != 1 || a.Missing != 0 || len(a.Responses) != 4 {
		t.Fatalf("analysis %+v", a)
	}
	for _, ra := range a.Responses {
		if ra.Result == nil {
			t.Errorf("%s: %s", ra.Response, ra.Error)
		}
	}
	var md bytes.Buffer
	if err := a.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### ANOVA of total:node.numa_hit") {
		t.Errorf("markdown report:\n%s", md.String())
	}
}

func TestResultsFileErrors(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec(t, dir, "")
	rf, err := OpenResults(spec.Results, spec, 9)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenResults(spec.Results, spec, 9); err == nil || !strings.Contains(err.Error(), "in use by another numascope experiment") {
		t.Errorf("a second experiment on the same results: %v", err)
	}
	rf.Close()
	// Another spec must not resume this file.
	other := testSpec(t, dir, "interval = \"50ms\"\n")
	other.Results = spec.Results
	if _, err := OpenResults(other.Results, other, 9); err == nil || !strings.Contains(err.Error(), "different version of the spec") {
		t.Errorf("resuming with another spec: %v", err)
	}
	for name, content := range map[string]string{
		"not results": "hello\n",
		"bad middle":  `{"type":"experiment","spec_hash":"` + spec.Hash + `"}` + "\nnot json\n{\"type\":\"run\",\"run\":1}\n",
		"duplicate":   `{"type":"experiment","spec_hash":"` + spec.Hash + `"}` + "\n{\"type\":\"run\",\"run\":1}\n{\"type\":\"run\",\"run\":1}\n",
		"outside":     `{"type":"experiment","spec_hash":"` + spec.Hash + `"}` + "\n{\"type\":\"run\",\"run\":99}\n",
	} {
		p := filepath.Join(dir, name+".jsonl")
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := OpenResults(p, spec, 9); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want a one-line error", name, err)
		}
	}
}

// TestFailedRunStops: a failing command stops the experiment (unless the
// exit status is a response) and is not recorded, so a fixed command
// resumes with it.
func TestFailedRunStops(t *testing.T) {
	dir := t.TempDir()
	text := "command = \"exit {code}\"\nreplications = 1\n[[factor]]\nname = \"code\"\nlevels = [0, 3]\n"
	path := filepath.Join(dir, "fail.toml")
	os.WriteFile(path, []byte(text), 0o644)
	spec, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := OpenResults(spec.Results, spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	err = Execute(context.Background(), spec, rf, &execRunner{t: t}, Options{})
	if err == nil || !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "exit_status") {
		t.Errorf("error %v", err)
	}
	for _, r := range rf.Done {
		if r.ExitStatus != 0 {
			t.Errorf("the failed run was recorded: %+v", r)
		}
	}
}

// FuzzParseResults: no results file content makes the reader panic; what it
// accepts ends at a line boundary, and errors are one line.
func FuzzParseResults(f *testing.F) {
	hdr := `{"type":"experiment","name":"x","spec_hash":"ab","seed":1,"runs":3}` + "\n"
	f.Add(hdr)
	f.Add(hdr + `{"type":"run","run":0,"rep":1,"levels":{"a":"1"},"wall_time_s":1.5,"responses":{"wall_time":1.5}}` + "\n")
	f.Add(hdr + `{"type":"run","run":1}` + "\n" + `{"type":"run","ru`)
	f.Add(hdr + "\n\n" + `{"type":"run","run":2,"events":{"node.numa_hit":{"kind":"counter","total":3,"per_node":{"0":1,"1":2}}}}` + "\n")
	f.Fuzz(func(t *testing.T, data string) {
		_, done, good, err := ParseResults([]byte(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if good > len(data) || (good > 0 && data[good-1] != '\n') {
			t.Fatalf("complete part ends at %d, not after a newline", good)
		}
		for id, r := range done {
			if r.Run != id {
				t.Fatalf("run %d filed as %d", r.Run, id)
			}
		}
	})
}
