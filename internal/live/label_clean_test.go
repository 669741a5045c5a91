package live

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/numascope/numascope/internal/recording"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/web"
)

// TestWebsocketLabelCleaned: a label sent by a websocket client with a
// screen-clearing escape sequence, BEL, bidi controls and an invalid UTF-8
// byte reaches the clients and the recording cleaned by
// recording.CleanLabel, like a label from the control FIFO; one with no
// printable text is refused with an error reply.
func TestWebsocketLabelCleaned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "labels.jsonl")
	l, _ := startLive(t, web.Options{RecordDir: dir}, sampling.Config{Record: path})
	c := dial(t, l.Server, "")
	c.Next("hello", typeIs("hello"))

	const want = "a[2Jbcd\uFFFDef g"
	c.Send("{\"type\":\"label\",\"text\":\"a\\u001b[2Jb\\u0007c\\u202Ed\xffe\\u200ff \\u061c \\t g\\u200e\"}")
	m := c.Next("label", func(m map[string]any) bool { return m["type"] == "mark" && m["mark"] == "label" })
	if m["text"] != want {
		t.Errorf("label mark to the clients = %q, want %q", m["text"], want)
	}
	c.Send(`{"type":"label","text":"\u001b\u0007\u202e","id":"bad"}`)
	e := c.Next("error", typeIs("error"))
	if msg, _ := e["error"].(string); !strings.Contains(msg, "no printable text") {
		t.Errorf("label of control characters only: error %q, want one saying it has no printable text", msg)
	}
	c.Send(`{"type":"record_stop"}`)
	c.Next("stopped", func(m map[string]any) bool {
		return m["type"] == "state" && m["state"].(map[string]any)["recording"] == ""
	})
	rec, err := recording.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	labels := rec.Labels()
	if len(labels) != 1 || labels[0].Text != want {
		t.Fatalf("recorded labels %+v, want one: %q", labels, want)
	}
}
