package idempotency_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// api is the tool operations API served over real HTTP in front of env.
type api struct {
	*env
	srv *httptest.Server
}

// testAuth stands in for the gateway's authenticate: two tenants, a key
// whose store is down, and 401 for anything else.
func testAuth(r *http.Request) (string, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer key-a":
		return tenantA, nil
	case "Bearer key-b":
		return tenantB, nil
	case "Bearer key-down":
		return "", groundhog.Errorf(groundhog.EUNAVAILABLE, "key store unavailable")
	case "":
		return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "missing gateway key")
	}
	return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "unknown gateway key")
}

func newAPI(t *testing.T) *api {
	t.Helper()
	e := newEnv(t)
	mux := http.NewServeMux()
	h := e.svc.Handler(testAuth)
	mux.Handle(idempotency.OperationsPath, h)
	mux.Handle(idempotency.OperationsPath+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &api{env: e, srv: srv}
}

// reply is an answer of the API, its body decoded as a record or an error.
type reply struct {
	status int
	header http.Header
	raw    []byte
	rec    struct {
		ID             string          `json:"id"`
		Key            string          `json:"key"`
		Status         string          `json:"status"`
		FencingToken   int64           `json:"fencing_token"`
		LeaseExpiresAt *time.Time      `json:"lease_expires_at"`
		Attempts       int             `json:"attempts"`
		Result         json.RawMessage `json:"result"`
		Error          *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// call sends one request and fails the test on a transport error or a
// body that is not JSON. body is sent as is when it is a string or []byte,
// else JSON-encoded. hdr are header name/value pairs that override the
// defaults (Authorization: Bearer <apiKey>, Content-Type: application/json);
// an empty value deletes the header. Only the test goroutine may use it;
// other goroutines use try.
func (a *api) call(t *testing.T, method, path, apiKey string, body any, hdr ...string) reply {
	t.Helper()
	r, err := a.try(method, path, apiKey, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// try is call without the test: it reports problems as an error.
func (a *api) try(method, path, apiKey string, body any, hdr ...string) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		return reply{}, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	r := reply{status: res.StatusCode, header: res.Header}
	if r.raw, err = io.ReadAll(res.Body); err != nil {
		return reply{}, err
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		return reply{}, fmt.Errorf("%s %s: Content-Type %q, body %s", method, path, ct, r.raw)
	}
	if err := json.Unmarshal(r.raw, &r.rec); err != nil {
		return reply{}, fmt.Errorf("%s %s: body %s: %w", method, path, r.raw, err)
	}
	return r, nil
}

// goBegin POSTs a begin from another goroutine and delivers the reply.
func (a *api) goBegin(t *testing.T, apiKey, key string, payload any, hdr ...string) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		r, err := a.try("POST", opsPath, apiKey, map[string]any{"key": key, "payload": payload}, hdr...)
		if err != nil {
			t.Error(err)
		}
		ch <- r
	}()
	return ch
}

// want fails unless the reply has status (and, for an error, type).
func (r reply) want(t *testing.T, status int, errType string) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.raw)
	}
	if errType != "" && (r.rec.Error == nil || r.rec.Error.Type != errType || r.rec.Error.Message == "") {
		t.Fatalf("error %s, want type %q", r.raw, errType)
	}
	if errType == "" && r.rec.Error != nil {
		t.Fatalf("unexpected error %s", r.raw)
	}
	return r
}

const opsPath = idempotency.OperationsPath

func (a *api) begin(t *testing.T, apiKey, key string, payload any, hdr ...string) reply {
	t.Helper()
	return a.call(t, "POST", opsPath, apiKey, map[string]any{"key": key, "payload": payload}, hdr...)
}

func (a *api) write(t *testing.T, apiKey, id, action string, body map[string]any) reply {
	t.Helper()
	return a.call(t, "POST", opsPath+"/"+id+"/"+action, apiKey, body)
}

func (a *api) get(t *testing.T, apiKey, id string) reply {
	t.Helper()
	return a.call(t, "GET", opsPath+"/"+id, apiKey, nil)
}

func sameJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(g)
	wj, _ := json.Marshal(w)
	if !bytes.Equal(gj, wj) {
		t.Fatalf("result %s, want %s", got, want)
	}
}

func wantReplay(t *testing.T, r reply, status, result string) {
	t.Helper()
	r.want(t, http.StatusOK, "")
	if r.header.Get("Idempotent-Replayed") != "true" || r.rec.Status != status {
		t.Fatalf("not a replay of a %s record: %v %s", status, r.header, r.raw)
	}
	sameJSON(t, r.rec.Result, result)
}

var email = map[string]any{"to": "ada@example.com", "subject": "hi", "n": 1}

// Test 1 over HTTP: 100 concurrent POSTs with one key → one 201; the
// others 409 or, after the winner completed, the replay.
func TestHTTPConcurrentBegin(t *testing.T) {
	a := newAPI(t)
	const n = 100
	start := make(chan struct{})
	var (
		wg     sync.WaitGroup
		counts = map[int]int{}
	)
	replies := make(chan reply, n)
	for range n {
		wg.Go(func() {
			<-start
			r, err := a.try("POST", opsPath, "key-a", map[string]any{"key": "k", "payload": email})
			if err != nil {
				t.Error(err)
				return
			}
			if r.status == http.StatusCreated {
				// The one execution: finish at once, so later requests
				// see the replay.
				c, err := a.try("POST", opsPath+"/"+r.rec.ID+"/complete", "key-a",
					map[string]any{"fencing_token": r.rec.FencingToken, "result": map[string]any{"sent": true}})
				if err != nil || c.status != http.StatusOK {
					t.Errorf("complete: %v %s", err, c.raw)
				}
			}
			replies <- r
		})
	}
	close(start)
	wg.Wait()
	close(replies)
	for r := range replies {
		switch r.status {
		case http.StatusOK:
			wantReplay(t, r, "completed", `{"sent":true}`)
		case http.StatusConflict:
			r.want(t, http.StatusConflict, "operation_in_progress")
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
			}
		}
		counts[r.status]++
	}
	if counts[http.StatusCreated] != 1 || counts[http.StatusOK]+counts[http.StatusConflict] != n-1 {
		t.Fatalf("statuses %v, want one 201 and %d 200/409", counts, n-1)
	}
	t.Logf("statuses: %v", counts)
}

// Test 2 over HTTP: 422 and nothing changed, on a completed record and on
// a live lease.
func TestHTTPMismatch(t *testing.T) {
	a := newAPI(t)
	claim := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	before := a.get(t, "key-a", claim.rec.ID)
	a.begin(t, "key-a", "k", map[string]any{"to": "eve@example.com"}).want(t, http.StatusUnprocessableEntity, "mismatch")
	if after := a.get(t, "key-a", claim.rec.ID); !bytes.Equal(after.raw, before.raw) {
		t.Fatalf("record changed: %s → %s", before.raw, after.raw)
	}
	a.write(t, "key-a", claim.rec.ID, "complete", map[string]any{"fencing_token": claim.rec.FencingToken, "result": "sent"}).
		want(t, http.StatusOK, "")
	before = a.get(t, "key-a", claim.rec.ID)
	a.call(t, "POST", opsPath, "key-a", map[string]any{"key": "k", "request_hash": hash2}).want(t, http.StatusUnprocessableEntity, "mismatch")
	if after := a.get(t, "key-a", claim.rec.ID); !bytes.Equal(after.raw, before.raw) {
		t.Fatalf("record changed: %s → %s", before.raw, after.raw)
	}
	wantReplay(t, a.begin(t, "key-a", "k", email), "completed", `"sent"`)
}

// Test 3 over HTTP: one key, two tenants, two executions; neither sees
// nor writes the other's record.
func TestHTTPTenants(t *testing.T) {
	a := newAPI(t)
	ra := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	rb := a.begin(t, "key-b", "k", email).want(t, http.StatusCreated, "")
	if ra.rec.ID == rb.rec.ID {
		t.Fatal("one record for two tenants")
	}
	a.get(t, "key-b", ra.rec.ID).want(t, http.StatusNotFound, "not_found")
	a.write(t, "key-b", ra.rec.ID, "complete", map[string]any{"fencing_token": ra.rec.FencingToken, "result": "x"}).
		want(t, http.StatusNotFound, "not_found")
	a.write(t, "key-b", ra.rec.ID, "renew", map[string]any{"fencing_token": ra.rec.FencingToken}).
		want(t, http.StatusNotFound, "not_found")
	a.write(t, "key-a", ra.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": "a"}).want(t, http.StatusOK, "")
	a.write(t, "key-b", rb.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": "b"}).want(t, http.StatusOK, "")
	wantReplay(t, a.begin(t, "key-a", "k", email), "completed", `"a"`)
	wantReplay(t, a.begin(t, "key-b", "k", email), "completed", `"b"`)
}

// Test 5 over HTTP: lease expiry and takeover, to the nanosecond.
func TestHTTPLeaseExpiry(t *testing.T) {
	a := newAPI(t)
	first := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	if !first.rec.LeaseExpiresAt.Equal(t0.Add(lease)) || first.rec.Attempts != 1 || first.rec.FencingToken != 1 || first.rec.Status != "running" {
		t.Fatalf("claim %s", first.raw)
	}
	if loc := first.header.Get("Location"); loc != opsPath+"/"+first.rec.ID {
		t.Fatalf("Location %q", loc)
	}
	busy := a.begin(t, "key-a", "k", email).want(t, http.StatusConflict, "operation_in_progress")
	if busy.header.Get("Retry-After") != "30" || !busy.rec.LeaseExpiresAt.Equal(t0.Add(lease)) || busy.rec.ID != first.rec.ID {
		t.Fatalf("409: Retry-After %q, body %s", busy.header.Get("Retry-After"), busy.raw)
	}
	a.clock.Set(t0.Add(lease - time.Nanosecond))
	busy = a.begin(t, "key-a", "k", email).want(t, http.StatusConflict, "operation_in_progress")
	if busy.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q 1ns before expiry", busy.header.Get("Retry-After"))
	}
	a.clock.Set(t0.Add(lease)) // expires at the moment of the request
	second := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	if second.rec.ID != first.rec.ID || second.rec.FencingToken != 2 || second.rec.Attempts != 2 {
		t.Fatalf("takeover %s", second.raw)
	}
}

// Tests 6 and 7 over HTTP: after a takeover the old token's complete,
// fail, retryable fail and renew answer 409 stale_token and change nothing;
// the replay is the new holder's result.
func TestHTTPStaleWrites(t *testing.T) {
	for _, tc := range []struct {
		action string
		body   map[string]any
	}{
		{"complete", map[string]any{"fencing_token": 1, "result": "a"}},
		{"fail", map[string]any{"fencing_token": 1, "result": "a failed"}},
		{"fail", map[string]any{"fencing_token": 1, "retryable": true}},
		{"renew", map[string]any{"fencing_token": 1}},
	} {
		t.Run(tc.action, func(t *testing.T) {
			a := newAPI(t)
			first := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
			a.clock.Advance(lease)
			second := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
			before := a.get(t, "key-a", first.rec.ID)
			a.write(t, "key-a", first.rec.ID, tc.action, tc.body).want(t, http.StatusConflict, "stale_token")
			if after := a.get(t, "key-a", first.rec.ID); !bytes.Equal(after.raw, before.raw) {
				t.Fatalf("stale %s changed the record: %s → %s", tc.action, before.raw, after.raw)
			}
			a.write(t, "key-a", second.rec.ID, "complete", map[string]any{"fencing_token": 2, "result": "b"}).want(t, http.StatusOK, "")
			a.write(t, "key-a", first.rec.ID, tc.action, tc.body).want(t, http.StatusConflict, "stale_token")
			wantReplay(t, a.begin(t, "key-a", "k", email), "completed", `"b"`)
		})
	}
}

// Test 8 over HTTP: a terminal failure is replayed; a retryable one puts
// the record back to pending and the next POST runs it (attempt 2), once.
func TestHTTPFailureClasses(t *testing.T) {
	a := newAPI(t)
	r := a.begin(t, "key-a", "terminal", email).want(t, http.StatusCreated, "")
	failed := a.write(t, "key-a", r.rec.ID, "fail", map[string]any{"fencing_token": 1, "result": map[string]any{"error": "mailbox does not exist"}}).
		want(t, http.StatusOK, "")
	if failed.rec.Status != "failed" {
		t.Fatalf("fail → %s", failed.raw)
	}
	for range 2 {
		wantReplay(t, a.begin(t, "key-a", "terminal", email), "failed", `{"error":"mailbox does not exist"}`)
	}

	r = a.begin(t, "key-a", "retryable", email).want(t, http.StatusCreated, "")
	released := a.write(t, "key-a", r.rec.ID, "fail", map[string]any{"fencing_token": 1, "retryable": true}).want(t, http.StatusOK, "")
	if released.rec.Status != "pending" || released.rec.LeaseExpiresAt != nil {
		t.Fatalf("retryable fail → %s", released.raw)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created []reply
	)
	for range 10 {
		wg.Go(func() {
			r, err := a.try("POST", opsPath, "key-a", map[string]any{"key": "retryable", "payload": email})
			switch {
			case err != nil:
				t.Error(err)
			case r.status == http.StatusCreated:
				mu.Lock()
				created = append(created, r)
				mu.Unlock()
			case r.status != http.StatusConflict:
				t.Errorf("status %d %s", r.status, r.raw)
			}
		})
	}
	wg.Wait()
	if len(created) != 1 || created[0].rec.Attempts != 2 || created[0].rec.FencingToken != 2 {
		t.Fatalf("%d claims after a release: %v", len(created), created)
	}
}

// Test 9 over HTTP: retention boundaries.
func TestHTTPRetention(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     time.Duration
		status int
	}{
		{"1ns before", retention - time.Nanosecond, http.StatusOK},
		{"at", retention, http.StatusCreated},
		{"after", retention + time.Hour, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPI(t)
			r := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
			a.write(t, "key-a", r.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": 1}).want(t, http.StatusOK, "")
			a.clock.Set(t0.Add(tc.at))
			again := a.begin(t, "key-a", "k", email).want(t, tc.status, "")
			if tc.status == http.StatusOK {
				wantReplay(t, again, "completed", `1`)
				return
			}
			if again.rec.ID == r.rec.ID || again.rec.FencingToken != 2 || again.rec.Attempts != 1 {
				t.Fatalf("new execution %s after %s", again.raw, r.raw)
			}
		})
	}
}

// Test 10 over HTTP: store down → 503 on every route; auth down → 503.
func TestHTTPStoreUnavailable(t *testing.T) {
	a := newAPI(t)
	r := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	a.begin(t, "key-down", "k", email).want(t, http.StatusServiceUnavailable, "unavailable")
	if err := a.db.Close(); err != nil {
		t.Fatal(err)
	}
	a.begin(t, "key-a", "k2", email).want(t, http.StatusServiceUnavailable, "unavailable")
	a.get(t, "key-a", r.rec.ID).want(t, http.StatusServiceUnavailable, "unavailable")
	for action, body := range map[string]map[string]any{
		"renew":    {"fencing_token": 1},
		"complete": {"fencing_token": 1, "result": 1},
		"fail":     {"fencing_token": 1, "result": 1},
	} {
		a.write(t, "key-a", r.rec.ID, action, body).want(t, http.StatusServiceUnavailable, "unavailable")
	}
}

// Prefer: wait=<s> waits for the running operation and answers with its
// result, or claims it when its lease runs out; without the header (or
// with wait=0) the answer is an immediate 409.
func TestHTTPPreferWait(t *testing.T) {
	t.Run("completion", func(t *testing.T) {
		a := newAPI(t)
		r := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
		a.begin(t, "key-a", "k", email, "Prefer", "wait=0").want(t, http.StatusConflict, "operation_in_progress")
		done := a.goBegin(t, "key-a", "k", email, "Prefer", "respond-async, wait=10")
		a.clock.waitTimers(t, 50*time.Millisecond, 1)
		reads := a.store.reads.Load()
		a.write(t, "key-a", r.rec.ID, "complete", map[string]any{"fencing_token": 1, "result": "sent"}).want(t, http.StatusOK, "")
		wantReplay(t, recv(t, done), "completed", `"sent"`)
		// The complete handler read the record before and after its write;
		// the waiter, woken in process, once more: no polling.
		if got := a.store.reads.Load() - reads; got != 3 {
			t.Fatalf("%d store reads between the completion and the answer, want 3", got)
		}
	})
	t.Run("lease expiry", func(t *testing.T) {
		a := newAPI(t)
		a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
		done := a.goBegin(t, "key-a", "k", email, "Prefer", "wait=60")
		a.clock.waitTimers(t, 50*time.Millisecond, 1)
		a.clock.Advance(lease)
		r := recv(t, done).want(t, http.StatusCreated, "")
		if r.rec.FencingToken != 2 || r.rec.Attempts != 2 {
			t.Fatalf("takeover after wait %s", r.raw)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		a := newAPI(t)
		a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
		done := a.goBegin(t, "key-a", "k", email, "Prefer", "wait=1")
		for _, d := range []time.Duration{50, 100, 200, 400} { // the poll backs off
			a.clock.waitTimers(t, d*time.Millisecond, 1)
			a.clock.Advance(d * time.Millisecond)
		}
		a.clock.waitTimers(t, 250*time.Millisecond, 1) // the rest of the second
		a.clock.Advance(250 * time.Millisecond)
		recv(t, done).want(t, http.StatusConflict, "operation_in_progress")
	})
}

// Renew moves the lease to now + Lease: the record survives its first
// lease.
func TestHTTPRenew(t *testing.T) {
	a := newAPI(t)
	r := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	a.clock.Advance(20 * time.Second)
	renewed := a.write(t, "key-a", r.rec.ID, "renew", map[string]any{"fencing_token": 1}).want(t, http.StatusOK, "")
	if !renewed.rec.LeaseExpiresAt.Equal(t0.Add(50*time.Second)) || renewed.rec.FencingToken != 1 {
		t.Fatalf("renewed %s", renewed.raw)
	}
	a.clock.Set(t0.Add(lease))
	a.begin(t, "key-a", "k", email).want(t, http.StatusConflict, "operation_in_progress")
	got := a.get(t, "key-a", r.rec.ID).want(t, http.StatusOK, "")
	if got.rec.Key != "k" || got.rec.Status != "running" || got.rec.Result != nil {
		t.Fatalf("GET %s", got.raw)
	}
}

// A payload is hashed canonically: key order, whitespace and number
// spelling do not matter, and request_hash computed with PayloadHash names
// the same operation.
func TestHTTPPayloadCanonical(t *testing.T) {
	a := newAPI(t)
	a.call(t, "POST", opsPath, "key-a", `{"key":"k","payload":{"to":"ada@example.com","n":1.0}}`).want(t, http.StatusCreated, "")
	a.call(t, "POST", opsPath, "key-a", "{\"payload\": { \"n\": 1,\n \"to\": \"ada@example.com\" }, \"key\": \"k\"}").
		want(t, http.StatusConflict, "operation_in_progress")
	h, err := idempotency.PayloadHash([]byte(`{"n":1,"to":"ada@example.com"}`))
	if err != nil {
		t.Fatal(err)
	}
	a.call(t, "POST", opsPath, "key-a", map[string]any{"key": "k", "request_hash": h}).want(t, http.StatusConflict, "operation_in_progress")
	a.call(t, "POST", opsPath, "key-a", `{"key":"k","payload":{"n":2,"to":"ada@example.com"}}`).want(t, http.StatusUnprocessableEntity, "mismatch")
}

func TestHTTPBadInput(t *testing.T) {
	a := newAPI(t)
	r := a.begin(t, "key-a", "k", email).want(t, http.StatusCreated, "")
	id := r.rec.ID
	big := `{"key":"k","payload":"` + strings.Repeat("x", idempotency.MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, method, path, apiKey string
		body                       any
		hdr                        []string
		status                     int
		errType                    string
	}{
		{"malformed JSON", "POST", opsPath, "key-a", `{"key":"k",`, nil, 400, "invalid"},
		{"empty body", "POST", opsPath, "key-a", ``, nil, 400, "invalid"},
		{"array body", "POST", opsPath, "key-a", `[{"key":"k","payload":1}]`, nil, 400, "invalid"},
		{"trailing data", "POST", opsPath, "key-a", `{"key":"k","payload":1} {}`, nil, 400, "invalid"},
		{"missing key", "POST", opsPath, "key-a", `{"payload":1}`, nil, 400, "invalid"},
		{"null key", "POST", opsPath, "key-a", `{"key":null,"payload":1}`, nil, 400, "invalid"},
		{"empty key", "POST", opsPath, "key-a", `{"key":"","payload":1}`, nil, 400, "invalid"},
		{"key of 256 chars", "POST", opsPath, "key-a", `{"key":"` + strings.Repeat("k", 256) + `","payload":1}`, nil, 400, "invalid"},
		{"non-ASCII key", "POST", opsPath, "key-a", `{"key":"clé","payload":1}`, nil, 400, "invalid"},
		{"key with a space", "POST", opsPath, "key-a", `{"key":"a b","payload":1}`, nil, 400, "invalid"},
		{"key not a string", "POST", opsPath, "key-a", `{"key":5,"payload":1}`, nil, 400, "invalid"},
		{"hash not a string", "POST", opsPath, "key-a", `{"key":"k","request_hash":5}`, nil, 400, "invalid"},
		{"hash malformed", "POST", opsPath, "key-a", `{"key":"k","request_hash":"md5:abc"}`, nil, 400, "invalid"},
		{"hash and payload", "POST", opsPath, "key-a", `{"key":"k","request_hash":"` + hash1 + `","payload":1}`, nil, 400, "invalid"},
		{"neither hash nor payload", "POST", opsPath, "key-a", `{"key":"k"}`, nil, 400, "invalid"},
		{"unknown field", "POST", opsPath, "key-a", `{"key":"k","payload":1,"lease":60}`, nil, 400, "invalid"},
		{"body over 1 MiB", "POST", opsPath, "key-a", big, nil, 413, "too_large"},
		{"wrong content type", "POST", opsPath, "key-a", `{"key":"k","payload":1}`, []string{"Content-Type", "text/plain"}, 415, "media_type"},
		{"no content type", "POST", opsPath, "key-a", `{"key":"k","payload":1}`, []string{"Content-Type", ""}, 415, "media_type"},
		{"no auth", "POST", opsPath, "", `{"key":"k","payload":1}`, nil, 401, "unauthorized"},
		{"unknown auth", "POST", opsPath, "key-zzz", `{"key":"k","payload":1}`, nil, 401, "unauthorized"},
		{"no auth on GET", "GET", opsPath + "/" + id, "", nil, nil, 401, "unauthorized"},
		{"unknown id", "GET", opsPath + "/nope", "key-a", nil, nil, 404, "not_found"},
		{"other tenant's id", "GET", opsPath + "/" + id, "key-b", nil, nil, 404, "not_found"},
		{"unknown id complete", "POST", opsPath + "/nope/complete", "key-a", `{"fencing_token":1,"result":1}`, nil, 404, "not_found"},
		{"unknown action", "POST", opsPath + "/" + id + "/explode", "key-a", `{"fencing_token":1}`, nil, 404, "not_found"},
		{"too deep a path", "GET", opsPath + "/" + id + "/renew/x", "key-a", nil, nil, 404, "not_found"},
		{"GET on collection", "GET", opsPath, "key-a", nil, nil, 405, "method_not_allowed"},
		{"DELETE on record", "DELETE", opsPath + "/" + id, "key-a", nil, nil, 405, "method_not_allowed"},
		{"GET on renew", "GET", opsPath + "/" + id + "/renew", "key-a", nil, nil, 405, "method_not_allowed"},
		{"token missing", "POST", opsPath + "/" + id + "/renew", "key-a", `{}`, nil, 400, "invalid"},
		{"token a string", "POST", opsPath + "/" + id + "/renew", "key-a", `{"fencing_token":"1"}`, nil, 400, "invalid"},
		{"token zero", "POST", opsPath + "/" + id + "/renew", "key-a", `{"fencing_token":0}`, nil, 400, "invalid"},
		{"token a fraction", "POST", opsPath + "/" + id + "/renew", "key-a", `{"fencing_token":1.5}`, nil, 400, "invalid"},
		{"renew with result", "POST", opsPath + "/" + id + "/renew", "key-a", `{"fencing_token":1,"result":1}`, nil, 400, "invalid"},
		{"complete without result", "POST", opsPath + "/" + id + "/complete", "key-a", `{"fencing_token":1}`, nil, 400, "invalid"},
		{"complete with retryable", "POST", opsPath + "/" + id + "/complete", "key-a", `{"fencing_token":1,"result":1,"retryable":true}`, nil, 400, "invalid"},
		{"terminal fail without result", "POST", opsPath + "/" + id + "/fail", "key-a", `{"fencing_token":1}`, nil, 400, "invalid"},
		{"retryable not a bool", "POST", opsPath + "/" + id + "/fail", "key-a", `{"fencing_token":1,"retryable":"yes"}`, nil, 400, "invalid"},
		{"unknown field on complete", "POST", opsPath + "/" + id + "/complete", "key-a", `{"fencing_token":1,"result":1,"status":"ok"}`, nil, 400, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.call(t, tc.method, tc.path, tc.apiKey, tc.body, tc.hdr...).want(t, tc.status, tc.errType)
		})
	}
	// None of it touched the record.
	got := a.get(t, "key-a", id).want(t, http.StatusOK, "")
	if got.rec.Status != "running" || got.rec.FencingToken != 1 || !got.rec.LeaseExpiresAt.Equal(t0.Add(lease)) {
		t.Fatalf("record after bad requests: %s", got.raw)
	}
}

func TestPreferWait(t *testing.T) {
	for _, tc := range []struct {
		hdr  []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"wait=30"}, 30 * time.Second},
		{[]string{"respond-async, wait=5"}, 5 * time.Second},
		{[]string{"return=minimal", "Wait = 7"}, 7 * time.Second},
		{[]string{`wait="3"`}, 3 * time.Second},
		{[]string{"wait=100000"}, idempotency.MaxPreferWait},
		{[]string{"wait=-1"}, 0},
		{[]string{"wait=soon"}, 0},
		{[]string{"handling=lenient"}, 0},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		for _, h := range tc.hdr {
			r.Header.Add("Prefer", h)
		}
		if got := idempotency.PreferWait(r); got != tc.want {
			t.Errorf("PreferWait(%q) = %v, want %v", tc.hdr, got, tc.want)
		}
	}
}

// fail takes an "error" object instead of a result: it is stored as the
// failure and replayed as {"error": <object>}; "error" elsewhere, both
// fields at once, or a non-object is a 400 that changes nothing.
func TestHTTPFailWithErrorObject(t *testing.T) {
	a := newAPI(t)
	r := a.begin(t, "key-a", "charge-1", email).want(t, http.StatusCreated, "")
	a.write(t, "key-a", r.rec.ID, "fail", map[string]any{"fencing_token": 1, "error": "declined"}).want(t, http.StatusBadRequest, "invalid")
	a.write(t, "key-a", r.rec.ID, "fail", map[string]any{"fencing_token": 1, "error": map[string]any{"code": "x"}, "result": "y"}).want(t, http.StatusBadRequest, "invalid")
	a.write(t, "key-a", r.rec.ID, "complete", map[string]any{"fencing_token": 1, "error": map[string]any{"code": "x"}}).want(t, http.StatusBadRequest, "invalid")
	failed := a.write(t, "key-a", r.rec.ID, "fail", map[string]any{"fencing_token": 1, "error": map[string]any{"code": "card_declined", "message": "insufficient funds"}}).
		want(t, http.StatusOK, "")
	if failed.rec.Status != "failed" {
		t.Fatalf("fail → %s", failed.raw)
	}
	wantReplay(t, a.begin(t, "key-a", "charge-1", email), "failed", `{"error":{"code":"card_declined","message":"insufficient funds"}}`)
}
