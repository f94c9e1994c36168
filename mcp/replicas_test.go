package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/internal/wake"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/mcp"
	"github.com/groundhog-ai/groundhog/postgres"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/storetest"
)

// cluster is two gateway replicas sharing one PostgreSQL schema (keys,
// operation records, ledger, sessions) and one Redis key prefix (cache,
// wake-ups), both in front of one simulated MCP server — as `groundhog
// serve` wires them.
type cluster struct {
	t        *testing.T
	replicas []*replica
	store    *postgres.DB // the test's own view of the shared database
	sim      *sim.Server
	simURL   string
	keyA     string // tenant "alpha"
	keyB     string // tenant "beta"
	hold     atomic.Bool
	arrived  chan struct{}
	release  chan struct{}
}

type replica struct {
	url    string
	ledger *ledger.Writer
	// byKey is signalled each time the replica's operation records are
	// read by key: a duplicate waiting for a running call does that.
	byKey chan struct{}
}

// tappedOps is the replica's PostgreSQL store, signalling reads by key.
type tappedOps struct {
	*postgres.DB
	byKey chan struct{}
}

func (s tappedOps) GetOperationByKey(ctx context.Context, tenant, key string) (*groundhog.Operation, error) {
	select {
	case s.byKey <- struct{}{}:
	default:
	}
	return s.DB.GetOperationByKey(ctx, tenant, key)
}

// freshRedisPrefix returns a key prefix whose keys are deleted when t ends.
func freshRedisPrefix(t *testing.T, redisURL string) string {
	t.Helper()
	prefix := "ghmcp:" + groundhog.NewID()[:12] + ":"
	t.Cleanup(func() {
		opt, err := goredis.ParseURL(redisURL)
		if err != nil {
			return
		}
		c := goredis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return prefix
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	redisURL := storetest.RedisURL(t)
	pgURL := storetest.FreshPostgres(t)
	prefix := freshRedisPrefix(t, redisURL)
	ctx := context.Background()
	cl := &cluster{t: t, arrived: make(chan struct{}, 100), release: make(chan struct{})}
	// Tool calls run at once, unless the test holds them.
	s := sim.New(sim.Config{MCP: true, MCPLatency: time.Nanosecond, Sleep: func(ctx context.Context, _ time.Duration) error {
		if !cl.hold.Load() {
			return nil
		}
		cl.arrived <- struct{}{}
		select {
		case <-cl.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	simURL, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	cl.sim, cl.simURL = s, simURL
	store, err := postgres.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cl.store = store
	for _, k := range []struct {
		tenant string
		dst    *string
	}{{"alpha", &cl.keyA}, {"beta", &cl.keyB}} {
		secret, key := groundhog.NewAPIKey(k.tenant, time.Now())
		if err := store.CreateKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		*k.dst = secret
	}
	dir := t.TempDir()
	for i := range n {
		cl.replicas = append(cl.replicas, cl.startReplica(pgURL, redisURL, prefix, filepath.Join(dir, fmt.Sprint("replica", i))))
	}
	return cl
}

// startReplica runs one gateway on its own connections to the shared
// stores.
func (cl *cluster) startReplica(pgURL, redisURL, prefix, dir string) *replica {
	t := cl.t
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := redis.Open(ctx, redisURL, redis.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DB = pgURL
	cfg.MCP.Servers = map[string]config.MCPServer{"sim": {URL: cl.simURL + sim.MCPPath}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{Store: rdb})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: filepath.Join(dir, "journal")})
	if err != nil {
		t.Fatal(err)
	}
	rep := &replica{ledger: lw, byKey: make(chan struct{}, 1)}
	idem := idempotency.New(idempotency.Options{Store: tappedOps{DB: db, byKey: rep.byKey}, Notifier: wake.IdemNotifier{T: rdb}})
	mg := mcp.New(mcp.Options{Config: cfg.MCP, Idem: idem, Cache: c, Ledger: lw, Resources: db})
	gw := gateway.New(gateway.Options{Config: &cfg, Keys: db, Cache: c, Ledger: lw, Idem: idem,
		OpenAI: gateway.Upstream{BaseURL: cl.simURL + "/v1", Provider: "sim"}, Anthropic: gateway.Upstream{BaseURL: cl.simURL + "/v1", Provider: "sim"},
		Extra: func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
			mux.Handle(mcp.PathPrefix, mg.Handler(auth))
		}})
	srv := httptest.NewServer(gw)
	rep.url = srv.URL
	t.Cleanup(func() {
		srv.Close()
		_ = mg.Close()
		_ = lw.Close(context.Background())
		_ = rdb.Close()
		db.Close()
	})
	return rep
}

// balancer is a load balancer in front of the replicas: each request goes
// to the replica `to` names, with the gateway key; drop, when it returns
// true for a request's body, loses the answer on the way back.
type balancer struct {
	cl    *cluster
	key   string
	to    atomic.Int32
	drop  func(body string) bool
	mu    sync.Mutex
	calls []int // the replica each tools/call went to
}

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	i := int(b.to.Load())
	u, _ := url.Parse(b.cl.replicas[i].url)
	r.URL.Host, r.Host = u.Host, u.Host
	r.Header.Set("Authorization", "Bearer "+b.key)
	var body string
	if r.Body != nil {
		raw, _ := io.ReadAll(r.Body)
		body = string(raw)
		r.Body = io.NopCloser(strings.NewReader(body))
	}
	if strings.Contains(body, `"tools/call"`) {
		b.mu.Lock()
		b.calls = append(b.calls, i)
		b.mu.Unlock()
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && b.drop != nil && b.drop(body) {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return nil, io.ErrUnexpectedEOF
	}
	return res, err
}

// client connects the official SDK's client through a balancer that
// starts on replica 0.
func (cl *cluster) client(b *balancer) *sdk.ClientSession {
	cl.t.Helper()
	b.cl = cl
	c := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: cl.replicas[0].url + mcp.PathPrefix + "sim",
		HTTPClient: &http.Client{Transport: b}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// emails is how many emails the simulated server sent, read over HTTP.
func (cl *cluster) emails() int64 {
	cl.t.Helper()
	e := &env{t: cl.t, SimURL: cl.simURL}
	return e.effects().EmailsSent
}

// rows flushes every replica's ledger and returns, from PostgreSQL, the
// tool-call rows of the call with these arguments: by outcome, and how
// many executed (an attempt of their own).
func (cl *cluster) rows(args string) (map[groundhog.Outcome]int, int) {
	cl.t.Helper()
	ctx := context.Background()
	for _, r := range cl.replicas {
		if err := r.ledger.Flush(ctx); err != nil {
			cl.t.Fatal(err)
		}
	}
	hash, err := mcp.CallHash("alpha", "sim", "send_email", []byte(args))
	if err != nil {
		cl.t.Fatal(err)
	}
	got, executed := map[groundhog.Outcome]int{}, 0
	err = cl.store.ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(r *groundhog.LedgerEntry) error {
		if r.RequestHash == hash && r.Operation == "mcp:sim/send_email" {
			got[r.Outcome]++
			if r.Attempt > 0 {
				executed++
			}
		}
		return nil
	})
	if err != nil {
		cl.t.Fatal(err)
	}
	return got, executed
}

func email(to, key string) *sdk.CallToolParams {
	return &sdk.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": to, "subject": "invoice"},
		Meta: sdk.Meta{mcp.MetaIdempotencyKey: key}}
}

func emailArgs(to string) string { return `{"to":"` + to + `","subject":"invoice"}` }

// answer is a tools/call's answer as the client sees it: the result's
// text, or the JSON-RPC error.
func answer(t *testing.T, res *sdk.CallToolResult, err error) string {
	t.Helper()
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		return fmt.Sprintf("error %d: %s", je.Code, je.Message)
	case err != nil:
		t.Fatalf("tools/call: %v", err)
	}
	return text(t, res)
}

// An agent behind a load balancer sends an email with an idempotency key;
// the answer is lost after the email went out, and the agent retries five
// times — four times on the replica that ran it, once on the other: one
// email, the same answer every time, and the shared ledger shows one
// execution and five replays.
func TestReplicasSendEmailOnceAcrossRetries(t *testing.T) {
	cl := newCluster(t, 2)
	ctx := context.Background()
	cases := []struct {
		name string
		to   string
		// lose loses the first call's answer: at the MCP server (it drops
		// the connection after executing) or between gateway and client.
		lose     func(b *balancer)
		want     string
		executed groundhog.Outcome
	}{
		{"the MCP server drops the connection", "ana@example.com", func(*balancer) { cl.sim.DropAfterExecute(1) },
			"outcome unknown: the connection to MCP server sim was lost after the call was sent", groundhog.OutcomeError},
		{"the client's connection drops", "bob@example.com", func(b *balancer) {
			var once sync.Once
			b.drop = func(body string) bool {
				hit := false
				if strings.Contains(body, `"tools/call"`) {
					once.Do(func() { hit = true })
				}
				return hit
			}
		}, " to bob@example.com", groundhog.OutcomeUpstream},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := cl.emails()
			b := &balancer{key: cl.keyA}
			c.lose(b)
			cs := cl.client(b)
			key := "email-" + groundhog.NewID()
			first, err := cs.CallTool(ctx, email(c.to, key))
			if b.drop == nil {
				if got := answer(t, first, err); !strings.Contains(got, c.want) {
					t.Fatalf("first call: %q, want %q", got, c.want)
				}
			} else if err == nil {
				t.Fatal("the first call's answer was lost, yet the client got one")
			}
			var got []string
			for i := range 5 {
				if i == 4 {
					b.to.Store(1)
				}
				res, err := cs.CallTool(ctx, email(c.to, key))
				got = append(got, answer(t, res, err))
			}
			for _, g := range got {
				if g != got[0] || !strings.Contains(g, c.want) {
					t.Fatalf("retries answered %q, want %q every time", got, c.want)
				}
			}
			if want := []int{0, 0, 0, 0, 0, 1}; fmt.Sprint(b.calls) != fmt.Sprint(want) {
				t.Fatalf("tools/calls went to replicas %v, want %v", b.calls, want)
			}
			if n := cl.emails() - before; n != 1 {
				t.Fatalf("%d emails sent, want 1", n)
			}
			rows, executed := cl.rows(emailArgs(c.to))
			if executed != 1 || rows[c.executed] != 1 || rows[groundhog.OutcomeReplayed] != 5 || len(rows) != 2 {
				t.Fatalf("ledger %v with %d executed, want 1 executed (%s) + 5 replayed", rows, executed, c.executed)
			}
		})
	}
}

// Duplicates of one keyed call on two replicas at once: one executes, the
// other waits for it and gets its stored result; the key reused with
// other arguments on the second replica is a JSON-RPC error naming the
// conflict, and nothing runs for it.
func TestReplicasConcurrentDuplicateWaitsAndConflict(t *testing.T) {
	cl := newCluster(t, 2)
	ctx := context.Background()
	b0, b1 := &balancer{key: cl.keyA}, &balancer{key: cl.keyA}
	cs0, cs1 := cl.client(b0), cl.client(b1)
	b1.to.Store(1)
	before := cl.emails()
	key := "email-" + groundhog.NewID()
	cl.hold.Store(true)
	type result struct {
		res *sdk.CallToolResult
		err error
	}
	first := make(chan result, 1)
	go func() {
		res, err := cs0.CallTool(ctx, email("cy@example.com", key))
		first <- result{res, err}
	}()
	<-cl.arrived // replica 0's call is running at the MCP server
	drain(cl.replicas[1].byKey)
	second := make(chan result, 1)
	go func() {
		res, err := cs1.CallTool(ctx, email("cy@example.com", key))
		second <- result{res, err}
	}()
	<-cl.replicas[1].byKey // replica 1's duplicate waits on the record
	cl.hold.Store(false)
	close(cl.release)
	a, b := <-first, <-second
	ta, tb := answer(t, a.res, a.err), answer(t, b.res, b.err)
	if !strings.HasPrefix(ta, "sent email-") || ta != tb {
		t.Fatalf("replica 0 answered %q, replica 1 %q: want the one execution's result twice", ta, tb)
	}
	if n := cl.emails() - before; n != 1 {
		t.Fatalf("%d emails sent for two concurrent duplicates, want 1", n)
	}
	rows, executed := cl.rows(emailArgs("cy@example.com"))
	if executed != 1 || rows[groundhog.OutcomeUpstream] != 1 || rows[groundhog.OutcomeReplayed] != 1 || len(rows) != 2 {
		t.Fatalf("ledger %v with %d executed, want 1 upstream + 1 replayed", rows, executed)
	}

	_, err := cs1.CallTool(ctx, email("dan@example.com", key))
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, fmt.Sprintf("idempotency key %q was already used with other arguments", key)) {
		t.Fatalf("the key with other arguments on replica 1: %v, want the conflict named", err)
	}
	if n := cl.emails() - before; n != 1 {
		t.Fatalf("%d emails sent, want still 1", n)
	}
	if rows, executed := cl.rows(emailArgs("dan@example.com")); executed != 0 || rows[groundhog.OutcomeRejected] != 1 || len(rows) != 1 {
		t.Fatalf("ledger %v with %d executed for the conflicting call, want 1 rejected and nothing executed", rows, executed)
	}
}

// A session opened on one replica is the same tenant's on the other; for
// another tenant it does not exist there either.
func TestReplicasShareSessionsPerTenant(t *testing.T) {
	cl := newCluster(t, 2)
	b := &balancer{key: cl.keyA}
	cs := cl.client(b)
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no session id")
	}
	b.to.Store(1)
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("tools/list on replica 1 in a session opened on replica 0: %v", err)
	}
	for _, key := range []string{cl.keyB, cl.keyA} {
		req, _ := http.NewRequest(http.MethodPost, cl.replicas[1].url+mcp.PathPrefix+"sim", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(res)
		res.Body.Close()
		tenant, want := "alpha", http.StatusOK
		if key == cl.keyB {
			tenant, want = "beta", http.StatusNotFound
		}
		if res.StatusCode != want {
			t.Fatalf("tenant %s naming alpha's session on replica 1: status %d (%s), want %d", tenant, res.StatusCode, body, want)
		}
	}
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
