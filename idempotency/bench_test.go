package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// BenchmarkOperation compares the service with its own baseline in the
// same run: the bare store calls it makes (store/…) against Service.Do
// (service/…), for a new key (claim + complete) and for a replay; and the
// HTTP replay against a handler that answers the same JSON without a store.
// Read the ratios, not the absolute times.
func BenchmarkOperation(b *testing.B) {
	ctx := context.Background()
	ok := resp(200, `{"id":"chatcmpl-1","choices":[{"message":{"content":"hello"}}]}`)
	fn := func(context.Context, *groundhog.Operation) (*groundhog.Response, error) { return ok, nil }
	b.Run("store/new_key", func(b *testing.B) {
		e := newEnv(b)
		i := 0
		for b.Loop() {
			i++
			op, _, err := e.db.Begin(ctx, groundhog.BeginParams{Tenant: tenantA, Key: "k" + strconv.Itoa(i), RequestHash: hash1,
				Owner: "bench", Lease: lease, Retention: retention, Now: e.clock.Now()})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.db.Complete(ctx, tenantA, op.ID, op.FencingToken, ok, e.clock.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("service/new_key", func(b *testing.B) {
		e := newEnv(b)
		i := 0
		for b.Loop() {
			i++
			if _, _, err := e.svc.Do(ctx, tenantA, "k"+strconv.Itoa(i), hash1, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store/replay", func(b *testing.B) {
		e := newEnv(b)
		if _, _, err := e.svc.Do(ctx, tenantA, "k", hash1, fn); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, outcome, err := e.db.Begin(ctx, groundhog.BeginParams{Tenant: tenantA, Key: "k", RequestHash: hash1,
				Owner: "bench", Lease: lease, Retention: retention, Now: e.clock.Now()}); err != nil || outcome != groundhog.BeginDone {
				b.Fatal(outcome, err)
			}
		}
	})
	b.Run("service/replay", func(b *testing.B) {
		e := newEnv(b)
		if _, _, err := e.svc.Do(ctx, tenantA, "k", hash1, fn); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, replayed, err := e.svc.Do(ctx, tenantA, "k", hash1, fn); err != nil || !replayed {
				b.Fatal(replayed, err)
			}
		}
	})
	replayBody := `{"key":"k","payload":{"to":"ada@example.com","subject":"Your invoice"}}`
	b.Run("http/baseline", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"x","status":"completed","result":{}}`))
		}))
		defer srv.Close()
		benchPost(b, srv, replayBody)
	})
	b.Run("http/replay", func(b *testing.B) {
		e := newEnv(b)
		h := e.svc.Handler(testAuth)
		srv := httptest.NewServer(h)
		defer srv.Close()
		if _, _, err := e.svc.Do(ctx, tenantA, "k", mustPayloadHash(b, `{"to":"ada@example.com","subject":"Your invoice"}`), fn); err != nil {
			b.Fatal(err)
		}
		benchPost(b, srv, replayBody)
	})
}

func mustPayloadHash(b *testing.B, payload string) string {
	h, err := idempotency.PayloadHash([]byte(payload))
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func benchPost(b *testing.B, srv *httptest.Server, body string) {
	client := srv.Client()
	for b.Loop() {
		req, _ := http.NewRequest("POST", srv.URL+idempotency.OperationsPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer key-a")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatal(res.Status)
		}
	}
}
