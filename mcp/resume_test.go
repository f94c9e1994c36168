package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
)

// cutter cuts the connection of the first tools/call answer right after
// its priming event, as a network failure would, and counts the GETs that
// resume a stream of the gateway's.
type cutter struct {
	key     string
	armed   atomic.Bool
	cut     chan struct{} // closed when the answer was cut
	resumes atomic.Int64
}

func (c *cutter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+c.key)
	if r.Method == http.MethodGet && strings.HasPrefix(r.Header.Get("Last-Event-ID"), "gh-") {
		c.resumes.Add(1)
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !bytes.Contains(body, []byte(`"tools/call"`)) || !c.armed.CompareAndSwap(true, false) {
		return res, err
	}
	res.Body = &cutBody{rd: bufio.NewReader(res.Body), under: res.Body, cut: c.cut}
	return res, nil
}

// cutBody passes an SSE answer's first event, then fails like a broken
// connection and closes the connection underneath.
type cutBody struct {
	rd      *bufio.Reader
	under   io.ReadCloser
	pending []byte
	passed  bool
	cut     chan struct{}
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.passed {
			if b.cut != nil {
				_ = b.under.Close()
				close(b.cut)
				b.cut = nil
			}
			return 0, io.ErrUnexpectedEOF
		}
		line, err := b.rd.ReadBytes('\n')
		b.pending = line
		if string(line) == "\n" {
			b.passed = true
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *cutBody) Close() error { return b.under.Close() }

// An agent's connection is cut while its send_email call runs upstream;
// the official SDK client reconnects with GET and Last-Event-ID and gets
// the call's result from the gateway instead of calling again: the
// simulated server sent one email, the ledger has one row.
func TestResumeAfterCutConnection(t *testing.T) {
	e := newEnv(t, withGate())
	c := &cutter{key: e.KeyA, cut: make(chan struct{})}
	cl := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.URL + "/mcp/sim",
		HTTPClient: &http.Client{Transport: c}, DisableStandaloneSSE: true, MaxRetries: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.armed.Store(true)

	type result struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), emailCall(""))
		done <- result{res, err}
	}()
	<-e.gate.arrived // the email is being sent upstream
	<-c.cut          // and the client's connection is gone
	e.gate.open()
	got := <-done
	if got.err != nil {
		t.Fatalf("the resumed call failed: %v", got.err)
	}
	if s := text(t, got.res); s != "sent email-1 to ana@example.com" {
		t.Fatalf("result %q", s)
	}
	if n := c.resumes.Load(); n != 1 {
		t.Fatalf("%d resumes, want 1", n)
	}
	if fx := e.effects(); fx.EmailsSent != 1 || fx.ToolCalls["send_email"] != 1 {
		t.Fatalf("the server sent %d emails in %d calls, want 1 and 1", fx.EmailsSent, fx.ToolCalls["send_email"])
	}
	if rows := e.rows(); rows[groundhog.OutcomeUpstream] != 1 || len(rows) != 1 {
		t.Fatalf("ledger %v, want one upstream row", rows)
	}
}

// sseEvent is one event of an SSE answer.
type sseEvent struct{ id, data string }

func events(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	for _, line := range strings.Split(string(body), "\n") {
		switch {
		case line == "":
			if cur.id != "" || cur.data != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data:"):
			cur.data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	return evs
}

// A finished answer is replayed after any of its event ids, to its own
// session only: a made-up, malformed or expired id, another session's or
// another tenant's gets a JSON-RPC error and no event.
func TestResumeReplayAndRefusals(t *testing.T) {
	e := newEnv(t)
	csA := e.client(bearer{key: e.KeyA}, nil)
	csA2 := e.client(bearer{key: e.KeyA}, nil)
	csB := e.client(bearer{key: e.KeyB}, nil)
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"otters"}}}`)
	res, body := e.send("POST", "sim", msg, map[string]string{"Authorization": "Bearer " + e.KeyA, "Mcp-Session-Id": csA.ID()})
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("answer %s: %s", ct, body)
	}
	evs := events(t, body)
	if len(evs) != 2 || evs[0].data != "" || !strings.Contains(evs[1].data, `3 results for \"otters\"`) || evs[0].id == evs[1].id {
		t.Fatalf("answer events %+v, want a priming event and the result", evs)
	}
	get := func(key, session, last string) (*http.Response, []byte) {
		return e.send("GET", "sim", nil, map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": session, "Last-Event-ID": last, "Content-Type": ""})
	}
	res, replay := get(e.KeyA, csA.ID(), evs[0].id)
	if got := events(t, replay); res.StatusCode != http.StatusOK || len(got) != 1 || got[0] != evs[1] {
		t.Fatalf("resume after the priming event: %d %q, want the result event %+v", res.StatusCode, replay, evs[1])
	}
	if fx := e.effects(); fx.ToolCalls["search"] != 1 {
		t.Fatalf("search ran %d times, want 1", fx.ToolCalls["search"])
	}
	// The row's result bytes are the JSON-RPC result the client got.
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(evs[1].data), &answer); err != nil {
		t.Fatal(err)
	}
	if err := e.Ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var booked []int64
	if err := e.DB.ScanLedger(context.Background(), groundhog.LedgerFilter{Operation: "mcp:sim/search", From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(r *groundhog.LedgerEntry) error {
		booked = append(booked, r.ResultBytes)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(booked) != 1 || booked[0] != int64(len(answer.Result)) {
		t.Fatalf("result bytes booked %v, want [%d]", booked, len(answer.Result))
	}
	res, rest := get(e.KeyA, csA.ID(), evs[1].id)
	if res.StatusCode != http.StatusOK || len(events(t, rest)) != 0 {
		t.Fatalf("resume after the last event: %d %q, want an empty stream", res.StatusCode, rest)
	}

	madeUp := "gh-" + strings.Repeat("ab", 12) + "-0"
	for _, tc := range []struct {
		name, key, session, last string
		status                   int
	}{
		{"malformed", e.KeyA, csA.ID(), "gh-zz-1", http.StatusBadRequest},
		{"made up", e.KeyA, csA.ID(), madeUp, http.StatusBadRequest},
		{"past the stream's end", e.KeyA, csA.ID(), strings.TrimSuffix(evs[1].id, "1") + "9", http.StatusBadRequest},
		{"another session", e.KeyA, csA2.ID(), evs[0].id, http.StatusBadRequest},
		{"another tenant's own session", e.KeyB, csB.ID(), evs[0].id, http.StatusBadRequest},
		{"another tenant with the session", e.KeyB, csA.ID(), evs[0].id, http.StatusNotFound},
		{"no session", e.KeyA, "", evs[0].id, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(tc.key, tc.session, tc.last)
			var doc struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if res.StatusCode != tc.status || json.Unmarshal(body, &doc) != nil || doc.Error.Message == "" {
				t.Fatalf("%d %s, want %d with a JSON-RPC error", res.StatusCode, body, tc.status)
			}
			if bytes.Contains(body, []byte("otters")) {
				t.Fatalf("refusal leaks the stream: %s", body)
			}
		})
	}
}
