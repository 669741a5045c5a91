package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
)

// startServing starts numascope ARGS, a server, and returns the URL it
// prints on stdout (the first http:// URL) and its stderr so far. The
// server gets SIGTERM at the end of the test and must exit 0.
func startServing(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("numascope %v: %v after SIGTERM; stderr %s", args, err, errb.String())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("numascope %v did not stop on SIGTERM", args)
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			if m := regexp.MustCompile(`http://\S+`).FindString(sc.Text()); m != "" && !found {
				found = true
				urls <- m
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("numascope %v printed no URL in 30 s; stderr %s", args, errb.String())
	}
	return ""
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Get(t, req)
}

// TestLiveMetricsWithoutToken: live serves the exporter's /metrics on its
// port without the token, while its websocket still refuses a client
// without it.
func TestLiveMetricsWithoutToken(t *testing.T) {
	u := startServing(t, "live", "--listen", "127.0.0.1:0")
	base, token, ok := strings.Cut(u, "/?token=")
	if !ok || token == "" {
		t.Fatalf("live printed %q, want a URL with a token", u)
	}
	code, body := httpGet(t, base+"/metrics")
	if code != 200 || !strings.Contains(body, "# TYPE numascope_node_memory_free_bytes gauge") ||
		!strings.Contains(body, `numascope_node_memory_free_bytes{numa_node="0"}`) {
		t.Errorf("live's /metrics without a token: HTTP %d\n%.500s", code, body)
	}
	if code, _ := httpGet(t, base+"/ws"); code != http.StatusUnauthorized {
		t.Errorf("live's /ws without a token: HTTP %d, want 401", code)
	}
	if code, _ := httpGet(t, base+"/ws?token="+token); code == http.StatusUnauthorized {
		t.Errorf("live's /ws with its token: 401") // not a websocket handshake, but past the token
	}
}

// TestExporterCommand runs numascope exporter on a free port and scrapes
// it; with -e perf events, they are there per node (per CPU with
// --perf-per-cpu).
func TestExporterCommand(t *testing.T) {
	u := startServing(t, "exporter", "--listen", "127.0.0.1:0")
	if !strings.HasSuffix(u, "/metrics") {
		t.Fatalf("exporter printed %q", u)
	}
	code, body := httpGet(t, u)
	if code != 200 || !strings.Contains(body, "# TYPE numascope_vmstat_numa_hit_total counter") {
		t.Errorf("exporter's /metrics: HTTP %d\n%.500s", code, body)
	}
	if _, errs, rc := run(t, "stat", "-n", "1", "-i", "10ms", "-e", "perf.page-faults"); rc != 0 {
		testutil.NotPermitted(t, "perf.page-faults cannot be counted: %s", errs)
	}
	for _, c := range []struct {
		flags []string
		label string
	}{{nil, `numascope_perf_page_faults_total{numa_node="0"}`}, {[]string{"--perf-per-cpu"}, `numascope_perf_page_faults_total{cpu="0"}`}} {
		args := append(append([]string{"exporter"}, c.flags...), "--listen", "127.0.0.1:0", "-e", "perf.page-faults")
		code, body := httpGet(t, startServing(t, args...))
		if code != 200 || !strings.Contains(body, c.label) {
			t.Errorf("numascope %v: HTTP %d, no %s in\n%.300s", args, code, c.label, body)
		}
	}
}
