package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/wire"
)

// responseEcho is what a Responses answer echoes of its request.
type responseEcho struct {
	ID       string            `json:"id"`
	User     *string           `json:"user"`
	Metadata map[string]string `json:"metadata"`
	Store    *bool             `json:"store"`
}

func echoOfBody(t *testing.T, b []byte) responseEcho {
	t.Helper()
	var e responseEcho
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return e
}

// echoOfStream reads the response object of a Responses stream's
// response.completed event.
func echoOfStream(t *testing.T, b []byte) responseEcho {
	t.Helper()
	rd := wire.NewSSEReader(strings.NewReader(string(b)))
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("no response.completed in %q: %v", b, err)
		}
		var e struct {
			Type     string       `json:"type"`
			Response responseEcho `json:"response"`
		}
		if json.Unmarshal(ev.Data, &e) == nil && e.Type == "response.completed" {
			return e.Response
		}
	}
}

// A Responses cache hit (body or stream) and a replay
// echo the current caller's user and metadata, never the caller's whose
// answer was stored; store is part of the key, so a store:true caller never
// gets the answer of a store:false call.
func TestResponsesHitsEchoTheCurrentCaller(t *testing.T) {
	h := newHarness(t)
	use := map[string]string{"Groundhog-Cache": "use"}
	alice := `{"model":"sim-small","input":"tell me","user":"alice-user-1","metadata":{"owner":"alice-user-1"},"store":false}`
	carol := `{"model":"sim-small","input":"tell me","user":"carol-user-2","metadata":{"owner":"carol-user-2"},"store":false}`
	r, b := h.post("/v1/responses", alice, use)
	if r.StatusCode != 200 {
		t.Fatalf("alice: %d %s", r.StatusCode, b)
	}
	first := echoOfBody(t, b)
	if first.User == nil || *first.User != "alice-user-1" {
		t.Fatalf("the sim does not echo user: %s", b)
	}
	r, b = h.post("/v1/responses", carol, use)
	got := echoOfBody(t, b)
	if r.Header.Get("Groundhog-Cache") != "hit" || got.ID != first.ID {
		t.Fatalf("carol: %q id %s (want a hit of %s)", r.Header.Get("Groundhog-Cache"), got.ID, first.ID)
	}
	if got.User == nil || *got.User != "carol-user-2" || got.Metadata["owner"] != "carol-user-2" {
		t.Errorf("body hit echoes user %v metadata %v, want carol's", deref(got.User), got.Metadata)
	}
	// Where the stored answer holds these fields is remembered from the
	// first hit: every later caller still gets its own values, alice hers
	// back, carol hers again.
	for _, again := range []struct{ body, user string }{{alice, "alice-user-1"}, {carol, "carol-user-2"}, {alice, "alice-user-1"}} {
		r, b = h.post("/v1/responses", again.body, use)
		got = echoOfBody(t, b)
		if r.Header.Get("Groundhog-Cache") != "hit" || got.ID != first.ID || deref(got.User) != again.user || got.Metadata["owner"] != again.user {
			t.Errorf("a later hit %q (id %s) echoes user %v metadata %v, want %s's", r.Header.Get("Groundhog-Cache"), got.ID, deref(got.User), got.Metadata, again.user)
		}
	}
	// The same question spelled otherwise — the echoed fields first,
	// spaced, a key escaped, after a long input — is a hit too, and echoes
	// this caller's values as it spelled them.
	long := strings.Repeat("tell me more about it. ", 40)
	r, _ = h.post("/v1/responses", `{"model":"sim-small","input":"`+long+`","user":"dave-1","store":false}`, use)
	if r.Header.Get("Groundhog-Cache") != "miss" {
		t.Fatalf("long input: %q, want a miss", r.Header.Get("Groundhog-Cache"))
	}
	dave := `{ "metadata" : { "owner" : "dave-2" } , "us\u0065r":"dave-2", "store":false,"input":"` + long + `", "model":"sim-small" }`
	r, b = h.post("/v1/responses", dave, use)
	got = echoOfBody(t, b)
	if r.Header.Get("Groundhog-Cache") != "hit" || deref(got.User) != "dave-2" || got.Metadata["owner"] != "dave-2" {
		t.Errorf("spelled otherwise: %q echoes user %v metadata %v, want dave-2's", r.Header.Get("Groundhog-Cache"), deref(got.User), got.Metadata)
	}
	stream := strings.Replace(carol, `"input"`, `"stream":true,"input"`, 1)
	r, b = h.post("/v1/responses", stream, use)
	got = echoOfStream(t, b)
	if r.Header.Get("Groundhog-Cache") != "hit" || got.User == nil || *got.User != "carol-user-2" || got.Metadata["owner"] != "carol-user-2" {
		t.Errorf("stream hit %q echoes user %v metadata %v, want carol's", r.Header.Get("Groundhog-Cache"), deref(got.User), got.Metadata)
	}
	// store joins the key: a store:true caller is never answered with the
	// id of a response the provider was told not to keep.
	stored := strings.Replace(carol, `"store":false`, `"store":true`, 1)
	r, b = h.post("/v1/responses", stored, use)
	got = echoOfBody(t, b)
	if r.Header.Get("Groundhog-Cache") != "miss" || got.ID == first.ID || got.Store == nil || !*got.Store {
		t.Errorf("store:true after store:false: %q id %s store %v", r.Header.Get("Groundhog-Cache"), got.ID, got.Store)
	}
	// A replay with the same key but another end-user id echoes its own.
	idem := map[string]string{"Idempotency-Key": "echo-1"}
	h.post("/v1/responses", alice, idem)
	r, b = h.post("/v1/responses", carol, idem)
	got = echoOfBody(t, b)
	if r.Header.Get("Idempotent-Replayed") != "true" || got.User == nil || *got.User != "carol-user-2" {
		t.Errorf("replay %q echoes user %v", r.Header.Get("Idempotent-Replayed"), deref(got.User))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A follower of another caller's flight gets
// its own echoed fields, streamed live and as a body.
func TestCoalescedAnswersEchoTheCurrentCaller(t *testing.T) {
	for _, stream := range []bool{true, false} {
		g := newGate()
		h := newHarness(t, withGate(g))
		use := map[string]string{"Groundhog-Cache": "use"}
		s := ""
		if stream {
			s = `"stream":true,`
		}
		alice := `{"model":"sim-small",` + s + `"input":"together","user":"alice-user-1","metadata":{"owner":"alice-user-1"}}`
		carol := `{"model":"sim-small",` + s + `"input":"together","user":"carol-user-2","metadata":{"owner":"carol-user-2"}}`
		hash := hashOf(t, "responses", alice)
		leader := make(chan []byte, 1)
		go func() { _, b := h.post("/v1/responses", alice, use); leader <- b }()
		<-g.arrived
		type answer struct {
			r *http.Response
			b []byte
		}
		follower := make(chan answer, 1)
		go func() { r, b := h.post("/v1/responses", carol, use); follower <- answer{r, b} }()
		waitFor(t, func() bool { return h.GW.Followers("local", hash) == 1 })
		g.open()
		lb, fa := <-leader, <-follower
		read := echoOfBody
		if stream {
			read = echoOfStream
		}
		le, fe := read(t, lb), read(t, fa.b)
		if fa.r.Header.Get("Groundhog-Cache") != "coalesced" || le.ID != fe.ID {
			t.Fatalf("stream=%v: follower %q ids %s %s", stream, fa.r.Header.Get("Groundhog-Cache"), le.ID, fe.ID)
		}
		if deref(le.User) != "alice-user-1" || deref(fe.User) != "carol-user-2" || fe.Metadata["owner"] != "carol-user-2" {
			t.Errorf("stream=%v: leader user %s, follower user %s metadata %v", stream, deref(le.User), deref(fe.User), fe.Metadata)
		}
	}
}
