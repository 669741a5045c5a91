// Package webtest holds what the tests of the web server (internal/web)
// and of the live hub (internal/live) share: a websocket client that reads
// the server's JSON messages, and the checks every kind of server passes.
package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Client is a websocket client of a numascope server.
type Client struct {
	T    *testing.T
	Conn *websocket.Conn
}

// URL is the websocket URL of the server at addr, with token if not "".
func URL(addr, token string) string {
	u := "ws://" + addr + "/ws"
	if token != "" {
		u += "?token=" + token
	}
	return u
}

// Dial connects to the server at addr with token; the connection is closed
// when the test ends.
func Dial(t *testing.T, addr, token string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, URL(addr, token), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &Client{T: t, Conn: conn}
}

// Send sends one text message.
func (c *Client) Send(msg string) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		c.T.Fatal(err)
	}
}

// Next reads messages until one satisfies want, failing after 10 s.
func (c *Client) Next(what string, want func(m map[string]any) bool) map[string]any {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, b, err := c.Conn.Read(ctx)
		if err != nil {
			c.T.Fatalf("waiting for %s: %v", what, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			c.T.Fatalf("server sent invalid JSON %q: %v", b, err)
		}
		if want(m) {
			return m
		}
	}
}

// TypeIs matches a message of type typ.
func TypeIs(typ string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["type"] == typ }
}

// HelloFirst checks that on the server at addr a client that sends
// something at once (before reading) still gets the hello first, never the
// reply to its message, 30 times over.
func HelloFirst(t *testing.T, name, addr, token string) {
	t.Helper()
	for i := range 30 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, _, err := websocket.Dial(ctx, URL(addr, token), nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		conn.SetReadLimit(64 << 20)
		for _, msg := range []string{`not json`, `{"type":"bogus"}`, `{"type":"pause"}`} {
			if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["type"] != "hello" {
			t.Fatalf("%s, connection %d: first message %.200s, want the hello", name, i, b)
		}
		conn.CloseNow()
		cancel()
	}
}

// UnknownTypesNotListed sends c's server a message of each type: the error
// for a type the server does not answer lists the types it does, never
// that same type (nor fifo_record, the FIFO's record request before the
// FIFO's commands reached the live hub typed), and at least 3 are unknown.
func UnknownTypesNotListed(t *testing.T, name string, c *Client, types []string) {
	t.Helper()
	word := regexp.MustCompile(`[a-z_]+`)
	c.Next("hello", TypeIs("hello"))
	unknown := 0
	for i, typ := range types {
		c.Send(fmt.Sprintf(`{"type":%q,"id":%d}`, typ, i))
		m := c.Next("reply", func(m map[string]any) bool { return m["id"] == float64(i) })
		msg, _ := m["error"].(string)
		k := strings.Index(msg, "unknown message type")
		if k < 0 {
			continue
		}
		unknown++
		list := msg[k+len("unknown message type")+len(fmt.Sprintf(" %q", typ)):]
		for _, w := range word.FindAllString(list, -1) {
			if w == typ {
				t.Errorf("%s: %q is unknown, yet listed among the valid ones: %s", name, typ, msg)
			}
		}
		if strings.Contains(list, "fifo_record") {
			t.Errorf("%s: the internal fifo_record is listed: %s", name, msg)
		}
	}
	if unknown < 3 {
		t.Errorf("%s: only %d of %d types were called unknown", name, unknown, len(types))
	}
}
