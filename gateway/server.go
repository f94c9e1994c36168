// Package gateway is groundhog's HTTP layer: the OpenAI/Anthropic-compatible
// provider routes running the pipeline of docs/architecture.md (authenticate → parse
// → fingerprint → ledger → idempotency → cache → coalesce → upstream → store
// → respond) and the /groundhog/v1 management endpoints.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/explicitcache"
	"github.com/groundhog-ai/groundhog/fanout"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/promptcache"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// Recorder takes ledger rows. Record must make the row durable against a
// process crash before it returns (the gateway calls it before the response
// is complete), and must be safe for concurrent use.
type Recorder interface {
	Record(e groundhog.LedgerEntry) error
}

// StageRecorder is a Recorder that also takes the call's timed pipeline
// stages, for observers such as trace spans. The gateway calls
// RecordStages instead of Record when its Recorder has it; the same
// durability contract applies.
type StageRecorder interface {
	Recorder
	RecordStages(e groundhog.LedgerEntry, stages []groundhog.Stage) error
	// WantsStages reports whether RecordStages uses the stages (a tracer is
	// configured); when false the gateway does not time them at all.
	WantsStages() bool
}

// TimedRecorder is a StageRecorder that also takes when the row was
// completed, read on the system clock, so that an observer that stamps the
// row with the time (the access line) need not read the clock again. The
// gateway calls RecordAt instead of RecordStages when its Recorder has it
// and its clock is the system clock; the same durability contract applies.
type TimedRecorder interface {
	StageRecorder
	RecordAt(e groundhog.LedgerEntry, stages []groundhog.Stage, at time.Time) error
}

// Upstream is one provider endpoint.
type Upstream struct {
	// BaseURL replaces the gateway's "/v1" prefix: a request to
	// /v1/chat/completions goes to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is the provider key sent upstream (never logged, never stored).
	APIKey string
	// Provider names the provider in the ledger: "openai", "anthropic" or
	// "sim".
	Provider string
	// ForwardClientKey sends the client's own Authorization / x-api-key to
	// the provider when APIKey is empty. Only for the embedded transport,
	// where the caller owns the provider key; a gateway serving tenants
	// never forwards their credentials.
	ForwardClientKey bool
	// Sign, when set, signs every upstream request of the provider routes
	// last, over the exact body sent (Bedrock: SigV4 with credentials from
	// the AWS configuration chain). The client's own X-Amz-* headers are
	// then not forwarded: the signature speaks for the gateway's
	// credentials only.
	Sign func(ctx context.Context, req *http.Request, body []byte) error
}

// Options wires a Server. Config, Keys, Cache and Ledger are required.
type Options struct {
	Config *config.Config
	Keys   groundhog.KeyStore
	Cache  *cache.Cache
	Ledger Recorder
	// Flights coalesces cacheable calls across replicas; nil = this
	// process only.
	Flights Flights
	// Idem runs the idempotency stage; nil disables Idempotency-Key handling.
	Idem      *idempotency.Service
	OpenAI    Upstream
	Anthropic Upstream
	// Bedrock serves the Converse shape: BaseURL is the bedrock-runtime
	// endpoint (https://bedrock-runtime.<region>.amazonaws.com) and APIKey
	// a Bedrock API key, sent as a bearer token.
	Bedrock Upstream
	// Gemini serves the gemini shape and the other /v1beta/ routes: BaseURL
	// is the Gemini API endpoint (https://generativelanguage.googleapis.com,
	// without the version) and APIKey a Gemini API key, sent as
	// x-goog-api-key.
	Gemini Upstream
	Clock  groundhog.Clock
	Logger *slog.Logger
	// Ready reports whether the stores answer (for /readyz); nil means ready.
	Ready func(ctx context.Context) error
	// Degraded lists the degraded modes in force (for /readyz: still 200,
	// status "degraded"); nil means none.
	Degraded func() []string
	// Transport for upstream calls; nil uses a tuned http.Transport.
	Transport http.RoundTripper
	// PromptCache is the break-diagnosis tracker (serve restores and
	// snapshots it); nil makes one bounded by Config.PromptCache.
	PromptCache *promptcache.Tracker
	// FanOut is the warm-then-fan-out group; nil makes one from
	// Config.PromptCache (none when fan_out_max_hold is negative).
	FanOut *fanout.Group
	// FanOutShared extends the holds of the group made from the config
	// across replicas (distfanout, over Redis); nil holds within this
	// process. Unused when FanOut is given.
	FanOutShared fanout.Shared
	// Keyless lets the gateway serve the single tenant "local" while no
	// gateway key exists. Set it only for a gateway that starts with no
	// keys on a loopback address (serve does). Even then keyless mode ends
	// for the life of the Server the first time a key is seen: revoking
	// the last key afterwards makes every request 401, never an open proxy.
	Keyless bool
	// TenantPerCredential scopes every call by the credential the client
	// sends (Authorization or x-api-key) instead of a gateway key: the
	// tenant is a digest of it (CredentialTenant), never the credential
	// itself. For the embedded transport forwarding the callers' own
	// provider keys, so a cached answer or an idempotent replay made for
	// one key never reaches another. Gateway keys are not consulted.
	TenantPerCredential bool
	// Extra registers more routes (report, dashboard, operations, metrics)
	// on the server's mux; called once by New.
	Extra func(mux *http.ServeMux, auth func(*http.Request) (string, error))
	// Resources records which tenant created which provider-side
	// resource (Gemini explicit caches, geminicache.go); nil uses Keys when
	// it is also a ResourceStore (the SQLite and PostgreSQL stores are),
	// else a record in this process's memory.
	Resources groundhog.ResourceStore
	// RentedCaches keeps the Gemini explicit caches created through the
	// gateway, to book their storage rent per day (cacherent.go); nil
	// uses Keys when it is also a RentedCacheStore (the SQLite and
	// PostgreSQL stores are), else a record in this process's memory.
	RentedCaches groundhog.RentedCacheStore
	// FingerprintMemoBytes bounds the fingerprints remembered for
	// bodies sent again (fingerprint.Memo): 0 is
	// fingerprint.DefaultMemoBytes, negative turns the memo off.
	FingerprintMemoBytes int64
}

// Server is the gateway. Create it with New; it is an http.Handler.
type Server struct {
	opts   Options
	cfg    *config.Config
	clock  groundhog.Clock
	sysClk bool // clock is the system clock: see after
	log    *slog.Logger
	mux    *http.ServeMux
	client *http.Client

	fpMemo      *fingerprint.Memo          // fingerprints of large bodies sent again
	gzipMemo    *gzipMemo                  // gzip forms of answers sent again
	echoIndexes *echoIndexes               // where shared answers hold their echoed fields
	flights     coalesce.Group             // identical cacheable calls in flight
	tracker     coalesce.Tracker[flightID] // every call in flight, for the ledger's in-flight flag
	inflight    atomic.Int64               // provider-route handlers running
	working     atomic.Int64               // upstream flights running (they may outlive their handlers)
	pending     pendingRecords             // records of objects model calls made, being written (stored.go)

	pc       *promptcache.Stage     // provider prompt-cache stage (gateway/promptcache.go)
	explicit *explicitcache.Manager // managed Gemini explicit caches (gateway/explicitcache.go)
	scans    uploadScans            // the Gemini uploads being read for a batch's input (gateway/geminiscan.go)

	// The provider routes' handlers, when dispatched without the mux
	// (hitfast.go).
	direct [len(providerPaths)]http.Handler

	stagesOn  bool // the ledger recorder wants the pipeline stages timed (traces)
	keyMu     sync.RWMutex
	keyCache  map[string]keyCacheEntry // key hash → tenant ("" = unknown key)
	localMode atomic.Int64             // unix nanos until which "no keys exist" is trusted; 0 = unknown
	sawKey    atomic.Bool              // a key has existed: keyless mode is over for good
}

type keyCacheEntry struct {
	tenant string
	until  time.Time
}

// New returns a Server ready to serve.
func New(o Options) *Server {
	if o.Clock == nil {
		o.Clock = groundhog.SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Resources == nil {
		if rs, ok := o.Keys.(groundhog.ResourceStore); ok {
			o.Resources = rs
		} else {
			o.Resources = newMemResources()
		}
	}
	if o.RentedCaches == nil {
		if rs, ok := o.Keys.(groundhog.RentedCacheStore); ok {
			o.RentedCaches = rs
		} else {
			o.RentedCaches = newMemRentedCaches()
		}
	}
	tr := o.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true,
		}
	}
	s := &Server{
		opts:  o,
		cfg:   o.Config,
		clock: o.Clock,
		log:   o.Logger,
		mux:   http.NewServeMux(),
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			// Never follow a provider's redirect: it would carry the
			// provider key to wherever the redirect points.
			return http.ErrUseLastResponse
		}},
		keyCache:    map[string]keyCacheEntry{},
		stagesOn:    wantsStages(o.Ledger),
		fpMemo:      fingerprint.NewMemo(o.FingerprintMemoBytes, 0),
		gzipMemo:    newGzipMemo(gzipMemoBytes),
		echoIndexes: newEchoIndexes(echoIndexBytes),
	}
	_, s.sysClk = o.Clock.(groundhog.SystemClock)
	s.pc = newPromptCacheStage(o)
	s.explicit = newExplicitManager(s)
	s.routes()
	s.directRoutes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("/v1/chat/completions", s.provider(groundhog.ShapeChat))
	m.HandleFunc("/v1/responses", s.provider(groundhog.ShapeResponses))
	m.HandleFunc("/v1/embeddings", s.provider(groundhog.ShapeEmbeddings))
	m.HandleFunc("/v1/messages", s.provider(groundhog.ShapeMessages))
	// Amazon Bedrock Converse: the model id is one (escaped) path segment.
	m.HandleFunc("/model/{modelId}/converse", s.provider(groundhog.ShapeConverse))
	m.HandleFunc("/model/{modelId}/converse-stream", s.provider(groundhog.ShapeConverse))
	// InvokeModel: a native Anthropic body through the pipeline, any
	// other body passed through.
	m.HandleFunc("/model/{modelId}/invoke", s.invoke)
	m.HandleFunc("/model/{modelId}/invoke-with-response-stream", s.invoke)
	// The other Bedrock runtime routes pass through, authenticated.
	m.HandleFunc("/model/", s.passthrough)
	m.HandleFunc("/guardrail/", s.passthrough)
	m.HandleFunc("/async-invoke", s.passthrough)
	m.HandleFunc("/async-invoke/", s.passthrough)
	// Google Gemini API: generateContent and streamGenerateContent run the
	// pipeline, every other /v1beta/ route passes through (gemini.go).
	geminiAPI := s.gemini(s.provider(groundhog.ShapeGemini))
	m.HandleFunc(geminiPrefix, geminiAPI)
	m.HandleFunc("/v1/models", s.models)
	m.HandleFunc("/v1/models/{id}", s.geminiOr(geminiAPI, s.models)) // /v1/models/{model}:generateContent is Gemini's stable API
	m.HandleFunc("/v1/cachedContents", geminiAPI)
	m.HandleFunc("/v1/cachedContents/", geminiAPI)
	m.HandleFunc(geminiUploadPrefix, s.geminiUpload) // Gemini media uploads (geminiowned.go)
	m.HandleFunc(gemini.StableUploadPrefix, s.geminiUpload)

	// files, batches and uploads are the tenant's own (owned.go); every
	// other provider route passes through. The Gemini routes Google also
	// serves under /v1/ (tunedModels, fileSearchStores, a model's
	// operations: gemini.IsPath) are Gemini's, scoped as under /v1beta/.
	m.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if gemini.IsPath(r.URL.Path) {
			geminiAPI(w, r)
			return
		}
		s.v1(w, r)
	})
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", s.readyz)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, "", groundhog.Errorf(groundhog.ENOTFOUND, "unknown route %s %s", r.Method, r.URL.Path))
	})
	if s.opts.Extra != nil {
		s.opts.Extra(m, s.authenticate)
	}
}

// ServeHTTP runs the request through the mux.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.compression(w, r, s.route(r)) // hitfast.go: the provider routes without the mux
}

// Drain waits until no provider handler and no upstream flight is running,
// or ctx ends. Call it after http.Server.Shutdown and before closing the
// ledger and the stores: an abandoned leader's flight records its row when
// it ends, after its handler has returned.
func (s *Server) Drain(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.inflight.Load() > 0 || s.working.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway: %d handlers and %d flights still running: %w", s.inflight.Load(), s.working.Load(), ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// InFlight returns how many provider calls are being served now.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(r.Context()); err != nil {
			s.writeError(w, r, "", groundhog.WrapError(groundhog.EUNAVAILABLE, "store unavailable", err))
			return
		}
	}
	if s.opts.Degraded != nil {
		if d := s.opts.Degraded(); len(d) > 0 {
			writeJSON(w, http.StatusOK, map[string]any{"status": "degraded", "degraded": d})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// authenticate maps the request's gateway key to a tenant. It runs before
// anything else reads the request: a cache key never grants access.
//
// A known key always wins. With Options.Keyless and no gateway key stored
// (nor ever seen by this Server) the gateway serves the single tenant
// "local" whatever key is sent (SDKs insist on sending one); `serve` sets
// Keyless only on a loopback address that starts with no keys. Keys are
// read from "Authorization: Bearer <key>", "x-api-key" (the Anthropic
// SDK's) or "x-goog-api-key" (the Gemini SDKs'; on /v1beta/ routes also
// the key query parameter).
func (s *Server) authenticate(r *http.Request) (string, error) {
	return s.authenticateAt(r, time.Time{})
}

// authenticateAt is authenticate with the time now already read (zero:
// read it when needed), for the key cache's and keyless mode's checks.
func (s *Server) authenticateAt(r *http.Request, now time.Time) (string, error) {
	if s.opts.TenantPerCredential {
		return CredentialTenant(r.Header), nil
	}
	secret := ""
	if a := hget(r.Header, "Authorization"); a != "" {
		scheme, tok, ok := strings.Cut(a, " ")
		if strings.EqualFold(scheme, "AWS4-HMAC-SHA256") {
			return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "SigV4-signed requests are not accepted: send the gateway key as a bearer token (AWS SDK: set AWS_BEARER_TOKEN_BEDROCK to the gateway key)")
		}
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "Authorization header must be \"Bearer <gateway key>\"")
		}
		secret = strings.TrimSpace(tok)
	} else if k := hget(r.Header, "X-Api-Key"); k != "" {
		secret = strings.TrimSpace(k)
	} else if k := geminiKey(r); k != "" {
		secret = k // x-goog-api-key, or ?key= on the Gemini routes
	}
	ctx := r.Context()
	if secret != "" {
		tenant, found, err := s.lookupKey(ctx, groundhog.HashAPIKey(secret), now)
		if err != nil {
			return "", err
		}
		if found {
			return tenant, nil
		}
	}
	local, err := s.noKeysAt(ctx, now)
	if err != nil {
		return "", err
	}
	if local {
		return groundhog.LocalTenant, nil
	}
	if secret == "" {
		return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "missing gateway key: send \"Authorization: Bearer <key>\"")
	}
	return "", groundhog.Errorf(groundhog.EUNAUTHORIZED, "unknown gateway key")
}

// lookupKey finds the tenant of a key hash. Found keys are remembered for
// ten seconds (so a revoked key stops working within that) and unknown ones
// for two, so the hot path rarely reads the store; finding a key also ends
// keyless mode at once.
// now is the time now, or zero to read it.
func (s *Server) lookupKey(ctx context.Context, hash string, now time.Time) (string, bool, error) {
	if now.IsZero() {
		now = s.clock.Now()
	}
	s.keyMu.RLock()
	e, ok := s.keyCache[hash]
	s.keyMu.RUnlock()
	if ok && now.Before(e.until) {
		return e.tenant, e.tenant != "", nil
	}
	tenant, err := s.opts.Keys.TenantForKey(ctx, hash)
	ttl := 10 * time.Second
	switch {
	case groundhog.IsNotFound(err):
		tenant, ttl = "", 2*time.Second
	case err != nil:
		return "", false, groundhog.WrapError(groundhog.EUNAVAILABLE, "key store unavailable", err)
	default:
		s.sawKey.Store(true)
		s.localMode.Store(-(now.Add(2 * time.Second).UnixNano()))
	}
	s.keyMu.Lock()
	if len(s.keyCache) > 100_000 {
		clear(s.keyCache)
	}
	s.keyCache[hash] = keyCacheEntry{tenant: tenant, until: now.Add(ttl)}
	s.keyMu.Unlock()
	return tenant, tenant != "", nil
}

// noKeys reports whether the gateway runs keyless (single tenant "local"):
// only with Options.Keyless, while no key exists and none ever has during
// this Server's life. The count is re-read from the store at most every two
// seconds, so a key created with `groundhog keys create` while serving takes
// effect quickly — and for good.
func (s *Server) noKeys(ctx context.Context) (bool, error) {
	return s.noKeysAt(ctx, time.Time{})
}

// noKeysAt is noKeys with the time now already read (zero: read it).
func (s *Server) noKeysAt(ctx context.Context, at time.Time) (bool, error) {
	if !s.opts.Keyless || s.sawKey.Load() {
		return false, nil
	}
	if at.IsZero() {
		at = s.clock.Now()
	}
	now := at.UnixNano()
	v := s.localMode.Load()
	if v > 0 && now < v {
		return true, nil
	}
	if v < 0 && now < -v {
		return false, nil
	}
	n, err := s.opts.Keys.CountKeys(ctx)
	if err != nil {
		return false, groundhog.WrapError(groundhog.EUNAVAILABLE, "key store unavailable", err)
	}
	until := now + int64(2*time.Second)
	if n == 0 {
		s.localMode.Store(until)
		return true, nil
	}
	s.sawKey.Store(true)
	s.localMode.Store(-until)
	return false, nil
}

// Followers returns how many calls have joined the in-flight call of
// (tenant, hash) beyond its leader.
func (s *Server) Followers(tenant, hash string) int {
	return s.flights.Followers(tenant + "\x00" + hash)
}

// wantsStages reports whether rec takes the calls' pipeline stages.
func wantsStages(rec Recorder) bool {
	sr, ok := rec.(StageRecorder)
	return ok && sr.WantsStages()
}
