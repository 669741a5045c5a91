package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reStatSummary reads stat's summary line.
var reStatSummary = regexp.MustCompile(`(\d+) samples, \d+ missed deadlines, (\d+) dropped by the terminal`)

// TestStatDroppedIsWhatNeverCameOut is the fidelity check of the samples
// stat reports dropped (docs/fidelity.md): stat at 10 ms with every vmstat
// event (lines of some kilobytes) into a pipe that the test leaves unread
// for 7 s, so that the pipe and then the terminal's queue (2 s of samples)
// fill and sampling goes on, then reads to the end. Every sample is either
// a line that came out of the pipe, counted by the test, or one the
// summary counts as dropped: the two must add up to the samples taken,
// exactly. A sample dropped and not counted, or counted and written, fails.
func TestStatDroppedIsWhatNeverCameOut(t *testing.T) {
	const n = 1000
	cmd := exec.Command(binary, "stat", "-i", "10ms", "-n", strconv.Itoa(n), "-e", "vmstat.*")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(7 * time.Second)
	lines := 0
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("numascope stat: %v: %s", err, errb.String())
	}
	m := reStatSummary.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no summary line: %s", errb.String())
	}
	samples, _ := strconv.Atoi(m[1])
	dropped, _ := strconv.Atoi(m[2])
	written := lines - 1 // the heading
	t.Logf("%d samples: %d lines came out of the pipe, %d dropped", samples, written, dropped)
	if samples != n || written+dropped != samples {
		t.Errorf("%d samples (-n %d): %d lines came out and %d are counted dropped, %d in all", samples, n, written, dropped, written+dropped)
	}
	if dropped == 0 {
		t.Errorf("nothing dropped with the pipe unread for 7 s (%d samples written): the test did not fill the terminal's queue", written)
	}
}
