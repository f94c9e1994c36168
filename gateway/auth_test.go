package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/sqlite"
)

type authClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *authClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *authClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// authGateway serves /whoami: the tenant the gateway's authenticate maps the
// request to, or its error status.
func authGateway(t *testing.T, keyless bool, clock groundhog.Clock) (*httptest.Server, *sqlite.DB) {
	t.Helper()
	cfg := config.Default()
	cfg.DB = filepath.Join(t.TempDir(), "g.db")
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	gw := gateway.New(gateway.Options{Config: &cfg, Keys: db, Clock: clock, Keyless: keyless,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Extra: func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
			mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
				tenant, err := auth(r)
				if err != nil {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, tenant)
			})
		}})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv, db
}

func whoami(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/whoami", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestRevokingLastKeyNeverOpensTheGateway: once a key has
// existed, revoking the last one makes every request 401 — whether the
// gateway was allowed to start keyless (loopback, no keys) or not.
func TestRevokingLastKeyNeverOpensTheGateway(t *testing.T) {
	for _, keyless := range []bool{false, true} {
		clock := &authClock{t: time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)}
		srv, db := authGateway(t, keyless, clock)
		ctx := context.Background()
		if keyless {
			if code, tenant := whoami(t, srv.URL, ""); code != 200 || tenant != groundhog.LocalTenant {
				t.Fatalf("keyless start: %d %q, want 200 local", code, tenant)
			}
		} else if code, _ := whoami(t, srv.URL, ""); code != 401 {
			t.Fatalf("Keyless false and no key: %d, want 401", code)
		}
		secret, k := groundhog.NewAPIKey("alice", clock.Now())
		if err := db.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		clock.add(3 * time.Second) // past the key-count cache
		if code, tenant := whoami(t, srv.URL, secret); code != 200 || tenant != "alice" {
			t.Fatalf("keyless=%v with the key: %d %q", keyless, code, tenant)
		}
		if code, _ := whoami(t, srv.URL, ""); code != 401 {
			t.Fatalf("keyless=%v: a key exists, no key sent: %d, want 401", keyless, code)
		}
		if _, err := db.DeleteKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		clock.add(11 * time.Second) // past every key cache
		for _, key := range []string{"", secret, "gh_made_up"} {
			if code, tenant := whoami(t, srv.URL, key); code != 401 {
				t.Fatalf("keyless=%v after revoking the last key, key %q: %d %q, want 401", keyless, key, code, tenant)
			}
		}
	}
}
