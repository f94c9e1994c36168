package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Config configures a simulated provider. The zero value is a fast, fault-free
// provider billing with pricing.Default().
type Config struct {
	// Prices is the bill's price table; nil means pricing.Default(). A model
	// missing from it is priced as "sim-small" (and at zero when the table has
	// no "sim-small" either).
	Prices pricing.Table
	// Clock stamps "created" fields and ages prefix-cache entries; nil means
	// groundhog.SystemClock{}.
	Clock groundhog.Clock

	// Latency model, all zero by default. Time to first token is FirstToken +
	// PerPromptToken × uncached prompt tokens (cache writes are uncached: they
	// are computed). Then PerOutputToken passes between streamed output chunks
	// (one output token each); a non-streamed response waits PerOutputToken ×
	// output tokens after the time to first token instead.
	FirstToken, PerPromptToken, PerOutputToken time.Duration
	// Sleep waits d or until ctx is done (then it returns ctx's error). It is
	// called only for positive durations. Nil means a context-aware timer wait;
	// tests inject one that records durations instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error

	// Fault is applied to every model call that carries no Sim-Fault header of
	// its own ("" = none). Same syntax as the header; see the package doc. New
	// panics on an invalid spec, so a typo fails at start-up.
	Fault string

	// PrefixCache is the provider-side prompt prefix cache; nil means
	// NewPrefixCache(PrefixCacheTTL). Use NoPrefixCache{} to disable caching.
	PrefixCache PrefixCache
	// AnthropicMinTokens overrides AnthropicMinimums, the shortest prefix a
	// cache_control breakpoint caches on /v1/messages: model name prefix →
	// tokens, the longest matching prefix winning (over the table's too).
	AnthropicMinTokens map[string]int

	// PrefixCacheTTL is the lifetime of an unused short-lived prefix-cache
	// entry (OpenAI automatic caching, Anthropic "5m"), refreshed on every
	// reuse; 0 means 5 minutes. Entries with a lifetime of their own (30
	// minutes, 1 hour, 24 hours) keep it. Ignored when PrefixCache is set.
	PrefixCacheTTL time.Duration

	// MCP serves the simulated MCP server at MCPPath (see mcp.go), its
	// effects at MCPEffectsPath and its faults at MCPFaultsPath.
	MCP bool
	// MCPLatency is added to every simulated tool call (waited with Sleep).
	MCPLatency time.Duration
}

// maxBody bounds a request body; larger bodies get 413 like the real APIs.
const maxBody = 32 << 20

// Server is a simulated OpenAI- and Anthropic-compatible model provider. It
// is an http.Handler; all methods are safe for concurrent use.
type Server struct {
	prices     pricing.Table
	clock      groundhog.Clock
	sleep      func(context.Context, time.Duration) error
	firstToken time.Duration
	perPrompt  time.Duration
	perOutput  time.Duration
	fault      fault
	cache      PrefixCache
	calls      atomic.Uint64 // model calls answered; numbers response ids
	inflight   inflight
	billMu     sync.Mutex
	bill       Bill
	// rentReset is the explicit caches' rent (cacheRent) already counted
	// by a bill that ResetBill returned.
	rentReset groundhog.Money
	gcaches   geminiCaches // Gemini explicit caches (gemini_cache.go)
	onHang    func()       // test hook: a request starts hanging (timeout fault)
	fs        fileStore
	// anthropicMins is Config.AnthropicMinTokens.
	anthropicMins map[string]int
	diag          diagStore // Anthropic cache diagnostics (anthropic_diagnostics.go)
	// respPrints are the Responses prints for OpenAI's cache diagnostics
	// (openai_diagnostics.go).
	respPrints printStore[*responsesPrint]
	// stored are the stored Responses answers (openai_responses_store.go),
	// keyed by API key scope and id.
	stored printStore[*storedResponse]
	mcp    *mcpSim // nil unless Config.MCP
}

// New returns a Server configured by cfg. It panics if cfg.Fault is not a
// valid fault spec.
func New(cfg Config) *Server {
	s := &Server{
		prices:     cfg.Prices,
		clock:      cfg.Clock,
		sleep:      cfg.Sleep,
		firstToken: cfg.FirstToken,
		perPrompt:  cfg.PerPromptToken,
		perOutput:  cfg.PerOutputToken,
		cache:      cfg.PrefixCache,

		anthropicMins: cfg.AnthropicMinTokens,
	}
	if s.prices == nil {
		s.prices = pricing.Default()
	}
	if s.clock == nil {
		s.clock = groundhog.SystemClock{}
	}
	if s.sleep == nil {
		s.sleep = timerSleep
	}
	if s.cache == nil {
		s.cache = NewPrefixCache(cfg.PrefixCacheTTL)
	}
	f, err := parseFault(cfg.Fault)
	if err != nil {
		panic(fmt.Sprintf("sim: Config.Fault: %v", err))
	}
	s.fault = f
	if cfg.MCP {
		s.mcp = newMCPSim(s, cfg.MCPLatency)
	}
	return s
}

// timerSleep waits d or until ctx is done.
func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Bill is what the simulated provider has charged: every billed call and its
// tokens, and their cost with the price table. InputTokens counts every
// prompt token, including the cached and cache-write ones (the
// groundhog.Usage convention); CacheWriteTokens counts every write and
// CacheWrite1hTokens the part of them written with a 1-hour TTL. Per call,
//
//	InputUSD  = uncached × input + cached × cached_input
//	          + (writes − 1h writes) × cache_write + 1h writes × the 1h rate
//	OutputUSD = output × output
//	USD       = InputUSD + OutputUSD
//
// where uncached = InputTokens − CachedInputTokens − CacheWriteTokens and the
// 1h rate is write1hRate's.
//
// Gemini explicit caches add to it: each creation (CacheCreations) bills
// its tokens (CacheCreateTokens, also counted in InputTokens) at the
// model's input rate into InputUSD, and StorageUSD is their storage rent
// up to the moment the bill is read (see gemini_cache.go), so
//
//	USD = InputUSD + OutputUSD + StorageUSD
type Bill struct {
	Calls              int64           `json:"calls"`
	CacheCreations     int64           `json:"cache_creations"`
	CacheCreateTokens  int64           `json:"cache_create_tokens"`
	InputTokens        int64           `json:"input_tokens"`
	CachedInputTokens  int64           `json:"cached_input_tokens"`
	CacheWriteTokens   int64           `json:"cache_write_tokens"`
	CacheWrite1hTokens int64           `json:"cache_write_1h_tokens"`
	OutputTokens       int64           `json:"output_tokens"`
	USD                groundhog.Money `json:"-"`
	InputUSD           groundhog.Money `json:"-"`
	OutputUSD          groundhog.Money `json:"-"`
	StorageUSD         groundhog.Money `json:"-"`
}

// MarshalJSON renders the bill with usd, input_usd, output_usd and
// storage_usd as six-decimal dollar strings; storage_usd_exact is the
// storage rent with all twelve decimals (picodollars).
func (b Bill) MarshalJSON() ([]byte, error) {
	type plain Bill
	return json.Marshal(struct {
		plain
		USD             string `json:"usd"`
		InputUSD        string `json:"input_usd"`
		OutputUSD       string `json:"output_usd"`
		StorageUSD      string `json:"storage_usd"`
		StorageUSDExact string `json:"storage_usd_exact"`
	}{plain(b), b.USD.String(), b.InputUSD.String(), b.OutputUSD.String(), b.StorageUSD.String(), b.StorageUSD.Format(12)})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (b *Bill) UnmarshalJSON(data []byte) error {
	type plain Bill
	var v struct {
		plain
		USD             string `json:"usd"`
		InputUSD        string `json:"input_usd"`
		OutputUSD       string `json:"output_usd"`
		StorageUSDExact string `json:"storage_usd_exact"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*b = Bill(v.plain)
	if v.StorageUSDExact != "" {
		m, err := groundhog.ParseMoney(v.StorageUSDExact)
		if err != nil {
			return fmt.Errorf("bill storage_usd_exact: %w", err)
		}
		b.StorageUSD = m
	}
	for _, f := range []struct {
		name string
		s    string
		dst  *groundhog.Money
	}{{"usd", v.USD, &b.USD}, {"input_usd", v.InputUSD, &b.InputUSD}, {"output_usd", v.OutputUSD, &b.OutputUSD}} {
		m, err := groundhog.ParseMoney(f.s)
		if err != nil {
			return fmt.Errorf("bill %s: %w", f.name, err)
		}
		*f.dst = m
	}
	return nil
}

// Bill returns a snapshot of the bill, the explicit caches' storage rent
// counted up to the clock's now.
func (s *Server) Bill() Bill {
	s.billMu.Lock()
	defer s.billMu.Unlock()
	return s.billAt(s.clock.Now())
}

// billAt is the bill with the rent up to now. Callers hold billMu.
func (s *Server) billAt(now time.Time) Bill {
	b := s.bill
	rent, _ := s.cacheRent(now)
	b.StorageUSD = rent - s.rentReset
	b.USD += b.StorageUSD
	return b
}

// ResetBill zeroes the bill and returns it as it was just before,
// atomically. The rent that explicit caches accrue after it is the next
// bill's.
func (s *Server) ResetBill() Bill {
	s.billMu.Lock()
	defer s.billMu.Unlock()
	b := s.billAt(s.clock.Now())
	s.rentReset += b.StorageUSD
	s.bill = Bill{}
	return b
}

// charge adds one call with usage u for model to the bill and returns its cost.
func (s *Server) charge(model string, u groundhog.Usage) groundhog.Money {
	in, out := s.cost(model, u)
	s.billMu.Lock()
	defer s.billMu.Unlock()
	s.bill.Calls++
	s.bill.InputTokens += u.InputTokens
	s.bill.CachedInputTokens += u.CachedInputTokens
	s.bill.CacheWriteTokens += u.CacheWriteTokens
	s.bill.CacheWrite1hTokens += u.CacheWrite1hTokens
	s.bill.OutputTokens += u.OutputTokens
	s.bill.InputUSD += in
	s.bill.OutputUSD += out
	s.bill.USD += in + out
	return in + out
}

// cost prices u for model (input and output apart); an unknown model is
// priced as sim-small.
func (s *Server) cost(model string, u groundhog.Usage) (input, output groundhog.Money) {
	p, ok := s.prices.Lookup(model)
	if !ok {
		if p, ok = s.prices.Lookup("sim-small"); !ok {
			return 0, 0
		}
	}
	return billInput(p, u), groundhog.Money(u.OutputTokens * p.Output)
}

// billInput prices u's prompt tokens with p: uncached, cached reads, short
// (5-minute / 30-minute) writes and 1-hour writes each at their own rate.
func billInput(p groundhog.Price, u groundhog.Usage) groundhog.Money {
	uncached := max(0, u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens)
	long := min(u.CacheWrite1hTokens, u.CacheWriteTokens)
	short := u.CacheWriteTokens - long
	return groundhog.Money(uncached*p.Input + u.CachedInputTokens*p.CachedInput +
		short*p.CacheWrite + long*write1hRate(p))
}

// write1hRate is the price per token (picodollars) of a 1-hour cache write:
// the table's 1h rate if it has one, else 2× the input rate (Anthropic's
// multiplier, the price table's default too).
func write1hRate(p groundhog.Price) int64 {
	if p.CacheWrite1h > 0 {
		return p.CacheWrite1h
	}
	return 2 * p.Input
}

// InFlight returns how many requests the server is handling right now. A
// request whose client has gone away stops counting as soon as its handler
// has noticed and returned.
func (s *Server) InFlight() int { return s.inflight.count() }

// WaitIdle returns nil as soon as no request is being handled, or ctx's
// error. Tests use it to prove that no handler outlives its client.
func (s *Server) WaitIdle(ctx context.Context) error { return s.inflight.wait(ctx) }

// inflight counts running handlers and lets a waiter block until none runs.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil means closed
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
}

func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait returns nil once no handler runs, or ctx's error.
func (f *inflight) wait(ctx context.Context) error {
	for {
		f.mu.Lock()
		idle, n := f.idle, f.n
		f.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
			// A new request may have started since; look again.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// releaseKey carries the channel that Listen's shutdown closes to release
// requests hung by the timeout fault, so a graceful shutdown never waits on them.
type releaseKey struct{}

// Listen serves s on addr ("127.0.0.1:0" picks a free port) and returns the
// base URL ("http://127.0.0.1:PORT", loopback also when addr's host is
// unspecified; the OpenAI base URL is that plus "/v1")
// and a shutdown func. Shutdown first releases requests hung by the timeout
// fault (their connections are closed without a response), then shuts the
// HTTP server down gracefully within ctx.
func (s *Server) Listen(addr string) (baseURL string, shutdown func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("sim: listen %s: %w", addr, err)
	}
	release := make(chan struct{})
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), releaseKey{}, (<-chan struct{})(release))
		},
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	var once sync.Once
	shutdown = func(ctx context.Context) error {
		once.Do(func() { close(release) })
		err := srv.Shutdown(ctx)
		if err != nil {
			srv.Close()
			return fmt.Errorf("sim: shutdown: %w", err)
		}
		if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			return fmt.Errorf("sim: serve: %w", serr)
		}
		return nil
	}
	return baseURLOf(ln.Addr()), shutdown, nil
}

// baseURLOf returns the URL clients reach addr at; an unspecified host
// (":9001", "0.0.0.0:9001") is reached over loopback.
func baseURLOf(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// ServeHTTP routes r. Model calls are POST /v1/chat/completions,
// /v1/responses, /v1/embeddings (OpenAI) and /v1/messages (Anthropic); also
// GET /v1/models[/{id}], POST /v1/messages/count_tokens, GET /sim/v1/bill,
// POST /sim/v1/bill/reset and GET /healthz. Faults that abort the connection do so by
// panicking with http.ErrAbortHandler, as net/http expects.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.add()
	defer s.inflight.done()
	anthropicish := r.Header.Get("anthropic-version") != "" || strings.HasPrefix(r.URL.Path, "/v1/messages")
	fam := familyOpenAI
	if anthropicish {
		fam = familyAnthropic
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if rest, ok := strings.CutPrefix(path, "/openai/v1/"); ok {
		// Bedrock's OpenAI-compatible endpoint (bedrock-runtime's
		// /openai/v1): the same chat and Responses routes.
		path = "/v1/" + rest
	}
	switch {
	case path == "/healthz":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{\"status\":\"ok\"}\n"))
	case gemini.IsPath(path):
		s.serveGemini(w, r)
	case path == "/v1/chat/completions":
		s.modelCall(w, r, groundhog.ShapeChat)
	case path == "/v1/responses", path == "/v1/responses/compact":
		s.modelCall(w, r, groundhog.ShapeResponses)
	case fam == familyOpenAI && strings.HasPrefix(path, "/v1/responses/") && path != "/v1/responses/input_tokens":
		s.serveStoredResponse(w, r, strings.TrimPrefix(path, "/v1/responses/"))
	case path == "/v1/embeddings":
		s.modelCall(w, r, groundhog.ShapeEmbeddings)
	case path == "/v1/messages":
		s.modelCall(w, r, groundhog.ShapeMessages)
	case strings.HasPrefix(path, "/model/"):
		if _, _, ok := bedrock.ParsePath(r.URL.EscapedPath()); ok {
			s.modelCall(w, r, groundhog.ShapeConverse)
			return
		}
		if _, _, ok := bedrock.ParseInvokePath(r.URL.EscapedPath()); ok {
			s.modelCall(w, r, groundhog.ShapeMessages) // Anthropic's native body
			return
		}
		writeError(w, familyBedrock, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	case path == "/v1/messages/count_tokens":
		if !allow(w, r, fam, http.MethodPost) {
			return
		}
		s.countTokens(w, r)
	case fam == familyOpenAI && (path == "/v1/files" || strings.HasPrefix(path, "/v1/files/")):
		s.files(w, r, path)
	case path == "/v1/models":
		if !allow(w, r, fam, http.MethodGet) {
			return
		}
		s.listModels(w, r, fam)
	case strings.HasPrefix(path, "/v1/models/"):
		if !allow(w, r, fam, http.MethodGet) {
			return
		}
		s.getModel(w, r, fam, strings.TrimPrefix(path, "/v1/models/"))
	case path == "/sim/v1/bill":
		if !allow(w, r, familyOpenAI, http.MethodGet) {
			return
		}
		writeJSON(w, http.StatusOK, s.Bill())
	case s.mcp != nil && path == MCPPath:
		s.mcp.serveMCP(w, r)
	case s.mcp != nil && path == MCPEffectsPath:
		if !allow(w, r, familyOpenAI, http.MethodGet) {
			return
		}
		writeJSON(w, http.StatusOK, s.Effects())
	case s.mcp != nil && path == MCPFaultsPath:
		if !allow(w, r, familyOpenAI, http.MethodPost) {
			return
		}
		s.mcp.serveFaults(w, r)
	case path == "/sim/v1/bill/reset":
		if !allow(w, r, familyOpenAI, http.MethodPost) {
			return
		}
		writeJSON(w, http.StatusOK, s.ResetBill())
	default:
		writeError(w, fam, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}
}

// allow answers 405 unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, fam family, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, fam, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed for %s; use %s", r.Method, r.URL.Path, method))
	return false
}

// writeJSON writes v as a JSON body with status and an exact Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value written here is built by this package; failing to
		// encode one is a bug, not a client error.
		panic(fmt.Sprintf("sim: encode response: %v", err))
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// scopeOf returns the prefix-cache scope of r: a digest of its API key
// (Authorization bearer token, x-api-key or x-goog-api-key), so one key never reads another
// key's cached prefixes and no key is kept in memory in the clear.
func scopeOf(r *http.Request) string {
	key := r.Header.Get("x-api-key")
	if key == "" {
		key = r.Header.Get("x-goog-api-key")
	}
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if key == "" {
		return ""
	}
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:12])
}
