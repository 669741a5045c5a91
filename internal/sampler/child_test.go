package sampler

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tests that look at a whole process (its threads' wake-ups, their CPU
// affinity) run a sampler in a child: the test binary itself, started with
// childEnv set, which TestMain turns into a sampler that runs until killed.
const childEnv = "NUMASCOPE_SAMPLER_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(strings.Fields(spec)))
	}
	os.Exit(m.Run())
}

// runChild samples step.hits as args say (KIND INTERVAL [PINCPU]), draining
// a sink as a consumer would, and prints "ready" once sampling runs.
func runChild(args []string) int {
	iv, err := time.ParseDuration(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := Config{Interval: iv, Errors: func(err error) { fmt.Fprintln(os.Stderr, err) },
		Notices: func(m string) { fmt.Fprintln(os.Stderr, m) }}
	if len(args) > 2 {
		c, err := strconv.Atoi(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		cfg.PinCPUs = []int{c}
	}
	c, _ := newStepCatalog()
	cols, _ := c.Select([]string{"step.hits"}, false)
	s, err := New(cols, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k := s.AddSink("child", 64)
	go func() {
		for r := range k.Records() {
			k.Release(r)
		}
	}()
	go func() {
		for s.tid.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		fmt.Println("ready")
	}()
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts a child sampler (see runChild) and returns its PID once
// it samples; the child is killed when the test ends.
func startChild(t *testing.T, args ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(args, " "))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line == "ready\n"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("child sampler %v did not start", args)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("child sampler %v did not start within 10 s", args)
	}
	return cmd.Process.Pid
}
