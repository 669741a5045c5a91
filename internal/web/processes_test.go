package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/numascope/numascope/internal/testutil"
	"github.com/numascope/numascope/internal/top"
	"github.com/numascope/numascope/internal/web/fakefeed"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startProcesses runs a server with the fake feed and token "tok".
func startProcesses(t *testing.T, opt Options) (*Report, *fakefeed.Feed, *fakeClock) {
	t.Helper()
	feed := fakefeed.New()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	opt.Token = "tok"
	opt.Processes = feed
	opt.ProcessesEvery = time.Second
	opt.clock = clock.now
	l := startServer(t, opt)
	return l, feed, clock
}

// get fetches path (with its query) from the server; tok "" sends none.
func get(t *testing.T, c *http.Client, s *Server, path, tok string) (int, []byte) {
	t.Helper()
	u := "http://" + s.Addr().String() + path
	if tok != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "token=" + tok
	}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

type answer struct {
	Available      bool      `json:"available"`
	Reason         string    `json:"reason"`
	Error          string    `json:"error"`
	Sort           string    `json:"sort"`
	SortNote       string    `json:"sort_note"`
	KThreads       bool      `json:"kernel_threads"`
	KThreadsHidden int       `json:"kernel_threads_hidden"`
	Order          string    `json:"order"`
	Total          int       `json:"total"`
	Matched        int       `json:"matched"`
	Frame          top.Frame `json:"frame"`
	Next           int64     `json:"refresh_in_ms"`
}

func decode[T any](t *testing.T, code int, b []byte) T {
	t.Helper()
	var v T
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, b)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

func pids(a answer) string {
	var s []string
	for _, p := range a.Frame.Processes {
		s = append(s, fmt.Sprint(p.PID))
	}
	return strings.Join(s, ",")
}

// TestProcessesNeedToken: the processes table shows other users'
// commands, so both endpoints want the token like the stream does (not
// like /metrics), and a request without it costs no /proc walk.
func TestProcessesNeedToken(t *testing.T) {
	l, feed, _ := startProcesses(t, Options{})
	c := &http.Client{}
	for _, path := range []string{"/api/processes", "/api/processes?sort=cpu", "/api/processes/detail?pid=4242"} {
		for _, tok := range []string{"", "wrong"} {
			code, b := get(t, c, l.Server, path, tok)
			if code != http.StatusUnauthorized || !strings.Contains(string(b), "token") {
				t.Errorf("%s with token %q: HTTP %d %s, want 401 naming the token", path, tok, code, b)
			}
		}
	}
	if n, d := feed.Refreshes(), feed.Details(); n != 0 || d != 0 {
		t.Errorf("requests without the token made %d refreshes and %d drill-downs", n, d)
	}
	a := fetch[answer](t, c, l.Server, "/api/processes?kthreads=1")
	if !a.Available || len(a.Frame.Processes) != 4 {
		t.Fatalf("with the token: %+v", a)
	}
	// The page sends the token as "Authorization: Bearer"; a cookie holding
	// it is refused (issue 28: cookies reach every port of the host).
	if code, b := get(t, &http.Client{Transport: bearer("tok")}, l.Server, "/api/processes/detail?pid=4242", ""); code != http.StatusOK {
		t.Errorf("detail with Authorization: Bearer: HTTP %d %s", code, b)
	}
	for _, h := range []string{"Bearer wrong", "tok", "Basic tok"} {
		req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/api/processes/detail?pid=4242", nil)
		req.Header.Set("Authorization", h)
		if code := do(t, req); code != http.StatusUnauthorized {
			t.Errorf("detail with Authorization: %s: HTTP %d, want 401", h, code)
		}
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/api/processes/detail?pid=4242", nil)
	req.AddCookie(&http.Cookie{Name: "numascope-token-" + port, Value: "tok"})
	if code := do(t, req); code != http.StatusUnauthorized {
		t.Errorf("detail with the token in a cookie: HTTP %d, want 401", code)
	}
	if d := feed.Details(); d != 1 {
		t.Errorf("%d drill-downs; only the one with the token may read the process", d)
	}
}

// bearer is a transport that sends the token as the page does.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// do sends req and returns the status.
func do(t *testing.T, req *http.Request) int {
	t.Helper()
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r.StatusCode
}

// fetch GETs path with the token and decodes the 200 answer.
func fetch[T any](t *testing.T, c *http.Client, s *Server, path string) T {
	t.Helper()
	code, b := get(t, c, s, path, "tok")
	return decode[T](t, code, b)
}

// TestProcessesValidateInputs: sort, order, filter, limit and pid are
// checked, and each refusal says what to give.
func TestProcessesValidateInputs(t *testing.T) {
	l, feed, _ := startProcesses(t, Options{})
	c := &http.Client{}
	long := strings.Repeat("a", MaxProcessFilter+1)
	for _, tc := range []struct{ q, want string }{
		{"sort=bogus", "give one of remote, local, cpu, memory, migrated, pid"},
		{"sort=" + url.QueryEscape("<script>"), "give one of"},
		{"order=up", "give asc or desc"},
		{"filter=" + long, "the limit is 64"},
		{"limit=0", "from 1 to 1000"},
		{"limit=1001", "from 1 to 1000"},
		{"limit=x", "from 1 to 1000"},
	} {
		code, b := get(t, c, l.Server, "/api/processes?"+tc.q, "tok")
		if code != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: HTTP %d %s, want 400 with %q", tc.q, code, b, tc.want)
		}
	}
	for _, pid := range []string{"", "0", "-1", "abc", "1e3", "0x10", "4194305", "99999999", "12%2034", "%2B5"} {
		code, b := get(t, c, l.Server, "/api/processes/detail?pid="+pid, "tok")
		if code != http.StatusBadRequest || !strings.Contains(string(b), "pid=") {
			t.Errorf("pid=%s: HTTP %d %s, want 400", pid, code, b)
		}
	}
	if n := feed.Details(); n != 0 {
		t.Errorf("invalid PIDs reached the feed %d times", n)
	}
	if code, b := get(t, c, l.Server, "/api/processes/detail?pid=31337", "tok"); code != http.StatusNotFound || !strings.Contains(string(b), "process 31337 is gone") {
		t.Errorf("a gone process: HTTP %d %s, want 404 with the feed's error", code, b)
	}
	resp, err := c.Post("http://"+l.Addr().String()+"/api/processes?token=tok", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: HTTP %d, want 405", resp.StatusCode)
	}
}

// TestProcessesSortFilterLimit: each request orders, filters and cuts its
// own copy of the shared frame; unknown fault rates sort last, not as 0.
func TestProcessesSortFilterLimit(t *testing.T) {
	l, feed, _ := startProcesses(t, Options{})
	c := &http.Client{}
	for _, tc := range []struct{ q, want string }{
		{"", "4242,77,666"},             // the kernel thread (PID 5) hidden
		{"kthreads=1", "4242,77,666,5"}, // remote: PID 5 has no fault source
		{"kthreads=1&sort=remote&order=asc", "666,77,4242,5"},
		{"kthreads=1&sort=local", "77,4242,666,5"},
		{"kthreads=1&sort=cpu", "4242,77,666,5"},
		{"kthreads=1&sort=memory", "4242,77,666,5"},
		{"kthreads=1&sort=pid", "5,77,666,4242"},
		{"sort=pid", "77,666,4242"},
		{"kthreads=1&sort=pid&order=desc", "4242,666,77,5"},
		{"kthreads=1&sort=migrated", "4242,77,666,5"}, // unknown last, then by CPU%
		{"filter=post", "77"},
		{"filter=666", "666"},
		{"filter=IMG", "666"}, // case folded
		{"filter=nothing", ""},
		{"kthreads=1&sort=pid&limit=2", "5,77"},
	} {
		a := fetch[answer](t, c, l.Server, "/api/processes?"+tc.q)
		if got := pids(a); got != tc.want {
			t.Errorf("%s: PIDs %s, want %s", tc.q, got, tc.want)
		}
		if a.Total != 4 {
			t.Errorf("%s: total %d, want 4", tc.q, a.Total)
		}
		hidden := 1
		if strings.Contains(tc.q, "kthreads=1") || strings.HasPrefix(tc.q, "filter=") {
			hidden = 0
		}
		if a.KThreads != strings.Contains(tc.q, "kthreads=1") || a.KThreadsHidden != hidden || a.SortNote != "" {
			t.Errorf("%s: kernel_threads %v, %d hidden (want %d), sort_note %q", tc.q, a.KThreads, a.KThreadsHidden, hidden, a.SortNote)
		}
	}
	a := fetch[answer](t, c, l.Server, "/api/processes?sort=pid&limit=2&kthreads=1")
	if a.Matched != 4 || a.Sort != "pid" || a.Order != "asc" || len(a.Frame.Nodes) != 2 || a.Frame.Source.Faults == "" {
		t.Errorf("answer %+v", a)
	}
	// The feed's own order follows the last request (its numa_maps go to
	// the top rows of it); its filter stays empty, so no client hides rows
	// from another.
	if feed.Filter() != "" {
		t.Errorf("the feed's filter was set to %q", feed.Filter())
	}
}

// TestProcessesSharedRefresh: many clients polling at once cost one
// Refresh per interval; the drill-down of one process is read once per
// interval too; the feed is never called concurrently.
func TestProcessesSharedRefresh(t *testing.T) {
	l, feed, clock := startProcesses(t, Options{})
	feed.Delay = 20 * time.Millisecond
	clients := []*http.Client{{}, {Transport: bearer("tok")}}
	burst := func(path string) []answer {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var out []answer
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := clients[i%2]
				tok := "tok"
				if c.Transport != nil {
					tok = "" // the Authorization header
				}
				code, b := get(t, c, l.Server, path, tok)
				if code != http.StatusOK {
					t.Errorf("HTTP %d %s", code, b)
					return
				}
				var a answer
				if err := json.Unmarshal(b, &a); err != nil {
					t.Error(err)
				}
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return out
	}
	for round := 1; round <= 3; round++ {
		sorts := []string{"cpu", "pid", "remote", "memory"}
		for _, a := range burst("/api/processes?sort=" + sorts[round]) {
			if a.Frame.Time.Unix() != 1_800_000_000+int64(round) {
				t.Errorf("round %d: a client got frame %v", round, a.Frame.Time)
			}
		}
		if n := feed.Refreshes(); n != round {
			t.Fatalf("round %d: %d refreshes for 16 requests of 2 clients, want %d (one per interval)", round, n, round)
		}
		// Within the interval, no more.
		clock.add(999 * time.Millisecond)
		burst("/api/processes")
		if n := feed.Refreshes(); n != round {
			t.Fatalf("round %d: %d refreshes before the interval ended", round, n)
		}
		clock.add(time.Millisecond)
	}
	// The feed's own order is that of the request that refreshed last.
	if feed.Sort() != top.SortMemory {
		t.Errorf("the feed's sort is %q: want memory, the last refreshing request's", feed.Sort())
	}
	burst("/api/processes/detail?pid=4242")
	if n := feed.Details(); n != 1 {
		t.Errorf("16 drill-downs of one process within an interval read it %d times, want 1", n)
	}
	clock.add(time.Second)
	burst("/api/processes/detail?pid=4242")
	if n := feed.Details(); n != 2 {
		t.Errorf("drill-downs after the interval: %d reads, want 2", n)
	}
	if feed.Concurrent() {
		t.Error("the server called the feed concurrently")
	}
}

// TestProcessesWithoutFeed: a server without a feed answers that there is
// none, and why, for the page to say.
func TestProcessesWithoutFeed(t *testing.T) {
	l := startServer(t, Options{Token: "tok", ProcessesReason: "no process table: not built"})
	c := &http.Client{}
	a := fetch[answer](t, c, l.Server, "/api/processes")
	if a.Available || a.Reason != "no process table: not built" {
		t.Errorf("answer %+v", a)
	}
	if code, _ := get(t, c, l.Server, "/api/processes", ""); code != http.StatusUnauthorized {
		t.Errorf("without a feed and a token: HTTP %d, want 401", code)
	}
}

// TestProcessesRefreshError: a failed refresh is said, with the previous
// frame kept (none before the first), and the next interval tries again.
func TestProcessesRefreshError(t *testing.T) {
	l, feed, clock := startProcesses(t, Options{})
	c := &http.Client{}
	feed.Fail(errors.New("reading /proc: permission denied"))
	a := fetch[answer](t, c, l.Server, "/api/processes")
	if !a.Available || a.Error != "reading /proc: permission denied" || a.Total != 0 || len(a.Frame.Processes) != 0 {
		t.Errorf("first refresh failed: %+v", a)
	}
	feed.Fail(nil)
	clock.add(time.Second)
	a = fetch[answer](t, c, l.Server, "/api/processes")
	if a.Error != "" || a.Total != 4 {
		t.Errorf("after the failure: %+v", a)
	}
	feed.Fail(errors.New("gone wrong"))
	clock.add(time.Second)
	a = fetch[answer](t, c, l.Server, "/api/processes")
	if a.Error != "gone wrong" || a.Total != 4 || a.Frame.Time.Unix() != 1_800_000_002 {
		t.Errorf("a failure after a frame keeps it: %+v", a)
	}
}

// TestProcessesDetail: the drill-down carries threads, areas and the hint.
func TestProcessesDetail(t *testing.T) {
	l, _, _ := startProcesses(t, Options{})
	d := fetch[top.Detail](t, &http.Client{}, l.Server, "/api/processes/detail?pid=4242")
	if d.PID != 4242 || len(d.Threads) != 4 || len(d.Areas) != 3 || !strings.Contains(d.Hint, "node 0") {
		t.Errorf("detail %+v", d)
	}
	// The memory per node by numastat's categories, under the keys docs/top.md names.
	raw := fetch[map[string]json.RawMessage](t, &http.Client{}, l.Server, "/api/processes/detail?pid=4242")
	var cats map[string]map[string]uint64
	if err := json.Unmarshal(raw["memory_bytes_by_category"], &cats); err != nil || len(cats) != 4 ||
		cats["heap"]["0"] != 43<<20 || cats["private"]["1"] != 205<<20 || cats["huge"] == nil || cats["stack"] == nil {
		t.Errorf("memory_bytes_by_category %s (%v)", raw["memory_bytes_by_category"], err)
	}
	if !strings.Contains(string(raw["memory_bytes_by_node"]), `"1":`) {
		t.Errorf("memory_bytes_by_node %s", raw["memory_bytes_by_node"])
	}
}

// FuzzParsePID: whatever pid= holds, an accepted PID is in the kernel's
// range and is what the text says.
func FuzzParsePID(f *testing.F) {
	for _, s := range []string{"1", "4194304", "4194305", "007", "-1", "", "1e3", " 1", "१२"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parsePID(s)
		if err != nil {
			return
		}
		if n < 1 || n > maxPID || strings.TrimLeft(s, "0") != fmt.Sprint(n) {
			t.Fatalf("parsePID(%q) = %d", s, n)
		}
	})
}

// TestProcessesStalledClients: token holders that pipeline requests for the
// process table and never read the answers fill their sockets and hold the
// answer slots; the write timeout frees them, and an honest request is
// answered again within a few seconds, not 503 for ever.
func TestProcessesStalledClients(t *testing.T) {
	const slots = 2
	l, feed, _ := startProcesses(t, Options{MaxClients: slots, WriteTimeout: 500 * time.Millisecond, SendBuffer: 4096})
	feed.AddIdle(1000) // answers of 1000 rows: larger than net/http's buffer, so the handler writes them
	addr := l.Server.Addr().String()
	testutil.StallReaders(t, addr, "GET /api/processes?limit=1000&token=tok HTTP/1.1\r\nHost: x\r\n\r\n", 2*slots)
	time.Sleep(300 * time.Millisecond) // the stalled answers fill the slots
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, b := get(t, &http.Client{}, l.Server, "/api/processes", "tok")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/processes still answers %d 5 s after %d clients stopped reading (write timeout 500 ms): %s", code, 2*slots, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestProcessesDeadlineEndsWithTheAnswer: the write deadline of a processes
// answer ends with it (net/http clears it once the response is written),
// so a browser's kept-alive connection serves its next request, the page
// or a drill-down, later on.
func TestProcessesDeadlineEndsWithTheAnswer(t *testing.T) {
	l, _, _ := startProcesses(t, Options{WriteTimeout: 200 * time.Millisecond})
	c := &http.Client{} // one kept-alive connection for all three requests
	var conns int
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			conns++
		}
	}}
	for _, path := range []string{"/api/processes?token=tok", "/?token=tok", "/api/processes/detail?pid=4242&token=tok"} {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+l.Server.Addr().String()+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d, %v", path, resp.StatusCode, err)
		}
		time.Sleep(400 * time.Millisecond) // past the write timeout
	}
	if conns != 1 {
		t.Errorf("%d connections for 3 requests: the test wants one kept alive", conns)
	}
}

// TestProcessesSortFallback: where no process has the figure asked for
// (no fault source here), the rows are by CPU%, the answer's sort says so
// and sort_note says why, rather than a column of "-" in PID order with
// the kernel threads first (issue 31).
func TestProcessesSortFallback(t *testing.T) {
	l, feed, clock := startProcesses(t, Options{})
	feed.NoFaults()
	c := &http.Client{}
	fetch[answer](t, c, l.Server, "/api/processes") // the first frame: no rates
	clock.add(time.Second)
	for _, q := range []string{"", "sort=remote", "sort=local", "sort=migrated"} {
		a := fetch[answer](t, c, l.Server, "/api/processes?kthreads=1&"+q)
		if a.Sort != "cpu" || !strings.Contains(a.SortNote, "measured here") || !strings.HasSuffix(a.SortNote, ": sorted by cpu") {
			t.Errorf("%s: sort %q, note %q; want cpu and why", q, a.Sort, a.SortNote)
		}
		if got := pids(a); got != "4242,77,666,5" {
			t.Errorf("%s: PIDs %s, want by CPU%%: 4242,77,666,5", q, got)
		}
	}
	if a := fetch[answer](t, c, l.Server, "/api/processes?sort=memory"); a.Sort != "memory" || a.SortNote != "" {
		t.Errorf("sort=memory: sort %q, note %q", a.Sort, a.SortNote)
	}
	if code, b := get(t, c, l.Server, "/api/processes?kthreads=yes", "tok"); code != http.StatusBadRequest || !strings.Contains(string(b), "give 1 to show the kernel threads") {
		t.Errorf("kthreads=yes: HTTP %d %s", code, b)
	}
}
