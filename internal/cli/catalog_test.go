package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/numascope/numascope/internal/live"
	"github.com/numascope/numascope/internal/sampler"
	"github.com/numascope/numascope/internal/sampling"
	"github.com/numascope/numascope/internal/web"
)

// TestCatalogDescribedAlike: `events --format json`, the live hello's
// catalog and the recording header describe the same sensors and events
// with the same fields, on this machine (whose perf and uncore events are
// unavailable without a PMU) and on a captured two-node tree (where perf
// and uncore are absent).
func TestCatalogDescribedAlike(t *testing.T) {
	for _, root := range []string{"", "../sensor/testdata/twonode"} {
		t.Run("root="+root, func(t *testing.T) {
			g := &globals{root: root}
			env, cat, err := g.open()
			if err != nil {
				t.Fatal(err)
			}
			defer cat.Close()

			var buf bytes.Buffer
			if err := writeEventsJSON(&buf, cat, nil); err != nil {
				t.Fatal(err)
			}
			var events []map[string]any
			if err := json.Unmarshal(buf.Bytes(), &events); err != nil {
				t.Fatal(err)
			}
			hello := liveHello(t, cat)
			catalog := hello["catalog"].([]any)
			hdr, err := json.Marshal(baseHeader(env.Topology, cat, nil))
			if err != nil {
				t.Fatal(err)
			}
			var header map[string]any
			if err := json.Unmarshal(hdr, &header); err != nil {
				t.Fatal(err)
			}
			sensors := header["sensors"].([]any)

			if len(events) != len(cat.Entries) || len(catalog) != len(events) || len(sensors) != len(events) {
				t.Fatalf("%d sensors in the catalog, %d in events, %d in the hello, %d in the header", len(cat.Entries), len(events), len(catalog), len(sensors))
			}
			unavailable, absent := 0, 0
			for i, es := range events {
				hs := catalog[i].(map[string]any)
				rs := sensors[i].(map[string]any)
				for _, k := range []string{"name", "present", "reason", "sources"} {
					if !reflect.DeepEqual(es[k], hs[k]) {
						t.Errorf("sensor %v: %s is %v in events, %v in the hello", es["name"], k, es[k], hs[k])
					}
					if rk := rs[k]; !reflect.DeepEqual(es[k], rk) && !(k == "reason" && es[k] == nil && rk == "") {
						t.Errorf("sensor %v: %s is %v in events, %v in the recording header", es["name"], k, es[k], rk)
					}
				}
				if es["present"] == false {
					absent++
					if r, _ := es["reason"].(string); r == "" {
						t.Errorf("absent sensor %v without a reason", es["name"])
					}
				}
				ee, he := es["events"].([]any), hs["events"].([]any)
				if len(ee) != len(he) {
					t.Fatalf("sensor %v: %d events in events, %d in the hello", es["name"], len(ee), len(he))
				}
				for j := range ee {
					e, h := ee[j].(map[string]any), he[j].(map[string]any)
					keys := map[string]bool{}
					for k := range e {
						keys[k] = true
					}
					for k := range h {
						keys[k] = true
					}
					for k := range keys {
						if k == "max" {
							continue
						}
						if !reflect.DeepEqual(e[k], h[k]) {
							t.Errorf("event %v.%v: %s is %v in events, %v in the hello", es["name"], e["name"], k, e[k], h[k])
						}
					}
					// The hello sums the per-source maxima.
					var sum float64
					if mx, ok := e["max"].([]any); ok {
						for _, m := range mx {
							sum += m.(float64)
						}
					}
					if hm, _ := h["max"].(float64); math.Abs(hm-sum) > 1e-9*max(1, sum) {
						t.Errorf("event %v.%v: hello max %v, want the sum %v of %v", es["name"], e["name"], hm, sum, e["max"])
					}
					if u, ok := e["unavailable"].(string); ok {
						unavailable++
						reason, _ := e["reason"].(string)
						fix, _ := e["fix"].(string)
						if reason == "" || (u != reason && u != reason+"; fix: "+fix) {
							t.Errorf("event %v.%v: unavailable %q is not reason %q + fix %q", es["name"], e["name"], u, reason, fix)
						}
					} else if e["reason"] != nil || e["fix"] != nil {
						t.Errorf("available event %v.%v has a reason or fix: %v", es["name"], e["name"], e)
					}
				}
			}
			t.Logf("%d sensors (%d absent), %d unavailable events", len(events), absent, unavailable)
		})
	}
}

// liveHello starts `numascope live`'s server on cat and returns the hello
// a client gets.
func liveHello(t *testing.T, cat *sampler.Catalog) map[string]any {
	t.Helper()
	events := cat.Available([]string{"cpu.user"})
	srv, err := live.NewLive(web.Options{Listen: "127.0.0.1:0", Batch: 50 * time.Millisecond, Log: func(string) {}},
		sampling.Config{Catalog: cat, Events: events, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		srv.Abort()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, "ws://"+srv.Addr().String()+"/ws?token="+srv.Token(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	_, b, err := conn.Read(dctx)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["type"] != "hello" {
		t.Fatalf("first message %.200s: want a hello (%v)", strings.TrimSpace(string(b)), err)
	}
	return m
}
