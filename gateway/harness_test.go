package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// harness is a real gateway on loopback HTTP in front of a real simulated
// provider on loopback HTTP, over a real SQLite file.
type harness struct {
	t      testing.TB
	URL    string // gateway base, e.g. http://127.0.0.1:PORT
	Sim    *sim.Server
	SimURL string
	DB     *sqlite.DB
	Ledger *ledger.Writer
	GW     *gateway.Server
	// Opts built GW: a test builds another Server on the same stores
	// with it (a restart, a second replica).
	Opts gateway.Options
	Cfg  *config.Config
	Idem *idempotency.Service
	// Running counts the gateway's handlers that have not returned yet: a
	// test waits on it to know the gateway itself has seen a client leave.
	Running *atomic.Int64
}

// setup is what options may change before the harness starts.
type setup struct {
	cfg       *config.Config
	sim       *sim.Config
	gate      *gate
	upstream  string // base URL ending in /v1 instead of the sim
	apiKey    string // provider key sent upstream
	wrapStore func(groundhog.CacheStore) groundhog.CacheStore
	flights   gateway.Flights
	shared    bool                                                  // the cache's store is written by other replicas too (no cache.Options.OwnStore)
	clock     groundhog.Clock                                       // the gateway's and the sim's (nil: wall clock)
	fanOut    *fanout.Group                                         // nil: the gateway builds one from the config
	tap       func(path string, body []byte)                        // sees every body the gateway sends upstream
	bedrock   *gateway.Upstream                                     // the Converse upstream instead of the sim
	onBedrock bool                                                  // the OpenAI routes go to the sim's Bedrock OpenAI-compatible endpoint
	gemini    *gateway.Upstream                                     // the Gemini upstream instead of the sim
	onRow     func(groundhog.LedgerEntry, []groundhog.Stage)        // sees every row and its stages, as the ledger's observers do
	resources func(groundhog.ResourceStore) groundhog.ResourceStore // wraps the resource records (the database)
}

type harnessOpt func(*setup)

// withConfig changes the gateway configuration.
func withConfig(f func(*config.Config)) harnessOpt { return func(s *setup) { f(s.cfg) } }

// withUpstream sends provider calls to url (ending in /v1) with a provider
// key, instead of to the simulated provider.
func withUpstream(url, apiKey string) harnessOpt {
	return func(s *setup) { s.upstream, s.apiKey = url, apiKey }
}

// withCacheStore wraps the durable cache store.
func withCacheStore(wrap func(groundhog.CacheStore) groundhog.CacheStore) harnessOpt {
	return func(s *setup) { s.wrapStore = wrap }
}

// gate holds the simulated provider's first token until released, so tests
// can make calls overlap without sleeping.
type gate struct {
	mu      sync.Mutex
	ch      chan struct{}
	waiting int
	arrived chan struct{} // gets a value each time a call blocks on the gate
}

func newGate() *gate {
	return &gate{ch: make(chan struct{}), arrived: make(chan struct{}, 10000)}
}

func (g *gate) sleep(ctx context.Context, d time.Duration) error {
	g.mu.Lock()
	ch := g.ch
	g.waiting++
	g.mu.Unlock()
	g.arrived <- struct{}{}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// open lets every call held now and later through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
	default:
		close(g.ch)
	}
}

// withGate puts a gate between the gateway and the simulated provider: a
// reverse proxy that holds every upstream request until the gate opens, so
// a test decides exactly when the provider starts answering — faults
// included.
func withGate(g *gate) harnessOpt {
	return func(s *setup) { s.gate = g }
}

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	sc := sim.Config{}
	st := &setup{cfg: &cfg, sim: &sc}
	for _, o := range opts {
		o(st)
	}
	dir := t.TempDir()
	cfg.DB = filepath.Join(dir, "groundhog.db")
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	sc.Prices = cfg.PriceTable
	s := sim.New(sc)
	simURL, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	db, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	var store groundhog.CacheStore = db
	if st.wrapStore != nil {
		store = st.wrapStore(db)
	}
	// As serve runs on SQLite: the store is this gateway's alone.
	c, err := cache.New(cache.Options{Store: store, MaxBytes: cfg.Cache.MemoryBytes, OwnStore: st.flights == nil && !st.shared})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: filepath.Join(dir, "journal")})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	idem := idempotency.New(idempotency.Options{Store: db, Lease: cfg.Idempotency.Lease, Retention: cfg.Idempotency.Retention, Logger: log})
	upURL := simURL
	if g, tap := st.gate, st.tap; g != nil || tap != nil {
		target, _ := url.Parse(simURL)
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.FlushInterval = -1
		gated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read the body first: net/http notices a client that left (and
			// cancels r.Context()) only once the body is read, and a held
			// request whose caller gave up must not hold the test's cleanup.
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if tap != nil {
				tap(r.URL.Path, b)
			}
			if g == nil {
				rp.ServeHTTP(w, r)
				return
			}
			if err := g.sleep(r.Context(), 0); err != nil {
				return
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(gated.Close)
		upURL = gated.URL
	}
	up := gateway.Upstream{BaseURL: upURL + "/v1", Provider: "sim"}
	if st.upstream != "" {
		up = gateway.Upstream{BaseURL: st.upstream, APIKey: st.apiKey, Provider: "openai"}
	}
	openaiUp := up
	if st.onBedrock {
		openaiUp = gateway.Upstream{BaseURL: upURL + "/openai/v1", APIKey: "bedrock-api-key", Provider: "bedrock"}
	}
	bedrockUp := gateway.Upstream{BaseURL: upURL, Provider: "sim"}
	if st.bedrock != nil {
		bedrockUp = *st.bedrock
	}
	geminiUp := gateway.Upstream{BaseURL: upURL, Provider: "sim"}
	if st.gemini != nil {
		geminiUp = *st.gemini
	}
	var rec gateway.Recorder = lw
	if cfg.Ledger.Disabled {
		rec = nil
	}
	if st.onRow != nil && rec != nil {
		rec = teeRecorder{rec, st.onRow}
	}
	var resources groundhog.ResourceStore = db
	if st.resources != nil {
		resources = st.resources(db)
	}
	gwOpts := gateway.Options{Config: &cfg, Keys: db, Cache: c, Ledger: rec, Idem: idem, Resources: resources,
		OpenAI: openaiUp, Anthropic: up, Bedrock: bedrockUp, Gemini: geminiUp, Logger: log, Ready: db.Ping, Keyless: true, Flights: st.flights, Clock: st.clock, FanOut: st.fanOut}
	gw := gateway.New(gwOpts)
	running := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		gw.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		_ = lw.Close(context.Background())
		_ = db.Close()
	})
	return &harness{t: t, URL: srv.URL, Sim: s, SimURL: simURL, DB: db, Ledger: lw, GW: gw, Opts: gwOpts, Cfg: &cfg, Idem: idem, Running: running}
}

// bill reads the simulated provider's bill over HTTP, as a user would.
func (h *harness) bill() sim.Bill {
	h.t.Helper()
	res, err := http.Get(h.SimURL + "/sim/v1/bill")
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	var b struct {
		Calls int64  `json:"calls"`
		USD   string `json:"usd"`
	}
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		h.t.Fatal(err)
	}
	usd, err := groundhog.ParseMoney(b.USD)
	if err != nil {
		h.t.Fatalf("bill usd %q: %v", b.USD, err)
	}
	return sim.Bill{Calls: b.Calls, USD: usd}
}

// post sends body to path with headers; it returns the response and its
// whole body.
func (h *harness) post(path, body string, hdr map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// ledgerRows flushes the ledger and returns every row.
func (h *harness) ledgerRows() []groundhog.LedgerEntry {
	h.t.Helper()
	ctx := context.Background()
	if err := h.Ledger.Flush(ctx); err != nil {
		h.t.Fatal(err)
	}
	var rows []groundhog.LedgerEntry
	// Up to two days ahead: a test clock may start at the next midnight
	// (newTestClock).
	err := h.DB.ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(48 * time.Hour)}, func(e *groundhog.LedgerEntry) error {
		rows = append(rows, *e)
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return rows
}

// errorType extracts error.type from an OpenAI- or Anthropic-shaped error
// body, failing the test if the body is not one.
func errorType(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == "" {
		t.Fatalf("not a JSON error body: %q", body)
	}
	return e.Error.Type
}

// hashOf fingerprints body as the gateway does for the keyless tenant.
func hashOf(t testing.TB, shape, body string) string {
	t.Helper()
	r, err := fingerprint.Compute(fingerprint.Params{Shape: groundhog.Shape(shape), Tenant: groundhog.LocalTenant}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r.Hash
}
