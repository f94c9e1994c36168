package gateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/gateway"
)

// otherReplicas stands in for the rest of the deployment behind the
// gateway.Flights seam (package distcoalesce is tested against real Redis):
// it either hands back an entry "another replica stored", or lets the call
// run and checks, when done is called, that the result is already in the
// shared cache.
type otherReplicas struct {
	mu        sync.Mutex
	shared    *groundhog.CacheEntry // returned by Lead when set
	followed  bool                  // Lead says shared came from a running flight
	calls     int
	doneCalls int
	storedAt  bool // the entry was in the cache when done ran
	store     func(ctx context.Context, tenant, hash string) bool
}

func (o *otherReplicas) Lead(ctx context.Context, tenant, hash string, lookup func(context.Context) *groundhog.CacheEntry, relay coalesce.Tap) (*groundhog.CacheEntry, bool, coalesce.Sink, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.shared != nil {
		e := *o.shared
		e.Tenant, e.RequestHash = tenant, hash
		return &e, o.followed, endFunc(nil), nil
	}
	return nil, false, endFunc(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.doneCalls++
		o.storedAt = o.store(context.Background(), tenant, hash)
	}), nil
}

// endFunc is a Sink that only counts its End.
type endFunc func()

func (endFunc) Head(int, string, bool) {}
func (endFunc) Event(groundhog.Event)  {}
func (f endFunc) End(*groundhog.Response) {
	if f != nil {
		f()
	}
}

func withFlights(f gateway.Flights) harnessOpt { return func(s *setup) { s.flights = f } }

const flightBody = `{"model":"sim-small","messages":[{"role":"user","content":"flights"}]}`

// A result shared by another replica is served without an upstream call.
// It is accounted as coalesced when the call followed that replica's running
// flight (header, outcome, InFlight, saved = the flight's cost), as a cache
// hit when the flight had already ended.
func TestFlightsSharedResultIsServedWithoutUpstream(t *testing.T) {
	for _, tc := range []struct {
		followed bool
		state    string
		outcome  groundhog.Outcome
	}{
		{true, "coalesced", groundhog.OutcomeCoalesced},
		{false, "hit", groundhog.OutcomeCacheHit},
	} {
		t.Run(tc.state, func(t *testing.T) {
			o := &otherReplicas{followed: tc.followed, shared: &groundhog.CacheEntry{Shape: groundhog.ShapeChat, Response: groundhog.Response{
				Status: 200, ContentType: "application/json", Body: []byte(`{"id":"from-replica-b","object":"chat.completion","choices":[]}`), Cost: 1000}}}
			h := newHarness(t, withFlights(o))
			res, body := h.post("/v1/chat/completions", flightBody, map[string]string{"Groundhog-Cache": "use"})
			if res.StatusCode != 200 || string(body) != string(o.shared.Response.Body) {
				t.Fatalf("status %d body %s, want the other replica's result", res.StatusCode, body)
			}
			if got := res.Header.Get("Groundhog-Cache"); got != tc.state {
				t.Errorf("Groundhog-Cache = %q, want %s", got, tc.state)
			}
			if b := h.bill(); b.Calls != 0 {
				t.Errorf("the sim billed %d calls, want 0", b.Calls)
			}
			rows := h.ledgerRows()
			if len(rows) != 1 {
				t.Fatalf("%d ledger rows, want 1", len(rows))
			}
			r := rows[0]
			if r.Outcome != tc.outcome || r.InFlight != tc.followed || r.Cost != 0 || r.Saved != 1000 || r.FullCost != 1000 {
				t.Errorf("row: outcome %s, in flight %v, cost %d, saved %d, full %d; want %s, %v, 0, 1000, 1000",
					r.Outcome, r.InFlight, r.Cost, r.Saved, r.FullCost, tc.outcome, tc.followed)
			}
		})
	}
}

func TestFlightsDoneAfterTheCacheWrite(t *testing.T) {
	o := &otherReplicas{}
	h := newHarness(t, withFlights(o))
	o.store = func(ctx context.Context, tenant, hash string) bool {
		_, err := h.DB.GetCache(ctx, tenant, hash, time.Now())
		return err == nil
	}
	res, _ := h.post("/v1/chat/completions", flightBody, map[string]string{"Groundhog-Cache": "use"})
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls != 1 || o.doneCalls != 1 || !o.storedAt {
		t.Errorf("Lead %d, done %d, entry stored before done: %v; want 1, 1, true", o.calls, o.doneCalls, o.storedAt)
	}
	if b := h.bill(); b.Calls != 1 {
		t.Errorf("the sim billed %d calls, want 1", b.Calls)
	}
}

// Calls that do not use the cache have no stored result to share: they
// never reach the cross-replica stage.
func TestFlightsOnlyForCacheUsingCalls(t *testing.T) {
	o := &otherReplicas{}
	h := newHarness(t, withFlights(o))
	for _, hdr := range []map[string]string{nil, {"Groundhog-Cache": "bypass"}, {"Groundhog-Cache": "use", "Cache-Control": "no-store"}} {
		if res, _ := h.post("/v1/chat/completions", flightBody, hdr); res.StatusCode != 200 {
			t.Fatalf("%v: status %d", hdr, res.StatusCode)
		}
	}
	if o.calls != 0 {
		t.Errorf("Lead called %d times for calls that do not use the cache", o.calls)
	}
}

// A streaming call that follows another replica's streamed flight relays
// its events and is accounted as coalesced too (the relay path).
func TestFlightsStreamingFollowerIsCoalesced(t *testing.T) {
	chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	o := &otherReplicas{followed: true, shared: &groundhog.CacheEntry{Shape: groundhog.ShapeChat, Response: groundhog.Response{
		Status: 200, ContentType: "text/event-stream", Streamed: true, Cost: 2000,
		Events: []groundhog.Event{{Data: []byte(chunk)}, {Data: []byte("[DONE]")}}}}}
	h := newHarness(t, withFlights(o))
	body := `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"flights"}]}`
	res, got := h.post("/v1/chat/completions", body, map[string]string{"Groundhog-Cache": "use"})
	if res.StatusCode != 200 || !strings.Contains(string(got), `"content":"hi"`) || !strings.Contains(string(got), "data: [DONE]") {
		t.Fatalf("status %d body %s, want the other replica's stream", res.StatusCode, got)
	}
	if st := res.Header.Get("Groundhog-Cache"); st != "coalesced" {
		t.Errorf("Groundhog-Cache = %q, want coalesced", st)
	}
	rows := h.ledgerRows()
	if len(rows) != 1 {
		t.Fatalf("%d ledger rows, want 1", len(rows))
	}
	if r := rows[0]; r.Outcome != groundhog.OutcomeCoalesced || !r.InFlight || r.Cost != 0 || r.Saved != 2000 || !r.Stream {
		t.Errorf("row: outcome %s, in flight %v, cost %d, saved %d, stream %v; want coalesced, true, 0, 2000, true",
			r.Outcome, r.InFlight, r.Cost, r.Saved, r.Stream)
	}
	if b := h.bill(); b.Calls != 0 {
		t.Errorf("the sim billed %d calls, want 0", b.Calls)
	}
}
