// Command fakelive runs the real `numascope live` server (package live) on
// a sysfs fixture with the fake process feed of package fakefeed, for the
// browser test of the processes page (web/test/processes.test.mjs): the
// page, the token, the endpoints and the shared refresh are the real ones;
// only the processes are made up. It prints the URL as numascope live does.
//
//	go build -o bin/fakelive ./internal/live/fakelive
//	bin/fakelive -root internal/sensor/testdata/twonode
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/numascope/numascope/internal/live"
	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/topology"
	"github.com/numascope/numascope/internal/web"
	"github.com/numascope/numascope/internal/web/fakefeed"
)

func main() {
	root := flag.String("root", "", "sysfs fixture to sample (required)")
	listen := flag.String("listen", "127.0.0.1:0", "HOST:PORT to serve on")
	every := flag.Duration("every", time.Second, "processes refresh interval")
	flag.Parse()
	if err := run(*root, *listen, *every); err != nil {
		fmt.Fprintln(os.Stderr, "fakelive:", err)
		os.Exit(1)
	}
}

func run(root, listen string, every time.Duration) error {
	if root == "" {
		return fmt.Errorf("-root: give a sysfs fixture, e.g. internal/sensor/testdata/twonode")
	}
	fs := sysfs.New(root)
	topo, err := topology.Discover(fs)
	if err != nil {
		return fmt.Errorf("discovering the topology of %s: %w", root, err)
	}
	cat := sampler.Open(sensor.Env{FS: fs, Topology: topo})
	defer cat.Close()
	feed := fakefeed.New()
	srv, err := live.NewLive(web.Options{
		Listen: listen, Processes: feed, ProcessesEvery: every,
		Log: func(s string) { fmt.Fprintln(os.Stderr, s) },
	}, sampling.Config{
		Catalog: cat, Events: []string{"node.numa_hit", "node.numa_miss"}, Interval: 100 * time.Millisecond,
		Header: recording.Header{Host: "fixture", Topology: topo},
	})
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		srv.Abort()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("numascope: open %s in a browser (Ctrl-C stops)\n", srv.URL())
	return srv.Run(ctx)
}
