package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/numascope/numascope/internal/top"
)

// The processes page of `numascope live` (issue 18) reads a top.Feed over
// two token-checked HTTP endpoints, polled by the page while it is shown:
//
//	GET /api/processes?sort=KEY&order=desc|asc&filter=TEXT&limit=N&kthreads=0|1
//	GET /api/processes/detail?pid=PID
//
// Plain requests rather than websocket messages: the frame is fetched only
// while a page is open on it, and a poll needs no state on the server. The
// frame is shared: the first request after ProcessesEvery has passed
// refreshes it (one /proc walk per interval however many tabs poll), and
// every request sorts, filters and cuts its own copy of the row order. The
// format is in docs/live-protocol.md ("The processes page").

// Limits of the processes endpoints' inputs and answers.
const (
	// MaxProcessFilter is the longest filter accepted, in bytes: a comm
	// is at most 15 bytes and a PID 7 digits.
	MaxProcessFilter = 64
	// MaxProcessRows is the most rows one answer carries (limit=).
	MaxProcessRows = 1000
	// DefaultProcessRows is the rows an answer carries without limit=.
	DefaultProcessRows = 200
	// maxPID is the kernel's PID_MAX_LIMIT (4194304 = 2^22).
	maxPID = 1 << 22
)

// procHub shares one top.Feed among the clients of a server.
type procHub struct {
	feed  top.Feed
	every time.Duration
	now   func() time.Time // time.Now; tests set a clock
	// slots bounds the requests answered at a time: each holds a copy of
	// the row order and its encoded answer.
	slots chan struct{}

	// feedMu serialises the calls into the feed, which need not be safe
	// for concurrent use (Refresh, Detail, SetSort).
	feedMu sync.Mutex
	sorted top.SortKey // the last key given to SetSort

	// mu guards the shared frame: a refresh replaces it (the feed may
	// reuse its buffers on the next Refresh, so no reader may still hold
	// it then); requests read it under RLock.
	mu    sync.RWMutex
	frame *top.Frame
	err   error     // of the last Refresh; the previous frame is kept
	at    time.Time // of the last Refresh (zero: never)

	// detail is the last drill-down, answered again to requests for the
	// same PID within every: N tabs on one process read its numa_maps
	// once per interval.
	detail struct {
		sync.Mutex
		pid int
		at  time.Time
		d   *top.Detail
		err error
	}
}

func newProcHub(feed top.Feed, every time.Duration, slots int) *procHub {
	h := &procHub{feed: feed, every: every, now: time.Now, slots: make(chan struct{}, slots)}
	// The filter is applied per request, on the shared frame: a filter on
	// the feed would hide rows from every other client.
	feed.SetFilter("")
	return h
}

// processesAnswer is the body of GET /api/processes.
type processesAnswer struct {
	// Available is false when the server has no feed; Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// Error is the last refresh's failure; Frame is then the previous
	// frame (null when none ever came).
	Error string `json:"error,omitempty"`
	// Sort is the key the rows are really in: the one asked for unless no
	// process has that figure (top.ResolveSort), SortNote then saying why.
	Sort     top.SortKey `json:"sort,omitempty"`
	SortNote string      `json:"sort_note,omitempty"`
	// KernelThreads says whether kernel threads are in the rows
	// (kthreads=1); KernelThreadsHidden counts those left out.
	KernelThreads       bool       `json:"kernel_threads"`
	KernelThreadsHidden int        `json:"kernel_threads_hidden"`
	Order               string     `json:"order,omitempty"`
	Filter              string     `json:"filter,omitempty"`
	Total               int        `json:"total"`   // processes in the frame
	Match               int        `json:"matched"` // of them, those the filter keeps
	Frame               *top.Frame `json:"frame"`
	Every               float64    `json:"refresh_seconds,omitempty"`
	Next                int64      `json:"refresh_in_ms"` // when the next frame is due
}

// processQuery is a validated request of the processes table.
type processQuery struct {
	sort   top.SortKey
	asc    bool
	filter string
	limit  int
	// kthreads keeps the kernel threads, hidden by default.
	kthreads bool
}

// parseProcessQuery validates sort=, order=, filter= and limit=.
func parseProcessQuery(r *http.Request) (processQuery, error) {
	q := processQuery{sort: top.SortRemote, limit: DefaultProcessRows}
	v := r.URL.Query()
	if s := v.Get("sort"); s != "" {
		if !slices.Contains(top.SortKeys, top.SortKey(s)) {
			return q, fmt.Errorf("sort=%.32q: give one of %s", s, sortKeyList())
		}
		q.sort = top.SortKey(s)
	}
	q.asc = q.sort == top.SortPID
	switch o := v.Get("order"); o {
	case "":
	case "asc", "desc":
		q.asc = o == "asc"
	default:
		return q, fmt.Errorf("order=%.32q: give asc or desc", o)
	}
	switch k := v.Get("kthreads"); k {
	case "", "0":
	case "1":
		q.kthreads = true
	default:
		return q, fmt.Errorf("kthreads=%.32q: give 1 to show the kernel threads, 0 to hide them", k)
	}
	q.filter = v.Get("filter")
	if len(q.filter) > MaxProcessFilter {
		return q, fmt.Errorf("filter= is %d bytes: the limit is %d", len(q.filter), MaxProcessFilter)
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxProcessRows {
			return q, fmt.Errorf("limit=%.32q: give a number of rows from 1 to %d", s, MaxProcessRows)
		}
		q.limit = n
	}
	return q, nil
}

func sortKeyList() string {
	s := make([]string, len(top.SortKeys))
	for i, k := range top.SortKeys {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// parsePID validates pid=: a decimal number from 1 to the kernel's limit.
func parsePID(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("pid= is missing: give a process ID")
	}
	if len(s) > 7 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("pid=%.32q: give a process ID, a number from 1 to %d", s, maxPID)
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > maxPID {
		return 0, fmt.Errorf("pid=%s: give a process ID, a number from 1 to %d", s, maxPID)
	}
	return n, nil
}

// current returns the shared frame, refreshing it first when it is
// ProcessesEvery old; it returns with h.mu read-locked (the caller
// RUnlocks once done with the frame).
func (h *procHub) current(key top.SortKey) {
	h.mu.RLock()
	if !h.stale() {
		return
	}
	h.mu.RUnlock()
	h.mu.Lock()
	// Requests that waited here behind a refresh find it fresh: one
	// Refresh per interval, however many came.
	if h.stale() {
		h.feedMu.Lock()
		if key != h.sorted {
			// The feed reads numa_maps for the top rows of its own order:
			// follow the order the last request asked for.
			h.feed.SetSort(key)
			h.sorted = key
		}
		f, err := h.feed.Refresh()
		h.feedMu.Unlock()
		h.at = h.now()
		h.err = err
		if err == nil {
			if f == nil {
				h.err = fmt.Errorf("the process feed returned no frame")
			} else {
				h.frame = f
			}
		}
	}
	h.mu.Unlock()
	h.mu.RLock()
}

func (h *procHub) stale() bool {
	return h.at.IsZero() || h.now().Sub(h.at) >= h.every
}

// answer builds the answer to q from the shared frame (under h.mu.RLock).
func (h *procHub) answer(q processQuery) *processesAnswer {
	a := &processesAnswer{Available: true, Sort: q.sort, Order: "desc", Filter: q.filter, Every: h.every.Seconds(), KernelThreads: q.kthreads}
	if q.asc {
		a.Order = "asc"
	}
	if h.err != nil {
		a.Error = h.err.Error()
	}
	a.Next = max(0, (h.every - h.now().Sub(h.at)).Milliseconds())
	if h.frame == nil {
		return a
	}
	f := *h.frame
	a.Total = len(f.Processes)
	idx := make([]int, 0, len(f.Processes))
	for i := range f.Processes {
		p := &f.Processes[i]
		switch {
		case !matchProcess(p, q.filter):
		case p.KernelThread && !q.kthreads:
			a.KernelThreadsHidden++
		default:
			idx = append(idx, i)
		}
	}
	a.Match = len(idx)
	// One rule with top: a column of "-" is no order (issue 31).
	a.Sort, a.SortNote = top.ResolveSort(f.Processes, q.sort)
	sortProcesses(f.Processes, idx, a.Sort, q.asc)
	rows := make([]top.Process, min(len(idx), q.limit))
	for i := range rows {
		rows[i] = f.Processes[idx[i]]
	}
	f.Processes = rows
	a.Frame = &f
	return a
}

// matchProcess keeps the processes whose command contains filter (case
// folded) or whose PID is it, as top.Feed.SetFilter does.
func matchProcess(p *top.Process, filter string) bool {
	if filter == "" {
		return true
	}
	if strconv.Itoa(p.PID) == filter {
		return true
	}
	return strings.Contains(strings.ToLower(p.Comm), strings.ToLower(filter))
}

// sortProcesses orders idx (indexes into ps) by key as top orders its
// tables (top.CompareProcesses): largest first unless asc, a process
// without the figure after every one with it either way (unknown is not
// zero), ties by CPU%, memory, then PID.
func sortProcesses(ps []top.Process, idx []int, key top.SortKey, asc bool) {
	slices.SortStableFunc(idx, func(i, j int) int { return top.CompareProcesses(&ps[i], &ps[j], key, asc) })
}

// getDetail returns the drill-down of pid, shared by the requests for it
// within one interval.
func (h *procHub) getDetail(pid int) (*top.Detail, error) {
	d := &h.detail
	d.Lock()
	defer d.Unlock()
	if d.pid == pid && !d.at.IsZero() && h.now().Sub(d.at) < h.every {
		return d.d, d.err
	}
	h.feedMu.Lock()
	det, err := h.feed.Detail(pid)
	h.feedMu.Unlock()
	if err == nil && det == nil {
		err = fmt.Errorf("process %d: the process feed returned nothing", pid)
	}
	d.pid, d.at, d.d, d.err = pid, h.now(), det, err
	return det, err
}

// serveProcesses answers GET /api/processes and /api/processes/detail.
func (s *Server) serveProcesses(w http.ResponseWriter, r *http.Request) {
	// The table shows other users' commands: it needs the token like the
	// stream, unlike /metrics.
	if !s.tokenOK(r) {
		http.Error(w, tokenRefused, http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSONError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	h := s.procs
	if h == nil {
		reason := s.opt.ProcessesReason
		if reason == "" {
			reason = "this server has no process feed: the processes page is part of numascope live"
		}
		writeJSON(w, http.StatusOK, processesAnswer{Reason: reason})
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
		// A client that stops reading must not keep its slot: its
		// answer's write fails after WriteTimeout (as /metrics does).
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
	default:
		writeJSONError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d requests for processes are being answered, the most this server answers at a time (--max-clients); retry", cap(h.slots)))
		return
	}
	if r.URL.Path == "/api/processes/detail" {
		pid, err := parsePID(r.URL.Query().Get("pid"))
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
		d, err := h.getDetail(pid)
		if err != nil {
			writeJSONError(w, http.StatusNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, d)
		return
	}
	q, err := parseProcessQuery(r)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.current(q.sort)
	var buf bytes.Buffer
	err = json.NewEncoder(&buf).Encode(h.answer(q))
	h.mu.RUnlock()
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "encoding the frame: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, MustJSON(map[string]string{"error": err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
