package live

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/sensor"
	"github.com/numascope/numascope/internal/sysfs"
	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/topology"
	"github.com/numascope/numascope/internal/web"
)

// TestLiveCountsKnownWork is the fidelity check of what live sends a
// browser (docs/fidelity.md): on this machine's kernel, with the syscall
// tracepoint syscalls:sys_enter_getppid as a perf event, the test makes
// exactly n getppid calls while a client reads the batches; the samples'
// rates times their intervals, summed over the batches around the work,
// must come to n. The count is the kernel's and the work is known: every
// step of live's path (the sampler's rate, the batch, its JSON, the
// websocket) is between them.
//
// Tolerance: at least n (the samples cover the work: collection starts two
// batches before it and ends once a sample without calls follows it), less what the rounding of the
// times in the batches (to the µs) can take: each sample's rate times 1 µs,
// and one call for the rates' own digits; at most 1% + 100 more,
// the getppid calls of other processes meanwhile (a shell's $PPID). The
// work runs in the live process itself, on its one P, so the sampler waits
// for it and one sample covers it all: the count is what is checked, not
// its spread over samples. A rate sent per interval instead
// of per second, a sample dropped or sent twice, a value in another
// column's place all fail.
func TestLiveCountsKnownWork(t *testing.T) {
	const getppid = "syscalls:sys_enter_getppid"
	fs := sysfs.New("")
	topo, err := topology.Discover(fs)
	if err != nil {
		t.Fatal(err)
	}
	cat := sampler.OpenWith(sensor.Env{FS: fs, Topology: topo}, sensor.Options{Perf: sensor.PerfOptions{Events: []string{getppid}}}, "perf")
	t.Cleanup(func() { cat.Close() })
	l, _ := startLive(t, web.Options{}, sampling.Config{Catalog: cat, Header: recording.Header{Topology: topo},
		Events: []string{"perf." + getppid}, Interval: 10 * time.Millisecond})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))

	var (
		mu    sync.Mutex
		rows  [][]any
		phase int // 0: before the work, then the batches after it
	)
	batches := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			b := c.Next("batch", typeIs("batch"))
			mu.Lock()
			for _, r := range b["samples"].([]any) {
				rows = append(rows, r.([]any))
			}
			p := phase
			mu.Unlock()
			batches <- struct{}{}
			if p >= 2 {
				return
			}
		}
	}()
	<-batches
	<-batches
	const n = 200000
	for range n {
		unix.Getppid()
	}
	// The samples must cover the end of the work: read on until one whose
	// interval holds no call follows those that hold the work's. (A batch
	// the client takes after the work may have been sent before its end,
	// its last sample short of it: under load, 199 508 of 200 000.)
	mu.Lock()
	phase = 1
	mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-batches:
		case <-time.After(time.Until(deadline)):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("no sample without calls followed the work's in 30 s: %v", rows)
		}
		mu.Lock()
		covered := quietAfterWork(rows)
		mu.Unlock()
		if covered {
			break
		}
	}
	mu.Lock()
	phase = 2
	mu.Unlock()
	<-done

	mu.Lock()
	defer mu.Unlock()
	var sum, slack float64
	for i := 1; i < len(rows); i++ {
		t0, t1 := rows[i-1][0].(float64), rows[i][0].(float64)
		v, ok := rows[i][1].(float64)
		if !ok {
			if rows[i][1] == nil && i == 1 {
				continue
			}
			testutil.NotPermitted(t, "perf.%s has no value in sample %d (%v): the tracepoint cannot be counted here", getppid, i, rows[i])
		}
		sum += v * (t1 - t0)
		slack += v * 1e-6 // each time to the µs: half a µs at either end
	}
	t.Logf("%d samples in the batches around the work: %.3f getppid calls counted, %d made", len(rows), sum, n)
	if sum < n-slack-1 || sum > 1.01*n+100 {
		t.Errorf("live counted %.3f getppid calls over %d samples; the test made %d (want %d to 1%% + 100 more): %v", sum, len(rows), n, n, rows)
	}
}

// quietAfterWork says whether rows (time, value) hold a sample with calls
// and, after it, one with none: an interval wholly after the work.
func quietAfterWork(rows [][]any) bool {
	busy := false
	for _, r := range rows {
		v, ok := r[1].(float64)
		switch {
		case ok && v > 0:
			busy = true
		case ok && v == 0 && busy:
			return true
		}
	}
	return false
}
