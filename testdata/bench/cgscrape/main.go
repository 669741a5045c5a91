// Command cgscrape scrapes a /metrics endpoint as Prometheus does (Go's
// net/http client, one kept-alive connection, Prometheus's Accept and
// Accept-Encoding headers) N times, one scrape every INTERVAL, and prints
// the CPU the server process spent per scrape: the sum of
// /proc/PID/task/*/schedstat (run time in ns, every thread) over the N
// intervals, so that what the server does between scrapes (its garbage
// collector, timers) is counted too. The scraper's own CPU is not.
//
// Usage: cgscrape -url URL -pid PID [-n N] [-interval D] [-want NAME]
//
// Prints one line: CPU µs per scrape, median wall µs of a scrape as the
// client saw it, bytes of the last body, and the value of the series
// -want in the last body ("-" when absent), so that a caller can check
// what was exported.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuNS is the run time of every live thread of pid (schedstat's first field).
func cpuNS(pid int) (int64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no /proc/%d/task/*/schedstat: is the server running, and the kernel built with CONFIG_SCHED_INFO?", pid)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that exited: Go's threads do not, in practice
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		sum += ns
	}
	return sum, nil
}

func main() {
	url := flag.String("url", "", "the /metrics URL")
	pid := flag.Int("pid", 0, "the server's process ID")
	n := flag.Int("n", 10, "scrapes")
	interval := flag.Duration("interval", time.Second, "one scrape starts every interval (or right after the last one, if that took longer)")
	want := flag.String("want", "numascope_cgroups", "a series without labels whose value in the last body is printed")
	flag.Parse()
	if *url == "" || *pid <= 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: cgscrape -url URL -pid PID [-n N] [-interval D] [-want NAME]")
		os.Exit(2)
	}
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}}
	var body bytes.Buffer
	scrape := func() time.Duration {
		req, _ := http.NewRequest("GET", *url, nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("User-Agent", "Prometheus/2.42.0")
		t := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cgscrape: %v\n", err)
			os.Exit(1)
		}
		body.Reset()
		_, err = io.Copy(&body, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			fmt.Fprintf(os.Stderr, "cgscrape: %s: HTTP %d, %v\n", *url, resp.StatusCode, err)
			os.Exit(1)
		}
		return time.Since(t)
	}
	scrape() // the connection open, the server warmed up
	c0, err := cpuNS(*pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cgscrape:", err)
		os.Exit(1)
	}
	walls := make([]time.Duration, 0, *n)
	next := time.Now()
	for i := 0; i < *n; i++ {
		walls = append(walls, scrape())
		next = next.Add(*interval)
		time.Sleep(time.Until(next))
	}
	c1, err := cpuNS(*pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cgscrape:", err)
		os.Exit(1)
	}
	slices.Sort(walls)
	val := "-"
	sc := bufio.NewScanner(bytes.NewReader(body.Bytes()))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), *want+" "); ok {
			val = v
		}
	}
	fmt.Printf("%.1f %.0f %d %s\n", float64(c1-c0)/1e3/float64(*n), float64(walls[len(walls)/2].Microseconds()), body.Len(), val)
}
