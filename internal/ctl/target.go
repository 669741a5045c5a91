package ctl

import (
	"fmt"
	"time"
)

// Target is what control commands steer: a sampling session (stat, record,
// experiment) or the live server. Both the FIFO and a live client's
// requests end up in these five calls.
type Target interface {
	// Record closes the current recording and continues in path.
	Record(path string)
	// Label puts text (already cleaned) at this instant.
	Label(text string)
	Pause()
	Resume()
	// SetInterval changes the sampling interval; an interval the sampler
	// refuses is an error.
	SetInterval(d time.Duration) error
}

// Dispatch carries out c on t: the one switch from a parsed command to the
// call that does it. The error, if any, names the command.
func Dispatch(t Target, c Command) error {
	switch c.Op {
	case OpRecord:
		t.Record(c.Arg)
	case OpLabel:
		t.Label(c.Arg)
	case OpPause:
		t.Pause()
	case OpResume:
		t.Resume()
	case OpInterval:
		if err := t.SetInterval(c.Interval); err != nil {
			return fmt.Errorf("interval: %w", err)
		}
	default:
		return fmt.Errorf("%v is not a command; %s", c.Op, validCommands)
	}
	return nil
}

// Serve carries out every command the FIFO receives on t until the server
// is closed, reporting a command that fails to the server's onError.
func (s *Server) Serve(t Target) {
	for c := range s.Commands() {
		if err := Dispatch(t, c); err != nil {
			s.onError(err)
		}
	}
}

// Report reports err as Serve reports a command that fails, for a Target
// that carries out the commands of Commands elsewhere (the live server's
// hub, in order with its clients' requests).
func (s *Server) Report(err error) { s.onError(err) }
