package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/gateway"
)

// heldUpstream answers streaming chat and Responses calls with a first
// event, then holds the rest of each stream until release is closed. Each
// answer says which request it answers: its text is the request's "tag" and
// the Responses answer echoes the request's "user", as the provider does.
type heldUpstream struct {
	release chan struct{}
	mu      sync.Mutex
	bodies  []string // what it received
}

func (u *heldUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, string(b))
	u.mu.Unlock()
	var req struct {
		Tag  string          `json:"tag"`
		User json.RawMessage `json:"user"`
	}
	if err := json.Unmarshal(b, &req); err != nil || req.Tag == "" {
		http.Error(w, `{"error":{"message":"no tag"}}`, http.StatusBadRequest)
		return
	}
	user := string(req.User)
	if user == "" {
		user = "null"
	}
	text, _ := json.Marshal("answer to " + req.Tag)
	var first, rest []string
	if strings.HasSuffix(r.URL.Path, "/responses") {
		resp := func(status, usage string) string {
			return `{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","model":"gpt-4o-mini","output":[],"user":` + user + `,"metadata":{}` + usage + `}`
		}
		first = []string{"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":" + resp("in_progress", "") + "}\n\n"}
		rest = []string{
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":" + string(text) + "}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":" + resp("completed", `,"usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}`) + "}\n\n",
		}
	} else {
		chunk := func(delta, finish, usage string) string {
			return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]` + usage + "}\n\n"
		}
		first = []string{chunk(`{"role":"assistant","content":""}`, "null", "")}
		rest = []string{
			chunk(`{"content":`+string(text)+`}`, "null", ""),
			chunk(`{}`, `"stop"`, ""),
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}` + "\n\n",
			"data: [DONE]\n\n",
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range first {
		_, _ = io.WriteString(w, ev)
	}
	http.NewResponseController(w).Flush()
	select {
	case <-u.release:
	case <-r.Context().Done():
		return
	}
	for _, ev := range rest {
		_, _ = io.WriteString(w, ev)
	}
}

// streamCall is one client stream: its head, then its body in full.
type streamCall struct {
	res   *http.Response
	first chan error  // nil once the first event arrived
	body  chan string // the whole stream, once it ends
}

func startStream(t *testing.T, url, body string, hdr map[string]string) *streamCall {
	t.Helper()
	sc := &streamCall{first: make(chan error, 1), body: make(chan string, 1)}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			sc.first <- err
			sc.body <- ""
			return
		}
		defer res.Body.Close()
		sc.res = res
		br := bufio.NewReader(res.Body)
		var all strings.Builder
		for {
			line, err := br.ReadString('\n')
			all.WriteString(line)
			if strings.HasPrefix(line, "data: ") || err != nil {
				if err == nil && res.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", res.StatusCode)
				}
				sc.first <- err
				break
			}
		}
		rest, _ := io.ReadAll(br)
		all.Write(rest)
		sc.body <- all.String()
	}()
	return sc
}

func (sc *streamCall) awaitFirst(t *testing.T) {
	t.Helper()
	select {
	case err := <-sc.first:
		if err != nil {
			t.Fatalf("the stream's first event: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no first event in 30 s")
	}
}

// A streamed miss's request buffer goes back to the pool once its answer
// has begun, not when the stream ends: a stream may last minutes, and an
// agent's request is tens or hundreds of kilobytes. Chat and Responses
// streams (whose answers echo request fields), a body small enough to go
// upstream in one write and one that is not, each held by the provider
// after its first event: the buffer is back while the stream is held; a
// follower that joins then is answered with its own echoed fields; the
// streams complete with their own answers (returned buffers are zeroed in
// this package's tests, so a read of the body after its release shows);
// the answer is stored and the same call is then a hit.
func TestStreamBodyReturnsAtItsFirstEvent(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		size       int
	}{
		{"chat small", "/v1/chat/completions", 200},
		{"chat 40 KB", "/v1/chat/completions", 40 << 10},
		{"responses small", "/v1/responses", 200},
		{"responses 40 KB", "/v1/responses", 40 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &heldUpstream{release: make(chan struct{})}
			srv := httptest.NewServer(up)
			defer srv.Close()
			defer func() {
				select {
				case <-up.release:
				default:
					close(up.release)
				}
			}()
			h := newHarness(t, withUpstream(srv.URL+"/v1", "sk-upstream"))
			tag := strings.ReplaceAll(tc.name, " ", "-")
			body := func(user string) string {
				pad := strings.Repeat("x", max(tc.size-150, 1))
				if tc.path == "/v1/responses" {
					return `{"model":"gpt-4o-mini","stream":true,"user":"` + user + `","tag":"` + tag + `","input":"` + pad + `"}`
				}
				return `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"tag":"` + tag + `","messages":[{"role":"user","content":"` + pad + `"}]}`
			}
			hdr := map[string]string{"Groundhog-Cache": "use"}
			before := gateway.MissBodiesReturned.Load()
			leader := startStream(t, h.URL+tc.path, body("alice"), hdr)
			leader.awaitFirst(t)
			// The provider holds the stream: the buffer must come back now
			// (the transport lets go once it has written the body; wait
			// for it, bounded).
			for deadline := time.Now().Add(10 * time.Second); gateway.MissBodiesReturned.Load()-before < 1 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if n := gateway.MissBodiesReturned.Load() - before; n != 1 {
				t.Fatalf("%d request buffers back in the pool while the stream is held, want 1", n)
			}
			follower := startStream(t, h.URL+tc.path, body("bob"), hdr)
			follower.awaitFirst(t)
			close(up.release)
			lead, follow := <-leader.body, <-follower.body
			if got := leader.res.Header.Get("Groundhog-Cache"); got != "miss" {
				t.Errorf("leader: Groundhog-Cache %q, want miss", got)
			}
			if got := follower.res.Header.Get("Groundhog-Cache"); got != "coalesced" {
				t.Errorf("follower: Groundhog-Cache %q, want coalesced", got)
			}
			for _, s := range []struct{ who, stream, user string }{{"leader", lead, "alice"}, {"follower", follow, "bob"}} {
				if !strings.Contains(s.stream, `answer to `+tag) {
					t.Errorf("%s: the stream does not hold its answer:\n%s", s.who, s.stream)
				}
				if strings.Contains(s.stream, "\x00") {
					t.Errorf("%s: the stream holds bytes of a released buffer:\n%q", s.who, s.stream)
				}
				if tc.path == "/v1/responses" && strings.Count(s.stream, `"user":"`+s.user+`"`) != 2 {
					t.Errorf("%s: want its own user echoed in both response objects:\n%s", s.who, s.stream)
				}
				if tc.path != "/v1/responses" && !strings.HasSuffix(s.stream, "data: [DONE]\n\n") {
					t.Errorf("%s: the stream is not complete:\n%s", s.who, s.stream)
				}
			}
			up.mu.Lock()
			if len(up.bodies) != 1 || !strings.Contains(up.bodies[0], `"tag":"`+tag+`"`) {
				var got []string
				for _, b := range up.bodies {
					got = append(got, b[:min(len(b), 160)])
				}
				t.Errorf("the provider received %d bodies, want the leader's one: %q", len(up.bodies), got)
			}
			up.mu.Unlock()
			res, again := h.post(tc.path, body("alice"), hdr)
			if got := res.Header.Get("Groundhog-Cache"); got != "hit" || !strings.Contains(string(again), `answer to `+tag) {
				t.Errorf("the same call again: Groundhog-Cache %q, body:\n%s", got, again)
			}
			if rows := len(h.ledgerRows()); rows != 3 {
				t.Errorf("%d ledger rows, want 3 (miss, coalesced, hit)", rows)
			}
		})
	}
}
