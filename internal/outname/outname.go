// Package outname expands the %-sequences of an output file name (`-o` of
// record and profile), so that each process of an MPI job or a Slurm
// allocation writes a file of its own: `-o prof.%h.%r.json`.
//
// The values come from outside the user's control (a host name, a rank
// variable set by a launcher), so each is reduced to [A-Za-z0-9._-] before
// it goes into the name: an expanded name never gains a path component, and
// a component made by an expansion may not be "", "." or "..". The file
// therefore stays in the directory the user named.
package outname

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// RankEnv lists the variables that hold a process's rank, in the order they
// are tried: Open MPI's, then the PMI one MPICH and Intel MPI set, then
// Slurm's (srun without MPI).
var RankEnv = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}

// StampLayout is the layout of %t: UTC, sortable, no separators a shell or
// a file system would mind (20261125T020304Z).
const StampLayout = "20060102T150405Z"

// Help is the one-line summary of the sequences, for --help texts.
const Help = "%h host name, %r MPI/Slurm rank, %p pid, %t start time (UTC, 20261125T020304Z), %% a literal %"

// Vars are the values the sequences expand to.
type Vars struct {
	Host string // %h; HostErr says why it is unknown when it is ""
	// HostErr is why the host name could not be read; expanding %h then
	// fails with it.
	HostErr error
	Rank    string // %r; "" when no rank variable is set
	PID     int    // %p
	Start   time.Time
}

// Current is this process's values: its host name, its rank from RankEnv,
// its pid and start.
func Current(start time.Time) Vars {
	host, err := os.Hostname()
	rank, _ := Rank(os.Getenv)
	return Vars{Host: host, HostErr: err, Rank: rank, PID: os.Getpid(), Start: start}
}

// Rank returns the first of RankEnv that getenv gives a non-empty value
// for, and that variable's name; ("", "") when none is set.
func Rank(getenv func(string) string) (rank, variable string) {
	for _, v := range RankEnv {
		if r := getenv(v); r != "" {
			return r, v
		}
	}
	return "", ""
}

// Has reports whether pattern holds any % at all, i.e. whether Expand may
// change it.
func Has(pattern string) bool { return strings.Contains(pattern, "%") }

// Expand returns pattern with %h, %r, %p, %t and %% replaced. An unknown
// sequence, a lone % at the end, %r without a rank and %h without a host
// name are errors, as is a path component made by an expansion that comes
// out "", "." or "..".
func Expand(pattern string, v Vars) (string, error) {
	if !Has(pattern) {
		return pattern, nil
	}
	var b strings.Builder
	compStart := 0    // where the current path component starts in b
	expanded := false // whether the current component holds an expansion
	checkComp := func() error {
		if !expanded {
			return nil
		}
		switch c := b.String()[compStart:]; c {
		case "", ".", "..":
			return fmt.Errorf("-o %q expands to the path component %q, which would leave the directory named; put other characters beside the %%-sequence", pattern, c)
		}
		return nil
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '/' {
			if err := checkComp(); err != nil {
				return "", err
			}
			b.WriteByte('/')
			compStart, expanded = b.Len(), false
			continue
		}
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(pattern) {
			return "", fmt.Errorf("-o %q ends in a lone %%; write %%%% for a literal %% (%s)", pattern, Help)
		}
		i++
		var val string
		switch pattern[i] {
		case '%':
			b.WriteByte('%')
			continue
		case 'h':
			if v.Host == "" {
				why := errors.New("the host name is empty")
				if v.HostErr != nil {
					why = v.HostErr
				}
				return "", fmt.Errorf("-o %q: %%h: cannot read the host name: %v", pattern, why)
			}
			val = v.Host
		case 'r':
			if v.Rank == "" {
				return "", fmt.Errorf("-o %q uses %%r but no rank is set: none of %s is in the environment (run under mpirun or srun, or leave %%r out)", pattern, strings.Join(RankEnv, ", "))
			}
			val = v.Rank
		case 'p':
			val = strconv.Itoa(v.PID)
		case 't':
			val = v.Start.UTC().Format(StampLayout)
		default:
			// Quoted: the character after % may be a newline or a
			// terminal escape.
			return "", fmt.Errorf("-o %q: unknown sequence %q; the sequences are %s", pattern, "%"+seq(pattern[i:]), Help)
		}
		b.WriteString(Sanitize(val))
		expanded = true
	}
	if err := checkComp(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// seq is the sequence character at the start of s, whole if it is a
// multi-byte UTF-8 character, for the message.
func seq(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

// Sanitize replaces every character outside [A-Za-z0-9._-] with '_' (one
// per character, not per byte), so that a value cannot add a path
// component or a character a shell or terminal would interpret.
func Sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
