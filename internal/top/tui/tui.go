// Package tui is the interactive terminal interface of `numascope top`: a
// process table (or a node view, or a cgroup table) refreshed each interval,
// with keys for sort, filter, drill-down and pause.
//
// It only reads a top.Feed; it never reads /proc. Every call into the feed
// (Refresh, Detail, and the sort and filter the user chose) runs in a
// bubbletea command, off the event loop, so a slow /proc walk never freezes
// the keys; the calls are serialised (serialFeed), so a Feed need not be
// safe for concurrent use.
//
// Every name that comes from the kernel or from files (commands, users,
// paths, cgroups, the sources' reasons, errors) is shown only as sanitised
// text (recording.SanitizeText): a process that names itself with terminal
// escape sequences cannot move the cursor, retitle the window or hide rows.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/numascope/numascope/internal/top"
)

// Options say how the TUI starts; the user changes the sort, the filter,
// the view and the pause with keys from there.
type Options struct {
	// Interval is the time from one frame to the next Refresh; 0 means
	// DefaultInterval, and less than 100 ms is taken as 100 ms.
	Interval time.Duration
	// Sort is the first sort key; "" means top.SortRemote.
	Sort top.SortKey
	// Filter is the first filter ("" keeps all), as top.Feed.SetFilter
	// takes it.
	Filter string
	// Cgroups starts in the cgroup table (`--cgroup`) instead of the
	// process table.
	Cgroups bool
}

// DefaultInterval is the refresh interval when Options.Interval is 0.
const DefaultInterval = time.Second

// framesPerSecond is how often bubbletea's renderer wakes to draw what
// changed. Its default, 60, woke the process 60 times a second for a screen
// that changes once a second or on a key, and cost more than the refresh
// itself: the TUI took 3.25% of one CPU with 1 000 processes against 1.75%
// for the same refreshes in batch mode, and 2.1% at 15 (docs/performance.md,
// "numascope top"). 15 shows a key within 67 ms.
const framesPerSecond = 15

// minInterval keeps a mistyped interval from turning the TUI into a busy
// loop of /proc walks.
const minInterval = 100 * time.Millisecond

// Run shows the TUI on out, reading keys from in, until the user quits (q,
// Ctrl-C) or ctx is done; both end it without error. in and out are
// normally os.Stdin and os.Stdout, both terminals (the CLI prints batch
// output otherwise); in is put in raw mode for the run, and the screen is
// restored at the end. Refresh errors are shown on screen, not returned: a
// process table that failed once is tried again at the next interval.
func Run(ctx context.Context, feed top.Feed, opts Options, in io.Reader, out io.Writer) error {
	m := newModel(feed, opts)
	// The size is the terminal's; 80x24 only stands in where out is none.
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithWindowSize(80, 24),
		tea.WithFPS(framesPerSecond))
	_, err := p.Run()
	switch {
	case err == nil, errors.Is(err, tea.ErrInterrupted): // q, Ctrl-C, SIGINT
		return nil
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return nil
	}
	return fmt.Errorf("terminal interface: %w", err)
}

// serialFeed serialises the calls into a Feed, which bubbletea would
// otherwise make from several command goroutines at once. The sort and the
// filter the user picks are recorded without waiting (the event loop must
// not block behind a Refresh) and handed to the feed just before its next
// Refresh or Detail.
type serialFeed struct {
	mu   sync.Mutex // held for each call into f
	feed top.Feed

	wantMu sync.Mutex // guards the fields below
	sort   top.SortKey
	filter string
	dirty  bool // sort or filter changed since the feed was told
}

func newSerialFeed(f top.Feed, sort top.SortKey, filter string) *serialFeed {
	return &serialFeed{feed: f, sort: sort, filter: filter, dirty: true}
}

// want records the sort and filter for the next call into the feed.
func (s *serialFeed) want(sort top.SortKey, filter string) {
	s.wantMu.Lock()
	defer s.wantMu.Unlock()
	if sort != s.sort || filter != s.filter {
		s.sort, s.filter, s.dirty = sort, filter, true
	}
}

// apply hands the wanted sort and filter to the feed; s.mu is held.
func (s *serialFeed) apply() (top.SortKey, string) {
	s.wantMu.Lock()
	sort, filter, dirty := s.sort, s.filter, s.dirty
	s.dirty = false
	s.wantMu.Unlock()
	if dirty {
		s.feed.SetSort(sort)
		s.feed.SetFilter(filter)
	}
	return sort, filter
}

// refresh reads the next frame, and says which sort and filter made it.
func (s *serialFeed) refresh() frameMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	sort, filter := s.apply()
	f, err := s.feed.Refresh()
	return frameMsg{frame: f, err: err, sort: sort, filter: filter}
}

func (s *serialFeed) detail(pid int) detailMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply()
	d, err := s.feed.Detail(pid)
	return detailMsg{pid: pid, detail: d, err: err}
}
