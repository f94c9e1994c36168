// Package transport runs groundhog's whole gateway pipeline inside a Go
// program, as an http.RoundTripper: fingerprint, exact cache, coalescing,
// idempotency and the ledger, in front of a real RoundTripper, on the
// embedded SQLite store — no separate server.
//
//	t, err := transport.New(ctx, transport.Options{DB: "./groundhog.db"})
//	defer t.Close(ctx)
//	client := openai.NewClient(option.WithHTTPClient(&http.Client{Transport: t}))
//
// Every request the client sends is answered by the pipeline as the gateway
// would answer it over HTTP (the same headers — Groundhog-Cache,
// Idempotency-Key, Groundhog-Operation — with the same meaning). Model calls to /v1/chat/completions, /v1/responses,
// /v1/embeddings and /v1/messages go to the provider base URLs of Options
// whatever host the client was pointed at; so do passthrough routes.
//
// Provider credentials and tenants: the SDK's own key (Authorization or
// x-api-key) is forwarded to the provider unless Options sets a provider
// key, which then wins. While any caller's key is forwarded (a provider key
// missing from Options), the pipeline scopes every call by the credential
// it carries, as the HTTP gateway scopes by gateway key: the tenant is a
// digest of the credential (gateway.CredentialTenant), never the key
// itself. A cached answer, a coalesced call or an idempotent replay made
// for one key never reaches a caller with another key, nor a key the
// provider has since revoked. With both provider keys set in Options the
// program is the single tenant "local".
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// Options configures a Transport. The zero value is usable: ./groundhog.db,
// the official OpenAI and Anthropic endpoints, http.DefaultTransport.
type Options struct {
	// DB is the SQLite file (created if missing); "" means ./groundhog.db.
	DB string
	// Config, when set, supplies operations, cache TTLs, prices and limits
	// as the gateway's YAML would; nil means config.Default(). Its Addr,
	// DB and upstream fields are ignored.
	Config *config.Config
	// OpenAIBaseURL and AnthropicBaseURL are the provider endpoints, ending
	// in /v1; "" means https://api.openai.com/v1 and
	// https://api.anthropic.com/v1.
	OpenAIBaseURL    string
	AnthropicBaseURL string
	// OpenAIAPIKey and AnthropicAPIKey, when set, are sent to the provider
	// instead of the key the SDK sends.
	OpenAIAPIKey    string
	AnthropicAPIKey string
	// Base carries the provider calls; nil means http.DefaultTransport.
	Base   http.RoundTripper
	Logger *slog.Logger
}

// Transport is an http.RoundTripper running the gateway pipeline in
// process. Create it with New and Close it when done: Close drains calls in
// flight and flushes the ledger. It is safe for concurrent use.
type Transport struct {
	gw     *gateway.Server
	db     *sqlite.DB
	lw     *ledger.Writer
	closed sync.Once
}

// New opens the store and builds the pipeline.
func New(ctx context.Context, o Options) (*Transport, error) {
	cfg := config.Default()
	if o.Config != nil {
		cfg = *o.Config
	}
	cfg.DB = o.DB
	if cfg.DB == "" {
		cfg.DB = "./groundhog.db"
	}
	cfg.Upstream = firstNonEmpty(o.OpenAIBaseURL, "https://api.openai.com/v1")
	cfg.AnthropicUpstream = firstNonEmpty(o.AnthropicBaseURL, "https://api.anthropic.com/v1")
	cfg.Keys = nil
	if err := cfg.Finish(); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	db, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("transport: open %s: %w", cfg.DB, err)
	}
	c, err := cache.New(cache.Options{Store: db, MaxBytes: cfg.Cache.MemoryBytes})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: cfg.DB + ".journal", Logger: log})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("transport: open ledger: %w", err)
	}
	idem := idempotency.New(idempotency.Options{Store: db, Lease: cfg.Idempotency.Lease, Retention: cfg.Idempotency.Retention, Logger: log})
	base := o.Base
	if base == nil {
		base = http.DefaultTransport
	}
	gw := gateway.New(gateway.Options{
		Config: &cfg, Keys: db, Cache: c, Ledger: lw, Idem: idem, Logger: log, Ready: db.Ping,
		OpenAI:    gateway.Upstream{BaseURL: cfg.Upstream, APIKey: o.OpenAIAPIKey, Provider: "openai", ForwardClientKey: o.OpenAIAPIKey == ""},
		Anthropic: gateway.Upstream{BaseURL: cfg.AnthropicUpstream, APIKey: o.AnthropicAPIKey, Provider: "anthropic", ForwardClientKey: o.AnthropicAPIKey == ""},
		Transport: base,
		Keyless:   true, // embedded: the program is the one tenant, "local"
		// Callers' own keys forwarded: each key is its own tenant.
		TenantPerCredential: o.OpenAIAPIKey == "" || o.AnthropicAPIKey == "",
	})
	return &Transport{gw: gw, db: db, lw: lw}, nil
}

// RoundTrip answers req through the pipeline. The response body streams as
// the pipeline writes it (a streaming completion arrives event by event);
// closing it early is a client going away.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	rw := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				// http.ErrAbortHandler (a broken-off stream) or a bug: the
				// client sees a truncated body, as over HTTP.
				rw.head(http.StatusBadGateway)
				pw.CloseWithError(fmt.Errorf("groundhog transport: response aborted: %v", v))
				return
			}
			rw.head(http.StatusOK)
			_ = pw.Close()
		}()
		t.gw.ServeHTTP(rw, r)
	}()
	select {
	case <-rw.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	res := &http.Response{
		Status:     strconv.Itoa(rw.status) + " " + http.StatusText(rw.status),
		StatusCode: rw.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.sent, Body: pr, Request: req, ContentLength: -1,
	}
	if n, err := strconv.ParseInt(rw.sent.Get("Content-Length"), 10, 64); err == nil {
		res.ContentLength = n
	}
	return res, nil
}

// Close drains the calls in flight, flushes the ledger into the store and
// closes it. Calls made after Close fail.
func (t *Transport) Close(ctx context.Context) error {
	var err error
	t.closed.Do(func() {
		err = errors.Join(t.gw.Drain(ctx), t.lw.Close(ctx), t.db.Close())
	})
	return err
}

// Flush makes every ledger row recorded so far visible to report queries.
func (t *Transport) Flush(ctx context.Context) error { return t.lw.Flush(ctx) }

// Store is the SQLite store under the transport (for reports: pass it to
// ledger.BuildReport).
func (t *Transport) Store() *sqlite.DB { return t.db }

// pipeWriter is the http.ResponseWriter the gateway writes to: the head
// is handed to RoundTrip when it is written, the body flows through a pipe.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	status int
	pw     *io.PipeWriter
	ready  chan struct{}
	once   sync.Once
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) head(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(status int) {
	if status >= 100 && status < 200 {
		return // informational: nothing to hand over
	}
	w.head(status)
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.head(http.StatusOK)
	return w.pw.Write(p)
}

// Flush is a no-op: the pipe hands each write to the reader as it happens.
func (w *pipeWriter) Flush() {}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// InFlight returns how many model calls the pipeline is serving now.
func (t *Transport) InFlight() int64 { return t.gw.InFlight() }
