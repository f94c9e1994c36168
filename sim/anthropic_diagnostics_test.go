package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Anthropic cache diagnostics: with the beta header and a diagnostics
// object, each answer names the first level (model, tools, system,
// messages) where the request diverged from the one named by
// previous_message_id, or null when it only extended it; without the beta
// header the answer has no diagnostics field. A stream carries it on
// message_start.
func TestAnthropicCacheDiagnostics(t *testing.T) {
	s := New(Config{})
	base, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	type answer struct {
		ID          string          `json:"id"`
		Diagnostics json.RawMessage `json:"diagnostics"`
	}
	send := func(body map[string]any, beta bool) answer {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		if beta {
			req.Header.Set("anthropic-beta", "other-beta, "+CacheDiagnosisBeta)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("%d %s", res.StatusCode, raw)
		}
		var a answer
		if body["stream"] == true {
			for _, line := range strings.Split(string(raw), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"message_start"`) {
					var ev struct {
						Message answer `json:"message"`
					}
					_ = json.Unmarshal([]byte(d), &ev)
					return ev.Message
				}
			}
			t.Fatalf("no message_start in %s", raw)
		}
		_ = json.Unmarshal(raw, &a)
		return a
	}
	req := func(model, system string, tools []any, prev any, msgs ...string) map[string]any {
		var ms []any
		for i, m := range msgs {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			ms = append(ms, map[string]any{"role": role, "content": m})
		}
		b := map[string]any{"model": model, "max_tokens": 20, "system": system, "messages": ms, "diagnostics": map[string]any{"previous_message_id": prev}}
		if tools != nil {
			b["tools"] = tools
		}
		return b
	}
	sys := "You are a careful assistant. " + longText(1500, "s")
	tools := []any{map[string]any{"name": "lookup", "input_schema": map[string]any{"type": "object"}}}
	first := send(req("sim-small", sys, tools, nil, "hello"), true)
	if string(first.Diagnostics) != `{"cache_miss_reason":null}` {
		t.Fatalf("first turn diagnostics %s", first.Diagnostics)
	}
	for _, c := range []struct {
		name string
		body map[string]any
		want string // cache_miss_reason.type, "" for null
	}{
		{"extended", req("sim-small", sys, tools, first.ID, "hello", "hi", "more"), ""},
		{"model", req("sim-large", sys, tools, first.ID, "hello", "hi", "more"), "model_changed"},
		{"tools", req("sim-small", sys, []any{map[string]any{"name": "lookup2", "input_schema": map[string]any{"type": "object"}}}, first.ID, "hello"), "tools_changed"},
		{"system", req("sim-small", "Now: 2026-12-05T09:00:00Z. "+sys, tools, first.ID, "hello"), "system_changed"},
		{"messages", req("sim-small", sys, tools, first.ID, "hello, edited", "hi", "more"), "messages_changed"},
		{"unknown id", req("sim-small", sys, tools, "msg_unknown", "hello"), "previous_message_not_found"},
	} {
		for _, stream := range []bool{false, true} {
			body := map[string]any{}
			for k, v := range c.body {
				body[k] = v
			}
			body["stream"] = stream
			a := send(body, true)
			var d struct {
				Reason *struct {
					Type   string `json:"type"`
					Missed *int   `json:"cache_missed_input_tokens"`
				} `json:"cache_miss_reason"`
			}
			if err := json.Unmarshal(a.Diagnostics, &d); err != nil || len(a.Diagnostics) == 0 {
				t.Fatalf("%s (stream %v): diagnostics %s", c.name, stream, a.Diagnostics)
			}
			got := ""
			if d.Reason != nil {
				got = d.Reason.Type
			}
			if got != c.want {
				t.Errorf("%s (stream %v): cache_miss_reason %s, want %q", c.name, stream, a.Diagnostics, c.want)
			}
			if strings.HasSuffix(c.want, "_changed") && (d.Reason.Missed == nil || *d.Reason.Missed <= 0) {
				t.Errorf("%s: cache_missed_input_tokens %v", c.name, d.Reason.Missed)
			}
		}
	}
	if a := send(req("sim-small", sys, tools, first.ID, "hello"), false); a.Diagnostics != nil {
		t.Errorf("without the beta header: diagnostics %s", a.Diagnostics)
	}
}

// A marker, or the string form of a text block, is not a change of the
// prompt: the comparison does not see it.
func TestAnthropicDiagnosticsIgnoresMarkers(t *testing.T) {
	var d diagStore
	mk := func(body string) *requestPrint {
		var r messagesRequest
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		return printRequest(&r, 100)
	}
	d.put("msg_1", mk(`{"model":"m","system":"Be kind.","messages":[{"role":"user","content":"hi"}]}`), diagStoreMax)
	got := d.diagnose(json.RawMessage(`{"previous_message_id":"msg_1"}`), "msg_2",
		mk(`{"model":"m","system":[{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"ok"}]}`))
	if got.CacheMissReason != nil {
		t.Fatalf("markers and string forms seen as a change: %+v", got.CacheMissReason)
	}
}
