package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/mcp"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// env is a real gateway (SQLite, ledger, operation records) proxying the
// simulated MCP server as "sim", with two tenants' gateway keys.
type env struct {
	t       *testing.T
	URL     string // the gateway
	GW      http.Handler
	SimURL  string
	Sim     *sim.Server
	DB      *sqlite.DB
	Ledger  *ledger.Writer
	Metrics *metrics.Metrics // fed with every tool call's ledger row
	MCP     *mcp.Gateway
	KeyA    string        // tenant "alpha"
	KeyB    string        // tenant "beta"
	Sent    *atomic.Int64 // requests the gateway sent to the MCP server
	Logs    *logBuffer    // the gateway's log, debug level included
	gate    *gate
	simHold bool
}

type envOpt func(*config.MCPServer, *sim.Config)

// withTool sets a tool's configured policy.
func withTool(name string, t config.MCPTool) envOpt {
	return func(s *config.MCPServer, _ *sim.Config) {
		if s.Tools == nil {
			s.Tools = map[string]config.MCPTool{}
		}
		s.Tools[name] = t
	}
}

// gate holds every simulated tool call until opened, so tests make calls
// overlap without sleeping.
type gate struct {
	once    sync.Once
	ch      chan struct{}
	arrived chan struct{}
}

func (g *gate) sleep(ctx context.Context, _ time.Duration) error {
	g.arrived <- struct{}{}
	select {
	case <-g.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// withGate holds the simulated server's tool calls until env.gate opens.
func withGate() envOpt {
	return func(_ *config.MCPServer, sc *sim.Config) { sc.MCPLatency = time.Nanosecond }
}

func newEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	ctx := context.Background()
	g := &gate{ch: make(chan struct{}), arrived: make(chan struct{}, 1000)}
	sc := sim.Config{MCP: true, Sleep: g.sleep}
	var srvCfg config.MCPServer
	for _, o := range opts {
		o(&srvCfg, &sc)
	}
	if sc.MCPLatency == 0 {
		g.open()
	}
	s := sim.New(sc)
	simURL, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.open()
		_ = shutdown(context.Background())
	})
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DB = filepath.Join(dir, "groundhog.db")
	if srvCfg.Command == nil {
		srvCfg.URL = simURL + sim.MCPPath
	}
	cfg.MCP.Servers = map[string]config.MCPServer{"sim": srvCfg}
	cfg.MCP.MaxMessageBytes = 64 << 10
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{Store: db})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: filepath.Join(dir, "journal")})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	idem := idempotency.New(idempotency.Options{Store: db, Logger: log})
	sent := new(atomic.Int64)
	client := &http.Client{Transport: countingTransport{sent}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	m := metrics.New(nil)
	rec := &observe.Recorder{Next: lw, Metrics: m}
	mg := mcp.New(mcp.Options{Config: cfg.MCP, Idem: idem, Cache: c, Ledger: rec, Logger: log, Client: client})
	t.Cleanup(func() {
		if err := mg.Close(); err != nil {
			t.Errorf("closing the MCP stage: %v", err)
		}
	})
	e := &env{t: t, SimURL: simURL, Sim: s, DB: db, Ledger: lw, Metrics: m, MCP: mg, gate: g, Sent: sent, Logs: logs}
	for _, k := range []struct {
		tenant string
		dst    *string
	}{{"alpha", &e.KeyA}, {"beta", &e.KeyB}} {
		secret, key := groundhog.NewAPIKey(k.tenant, time.Now())
		if err := db.CreateKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		*k.dst = secret
	}
	gw := gateway.New(gateway.Options{Config: &cfg, Keys: db, Cache: c, Ledger: lw, Idem: idem, Logger: log,
		OpenAI: gateway.Upstream{BaseURL: simURL + "/v1", Provider: "sim"}, Anthropic: gateway.Upstream{BaseURL: simURL + "/v1", Provider: "sim"},
		Extra: func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
			mux.Handle(mcp.PathPrefix, mg.Handler(auth))
		}})
	srv := httptest.NewServer(gw)
	e.URL, e.GW = srv.URL, gw
	t.Cleanup(func() {
		srv.Close()
		_ = lw.Close(context.Background())
		_ = db.Close()
	})
	// Runs first: calls held by the gate must end before the servers close.
	t.Cleanup(g.open)
	return e
}

// logBuffer keeps what the gateway logged.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countingTransport counts every request the gateway sends upstream.
type countingTransport struct{ n *atomic.Int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// bearer sends a gateway key (and any extra headers) on every request.
type bearer struct {
	key   string
	extra map[string]string
	// drop, when it returns true for a request, lets the request reach the
	// gateway and then loses the answer: the client sees a broken
	// connection.
	drop func(body string) bool
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	for k, v := range b.extra {
		r.Header.Set(k, v)
	}
	var body string
	if b.drop != nil && r.Body != nil {
		raw, _ := io.ReadAll(r.Body)
		body = string(raw)
		r.Body = io.NopCloser(strings.NewReader(body))
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && b.drop != nil && b.drop(body) {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return nil, io.ErrUnexpectedEOF
	}
	return res, err
}

// client connects the official SDK's client to the gateway's /mcp/sim.
func (e *env) client(rt http.RoundTripper, opts *sdk.ClientOptions) *sdk.ClientSession {
	e.t.Helper()
	cl := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, opts)
	cs, err := cl.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.URL + mcp.PathPrefix + "sim",
		HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// effects reads the simulated server's side effects over HTTP.
func (e *env) effects() sim.MCPEffects {
	e.t.Helper()
	res, err := http.Get(e.SimURL + sim.MCPEffectsPath)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var fx sim.MCPEffects
	if err := json.NewDecoder(res.Body).Decode(&fx); err != nil {
		e.t.Fatal(err)
	}
	return fx
}

// rows flushes the ledger and returns the tool-call rows by outcome.
func (e *env) rows() map[groundhog.Outcome]int {
	e.t.Helper()
	ctx := context.Background()
	if err := e.Ledger.Flush(ctx); err != nil {
		e.t.Fatal(err)
	}
	got := map[groundhog.Outcome]int{}
	err := e.DB.ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(r *groundhog.LedgerEntry) error {
		if strings.HasPrefix(r.Operation, "mcp:") {
			got[r.Outcome]++
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// text returns the text of a tool result's first content.
func text(t *testing.T, r *sdk.CallToolResult) string {
	t.Helper()
	if len(r.Content) == 0 {
		t.Fatalf("empty tool result")
	}
	tc, ok := r.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", r.Content[0])
	}
	return tc.Text
}

func readAll(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func runtimeGosched() { runtime.Gosched() }

// answerOf is the JSON-RPC message of an answer: the body of a JSON
// answer, or the data of an SSE answer's last event.
func answerOf(body []byte) []byte {
	var last []byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
			last = bytes.TrimSpace(d)
		}
	}
	if last == nil {
		return body
	}
	return last
}
