package outname

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var start = time.Date(2026, 11, 25, 2, 3, 4, 500, time.FixedZone("CET", 3600))

func vars() Vars {
	return Vars{Host: "node07", Rank: "3", PID: 4242, Start: start}
}

func TestExpand(t *testing.T) {
	for _, c := range []struct {
		pattern string
		v       Vars
		want    string
		err     string // a substring of the error; "" for none
	}{
		{"prof.json", vars(), "prof.json", ""},
		{"prof.%h.%r.json", vars(), "prof.node07.3.json", ""},
		{"out/%h/run-%p.jsonl.zst", vars(), "out/node07/run-4242.jsonl.zst", ""},
		{"run.%t.jsonl", vars(), "run.20261125T010304Z.jsonl", ""}, // UTC, whatever the zone
		{"100%%.%r", vars(), "100%.3", ""},
		{"%%h", vars(), "%h", ""},
		{"/abs/dir/%r", vars(), "/abs/dir/3", ""},
		// Hostile values stay inside the directory named.
		{"dir/%h.json", Vars{Host: "../../etc/passwd"}, "dir/.._.._etc_passwd.json", ""},
		{"dir/%r.json", Vars{Rank: "a/b"}, "dir/a_b.json", ""},
		{"dir/p.%r", Vars{Rank: "\x1b[31m\u202e"}, "dir/p.__31m_", ""},
		{"dir/%h", Vars{Host: "héte"}, "dir/h_te", ""},
		{"dir/%h", Vars{Host: ".."}, "", `path component ".."`},
		{"dir/%h/x", Vars{Host: "."}, "", `path component "."`},
		{"%r%r", Vars{Rank: "."}, "", `path component ".."`},
		{"dir/%h.", Vars{Host: "."}, "", `path component ".."`},
		{"dir/.%r", Vars{Rank: "x"}, "dir/.x", ""},
		// Errors.
		{"p.%r.json", Vars{Host: "h"}, "", "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID"},
		{"p.%x.json", vars(), "", `unknown sequence "%x"`},
		{"p.%é", vars(), "", `unknown sequence "%é"`},
		{"p.json%", vars(), "", "lone %"},
		{"p.%h", Vars{HostErr: errors.New("uname failed")}, "", "uname failed"},
		{"p.%h", Vars{}, "", "host name is empty"},
	} {
		got, err := Expand(c.pattern, c.v)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Expand(%q): %v", c.pattern, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Expand(%q) = %q, %v; want an error with %q", c.pattern, got, err, c.err)
		case c.err != "" && strings.Contains(err.Error(), "\n"):
			t.Errorf("Expand(%q): a multi-line error: %q", c.pattern, err)
		case got != c.want:
			t.Errorf("Expand(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
}

func TestRankOrder(t *testing.T) {
	env := map[string]string{"SLURM_PROCID": "7", "PMI_RANK": "5", "OMPI_COMM_WORLD_RANK": "2"}
	for _, c := range []struct {
		drop []string
		rank string
		v    string
	}{
		{nil, "2", "OMPI_COMM_WORLD_RANK"},
		{[]string{"OMPI_COMM_WORLD_RANK"}, "5", "PMI_RANK"},
		{[]string{"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, "7", "SLURM_PROCID"},
		{[]string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}, "", ""},
	} {
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		for _, d := range c.drop {
			delete(e, d)
		}
		r, v := Rank(func(k string) string { return e[k] })
		if r != c.rank || v != c.v {
			t.Errorf("without %v: Rank = %q, %q; want %q, %q", c.drop, r, v, c.rank, c.v)
		}
	}
}

func TestCurrent(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_RANK", "")
	t.Setenv("PMI_RANK", "")
	t.Setenv("SLURM_PROCID", "11")
	v := Current(start)
	if v.Rank != "11" || v.PID <= 0 || (v.Host == "" && v.HostErr == nil) {
		t.Errorf("Current = %+v", v)
	}
}

// FuzzExpand checks, for any pattern and values, that an expansion never
// escapes the directory the pattern names: the expanded name has as many
// path components as the pattern, none made by an expansion is "." or
// "..", and every expanded character is one Sanitize lets through.
func FuzzExpand(f *testing.F) {
	f.Add("prof.%h.%r.json", "node1", "0")
	f.Add("d/%h/%r", "..", "/")
	f.Add("%r%r/%%", ".", "x")
	f.Add("%t.%p.%z", "a/b", "../..")
	f.Fuzz(func(t *testing.T, pattern, host, rank string) {
		v := Vars{Host: host, Rank: rank, PID: 1, Start: start}
		got, err := Expand(pattern, v)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		pc, gc := strings.Split(pattern, "/"), strings.Split(got, "/")
		if len(pc) != len(gc) {
			t.Fatalf("Expand(%q) = %q: %d components, the pattern has %d", pattern, got, len(gc), len(pc))
		}
		for i := range pc {
			if pc[i] != gc[i] && strings.Contains(pc[i], "%") && (gc[i] == "." || gc[i] == ".." || gc[i] == "") {
				t.Fatalf("Expand(%q) = %q: component %q", pattern, got, gc[i])
			}
		}
		if !strings.Contains(pattern, "%") && got != pattern {
			t.Fatalf("Expand(%q) = %q: a pattern without %% changed", pattern, got)
		}
		for _, r := range Sanitize(host) + Sanitize(rank) {
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", r) {
				t.Fatalf("Sanitize let %q through", r)
			}
		}
	})
}
