// Command wsclient is the one websocket client of scripts/bench's `live`
// runs: it connects to numascope live's /ws (docs/live-protocol.md), reads
// every message, counts the samples the batches carry, and prints a line for
// every label mark, so that the script can count the samples between two
// labels it sent through the control FIFO:
//
//	label TEXT SAMPLES   SAMPLES: samples received before the label
//	end SAMPLES          the server closed the connection
//
// Usage: wsclient ws://127.0.0.1:PORT/ws?token=TOKEN
// It retries the connection for up to 20 s while numascope starts.
//
// wsclient -sink ADDRFILE is the other end of the bare sampler's socket
// (baresampler -o tcp:ADDR), the floor `live` is measured against: it
// listens on a free loopback port, writes the address to ADDRFILE, accepts
// one connection and copies what arrives to stdout until it closes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/coder/websocket"
)

type message struct {
	Type    string            `json:"type"`
	Mark    string            `json:"mark"`
	Text    string            `json:"text"`
	Samples []json.RawMessage `json:"samples"`
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-sink" {
		sink(os.Args[2])
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wsclient ws://127.0.0.1:PORT/ws?token=TOKEN")
		os.Exit(2)
	}
	ctx := context.Background()
	var c *websocket.Conn
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, _, err = websocket.Dial(ctx, os.Args[1], nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wsclient: cannot connect to %s: %v; is numascope live running there with this token?\n", os.Args[1], err)
		os.Exit(1)
	}
	// A new client is sent the history (up to 16 MiB of values as JSON).
	c.SetReadLimit(256 << 20)
	out := bufio.NewWriter(os.Stdout)
	var n uint64
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			fmt.Fprintf(out, "end %d\n", n)
			out.Flush()
			return
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			fmt.Fprintf(os.Stderr, "wsclient: a message that is not JSON: %v\n", err)
			os.Exit(1)
		}
		switch m.Type {
		case "batch":
			n += uint64(len(m.Samples))
		case "mark":
			if m.Mark == "label" {
				fmt.Fprintf(out, "label %s %d\n", m.Text, n)
				out.Flush()
			}
		case "error":
			fmt.Fprintf(os.Stderr, "wsclient: the server reports an error: %s\n", b)
		}
	}
}

// sink listens, publishes its address in addrFile (whole, by a rename), and
// copies one connection to stdout.
func sink(addrFile string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "wsclient: cannot listen: %v\n", err)
		os.Exit(1)
	}
	tmp := addrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o600); err != nil || os.Rename(tmp, addrFile) != nil {
		fmt.Fprintf(os.Stderr, "wsclient: cannot write %s\n", addrFile)
		os.Exit(1)
	}
	c, err := ln.Accept()
	if err != nil {
		fmt.Fprintf(os.Stderr, "wsclient: accept: %v\n", err)
		os.Exit(1)
	}
	ln.Close()
	if _, err := io.Copy(os.Stdout, c); err != nil {
		fmt.Fprintf(os.Stderr, "wsclient: reading the sampler: %v\n", err)
		os.Exit(1)
	}
}
