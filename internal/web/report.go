package web

import (
	"encoding/json"
	"fmt"
)

// Report serves an experiment's report to the web client
// (`numascope experiment --web`): the client draws the effects with their
// confidence intervals, the per-node distributions, the QQ plot, the ANOVA
// table and the verdicts from the one hello message. There is nothing to
// sample or fetch, so every request gets an error reply.
type Report struct {
	*Server
	file string
	body json.RawMessage
}

// NewReport prepares serving report (any value that encodes as JSON, e.g.
// an experiment.WebReport), read from file (named in the client).
func NewReport(opt Options, file string, report any) (*Report, error) {
	b, err := json.Marshal(report)
	if err != nil {
		return nil, fmt.Errorf("encoding the experiment report: %w", err)
	}
	r := &Report{file: file, body: b}
	r.Server = NewServer(opt, r)
	return r, nil
}

// Attach, Detach and Request make an experiment report a Backend.
func (r *Report) Attach(c *Client) {
	c.Reply(Hello{
		Type: "hello", Protocol: ProtocolVersion, Mode: "experiment",
		File: r.file, Experiment: r.body, State: State{Events: []string{}},
	})
}

func (r *Report) Detach(*Client) {}

func (r *Report) Request(c *Client, q *Request) {
	c.Fail(q.ID, fmt.Errorf("%s: an experiment report answers no requests (it is all in the hello message)", q.Type))
}
