package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

const idemBody = `{"model":"sim-small","messages":[{"role":"user","content":"send the invoice"}]}`

// 100 concurrent first requests with one Idempotency-Key → exactly one
// upstream call; every other request gets 409 (with Retry-After) or the
// replay of the one result.
func TestIdempotencyConcurrentFirstRequests(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	const n = 100
	type res struct {
		status   int
		replayed string
		retry    string
		body     string
	}
	out := make([]res, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "inv-1"})
			out[i] = res{r.StatusCode, r.Header.Get("Idempotent-Replayed"), r.Header.Get("Retry-After"), string(b)}
		}(i)
	}
	<-g.arrived // one request holds the lease and is at the provider
	g.open()
	wg.Wait()
	if got := h.bill().Calls; got != 1 {
		t.Fatalf("bill = %d upstream calls, want exactly 1", got)
	}
	var ok, conflict, replayed int
	var winner string
	for _, r := range out {
		switch {
		case r.status == 200 && r.replayed == "":
			ok++
			winner = r.body
		case r.status == 200 && r.replayed == "true":
			replayed++
		case r.status == 409:
			conflict++
			if r.retry == "" {
				t.Fatal("409 without Retry-After")
			}
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	if ok != 1 || conflict+replayed != n-1 {
		t.Fatalf("executed %d, conflict %d, replayed %d", ok, conflict, replayed)
	}
	for _, r := range out {
		if r.replayed == "true" && r.body != winner {
			t.Fatal("a replay differs from the executed result")
		}
	}
	// Every later retry replays the same result.
	r, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "inv-1"})
	if r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "true" || string(b) != winner {
		t.Fatalf("later retry: %d %q", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
}

func TestIdempotencyAnswers(t *testing.T) {
	h := newHarness(t)
	key := func(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }

	// Same key, different payload → 422; the completed result is untouched.
	r1, b1 := h.post("/v1/chat/completions", idemBody, key("k-422"))
	if r1.StatusCode != 200 {
		t.Fatalf("first: %d %s", r1.StatusCode, b1)
	}
	other := `{"model":"sim-small","messages":[{"role":"user","content":"something else"}]}`
	r, b := h.post("/v1/chat/completions", other, key("k-422"))
	if r.StatusCode != 422 || errorType(t, b) == "" {
		t.Fatalf("mismatched payload: %d %s", r.StatusCode, b)
	}
	r, b = h.post("/v1/chat/completions", idemBody, key("k-422"))
	if r.StatusCode != 200 || string(b) != string(b1) || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after 422 the stored result changed: %d", r.StatusCode)
	}
	if h.bill().Calls != 1 {
		t.Fatalf("bill %d, want 1", h.bill().Calls)
	}

	// Terminal failure (provider 4xx) is stored and replayed.
	r, b = h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "k-400", "Sim-Fault": "status=400"})
	if r.StatusCode != 400 {
		t.Fatalf("provider 400: %d %s", r.StatusCode, b)
	}
	before := h.bill().Calls
	r2, b2 := h.post("/v1/chat/completions", idemBody, key("k-400"))
	if r2.StatusCode != 400 || r2.Header.Get("Idempotent-Replayed") != "true" || string(b2) != string(b) {
		t.Fatalf("terminal failure not replayed: %d %q", r2.StatusCode, r2.Header.Get("Idempotent-Replayed"))
	}
	if h.bill().Calls != before {
		t.Fatal("replay of a terminal failure reached the provider")
	}

	// Retryable failure (503) releases the record: the next retry runs
	// exactly once and is recorded as attempt 2.
	r, _ = h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "k-503", "Sim-Fault": "status=503"})
	if r.StatusCode != 503 {
		t.Fatalf("provider 503: %d", r.StatusCode)
	}
	before = h.bill().Calls
	r, _ = h.post("/v1/chat/completions", idemBody, key("k-503"))
	if r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after a retryable failure: %d replayed=%q", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	r, _ = h.post("/v1/chat/completions", idemBody, key("k-503"))
	if r.Header.Get("Idempotent-Replayed") != "true" || h.bill().Calls != before+1 {
		t.Fatalf("the retry ran %d times", h.bill().Calls-before)
	}
	op, err := h.DB.GetOperationByKey(context.Background(), groundhog.LocalTenant, "k-503")
	if err != nil || op.Attempts != 2 || op.Status != groundhog.StatusCompleted {
		t.Fatalf("record after release and retry: %+v %v", op, err)
	}

	// Same key under two tenants: two independent executions.
	ctx := context.Background()
	secrets := map[string]string{}
	for _, tenant := range []string{"a", "b"} {
		s, k := groundhog.NewAPIKey(tenant, time.Now())
		if err := h.DB.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		secrets[tenant] = s
	}
	before = h.bill().Calls
	for _, tenant := range []string{"a", "b"} {
		r, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "shared", "Authorization": "Bearer " + secrets[tenant]})
		if r.StatusCode != 200 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("tenant %s: %d %s", tenant, r.StatusCode, b)
		}
	}
	if h.bill().Calls != before+2 {
		t.Fatalf("two tenants with one key: %d upstream calls, want 2", h.bill().Calls-before)
	}

	// Kept apart from the cache: one payload under two keys runs twice when
	// the cache is off; a new key with refresh always processes anew.
	auth := map[string]string{"Authorization": "Bearer " + secrets["a"]}
	before = h.bill().Calls
	for _, k := range []string{"x1", "x2"} {
		hdr := map[string]string{"Idempotency-Key": k, "Authorization": auth["Authorization"]}
		if r, b := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"two keys"}]}`, hdr); r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", k, r.StatusCode, b)
		}
	}
	if h.bill().Calls != before+2 {
		t.Fatalf("same payload, two keys, cache off: %d upstream calls, want 2", h.bill().Calls-before)
	}
	before = h.bill().Calls
	hdr := map[string]string{"Idempotency-Key": "x3", "Groundhog-Cache": "refresh", "Authorization": auth["Authorization"]}
	if r, _ := h.post("/v1/chat/completions", `{"model":"sim-small","messages":[{"role":"user","content":"two keys"}]}`, hdr); r.StatusCode != 200 || h.bill().Calls != before+1 {
		t.Fatalf("new key with refresh did not process anew")
	}
}

// The store unavailable → 503 and no upstream call: never execute without
// a record.
func TestIdempotencyStoreUnavailable(t *testing.T) {
	h := newHarness(t)
	if err := h.DB.Close(); err != nil {
		t.Fatal(err)
	}
	r, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "k"})
	if r.StatusCode != http.StatusServiceUnavailable || errorType(t, b) == "" {
		t.Fatalf("closed store: %d %s", r.StatusCode, b)
	}
	if h.bill().Calls != 0 {
		t.Fatal("executed without a record")
	}
}

// Prefer: wait=<s> waits for the running operation and replays its result.
func TestIdempotencyPreferWait(t *testing.T) {
	g := newGate()
	h := newHarness(t, withGate(g))
	first := make(chan []byte, 1)
	go func() {
		_, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "w"})
		first <- b
	}()
	<-g.arrived
	waited := make(chan struct {
		r *http.Response
		b []byte
	}, 1)
	go func() {
		r, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "w", "Prefer": "wait=30"})
		waited <- struct {
			r *http.Response
			b []byte
		}{r, b}
	}()
	// The waiter is parked on the running record; release the provider.
	r, b := h.post("/v1/chat/completions", idemBody, map[string]string{"Idempotency-Key": "w"})
	if r.StatusCode != 409 {
		t.Fatalf("without Prefer: %d %s", r.StatusCode, b)
	}
	g.open()
	fb := <-first
	w := <-waited
	if w.r.StatusCode != 200 || w.r.Header.Get("Idempotent-Replayed") != "true" || string(w.b) != string(fb) {
		t.Fatalf("Prefer: wait: %d replayed=%q", w.r.StatusCode, w.r.Header.Get("Idempotent-Replayed"))
	}
	if h.bill().Calls != 1 {
		t.Fatalf("bill %d", h.bill().Calls)
	}
	_ = fmt.Sprint()
}
